//! Lua scripting against redis-server 7.0 and redline-server side by side: the same
//! scripts give the same replies and errors (sandbox, conversions, shebang flags,
//! functions), and the patterns applications build on scripts keep their invariants
//! under 64 concurrent clients: a lock, a token bucket and an atomic list-to-list
//! queue; a script moving value between keys on different shards is never seen half
//! done; a script that loops forever on a server with one worker thread leaves it free
//! for BUSY replies and SCRIPT KILL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use common::{info, show, text, Conn, Redline};
use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer};

/// Commands whose replies must be identical on both servers.
const SCRIPTS: &[&[&str]] = &[
    &["EVAL", "return 1", "0"],
    &["EVAL", "return {1,2,{3,'x'},nil,5}", "0"],
    &["EVAL", "return redis.call('set',KEYS[1],ARGV[1])", "1", "k", "v"],
    &["EVAL", "return redis.call('get',KEYS[1])", "1", "k"],
    &["EVAL", "return redis.call('get','missing')", "0"],
    &["EVAL", "return redis.call('incr','k')", "0"],
    &["EVAL", "return redis.pcall('incr','k')", "0"],
    &["EVAL", "return redis.call('nosuch')", "0"],
    &["EVAL", "return redis.pcall('nosuch')", "0"],
    &["EVAL", "return redis.call()", "0"],
    &["EVAL", "return redis.call('get',{})", "0"],
    &["EVAL", "return redis.call('multi')", "0"],
    &["EVAL", "return redis.error_reply('MY err')", "0"],
    &["EVAL", "return redis.status_reply('FINE')", "0"],
    &["EVAL", "return {err='boom'}", "0"],
    &["EVAL", "return 3.99", "0"],
    &["EVAL", "return true", "0"],
    &["EVAL", "return false", "0"],
    &["EVAL", "return {double=3.5}", "0"],
    &["EVAL", "error('x')", "0"],
    &["EVAL", "return undefined_global", "0"],
    &["EVAL", "x = 5", "0"],
    &["EVAL", "retur 1", "0"],
    &["EVAL", "return 1", "-1"],
    &["EVAL", "return 1", "5", "a"],
    &["EVAL", "return 1", "x"],
    &["EVAL", "os.exit()", "0"],
    &["EVAL", "return cjson.encode({1,2,{a=1}})", "0"],
    &["EVAL", "return cjson.decode('[1,2,3]')", "0"],
    &["EVAL", "return bit.band(0xff, 0x0f)", "0"],
    &["EVAL", "return bit.tohex(65535)", "0"],
    &["EVAL", "return redis.sha1hex('')", "0"],
    &["EVAL", "return table.concat({'a','b'}, ',')", "0"],
    &["EVAL", "#!lua flags=no-writes\nreturn redis.call('set','a','b')", "0"],
    &["EVAL", "#!lua flags=bogus\nreturn 1", "0"],
    &["EVAL_RO", "return redis.call('set','a','b')", "0"],
    &["EVAL_RO", "#!lua\nreturn 1", "0"],
    &["EVAL", "redis.setresp(3); return redis.call('hgetall','h')", "0"],
    &["EVAL", "return redis.call('hgetall','h')", "0"],
    // What redis.call raises and pcall returns: a table with the error reply.
    &[
        "EVAL",
        "local ok, e = pcall(redis.call, 'nosuch'); return {tostring(ok), type(e), e.err}",
        "0",
    ],
    &[
        "EVAL",
        "local ok, e = pcall(redis.call, 'incr', 'h'); return {type(e), e.err}",
        "0",
    ],
    &["EVAL", "return redis.pcall('incr','h')", "0"],
    // Numbers as arguments, replies as Lua types.
    &[
        "EVAL",
        "redis.call('set','n',123456789012345); redis.call('set','f',0.5); redis.call('set','m',-3); return redis.call('mget','n','f','m')",
        "0",
    ],
    &[
        "EVAL",
        "return {type(redis.call('incr','cnt')), tostring(redis.call('get','missing')), type(redis.call('ping')), redis.call('ping')['ok']}",
        "0",
    ],
    &[
        "EVAL",
        "redis.call('sadd','s1','a'); redis.call('zadd','z','1.5','m'); redis.setresp(3); return {tostring(redis.call('smembers','s1').set.a), tostring(redis.call('zscore','z','m').double), redis.call('hgetall','h').map.a}",
        "0",
    ],
    &["EVAL", "redis.call('select', 1); return redis.call('set','indb1','x')", "0"],
    &["GET", "indb1"],
    &["SCRIPT", "LOAD", "return 'hello'"],
    &["EVALSHA", "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b", "0"],
    &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
    &[
        "SCRIPT",
        "EXISTS",
        "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b",
        "ffff",
    ],
    &["SCRIPT", "FLUSH"],
    &["SCRIPT", "EXISTS", "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=mylib\nredis.register_function('myget', function(keys, args) return redis.call('get', keys[1]) end)\nredis.register_function{function_name='myro', callback=function() return 7 end, flags={'no-writes'}}",
    ],
    &["FCALL", "myget", "1", "k"],
    &["FCALL_RO", "myget", "1", "k"],
    &["FCALL_RO", "myro", "0"],
    &["FCALL", "nosuch", "0"],
    &["FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('x', function() end)"],
    &["FUNCTION", "LOAD", "return 1"],
    &["FUNCTION", "LOAD", "#!lua name=empty\nlocal a = 1"],
    &["FUNCTION", "STATS"],
    &["FUNCTION", "DELETE", "mylib"],
    &["FUNCTION", "DELETE", "mylib"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=lib2\nredis.register_function{function_name='f2', callback=function() return 1 end, flags={'no-writes', 'allow-oom'}, description='two'}",
    ],
    &["FUNCTION", "LIST"],
    &["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "lib*"],
    &["FUNCTION", "FLUSH"],
    // The library's arguments checked as Redis checks them: an error table returned, or
    // raised at the script's line (also from a tail call), in Redis's words.
    &["EVAL", "return type(redis.status_reply(1))", "0"],
    &["EVAL", "return redis.status_reply('a', 'b')", "0"],
    &["EVAL", "return redis.error_reply()", "0"],
    &["EVAL", "return redis.sha1hex()", "0"],
    &["EVAL", "return redis.log()", "0"],
    &["EVAL", "return redis.log(9, 'x')", "0"],
    &["EVAL", "return redis.setresp('x')", "0"],
    &["EVAL", "redis.setresp()", "0"],
    &["EVAL", "return redis.set_repl(9)", "0"],
    &["EVAL", "return redis.set_repl('x')", "0"],
    &["EVAL", "return redis.acl_check_cmd()", "0"],
    &["EVAL", "return redis.acl_check_cmd({})", "0"],
    &["EVAL", "return redis.acl_check_cmd('nosuch')", "0"],
    // The sandbox: no script changes what the next one sees, by any way in
    // (rawset, load's environment, strings' metatable, a library table), and the
    // globals are Redis's (no getfenv/setfenv/newproxy, as redis-server 7.0.15 with
    // the fixes for CVE-2025-46818 has them). Then both servers still see the real
    // functions.
    &["EVAL", "rawset(string, 'upper', 1) return 1", "0"],
    &["EVAL", "rawset(redis, 'call', 1) return 1", "0"],
    &["EVAL", "rawset(_G, 'x', 1) return 1", "0"],
    &["EVAL", "local r = rawset({}, nil, 1) return r", "0"],
    &["EVAL", "local s = 'redis.call = 1' return {pcall(load(function() local r = s s = nil return r end))}", "0"],
    &["EVAL", "local s = '\\27Lua' return {load(function() local r = s s = nil return r end)}", "0"],
    &["EVAL", "getmetatable('').foo = 1", "0"],
    &["EVAL", "getmetatable('').__index.upper = 1", "0"],
    &["EVAL", "coroutine.create = 1", "0"],
    &["EVAL", "return {type(getfenv), type(setfenv), type(newproxy)}", "0"],
    &["EVAL", "return type(rawget(string, 'upper'))", "0"],
    &["EVAL", "local t = {} for k in pairs(string) do t[#t+1] = k end table.sort(t) return t", "0"],
    &["EVAL", "local t = {} for k in pairs(cjson) do t[#t+1] = k end table.sort(t) return t", "0"],
    &["EVAL", "return {type(redis.call), type(string.upper), ('x'):upper()}", "0"],
    // table.insert writes raw, past any metatable: the read-only tables still refuse
    // it, and nothing it tried is left for the next script to read.
    &["EVAL", "table.insert(redis, 1)", "0"],
    &["EVAL", "table.insert(string, 1, 'x')", "0"],
    &["EVAL", "table.insert(_G, 'x')", "0"],
    &["EVAL", "return {pcall(table.insert, table, 1)}", "0"],
    &["EVAL", "table.insert(cjson)", "0"],
    &["EVAL", "table.insert(redis, 'x', 1)", "0"],
    &["EVAL", "return {redis[1], string[1], #table, #_G}", "0"],
    &["EVAL", "local t = {} table.insert(t, 'a') table.insert(t, 1, 'b') return t", "0"],
    // Read-only tables have no metatable but the globals', which is read-only itself.
    &[
        "EVAL",
        "return {type(getmetatable(redis)), type(getmetatable(string)), type(getmetatable(_G)), type(getmetatable(getmetatable('')))}",
        "0",
    ],
    &["EVAL", "local t = {} for k, v in pairs(getmetatable(_G)) do t[#t+1] = k .. '=' .. type(v) end return t", "0"],
    &["EVAL", "getmetatable(_G).x = 1", "0"],
    &["EVAL", "return {pcall(setmetatable, getmetatable(_G), {})}", "0"],
    &["EVAL", "setmetatable(_G, nil)", "0"],
    &["EVAL", "return getmetatable(_G).__index('zz')", "0"],
    &["EVAL", "return getmetatable(_G).__index(1, 'zz')", "0"],
    &["EVAL", "local x = _G[true]", "0"],
    &["EVAL", "local x = _G['a\\0b']", "0"],
    // The sandbox's own versions of Lua functions fail as Lua's do: named as the
    // caller named them ('?' through pcall), placed at the caller's line.
    &["EVAL", "return {pcall(loadstring, nil)}", "0"],
    &["EVAL", "loadstring({})", "0"],
    &["EVAL", "loadstring('return 1', {})", "0"],
    &["EVAL", "return {pcall(load, 1)}", "0"],
    &["EVAL", "return {pcall(setmetatable)}", "0"],
    &["EVAL", "setmetatable(1, {})", "0"],
    &["EVAL", "local sm = setmetatable sm({}, 1)", "0"],
    &["EVAL", "return {pcall(setmetatable, {})}", "0"],
    &["EVAL", "local t = setmetatable({}, {__metatable = 1}) setmetatable(t, {})", "0"],
    &["EVAL", "return {pcall(rawset)}", "0"],
    &["EVAL", "rawget(1)", "0"],
    &["EVAL", "return {pcall(next)}", "0"],
    &["EVAL", "pairs(nil)", "0"],
    &["EVAL", "return {pcall(getmetatable)}", "0"],
    // ... and so they do in tail position, where Lua drops the caller's frame.
    &["EVAL", "return rawset({}, 1)", "0"],
    &["EVAL", "return loadstring(nil)", "0"],
    &["EVAL", "return {pcall()}", "0"],
    &["EVAL", "return {pcall(5)}", "0"],
    &["EVAL", "return load(1)", "0"],
    &["EVAL", "return load({}, {})", "0"],
    &["EVAL", "return {pcall(load, function() return nil end, {})}", "0"],
    &["EVAL", "return {loadstring(5)}", "0"],
    &["EVAL", "return setmetatable()", "0"],
    &["EVAL", "return pairs()", "0"],
    &["EVAL", "return {pairs({}) == next, pairs(redis) == next, select(2, pairs(redis)) == redis}", "0"],
    &["EVAL", "return {pcall(rawset, redis, 'a', 1)}", "0"],
    &["EVAL", "return {pcall(setmetatable, redis, 5)}", "0"],
    &["EVAL", "return {rawget(_G, 'redis') == redis, rawequal(rawget(redis, 'call'), redis.call), type(next(_G))}", "0"],
    // Numbers reach commands as %.17g, and an error table's err as Lua writes it.
    &[
        "EVAL",
        "return {redis.call('echo', 0.1), redis.call('echo', -2^63), redis.call('echo', 123456789012345678), redis.call('echo', 1e15)}",
        "0",
    ],
    &["EVAL", "error({err=5})", "0"],
    // A library's error quotes the bytes it was given, as the C libraries do.
    &["EVAL", "return {pcall(struct.pack, '\\255')}", "0"],
    &["EVAL", "return {pcall(cjson.encode_keep_buffer, '\\4\\200\\0x')}", "0"],
    &["EVAL", "cjson.encode_keep_buffer('\\200x')", "0"],
    &["EVAL", "error({err=1e15})", "0"],
    &["EVAL", "return {redis.sha1hex(1e15), redis.sha1hex(100000000000000)}", "0"],
    // What FUNCTION LOAD says when the library fails while it loads.
    &["FUNCTION", "LOAD", "#!lua name=bad1\nlocal x = 1 + {}"],
    &["FUNCTION", "LOAD", "#!lua name=bad2\nredis.register_function()"],
    &["FUNCTION", "LOAD", "#!lua name=bad3\nredis.setresp(3)"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=bad4\nredis.register_function('a', function() end)\nredis.register_function('a', function() end)",
    ],
    // EVAL's globals hold Redis's error handler; a function's (and a chunk it loads)
    // hold neither it nor the KEYS the last EVAL set.
    &["EVAL", "return 1", "1", "kk"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=globals\nredis.register_function('f', function() return {type(_G), type(rawget(_G, 'KEYS')), type(rawget(_G, '__redis__err__handler'))} end)\nredis.register_function('g', function() return KEYS end)\nredis.register_function('h', function() return loadstring('return KEYS')() end)\nredis.register_function('i', function() local _, f = pcall(loadstring, 'return __redis__err__handler') return f() end)\nredis.register_function('j', function() return {type(redis.call), type(redis.breakpoint), type(redis.debug), type(redis.replicate_commands), type(redis.setresp)} end)",
    ],
    &["FCALL", "j", "0"],
    &["FCALL", "f", "0"],
    &["FCALL", "g", "0"],
    &["FCALL", "h", "0"],
    &["FCALL", "i", "0"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=inserts\nredis.register_function('ins', function() table.insert(redis, 1) end)\nredis.register_function('ins_g', function() table.insert(_G, 1) end)",
    ],
    &["FCALL", "ins", "0"],
    &["FCALL", "ins_g", "0"],
    &["FUNCTION", "LOAD", "#!lua name=insload\ntable.insert(redis, 1)"],
    &["EVAL", "local _, f = pcall(loadstring, 'return type(__redis__err__handler)') return f()", "0"],
    &["EVAL", "local n = 0 for k in pairs(_G) do n = n + 1 end return n", "0"],
    &["EVAL", "local t = __redis__err__handler('x') return {t.err, t.source, t.line}", "0"],
    &["EVAL", "local t = __redis__err__handler({err='y'}) return {t.err, t.source, t.line}", "0"],
    &[
        "EVAL",
        "local ok, t = xpcall(function() redis.call('nosuch') end, __redis__err__handler) return {t.err, t.source, t.line}",
        "0",
    ],
    &[
        "EVAL",
        "local ok, t = xpcall(function() cjson.decode('{') end, __redis__err__handler) return {t.err, t.source, t.line}",
        "0",
    ],
];

fn replies(addr: SocketAddr) -> Vec<String> {
    let mut c = Conn::connect(addr);
    c.cmd(&["FLUSHALL"]);
    c.cmd(&["FUNCTION", "FLUSH"]);
    c.cmd(&["HSET", "h", "a", "1"]);
    SCRIPTS
        .iter()
        .map(|args| format!("{args:?} -> {}", show(&c.cmd(args))))
        .collect()
}

#[test]
fn scripts_answer_like_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let ours = Redline::start();
    let expected = replies(redis.addr());
    let got = replies(ours.addr);
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e, g);
    }
}

