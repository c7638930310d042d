//! Redis Functions (typed FCALL/FCALL_RO and FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/
//! RESTORE/STATS) and scripts in pipelines (`run_script`: scripts the server does not
//! know are loaded first, so commands run in the queued order), against redis-server and
//! redline-server over RESP3 and RESP2, and against a 6-node Redis cluster.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use bytes::Bytes;
use redline::{
    Client, ClusterClient, ClusterConfig, Config, Error, FunctionRestorePolicy, Protocol, Script,
    ServerErrorKind,
};
use redline_resp::slot::key_slot;
use redline_testkit::{RedisCluster, RedisServer, RedlineServer};

const LIBRARY: &str = "#!lua name=counters\n\
    redis.register_function('bump', function(keys, args) \
        return redis.call('INCRBY', keys[1], args[1]) end)\n\
    redis.register_function{function_name='peek', \
        callback=function(keys) return redis.call('GET', keys[1]) end, \
        flags={'no-writes'}, description='reads a counter'}";

const OTHER_LIBRARY: &str = "#!lua name=other\n\
    redis.register_function('seven', function() return 7 end)";

/// A redis-server and a redline-server, for behaviour both must have.
fn both_servers() -> (RedisServer, RedlineServer, Vec<String>) {
    let redis = RedisServer::start().unwrap();
    let redline = RedlineServer::start().unwrap();
    let urls = vec![redis.url(), redline.url()];
    (redis, redline, urls)
}

async fn clients_of(url: &str) -> Vec<Client> {
    let mut out = Vec::new();
    for protocol in [Protocol::Resp3, Protocol::Resp2] {
        let mut cfg = Config::from_url(url).unwrap();
        cfg.protocol = protocol;
        out.push(Client::from_config(cfg).await.unwrap());
    }
    out
}

