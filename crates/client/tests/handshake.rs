//! Connection setup against a real redis-server: HELLO 3 and RESP3 reply types, RESP2,
//! AUTH with requirepass and with an ACL user, typed auth errors, client name, SELECT.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use redline::{Client, Config, Error, Frame, Protocol, ServerErrorKind};
use redline_testkit::RedisServer;

#[tokio::test]
async fn hello3_replies_parse_as_resp3_types() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    client.hset("h", "f", "v").await.unwrap();
    client.sadd("s", ["a", "b"]).await.unwrap();
    client.zadd("z", 2.5, "m").await.unwrap();
    assert!(matches!(
        client.cmd(["HGETALL", "h"]).await.unwrap(),
        Frame::Map(_)
    ));
    assert!(matches!(
        client.cmd(["SMEMBERS", "s"]).await.unwrap(),
        Frame::Set(_)
    ));
    assert!(matches!(
        client.cmd(["ZSCORE", "z", "m"]).await.unwrap(),
        Frame::Double(d) if d == 2.5
    ));
    assert!(matches!(
        client.cmd(["GET", "nope"]).await.unwrap(),
        Frame::Null
    ));
    assert!(matches!(
        client.cmd(["SISMEMBER", "s", "a"]).await.unwrap(),
        Frame::Integer(1)
    ));
    assert!(matches!(
        client.cmd(["INFO", "server"]).await.unwrap(),
        Frame::Verbatim { .. }
    ));
    // The server agrees the connection speaks RESP3.
    let info: String = client
        .query(redline::Cmd::new("CLIENT").arg("INFO"))
        .await
        .unwrap();
    assert!(info.contains("resp=3"), "{info}");
}

#[tokio::test]
async fn resp2_when_asked() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&format!("{}?protocol=2", server.url()))
        .await
        .unwrap();
    client.hset("h", "f", "v").await.unwrap();
    assert!(matches!(
        client.cmd(["HGETALL", "h"]).await.unwrap(),
        Frame::Array(_)
    ));
    assert!(matches!(
        client.cmd(["GET", "nope"]).await.unwrap(),
        Frame::NullBulk
    ));
    let info: String = client
        .query(redline::Cmd::new("CLIENT").arg("INFO"))
        .await
        .unwrap();
    assert!(info.contains("resp=2"), "{info}");
}

#[tokio::test]
async fn name_and_database_are_applied() {
    let server = RedisServer::start().unwrap();
    let url = format!("{}/3?client_name=checkout-api", server.url());
    let client = Client::connect(&url).await.unwrap();
    let info: String = client
        .query(redline::Cmd::new("CLIENT").arg("INFO"))
        .await
        .unwrap();
    assert!(info.contains("name=checkout-api"), "{info}");
    assert!(info.contains("db=3"), "{info}");
    client.set("only-in-3", 1).await.unwrap();
    let db0 = Client::connect(&server.url()).await.unwrap();
    assert_eq!(db0.exists(["only-in-3"]).await.unwrap(), 0);
}

#[tokio::test]
async fn requirepass() {
    let server = RedisServer::builder().password("s3cret").start().unwrap();
    let url = format!("redis://:s3cret@{}", server.addr());
    for protocol in ["3", "2"] {
        let client = Client::connect(&format!("{url}?protocol={protocol}"))
            .await
            .unwrap();
        assert_eq!(client.ping().await.unwrap(), "PONG");
    }

    let wrong = format!("redis://:nope@{}", server.addr());
    for protocol in ["3", "2"] {
        let err = Client::connect(&format!("{wrong}?protocol={protocol}"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Auth {
                    kind: ServerErrorKind::WrongPass,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    let none = format!("redis://{}", server.addr());
    let err = Client::connect(&none).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Auth {
                kind: ServerErrorKind::NoAuth,
                ..
            }
        ),
        "{err:?}"
    );
    // RESP2 without credentials connects (nothing to check yet); commands are refused.
    let client = Client::connect(&format!("{none}?protocol=2"))
        .await
        .unwrap();
    let err = client.get("k").await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Auth {
                kind: ServerErrorKind::NoAuth,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn acl_user() {
    let server = RedisServer::start().unwrap();
    server
        .cmd(&[
            "ACL", "SETUSER", "alice", "on", ">wonder", "~app:*", "+@all",
        ])
        .unwrap();
    for protocol in [Protocol::Resp3, Protocol::Resp2] {
        let mut cfg = Config::from_url(&format!("redis://alice:wonder@{}", server.addr())).unwrap();
        cfg.protocol = protocol;
        let client = Client::from_config(cfg).await.unwrap();
        let me: String = client
            .query(redline::Cmd::new("ACL").arg("WHOAMI"))
            .await
            .unwrap();
        assert_eq!(me, "alice");
        client.set("app:1", "x").await.unwrap();
        // Outside the user's key pattern: a typed NOPERM error.
        let err = client.set("other", "x").await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Server {
                    kind: ServerErrorKind::NoPerm,
                    ..
                }
            ),
            "{err:?}"
        );

        let mut bad = Config::from_url(&format!("redis://alice:wrong@{}", server.addr())).unwrap();
        bad.protocol = protocol;
        let err = Client::from_config(bad).await.unwrap_err();
        assert!(matches!(err, Error::Auth { .. }), "{err:?}");
    }
}

#[tokio::test]
async fn connect_failures_are_typed() {
    // A port nothing listens on.
    let closed = redline_testkit::ClosedPort::new().unwrap();
    let err = Client::connect(&format!("redis://{}", closed.addr()))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Io {
                op: redline::IoOp::Connect,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_connection_error());

    // A listener that never answers the handshake: connect timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg = Config::from_url(&format!("redis://{}", silent.local_addr().unwrap())).unwrap();
    cfg.connect_timeout = Duration::from_millis(200);
    let err = Client::from_config(cfg).await.unwrap_err();
    assert!(matches!(err, Error::ConnectTimeout { .. }), "{err:?}");

    let err = Client::connect("redis://h?bogus=1").await.unwrap_err();
    assert!(matches!(err, Error::Url(_)), "{err:?}");
}