fn int(frame: &Frame) -> i64 {
    match frame {
        Frame::Integer(n) => *n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// 64 clients take a lock (SET NX PX), hold it while bumping a shared counter with a
/// read-then-write, and release it with compare-and-delete: no two hold it at once,
/// so no increment is lost.
fn lock_holds(addr: SocketAddr) {
    const RELEASE: &str =
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    Conn::connect(addr).cmd(&["FLUSHALL"]);
    let holders = Arc::new(AtomicI64::new(0));
    let threads: Vec<_> = (0..64)
        .map(|i| {
            let holders = holders.clone();
            std::thread::spawn(move || {
                let mut c = Conn::connect(addr);
                let token = format!("client-{i}");
                let mut done = 0;
                while done < 10 {
                    let got = c.cmd(&["SET", "lock", &token, "NX", "PX", "10000"]);
                    if got != Frame::Simple("OK".into()) {
                        std::thread::yield_now();
                        continue;
                    }
                    assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    let n = match c.cmd(&["GET", "counter"]) {
                        Frame::Bulk(b) => String::from_utf8_lossy(&b).parse::<i64>().unwrap(),
                        _ => 0,
                    };
                    c.cmd(&["SET", "counter", &(n + 1).to_string()]);
                    holders.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(int(&c.cmd(&["EVAL", RELEASE, "1", "lock", &token])), 1);
                    // Someone else's token never releases the lock.
                    assert_eq!(int(&c.cmd(&["EVAL", RELEASE, "1", "lock", "intruder"])), 0);
                    done += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let counter = Conn::connect(addr).cmd(&["GET", "counter"]);
    assert_eq!(counter, Frame::Bulk("640".into()));
}

/// A token bucket of 100 tokens with no refill during the test: 64 clients asking for
/// 3 tokens each, 5 times, get exactly 33 grants between them, and 1 token stays.
fn bucket_is_exact(addr: SocketAddr) {
    const TAKE: &str = "local left = tonumber(redis.call('get', KEYS[1]) or ARGV[1]) \
        if left >= tonumber(ARGV[2]) then redis.call('set', KEYS[1], left - ARGV[2]) return 1 end \
        redis.call('set', KEYS[1], left) return 0";
    Conn::connect(addr).cmd(&["FLUSHALL"]);
    let granted = Arc::new(AtomicI64::new(0));
    let threads: Vec<_> = (0..64)
        .map(|_| {
            let granted = granted.clone();
            std::thread::spawn(move || {
                let mut c = Conn::connect(addr);
                for _ in 0..5 {
                    let n = int(&c.cmd(&["EVAL", TAKE, "1", "bucket", "100", "3"]));
                    granted.fetch_add(n, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(granted.load(Ordering::SeqCst), 33);
    assert_eq!(
        Conn::connect(addr).cmd(&["GET", "bucket"]),
        Frame::Bulk("1".into())
    );
}

/// A queue whose consumers move items from `pending` to `working` atomically: 64
/// clients each move until the queue is empty; every item ends up in `working` once.
fn queue_loses_nothing(addr: SocketAddr) {
    const MOVE: &str = "local v = redis.call('rpop', KEYS[1]) \
        if v then redis.call('lpush', KEYS[2], v) end return v";
    let mut c = Conn::connect(addr);
    c.cmd(&["FLUSHALL"]);
    let items: Vec<String> = (0..2000).map(|i| format!("item-{i}")).collect();
    for chunk in items.chunks(500) {
        let mut args = vec!["LPUSH", "{q}pending"];
        args.extend(chunk.iter().map(String::as_str));
        c.cmd(&args);
    }
    let threads: Vec<_> = (0..64)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Conn::connect(addr);
                let mut moved = Vec::new();
                while let Frame::Bulk(b) = c.cmd(&["EVAL", MOVE, "2", "{q}pending", "{q}working"]) {
                    moved.push(b);
                }
                moved
            })
        })
        .collect();
    let mut moved: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    moved.sort();
    moved.dedup();
    assert_eq!(moved.len(), 2000, "each item moved exactly once");
    assert_eq!(int(&c.cmd(&["LLEN", "{q}working"])), 2000);
    assert_eq!(int(&c.cmd(&["LLEN", "{q}pending"])), 0);
}

#[test]
fn lock_bucket_and_queue_hold_on_both_servers() {
    let redis = RedisServer::start().expect("redis-server");
    let ours = Redline::start();
    for addr in [redis.addr(), ours.addr] {
        lock_holds(addr);
        bucket_is_exact(addr);
        queue_loses_nothing(addr);
    }
}

/// Keys `a` and `b` live on different shards; a script moves amounts between them
/// while 32 readers read both in one MGET: the sum is always the total.
#[test]
fn a_script_is_never_seen_half_done_across_shards() {
    let ours = Redline::start();
    let addr = ours.addr;
    let store = &ours.shared.store;
    let (a, b) = (0..1000)
        .map(|i| (format!("a{i}"), format!("b{i}")))
        .find(|(a, b)| {
            store.db(0).shard_index(a.as_bytes()) != store.db(0).shard_index(b.as_bytes())
        })
        .unwrap();
    let mut c = Conn::connect(addr);
    c.cmd(&["MSET", &a, "1000", &b, "0"]);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..32)
        .map(|_| {
            let (stop, a, b) = (stop.clone(), a.clone(), b.clone());
            std::thread::spawn(move || {
                let mut c = Conn::connect(addr);
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    let Frame::Array(items) = c.cmd(&["MGET", &a, &b]) else {
                        panic!("MGET")
                    };
                    let sum: i64 = items
                        .iter()
                        .map(|f| match f {
                            Frame::Bulk(v) => String::from_utf8_lossy(v).parse::<i64>().unwrap(),
                            _ => 0,
                        })
                        .sum();
                    assert_eq!(sum, 1000, "a half-done script was visible");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    const MOVE: &str = "local n = tonumber(ARGV[1]) \
        redis.call('decrby', KEYS[1], n) \
        for i = 1, 200 do redis.call('get', KEYS[2]) end \
        redis.call('incrby', KEYS[2], n) return 1";
    for i in 0..300 {
        let (from, to) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        c.cmd(&["EVAL", MOVE, "2", from, to, "7"]);
    }
    stop.store(true, Ordering::Relaxed);
    let reads: i64 = readers.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(reads > 0);
}

/// A script holds the shards of the databases up to its client's and locks further ones
/// when it first reaches them: moving value between databases 0 and 2 from a client in
/// database 1 (and back from one in database 2) is still never seen half done by
/// transactions reading both, and nothing deadlocks with SWAPDB running meanwhile.
#[test]
fn a_script_reaching_other_databases_is_never_seen_half_done() {
    let ours = Redline::start();
    let addr = ours.addr;
    let mut c = Conn::connect(addr);
    c.cmd(&["SET", "a", "1000"]);
    c.cmd(&["SELECT", "2"]);
    c.cmd(&["SET", "b", "0"]);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Conn::connect(addr);
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    c.send(&["MULTI"]);
                    c.send(&["SELECT", "0"]);
                    c.send(&["GET", "a"]);
                    c.send(&["SELECT", "2"]);
                    c.send(&["GET", "b"]);
                    c.send(&["EXEC"]);
                    for _ in 0..5 {
                        c.read().unwrap();
                    }
                    let Some(Frame::Array(items)) = c.read() else {
                        panic!("EXEC")
                    };
                    let sum: i64 = [&items[1], &items[3]]
                        .iter()
                        .map(|f| match f {
                            Frame::Bulk(v) => String::from_utf8_lossy(v).parse::<i64>().unwrap(),
                            other => panic!("GET: {other:?}"),
                        })
                        .sum();
                    assert_eq!(sum, 1000, "a half-done script was visible");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = Conn::connect(addr);
            while !stop.load(Ordering::Relaxed) {
                assert_eq!(c.cmd(&["SWAPDB", "3", "4"]), Frame::Simple("OK".into()));
            }
        })
    };
    const DOWN: &str = "redis.call('select', 0) redis.call('decrby', 'a', 7) \
        for i = 1, 100 do redis.call('get', 'a') end \
        redis.call('select', 2) return redis.call('incrby', 'b', 7)";
    const UP: &str = "redis.call('decrby', 'b', 7) \
        for i = 1, 100 do redis.call('get', 'b') end \
        redis.call('select', 0) return redis.call('incrby', 'a', 7)";
    let mut from1 = Conn::connect(addr);
    from1.cmd(&["SELECT", "1"]);
    let mut from2 = Conn::connect(addr);
    from2.cmd(&["SELECT", "2"]);
    for _ in 0..150 {
        assert!(matches!(from1.cmd(&["EVAL", DOWN, "0"]), Frame::Integer(_)));
        assert!(matches!(from2.cmd(&["EVAL", UP, "0"]), Frame::Integer(_)));
    }
    stop.store(true, Ordering::Relaxed);
    let reads: i64 = readers.into_iter().map(|t| t.join().unwrap()).sum();
    swapper.join().unwrap();
    assert!(reads > 0);
    assert_eq!(c.cmd(&["GET", "b"]), Frame::Bulk("0".into()));
}

/// A script returning a table that contains itself gets a bounded nest of arrays ending
/// in Redis's "reached lua stack limit" error, and the server goes on.
#[test]
fn a_self_containing_table_is_not_a_crash() {
    let ours = Redline::start();
    let mut c = Conn::connect(ours.addr);
    let mut reply = c.cmd(&[
        "EVAL",
        "local a = {}; local b = {a}; a[1] = b; return a",
        "0",
    ]);
    let mut depth = 0;
    while let Frame::Array(mut items) = reply {
        assert_eq!(items.len(), 1);
        reply = items.remove(0);
        depth += 1;
    }
    assert!(depth > 1);
    assert_eq!(reply, Frame::Error("ERR reached lua stack limit".into()));
    assert_eq!(c.cmd(&["PING"]), Frame::Simple("PONG".into()));
}

/// Lua 5.1 does not verify bytecode, so a server that loads a precompiled chunk runs
/// whatever it says (Redis's CVE-2015-4335). A chunk made by `string.dump` is refused
/// as EVAL's body, by `loadstring` and by SCRIPT LOAD, with Redis's words, and the
/// function inside never runs.
#[test]
fn precompiled_chunks_are_refused_like_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let ours = Redline::start();
    // This server's dump: Redis refuses to load anything it could make itself.
    let mut c = Conn::connect(ours.addr);
    let Frame::Bulk(chunk) = c.cmd(&["EVAL", "return string.dump(function() return 42 end)", "0"])
    else {
        panic!("string.dump gave no chunk");
    };
    assert_eq!(chunk.first(), Some(&0x1b));
    for addr in [redis.addr(), ours.addr] {
        let mut c = Conn::connect(addr);
        let body: &[u8] = &chunk;
        let eval = c.cmd(&[&b"EVAL"[..], body, b"0"]);
        let load = c.cmd(&[&b"SCRIPT"[..], b"LOAD", body]);
        let inner = c.cmd(&[
            &b"EVAL"[..],
            b"return {select(2, loadstring(ARGV[1]))}",
            b"0",
            body,
        ]);
        for reply in [&eval, &load] {
            assert_eq!(
                show(reply),
                show(&Frame::Error(
                    "ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'".into()
                )),
                "{addr}"
            );
        }
        assert!(
            text(&inner).ends_with(":1: unexpected symbol near 'char(27)'"),
            "{addr}: {}",
            show(&inner)
        );
    }
}

/// Compile errors quote the source near the fault byte for byte, for scripts and
/// libraries alike, as Redis's do (not as replacement characters); so do a library's
/// shebang errors.
#[test]
fn compile_errors_quote_the_source_bytes_like_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let ours = Redline::start();
    let cases: [&[&[u8]]; 6] = [
        &[b"EVAL", b"return \xff\xfe x", b"0"],
        // The shebang's bytes too, and a library's error quoting what it was given.
        &[b"FUNCTION", b"LOAD", b"#!\xfelua name=x\n"],
        &[b"FUNCTION", b"LOAD", b"#!lua name=x f\xffoo\n"],
        &[b"SCRIPT", b"LOAD", b"local x = '\xff"],
        &[
            b"FUNCTION",
            b"LOAD",
            b"#!lua name=lib1\nreturn \xff\xfe foo bar\n",
        ],
        &[b"FUNCTION", b"LOAD", b"#!lua name=lib2\nlocal x = '\xff\n"],
    ];
    let replies = |addr| {
        let mut c = Conn::connect(addr);
        cases.iter().map(|args| c.cmd(args)).collect::<Vec<_>>()
    };
    let expected = replies(redis.addr());
    assert!(matches!(&expected[4], Frame::Error(e) if e.ends_with(b"near '\xff'")));
    assert_eq!(replies(ours.addr), expected);
}

/// A script may hold far more values than the interpreter's stack has slots (about
/// 8,000): a long array, map or set returned, a long reply read, many arguments given.
/// The same replies on both servers, and the connection stays.
#[test]
fn long_tables_and_argument_lists_are_answered_like_redis() {
    const LONG: &[&[&str]] = &[
        &["EVAL", "local t = {} for i = 1, 20000 do t[i] = tostring(i) end return t", "0"],
        &["EVAL", "local t = {} for i = 1, 20000 do t[i] = {i, 'v'} end return t", "0"],
        &["EVAL", "local t = {} for i = 1, 20000 do t[tostring(i)] = i end redis.setresp(3) return {map = t}", "0"],
        &["EVAL", "local t = {} for i = 1, 20000 do t[tostring(i)] = true end redis.setresp(3) return {set = t}", "0"],
        &["EVAL", "for i = 1, 20000 do redis.call('rpush', 'l', i) end return redis.call('lrange', 'l', 0, -1)", "0"],
        &["EVAL", "local t = {} for i = 1, 7990 do t[i] = i end return redis.call('rpush', 'l2', unpack(t))", "0"],
        &["EVAL", "local t = {} for i = 1, 9000 do t[i] = i end return redis.call('rpush', 'l3', unpack(t))", "0"],
        // Library functions returning more values than the stack holds: Redis's error.
        &["EVAL", "local t = {} for i = 1, 9000 do t[i] = cmsgpack.pack('s' .. i) end return select('#', cmsgpack.unpack(table.concat(t)))", "0"],
        &["EVAL", "return select('#', struct.unpack(string.rep('c1', 9000), string.rep('a', 9000)))", "0"],
        &["EVAL", "return select('#', struct.unpack(string.rep('c1', 7800), string.rep('a', 7800)))", "0"],
    ];
    let run = |addr: SocketAddr| -> Vec<String> {
        let mut c = Conn::connect(addr);
        c.cmd(&["FLUSHALL"]);
        let mut out: Vec<String> = LONG.iter().map(|args| show(&c.cmd(args))).collect();
        out.push(show(&c.cmd(&["PING"])));
        out
    };
    let redis = RedisServer::start().expect("redis-server");
    let ours = Redline::start();
    let expected = run(redis.addr());
    let got = run(ours.addr);
    for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
        assert!(
            e == g,
            "{:?}: {} ... vs {} ...",
            LONG.get(i),
            &e[..e.len().min(200)],
            &g[..g.len().min(200)]
        );
    }
}

/// Redis's script cache and function libraries have no bound. 10,000 distinct scripts
/// (EVAL and SCRIPT LOAD), then a library of 9,000 functions, then the cache flushed and
/// filled again: the same replies on both servers. Each cached script used to hold an
/// interpreter handle, and past about 8,000 of them the interpreter panicked and every
/// client hung.
#[test]
fn ten_thousand_scripts_and_functions_are_served_like_redis() {
    const SCRIPTS: usize = 10_000;
    const FUNCTIONS: usize = 9_000;
    same_as_redis(|addr| {
        let mut c = Conn::connect(addr);
        let mut out = Vec::new();
        let fill = |c: &mut Conn, round: usize| {
            for i in 0..SCRIPTS {
                let body = format!("return {i} + {round}");
                if i % 2 == 0 {
                    c.send(&["EVAL", &body, "0"]);
                } else {
                    c.send(&["SCRIPT", "LOAD", &body]);
                }
            }
            let replies: Vec<Frame> = (0..SCRIPTS).map(|_| c.read().unwrap()).collect();
            let sum: i64 = replies.iter().step_by(2).map(int).sum();
            let first_loaded = replies[1].clone();
            (sum, first_loaded)
        };
        let (sum, loaded) = fill(&mut c, 0);
        out.push(sum.to_string());
        let sha = text(&loaded);
        out.push(show(&c.cmd(&["EVALSHA", &sha, "0"])));
        out.push(info(&mut c, "number_of_cached_scripts").to_string());
        let mut library = String::from("#!lua name=many\n");
        for i in 0..FUNCTIONS {
            library.push_str(&format!(
                "redis.register_function('f{i}', function() return {i} end)\n"
            ));
        }
        out.push(show(&c.cmd(&["FUNCTION", "LOAD", &library])));
        out.push(show(&c.cmd(&["FCALL", "f0", "0"])));
        out.push(show(&c.cmd(&[
            "FCALL",
            &format!("f{}", FUNCTIONS - 1),
            "0",
        ])));
        out.push(show(&c.cmd(&["FUNCTION", "LOAD", "REPLACE", &library])));
        out.push(show(&c.cmd(&["SCRIPT", "FLUSH"])));
        let (sum, _) = fill(&mut c, 1);
        out.push(sum.to_string());
        out.push(show(&c.cmd(&["FCALL", "f1234", "0"])));
        out.push(show(&c.cmd(&["FUNCTION", "DELETE", "many"])));
        out.push(show(&c.cmd(&["PING"])));
        out
    });
}

/// Scripts start inline on the connection's worker thread. With a single worker, one
/// that loops forever must still leave the server answering: the interpreter's hook hands
/// the worker on, so other clients get BUSY past the threshold and SCRIPT KILL ends it.
#[test]
fn a_looping_script_on_one_worker_still_lets_script_kill_through() {
    let server = RedlineServer::builder()
        .args([
            "--save",
            "",
            "--io-threads",
            "1",
            "--busy-reply-threshold",
            "100",
        ])
        .start()
        .unwrap();
    let addr = server.addr();
    let mut looping = Conn::connect(addr);
    looping.send(&["EVAL", "while true do end", "0"]);
    let mut other = Conn::connect(addr);
    let busy = Frame::Error(
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
            .into(),
    );
    // A PING sent before the threshold waits for the script; past it, BUSY.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let reply = other.cmd(&["PING"]);
        if reply == busy {
            break;
        }
        assert_eq!(reply, Frame::Simple("PONG".into()), "{}", show(&reply));
        assert!(std::time::Instant::now() < deadline, "never BUSY");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]), Frame::Simple("OK".into()));
    let killed = looping.read().expect("the script's reply");
    assert!(
        matches!(&killed, Frame::Error(e) if e.starts_with(b"ERR Script killed by user with SCRIPT KILL")),
        "{}",
        show(&killed)
    );
    assert_eq!(other.cmd(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(looping.cmd(&["EVAL", "return 7", "0"]), Frame::Integer(7));
}

/// On a replica, a script's declared flags decide as Redis's do: one that may write is
/// refused with READONLY before it runs; with the master link down and
/// `replica-serve-stale-data no`, only an `allow-stale` one runs, and its calls of
/// commands not allowed on a stale replica fail. Compared with redis-server.
#[test]
fn declared_script_flags_decide_on_a_replica() {
    let run = |addr: SocketAddr| {
        let mut c = Conn::connect(addr);
        let library = "#!lua name=test\n\
            redis.register_function('w', function() return redis.call('set', 'x', '1') end)\n\
            redis.register_function{function_name='f1', callback=function() return 'hello' end, flags={'no-writes'}}\n\
            redis.register_function{function_name='f2', callback=function() return 'hello' end, flags={'allow-stale', 'no-writes'}}\n\
            redis.register_function{function_name='f3', callback=function() return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}\n\
            redis.register_function{function_name='f4', callback=function() return redis.call('ping') end, flags={'allow-stale', 'no-writes'}}";
        c.cmd(&["FUNCTION", "LOAD", library]);
        // A master that is not there: the link stays down.
        c.cmd(&["REPLICAOF", "127.0.0.1", "1"]);
        let mut seen = Vec::new();
        for f in ["w", "f1"] {
            seen.push(show(&c.cmd(&["FCALL", f, "0"])));
        }
        seen.push(show(&c.cmd(&[
            "EVAL",
            "#!lua\nreturn redis.call('set', 'x', '1')",
            "0",
        ])));
        c.cmd(&["CONFIG", "SET", "replica-serve-stale-data", "no"]);
        for f in ["f1", "f2", "f3", "f4"] {
            seen.push(show(&c.cmd(&["FCALL", f, "0"])));
        }
        // Scripts without a shebang are refused on a stale replica; one that declares
        // allow-stale runs.
        for body in [
            "return 1",
            "return redis.call('get','x')",
            "#!lua flags=no-writes\nreturn 1",
            "#!lua flags=allow-stale,no-writes\nreturn redis.call('echo','e')",
        ] {
            seen.push(show(&c.cmd(&["EVAL", body, "0"])));
        }
        c.cmd(&["CONFIG", "SET", "replica-serve-stale-data", "yes"]);
        c.cmd(&["REPLICAOF", "NO", "ONE"]);
        seen
    };
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    let theirs = run(redis.addr());
    assert!(theirs[0].contains("READONLY"), "{theirs:?}");
    assert_eq!(run(ours.addr), theirs);
}

/// SHUTDOWN NOSAVE stops the server while a script is busy, as redis-server does: the
/// process exits without waiting for the script, which holds its locks for ever.
#[test]
fn shutdown_nosave_stops_the_server_under_a_busy_script() {
    let mut server = RedlineServer::builder()
        .args(["--lua-time-limit", "10"])
        .start()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], server.port()));
    let mut looping = Conn::connect(addr);
    looping.send(&["EVAL", "while true do end", "0"]);
    let mut c = Conn::connect(addr);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !show(&c.cmd(&["PING"])).contains("BUSY") {
        assert!(
            std::time::Instant::now() < deadline,
            "the script never turned busy"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    c.send_raw(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n");
    // Once the connection closes nobody can connect any more.
    assert!(c.read().is_none());
    assert!(std::net::TcpStream::connect(addr).is_err());
    while server.is_running() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not exit"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `session` against a fresh redis-server and a fresh redline-server and asserts
/// that they saw the same, step by step (the first difference is the one reported).
fn same_as_redis(session: impl Fn(SocketAddr) -> Vec<String>) {
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    let theirs = session(redis.addr());
    let got = session(ours.addr);
    for (g, t) in got.iter().zip(&theirs) {
        assert_eq!(g, t);
    }
    assert_eq!(got.len(), theirs.len());
}

/// The Lua debugger in its synchronous mode (SCRIPT DEBUG SYNC, as `redis-cli
/// --ldb-sync-mode` drives it): stepping, breakpoints (set and from
/// `redis.breakpoint()`), listing, printing locals and KEYS/ARGV, `eval`, `redis`
/// (logged command and reply), a backtrace, `maxlen`, `redis.debug()`, unknown and
/// malformed commands, the `<endsession>` mark, the EVAL's reply and the closed
/// connection; a second client waits for the session. Every reply is compared with
/// redis-server's.
#[test]
fn lua_debugger_matches_redis() {
    let script = "local a = 1\nlocal t = {1,2,'x',{y=true}}\nredis.debug('hi', a, t)\n\
                  redis.call('set','k','v')\nredis.breakpoint()\nlocal m = {x=1}\n\
                  return redis.call('get','k')\n";
    let session = |addr: SocketAddr| {
        let mut other = Conn::connect(addr);
        other.cmd(&["FLUSHALL"]);
        let mut c = Conn::connect(addr);
        let mut seen = vec![show(&c.cmd(&["SCRIPT", "DEBUG", "SYNC"]))];
        seen.push(show(&c.cmd(&["EVALSHA", "abc", "0"])));
        seen.push(show(&c.cmd(&["SCRIPT", "DEBUG", "maybe"])));
        seen.push(show(&c.cmd(&["EVAL", script, "1", "key1", "arg1"])));
        let steps: &[&[&str]] = &[
            &["s"],
            &["p"],
            &["next"],
            &["s"],
            &["p", "t"],
            &["p", "ARGV"],
            &["p", "KEYS"],
            &["p", "nosuch"],
            &["b", "6"],
            &["b", "99"],
            &["b", "x"],
            &["b"],
            &["l", "3", "1"],
            &["w"],
            &["e", "1+1"],
            &["e", "nosuch("],
            &["r", "incr", "k"],
            &["r", "get", "nokey"],
            &["r", "nosuchcmd"],
            &["r", "hset", "h", "f", "v"],
            &["r", "hgetall", "h"],
            &["t"],
            &["m", "10"],
            &[
                "r",
                "set",
                "long",
                "0123456789012345678901234567890123456789012345678901234567890123456789",
            ],
            &["m", "0"],
            &["xyz"],
            &["hello\0world"],
            &["h"],
            &["c"],
            &["b", "-6"],
            &["b", "0"],
            &["p"],
        ];
        for step in steps {
            seen.push(format!("{step:?} -> {}", show(&c.cmd(step))));
        }
        let mut many = vec!["redis"];
        many.extend(std::iter::repeat_n("test", 100));
        seen.push(format!("redis test x100 -> {}", show(&c.cmd(&many))));
        // A second client waits for the session, as Redis is blocked by it.
        other.send(&["GET", "k"]);
        seen.push(format!("c -> {}", show(&c.cmd(&["c"]))));
        seen.push(format!("EVAL reply: {}", show(&c.read().unwrap())));
        seen.push(format!("closed: {}", c.is_closed()));
        seen.push(format!("other: {}", show(&other.read().unwrap())));
        seen
    };
    same_as_redis(session);
}

/// The Lua debugger's forked mode (SCRIPT DEBUG YES, what `redis-cli --ldb` sends):
/// the session sees the dataset as it was when it began, other clients are served
/// while it is stopped (their writes do not reach it), its own changes are dropped when
/// it ends, and it counts as a fork. Every reply is compared with redis-server's.
#[test]
fn lua_debugger_forked_session_matches_redis() {
    let script = "redis.call('set','k','changed')\nredis.call('set','new','x')\n\
                  redis.call('incr','counter')\nreturn redis.call('mget','k','late','counter')\n";
    let forks = |c: &mut Conn| info(c, "total_forks");
    let session = |addr: SocketAddr| {
        let mut other = Conn::connect(addr);
        other.cmd(&["FLUSHALL"]);
        other.cmd(&["SET", "k", "orig"]);
        other.cmd(&["SET", "counter", "10"]);
        let forks_before = forks(&mut other);
        let mut c = Conn::connect(addr);
        let mut seen = vec![show(&c.cmd(&["SCRIPT", "DEBUG", "YES"]))];
        seen.push(show(&c.cmd(&["EVAL", script, "0"])));
        // Stopped at the first line: the server serves others, and their writes stay
        // out of the session's copy.
        seen.push(format!(
            "other: {}",
            show(&other.cmd(&["SET", "late", "1"]))
        ));
        seen.push(format!(
            "other: {}",
            show(&other.cmd(&["SET", "k", "during"]))
        ));
        seen.push(format!(
            "other: {}",
            show(&other.cmd(&["EVAL", "return 7", "0"]))
        ));
        let steps: &[&[&str]] = &[
            &["r", "get", "late"],
            &["r", "get", "k"],
            &["s"],
            &["r", "get", "k"],
            &["r", "dbsize"],
            &["n"],
        ];
        for step in steps {
            seen.push(format!("{step:?} -> {}", show(&c.cmd(step))));
        }
        seen.push(format!("c -> {}", show(&c.cmd(&["c"]))));
        seen.push(format!("EVAL reply: {}", show(&c.read().unwrap())));
        seen.push(format!("closed: {}", c.is_closed()));
        // The session's changes are gone; the other client's are kept.
        seen.push(show(&other.cmd(&["MGET", "k", "new", "late", "counter"])));
        seen.push(format!("forks: {}", forks(&mut other) - forks_before));
        // A second session on the same terms, and the mode stays per connection.
        let mut d = Conn::connect(addr);
        seen.push(show(&d.cmd(&["SCRIPT", "DEBUG", "YES"])));
        seen.push(show(&d.cmd(&["SCRIPT", "DEBUG", "NO"])));
        seen.push(show(&d.cmd(&["EVAL", script, "0"])));
        seen.push(show(&other.cmd(&["MGET", "k", "new", "late", "counter"])));
        seen
    };
    same_as_redis(session);
}

/// A debugging session whose script never runs (it does not compile, or EVALSHA is
/// refused): the `<endsession>` mark, then the error, then the connection closes, in
/// both modes, as in Redis.
#[test]
fn lua_debugger_script_that_never_starts_matches_redis() {
    same_as_redis(|addr| {
        let mut seen = Vec::new();
        for mode in ["SYNC", "YES"] {
            let mut c = Conn::connect(addr);
            seen.push(show(&c.cmd(&["SCRIPT", "DEBUG", mode])));
            seen.push(show(&c.cmd(&["EVAL", "retur 1", "0"])));
            seen.push(show(&c.read().unwrap()));
            seen.push(format!("closed: {}", c.is_closed()));
        }
        seen
    });
}

/// A forked session's copy is the dataset at one instant while writers keep going:
/// transactions that add one to each of 50 counters on different shards are, in every
/// copy, all in or all out (all counters equal), and the writers are never stopped for
/// the length of a copy.
#[test]
fn lua_debugger_forked_copy_is_one_instant() {
    let server = Redline::start();
    let addr = server.addr;
    let keys: Vec<String> = (0..50).map(|i| format!("counter:{i}")).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let keys = keys.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Conn::connect(addr);
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    c.cmd(&["MULTI"]);
                    for key in &keys {
                        c.cmd(&["INCR", key.as_str()]);
                    }
                    c.cmd(&["EXEC"]);
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut eval = vec!["EVAL", "return redis.call('mget', unpack(KEYS))", "50"];
    eval.extend(keys.iter().map(String::as_str));
    let mut watcher = Conn::connect(addr);
    while watcher.cmd(&["GET", "counter:0"]) == Frame::NullBulk {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..10 {
        let mut c = Conn::connect(addr);
        c.ok(&["SCRIPT", "DEBUG", "YES"]);
        c.cmd(&eval);
        c.cmd(&["c"]);
        let Some(Frame::Array(values)) = c.read() else {
            panic!("no EVAL reply");
        };
        let values: Vec<String> = values.iter().map(show).collect();
        assert_eq!(values.len(), 50);
        assert!(
            values.iter().all(|v| *v == values[0]),
            "a copy caught a transaction half done: {values:?}"
        );
        seen.insert(values[0].clone());
    }
    stop.store(true, Ordering::Relaxed);
    assert!(seen.len() > 1, "the writers never moved: {seen:?}");
    for writer in writers {
        assert!(writer.join().unwrap() > 0);
    }
}

/// A forked session's copy of the dataset is left out of `maxmemory`, as a forked
/// child's memory is outside its parent's: debugging a server at its limit evicts none
/// of its keys, on either server. Its own process: an in-process server's memory
/// figure counts what the tests beside it allocate (4 MB of headroom is not much).
#[test]
fn lua_debugger_forked_session_evicts_nothing() {
    let run = |addr: SocketAddr| {
        let mut c = Conn::connect(addr);
        c.cmd(&["FLUSHALL"]);
        let value = "v".repeat(1000);
        for chunk in 0..20 {
            let mut cmd = vec!["MSET".to_string()];
            for i in 0..1000 {
                cmd.push(format!("key:{}", chunk * 1000 + i));
                cmd.push(value.clone());
            }
            let refs: Vec<&str> = cmd.iter().map(String::as_str).collect();
            c.cmd(&refs);
        }
        let limit = (info(&mut c, "used_memory") + 4 * 1024 * 1024).to_string();
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
        c.cmd(&["CONFIG", "SET", "maxmemory", &limit]);
        let mut d = Conn::connect(addr);
        d.cmd(&["SCRIPT", "DEBUG", "YES"]);
        d.cmd(&[
            "EVAL",
            "redis.call('set','k','v')\nreturn redis.call('dbsize')",
            "0",
        ]);
        // While the session holds its copy, the server keeps writing.
        let mut seen = vec![show(&d.cmd(&["s"]))];
        for i in 0..100 {
            c.cmd(&["SET", &format!("more:{i}"), "x"]);
        }
        seen.push(show(&d.cmd(&["c"])));
        seen.push(show(&d.read().unwrap()));
        seen.push(show(&c.cmd(&["DBSIZE"])));
        seen.push(format!("evicted: {}", info(&mut c, "evicted_keys")));
        c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
        seen
    };
    let redis = RedisServer::start().unwrap();
    let ours = RedlineServer::builder().start().expect("redline-server");
    assert_eq!(run(ours.addr()), run(redis.addr()));
}

/// A client that leaves in the middle of a debugging session: the script runs to its
/// end (its writes are kept) and the server serves everyone again, as in Redis.
#[test]
fn lua_debugger_client_leaving_lets_the_script_finish() {
    let run = |addr: SocketAddr| {
        let mut other = Conn::connect(addr);
        other.cmd(&["FLUSHALL"]);
        {
            let mut c = Conn::connect(addr);
            c.cmd(&["SCRIPT", "DEBUG", "SYNC"]);
            c.cmd(&[
                "EVAL",
                "redis.call('set','a','1')\nredis.call('set','b','2')",
                "0",
            ]);
            c.cmd(&["s"]);
        }
        let mut seen = vec![show(&other.cmd(&["MGET", "a", "b"]))];
        seen.push(show(&other.cmd(&["EVAL", "return 7", "0"])));
        seen
    };
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    assert_eq!(run(ours.addr), run(redis.addr()));
}

/// SCRIPT KILL and FUNCTION KILL reply once the script has stopped, as Redis's do (Redis
/// stops it before reading another client's command): a command another client sends
/// right after the reply never gets BUSY. go-redis's suite found this, as a spec that
/// followed its FUNCTION KILL getting BUSY.
#[test]
fn a_command_sent_after_a_kill_never_gets_busy() {
    let server = RedlineServer::builder()
        .args(["--save", "", "--busy-reply-threshold", "10"])
        .start()
        .unwrap();
    let addr = server.addr();
    let mut admin = Conn::connect(addr);
    let library = "#!lua name=spin\nredis.register_function{function_name='spin', \
                   callback=function() while true do end end, flags={'no-writes'}}";
    assert_eq!(
        admin.cmd(&["FUNCTION", "LOAD", library]),
        Frame::Bulk("spin".into())
    );
    let mut next = Conn::connect(addr);
    for round in 0..20 {
        let function = round % 2 == 1;
        let mut looping = Conn::connect(addr);
        if function {
            looping.send(&["FCALL", "spin", "0"]);
        } else {
            looping.send(&["EVAL", "while true do end", "0"]);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !matches!(admin.cmd(&["PING"]), Frame::Error(e) if e.starts_with(b"BUSY")) {
            assert!(std::time::Instant::now() < deadline, "never BUSY");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let kill = if function { "FUNCTION" } else { "SCRIPT" };
        assert_eq!(admin.cmd(&[kill, "KILL"]), Frame::Simple("OK".into()));
        let reply = next.cmd(&["PING"]);
        assert_eq!(
            reply,
            Frame::Simple("PONG".into()),
            "round {round}: {}",
            show(&reply)
        );
        assert!(matches!(looping.read(), Some(Frame::Error(_))));
    }
}

/// The collector keeps pace with small scripts: after 10,000 runs the interpreter's heap
/// stays under the 100 KB Redis's suite allows ("EVAL does not leak in the Lua stack").
#[test]
fn the_interpreter_heap_stays_small_over_many_runs() {
    let ours = Redline::start();
    let mut c = Conn::connect(ours.addr);
    for _ in 0..10_000 {
        c.send(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "x"]);
    }
    for _ in 0..10_000 {
        assert!(matches!(c.read(), Some(Frame::Integer(_))));
    }
    let heap = common::info(&mut c, "used_memory_lua");
    assert!(heap < 100 * 1024, "used_memory_lua {heap}");
}

/// While a script is BUSY, clients that WATCH keys it holds may EXEC (EXECABORT BUSY),
/// DISCARD, UNWATCH or disconnect without stopping a worker thread on the script's
/// locks: the server still answers BUSY and SCRIPT KILL, and their later WATCHes work.
/// (Once 2 such clients could stop both workers of a 2-core machine, and with them the
/// SCRIPT KILL that would have ended the script.) A WATCH sent meanwhile is answered
/// once the script ends (Redis answers at once). FUNCTION STATS during an EVAL is BUSY,
/// and so is a SHUTDOWN without NOSAVE.
#[test]
fn watching_clients_never_stop_the_server_during_a_busy_script() {
    let run = |redline: bool| -> Vec<String> {
        let server = if redline {
            common::AnyServer::redline(&["--busy-reply-threshold", "10"])
        } else {
            common::AnyServer::redis(&["--busy-reply-threshold", "10"])
        };
        let port = server.port;
        let mut transcript = Vec::new();
        let mut admin = common::conn(port);
        admin.cmd(&["SET", "k", "0"]);
        // Watchers, set up before the script: each of the first four ends its watch
        // differently during it.
        let mut watchers: Vec<Conn> = (0..6).map(|_| common::conn(port)).collect();
        for w in &mut watchers {
            w.cmd(&["WATCH", "k"]);
        }
        for w in &mut watchers[..2] {
            w.cmd(&["MULTI"]);
            w.cmd(&["SET", "k", "1"]);
        }
        let mut looping = common::conn(port);
        looping.send(&["EVAL", "while true do end", "0"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !matches!(admin.cmd(&["PING"]), Frame::Error(e) if e.starts_with(b"BUSY")) {
            assert!(std::time::Instant::now() < deadline, "never BUSY");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        transcript.push(format!("EXEC: {}", show(&watchers[0].cmd(&["EXEC"]))));
        transcript.push(format!("DISCARD: {}", show(&watchers[1].cmd(&["DISCARD"]))));
        transcript.push(format!("UNWATCH: {}", show(&watchers[2].cmd(&["UNWATCH"]))));
        transcript.push(format!("RESET: {}", show(&watchers[3].cmd(&["RESET"]))));
        // Two watchers go away.
        watchers.truncate(4);
        let mut late = common::conn(port);
        late.send(&["WATCH", "k"]);
        transcript.push(format!(
            "FUNCTION STATS: {}",
            show(&admin.cmd(&["FUNCTION", "STATS"]))
        ));
        transcript.push(format!(
            "PING: {}",
            show(&common::conn(port).cmd(&["PING"]))
        ));
        // Only SHUTDOWN NOSAVE may stop a server whose script is BUSY.
        for shutdown in [&["SHUTDOWN"][..], &["SHUTDOWN", "SAVE"]] {
            transcript.push(format!("{shutdown:?}: {}", show(&admin.cmd(shutdown))));
        }
        transcript.push(format!("KILL: {}", show(&admin.cmd(&["SCRIPT", "KILL"]))));
        assert!(matches!(looping.read(), Some(Frame::Error(_))));
        transcript.push(format!("late WATCH: {:?}", late.read().map(|f| show(&f))));
        // The watches that ended during the script are gone for good, and a new one
        // (the same key, the same client) is not touched by their release, even once
        // the background cycle has done it.
        watchers[0].cmd(&["WATCH", "k"]);
        std::thread::sleep(std::time::Duration::from_millis(300));
        for (name, c) in [("renewed", &mut watchers[0]), ("late", &mut late)] {
            c.cmd(&["MULTI"]);
            c.cmd(&["INCR", "k"]);
            transcript.push(format!("{name} EXEC: {}", show(&c.cmd(&["EXEC"]))));
        }
        transcript
    };
    assert_eq!(run(true), run(false));
}

/// A WATCH sent while a script is BUSY is answered at once, as Redis answers it between
/// two steps of the script: the script's writes after it break the watcher's EXEC,
/// its writes before it do not, and a WATCH after the script's last command still
/// counts from the script's end.
#[test]
fn a_watch_sent_while_a_script_is_busy_counts_from_then() {
    // Writes, then calls TIME for 1.5 s (BUSY after 10 ms), then writes again, in
    // database 0 and in database 1.
    let writes_around_a_wait = "redis.call('set', 'before', 1) \
        local t = redis.call('time') local stop = t[1] * 1000000 + t[2] + 1500000 \
        repeat t = redis.call('time') until t[1] * 1000000 + t[2] >= stop \
        redis.call('set', 'after', 2) redis.call('select', 1) redis.call('set', 'after', 2) \
        return 1";
    let run = |redline: bool| -> Vec<String> {
        let args = ["--busy-reply-threshold", "10"];
        let server = if redline {
            common::AnyServer::redline(&args)
        } else {
            common::AnyServer::redis(&args)
        };
        let port = server.port;
        let mut admin = common::conn(port);
        let busy = |admin: &mut Conn| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !matches!(admin.cmd(&["PING"]), Frame::Error(e) if e.starts_with(b"BUSY")) {
                assert!(std::time::Instant::now() < deadline, "never BUSY");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        };
        let mut transcript = Vec::new();
        let exec = |transcript: &mut Vec<String>, name: &str, w: &mut Conn| {
            w.cmd(&["MULTI"]);
            w.cmd(&["PING"]);
            transcript.push(format!("{name}: {}", show(&w.cmd(&["EXEC"]))));
        };
        let mut script = common::conn(port);
        script.send(&["EVAL", writes_around_a_wait, "0"]);
        busy(&mut admin);
        let mut watchers: Vec<Conn> = (0..4).map(|_| common::conn(port)).collect();
        watchers[3].cmd(&["SELECT", "1"]);
        for (w, key) in watchers
            .iter_mut()
            .zip(["before", "after", "untouched", "after"])
        {
            transcript.push(format!("WATCH {key}: {}", show(&w.cmd(&["WATCH", key]))));
        }
        transcript.push(format!("script: {:?}", script.read().map(|f| show(&f))));
        for (w, name) in watchers
            .iter_mut()
            .zip(["before", "after", "untouched", "db 1"])
        {
            exec(&mut transcript, name, w);
        }
        // No command after the WATCH: the script's end registers it.
        script.send(&["EVAL", "for i = 1, 300000000 do end return 1", "0"]);
        busy(&mut admin);
        let mut late: Vec<Conn> = (0..2).map(|_| common::conn(port)).collect();
        for (w, key) in late.iter_mut().zip(["k", "j"]) {
            transcript.push(format!(
                "late WATCH {key}: {}",
                show(&w.cmd(&["WATCH", key]))
            ));
        }
        transcript.push(format!("loop: {:?}", script.read().map(|f| show(&f))));
        admin.cmd(&["SET", "k", "changed"]);
        for (w, name) in late.iter_mut().zip(["changed since", "unchanged"]) {
            exec(&mut transcript, name, w);
        }
        transcript
    };
    assert_eq!(run(true), run(false));
}

/// `math.random` and `math.randomseed` are Redis's (`redisLrand48`): a fresh server gives
/// scripts the same numbers as a fresh redis-server, with or without a seed, one
/// sequence across runs and SCRIPT FLUSH, and Lua's errors for empty intervals.
#[test]
fn math_random_gives_redis_numbers() {
    let script: &[&[&str]] = &[
        &[
            "EVAL",
            "local t = {} for i=1,3 do t[i] = tostring(math.random()) end return t",
            "0",
        ],
        &["EVAL", "return {math.random(10), math.random(-5, 5)}", "0"],
        &["SCRIPT", "FLUSH"],
        &["EVAL", "return tostring(math.random())", "0"],
        &[
            "EVAL",
            "math.randomseed(-7) return {tostring(math.random()), math.random(100)}",
            "0",
        ],
        &["EVAL", "return math.random(5, 1)", "0"],
        &["EVAL", "return math.random(1, 2, 3)", "0"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nlocal x = math.random()\nredis.register_function('f', function() return 1 end)",
        ],
    ];
    let transcripts: Vec<Vec<String>> = [
        common::AnyServer::redis(&[]),
        common::AnyServer::redline(&[]),
    ]
    .iter()
    .map(|server| {
        let mut c = Conn::connect(([127, 0, 0, 1], server.port).into());
        common::transcript(&mut c, script)
    })
    .collect();
    assert_eq!(transcripts[1], transcripts[0]);
}

/// Clients that find the script turn taken queue their batches, and the holder runs
/// them (see `scripting::turn`): 16 clients pipelining scripts between plain commands
/// each get every reply, in their own order, and every script runs exactly once; the
/// same on redis-server.
#[test]
fn pipelined_scripts_from_many_clients_each_run_once_in_order() {
    const CLIENTS: usize = 16;
    const ROUNDS: usize = 40;
    let run = |addr: SocketAddr| {
        Conn::connect(addr).cmd(&["DEL", "n"]);
        let threads: Vec<_> = (0..CLIENTS)
            .map(|id| {
                std::thread::spawn(move || {
                    let mut c = Conn::connect(addr);
                    let own = format!("own{id}");
                    for round in 0..ROUNDS {
                        c.send(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"]);
                        c.send(&["SET", &own, &round.to_string()]);
                        c.send(&["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"]);
                        c.send(&["EVAL", "return redis.call('get', KEYS[1])", "1", &own]);
                    }
                    let mut counted = Vec::new();
                    for round in 0..ROUNDS {
                        counted.push(int(&c.read().unwrap()));
                        assert_eq!(c.read(), Some(Frame::Simple("OK".into())));
                        assert!(
                            matches!(c.read(), Some(Frame::Error(e)) if e.starts_with(b"NOSCRIPT"))
                        );
                        assert_eq!(c.read(), Some(Frame::Bulk(round.to_string().into())));
                    }
                    assert!(counted.windows(2).all(|w| w[0] < w[1]), "{counted:?}");
                    counted
                })
            })
            .collect();
        let mut all: Vec<i64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.sort_unstable();
        let total = i64::try_from(CLIENTS * ROUNDS).unwrap();
        assert_eq!(all, (1..=total).collect::<Vec<_>>());
    };
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    run(redis.addr());
    run(ours.addr);
}

/// A debugging session holds the script turn across its prompts; scripts sent
/// meanwhile queue behind it and run once its client leaves, as on redis-server (which
/// serves nobody during a synchronous session).
#[test]
fn scripts_queued_behind_a_debugging_session_run_when_it_ends() {
    let run = |addr: SocketAddr| {
        Conn::connect(addr).cmd(&["DEL", "n"]);
        let mut debugging = Conn::connect(addr);
        debugging.cmd(&["SCRIPT", "DEBUG", "SYNC"]);
        debugging.send(&["EVAL", "redis.call('incr', 'n')", "0"]);
        // The session's first prompt: the turn is held from here on.
        assert!(debugging.read().is_some());
        let mut waiting: Vec<Conn> = (0..4).map(|_| Conn::connect(addr)).collect();
        for c in &mut waiting {
            c.send(&["EVAL", "return redis.call('incr', 'n')", "0"]);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(debugging);
        let mut replies: Vec<i64> = waiting
            .iter_mut()
            .map(|c| int(&c.read().unwrap()))
            .collect();
        replies.sort_unstable();
        replies
    };
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    let expected = run(redis.addr());
    assert_eq!(expected, vec![2, 3, 4, 5]);
    assert_eq!(run(ours.addr), expected);
}

/// Clients that queue scripts behind a long one and leave before it ends lose nothing
/// and leave nothing behind: their subscriptions and WATCHes are gone once their
/// batches come back to nobody, and the clients still there get their replies.
#[test]
fn clients_leaving_while_their_scripts_wait_leave_nothing_behind() {
    let ours = Redline::start();
    let addr = ours.addr;
    let mut admin = Conn::connect(addr);
    let mut slow = Conn::connect(addr);
    // About 300 ms of Lua, under the BUSY threshold.
    slow.send(&[
        "EVAL",
        "local t = redis.call('time') local start = t[1] * 1000000 + t[2] \
         local x = 0 while true do x = x + 1 if x % 10000 == 0 then \
         local n = redis.call('time') if n[1] * 1000000 + n[2] - start > 300000 then break end end end \
         return redis.call('incr', 'n')",
        "0",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let mut leaving = Vec::new();
    for _ in 0..4 {
        let mut c = Conn::connect(addr);
        c.cmd(&["HELLO", "3"]);
        c.cmd(&["SUBSCRIBE", "ch"]);
        c.cmd(&["WATCH", "w"]);
        c.send(&["EVAL", "return redis.call('incr', 'n')", "0"]);
        leaving.push(c);
    }
    let mut staying = Conn::connect(addr);
    staying.send(&["EVAL", "return redis.call('incr', 'n')", "0"]);
    drop(leaving);
    assert_eq!(int(&slow.read().unwrap()), 1);
    assert!(int(&staying.read().unwrap()) >= 2);
    wait_until_numsub_zero(&mut admin);
    assert_eq!(admin.cmd(&["GET", "n"]), Frame::Bulk("6".into()));
    assert_eq!(admin.cmd(&["EVAL", "return 7", "0"]), Frame::Integer(7));
}

fn wait_until_numsub_zero(admin: &mut Conn) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let reply = admin.cmd(&["PUBSUB", "NUMSUB", "ch"]);
        if reply == Frame::Array(vec![Frame::Bulk("ch".into()), Frame::Integer(0)]) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{}", show(&reply));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