fn server_error(err: &Error) -> (&str, &str) {
    match err {
        Error::Server { kind, message } => (kind.as_str(), message),
        other => panic!("not a server error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_load_call_list_dump_restore() {
    let (_redis, _redline, urls) = both_servers();
    for url in &urls {
        for (i, c) in clients_of(url).await.iter().enumerate() {
            functions_on(c, &format!("{i}:hits")).await;
        }
    }
}

async fn functions_on(c: &Client, key: &str) {
    c.function_flush().await.unwrap();
    assert_eq!(c.function_load(LIBRARY).await.unwrap(), "counters");
    let err = c.function_load(LIBRARY).await.unwrap_err();
    assert_eq!(
        server_error(&err),
        ("ERR", "Library 'counters' already exists"),
        "{err:?}"
    );
    assert_eq!(c.function_load_replace(LIBRARY).await.unwrap(), "counters");
    assert_eq!(c.function_load(OTHER_LIBRARY).await.unwrap(), "other");

    let n: i64 = c.fcall("bump", [key], [5]).await.unwrap();
    assert_eq!(n, 5);
    let v: Option<String> = c.fcall_ro("peek", [key], [0u8; 0]).await.unwrap();
    assert_eq!(v.as_deref(), Some("5"));
    let seven: i64 = c.fcall("seven", [""; 0], [""; 0]).await.unwrap();
    assert_eq!(seven, 7);
    let err = c.fcall_ro::<i64>("bump", [key], [1]).await.unwrap_err();
    assert_eq!(
        server_error(&err),
        (
            "ERR",
            "Can not execute a script with write flag using *_ro command."
        ),
        "{err:?}"
    );
    let err = c.fcall::<i64>("nosuch", [key], [1]).await.unwrap_err();
    assert_eq!(server_error(&err), ("ERR", "Function not found"), "{err:?}");

    // LIST: every library, then one by pattern with its code.
    let mut libs = c.function_list().await.unwrap();
    libs.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(libs.len(), 2);
    assert_eq!(libs[0].name, "counters");
    assert_eq!(libs[0].engine, "LUA");
    assert_eq!(libs[0].code, None);
    let mut functions = libs[0].functions.clone();
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(functions[0].name, "bump");
    assert_eq!(functions[0].description, None);
    assert!(functions[0].flags.is_empty());
    assert_eq!(functions[1].name, "peek");
    assert_eq!(functions[1].description.as_deref(), Some("reads a counter"));
    assert_eq!(functions[1].flags, vec!["no-writes".to_string()]);
    let with_code = c.function_list_matching("count*", true).await.unwrap();
    assert_eq!(with_code.len(), 1);
    assert_eq!(with_code[0].code.as_deref(), Some(LIBRARY.as_bytes()));
    assert!(c
        .function_list_matching("nomatch*", false)
        .await
        .unwrap()
        .is_empty());

    // STATS: per engine counts, nothing running.
    let stats = c.function_stats().await.unwrap();
    assert_eq!(stats.running_script, None);
    assert_eq!(stats.engines.len(), 1);
    assert_eq!(stats.engines[0].engine, "LUA");
    assert_eq!(stats.engines[0].libraries_count, 2);
    assert_eq!(stats.engines[0].functions_count, 3);

    // DUMP, FLUSH, RESTORE brings both libraries back; APPEND over them fails.
    let payload: Bytes = c.function_dump().await.unwrap();
    c.function_flush().await.unwrap();
    assert!(c.function_list().await.unwrap().is_empty());
    c.function_restore(payload.clone(), FunctionRestorePolicy::Append)
        .await
        .unwrap();
    assert_eq!(c.function_list().await.unwrap().len(), 2);
    let err = c
        .function_restore(payload.clone(), FunctionRestorePolicy::Append)
        .await
        .unwrap_err();
    // The library named is the first clash met in the payload's libraries, whose order
    // is a hash order in Redis (random per process), so either one may be reported.
    let (kind, message) = server_error(&err);
    assert_eq!(kind, "ERR", "{err:?}");
    assert!(
        message == "Library counters already exists" || message == "Library other already exists",
        "{err:?}"
    );
    c.function_restore(payload.clone(), FunctionRestorePolicy::Replace)
        .await
        .unwrap();
    c.function_delete("other").await.unwrap();
    c.function_restore(payload, FunctionRestorePolicy::Flush)
        .await
        .unwrap();
    assert_eq!(c.function_list().await.unwrap().len(), 2);

    // DELETE: the library's functions are gone.
    c.function_delete("other").await.unwrap();
    let err = c.function_delete("other").await.unwrap_err();
    assert_eq!(server_error(&err), ("ERR", "Library not found"), "{err:?}");
    assert!(c.fcall::<i64>("seven", [""; 0], [""; 0]).await.is_err());

    // In a pipeline, FCALL and FUNCTION subcommands queue like any typed command.
    let (n, v, libs): (i64, Option<String>, Vec<redline::Library>) = c
        .pipeline()
        .fcall("bump", [key], [2])
        .fcall_ro("peek", [key], [0u8; 0])
        .function_list()
        .query()
        .await
        .unwrap();
    assert_eq!((n, v.as_deref(), libs.len()), (7, Some("7"), 1));
    c.function_flush().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_in_pipelines_are_loaded_first() {
    let (_redis, _redline, urls) = both_servers();
    for url in &urls {
        for (i, c) in clients_of(url).await.iter().enumerate() {
            script_pipelines_on(c, &format!("{i}:n")).await;
        }
    }
}

async fn script_pipelines_on(c: &Client, key: &str) {
    let incr_by = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    let double = Script::new("return redis.call('GET', KEYS[1]) * 2");
    c.cmd(["SCRIPT", "FLUSH"]).await.unwrap();
    c.set(key, 1).await.unwrap();
    // Neither script is known: both are loaded before the pipeline runs, so the GET and
    // the second script see the first one's effect (order kept).
    let (a, b, v, d): (i64, i64, String, i64) = c
        .pipeline()
        .run_script(&incr_by, [key], [10])
        .run_script(&incr_by, [key], [100])
        .get(key)
        .run_script(&double, [key], [0u8; 0])
        .query()
        .await
        .unwrap();
    assert_eq!((a, b, v.as_str(), d), (11, 111, "111", 222));
    assert_eq!(
        c.script_exists([incr_by.sha(), double.sha()])
            .await
            .unwrap(),
        vec![true, true]
    );
    // Known now: plain EVALSHA, and in a transaction too after another flush.
    let (a,): (i64,) = c
        .pipeline()
        .run_script(&incr_by, [key], [1])
        .query()
        .await
        .unwrap();
    assert_eq!(a, 112);
    c.cmd(["SCRIPT", "FLUSH"]).await.unwrap();
    let (a, d): (i64, i64) = c
        .pipeline()
        .atomic()
        .run_script(&incr_by, [key], [1])
        .run_script(&double, [key], [0u8; 0])
        .query()
        .await
        .unwrap();
    assert_eq!((a, d), (113, 226));

    // On a dedicated connection (WATCH) the scripts are loaded first as well.
    c.cmd(["SCRIPT", "FLUSH"]).await.unwrap();
    let mut conn = c.dedicated().await.unwrap();
    conn.watch([key]).await.unwrap();
    let mut tx = c.pipeline();
    tx.atomic().run_script(&incr_by, [key], [1]);
    let (a,): (i64,) = conn.run(&mut tx).await.unwrap();
    assert_eq!(a, 114);

    // A script error stays that command's reply.
    let failing = Script::new("return redis.call('HGET', KEYS[1], 'f')");
    let replies = c
        .pipeline()
        .run_script(&failing, [key], [0u8; 0])
        .get(key)
        .query_frames()
        .await
        .unwrap();
    assert!(
        matches!(&replies[0], redline::Frame::Error(e) if e.starts_with(b"WRONGTYPE")),
        "{replies:?}"
    );
}

async fn start_cluster() -> RedisCluster {
    tokio::task::spawn_blocking(RedisCluster::start)
        .await
        .unwrap()
        .unwrap()
}

/// Keys owned by different masters (one per master), found by slot.
fn keys_on_every_master(cluster: &mut RedisCluster) -> Vec<String> {
    let masters = cluster.masters().unwrap();
    let mut keys: Vec<(usize, String)> = Vec::new();
    for i in 0.. {
        let key = format!("fn:{i}");
        let owner = cluster.master_of_slot(key_slot(key.as_bytes())).unwrap();
        if !keys.iter().any(|(m, _)| *m == owner) {
            keys.push((owner, key));
        }
        if keys.len() == masters.len() {
            break;
        }
    }
    keys.into_iter().map(|(_, k)| k).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_and_script_pipelines_on_a_cluster() {
    let mut cluster = start_cluster().await;
    let mut cfg = ClusterConfig::from_urls(cluster.urls()).unwrap();
    cfg.node.command_timeout = Some(Duration::from_secs(10));
    let client = ClusterClient::from_config(cfg).await.unwrap();
    let keys = keys_on_every_master(&mut cluster);
    assert_eq!(keys.len(), 3);

    // LOAD/FLUSH/DELETE/RESTORE reach every master: FCALL works whichever owns the key.
    client.function_flush().await.unwrap();
    assert_eq!(client.function_load(LIBRARY).await.unwrap(), "counters");
    let err = client.function_load(LIBRARY).await.unwrap_err();
    assert_eq!(err.server_kind(), Some(&ServerErrorKind::Err), "{err:?}");
    client.function_load_replace(LIBRARY).await.unwrap();
    for (i, key) in keys.iter().enumerate() {
        let n: i64 = client.fcall("bump", [key], [i + 1]).await.unwrap();
        assert_eq!(n, i as i64 + 1);
        let v: Option<String> = client.fcall_ro("peek", [key], [0u8; 0]).await.unwrap();
        assert_eq!(v, Some((i + 1).to_string()));
    }
    for master in client.masters() {
        let libs: Vec<redline::Library> = client
            .on_node(&master, redline::Cmd::new("FUNCTION").arg("LIST"))
            .await
            .unwrap();
        assert_eq!(libs.len(), 1, "{master}");
    }
    let libs = client.function_list().await.unwrap();
    assert_eq!(libs[0].name, "counters");
    let stats = client.function_stats().await.unwrap();
    assert_eq!(stats.engines[0].libraries_count, 1);

    let payload = client.function_dump().await.unwrap();
    client.function_delete("counters").await.unwrap();
    for key in &keys {
        assert!(client.fcall::<i64>("bump", [key], [1]).await.is_err());
    }
    client
        .function_restore(payload, FunctionRestorePolicy::Append)
        .await
        .unwrap();
    let (a, b): (i64, i64) = client
        .pipeline()
        .fcall("bump", [&keys[0]], [10])
        .fcall("bump", [&keys[1]], [10])
        .query()
        .await
        .unwrap();
    assert_eq!((a, b), (11, 12));
    client.function_flush().await.unwrap();
    for key in &keys {
        assert!(client.fcall::<i64>("bump", [key], [1]).await.is_err());
    }

    // Scripts in a cluster pipeline: loaded on every node first, then run in order on
    // each key's master.
    let incr_by = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1]) + 1000");
    let mut p = client.pipeline();
    for key in &keys {
        p.run_script(&incr_by, [key], [1]).get(key);
    }
    let replies: Vec<redline::Frame> = p.query_frames().await.unwrap();
    assert_eq!(replies.len(), 2 * keys.len());
    let (a, v): (i64, String) = client
        .pipeline()
        .run_script(&incr_by, [&keys[2]], [1])
        .get(&keys[2])
        .query()
        .await
        .unwrap();
    assert_eq!((a, v.as_str()), (1005, "5"));
    assert_eq!(
        client.script_exists([incr_by.sha()]).await.unwrap(),
        vec![true]
    );
}
