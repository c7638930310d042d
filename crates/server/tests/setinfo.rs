//! CLIENT SETINFO (Redis 7.2, sent by current clients during their handshake) goes
//! through the same checks as any command: authentication, ACL permissions, the RESP2
//! subscribed context and MULTI queueing, and answers as Redis 7.2 does. Redis 7.0 does
//! not know the command, so these cases are checked against redline alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{show, Conn, Redline};

fn reply(conn: &mut Conn, args: &[&str]) -> String {
    show(&conn.cmd(args))
}

#[test]
fn setinfo_obeys_auth_acl_pubsub_and_multi() {
    let server = Redline::start_with(&["--requirepass", "pw"]);
    let mut c = Conn::connect(server.addr);
    assert_eq!(
        reply(&mut c, &["CLIENT", "SETINFO", "LIB-NAME", "x"]),
        r#"Error(b"NOAUTH Authentication required.")"#
    );
    assert_eq!(reply(&mut c, &["AUTH", "pw"]), r#"Simple(b"OK")"#);
    assert_eq!(
        reply(&mut c, &["CLIENT", "SETINFO", "LIB-NAME", "x"]),
        r#"Simple(b"OK")"#
    );
    assert_eq!(
        reply(&mut c, &["CLIENT", "SETINFO", "LIB-NAME"]),
        r#"Error(b"ERR wrong number of arguments for 'client|setinfo' command")"#
    );
    assert_eq!(
        reply(&mut c, &["CLIENT", "SETINFO", "NOPE", "x"]),
        r#"Error(b"ERR Unrecognized option 'NOPE'")"#
    );

    // Inside MULTI it is queued, and runs at EXEC.
    assert_eq!(reply(&mut c, &["MULTI"]), r#"Simple(b"OK")"#);
    assert_eq!(
        reply(&mut c, &["CLIENT", "SETINFO", "LIB-VER", "1.0"]),
        r#"Simple(b"QUEUED")"#
    );
    assert_eq!(reply(&mut c, &["EXEC"]), r#"Array([Simple(b"OK")])"#);
    // A wrong arity inside MULTI dooms the transaction, as for any command.
    assert_eq!(reply(&mut c, &["MULTI"]), r#"Simple(b"OK")"#);
    assert_eq!(
        reply(&mut c, &["CLIENT", "SETINFO", "LIB-VER"]),
        r#"Error(b"ERR wrong number of arguments for 'client|setinfo' command")"#
    );
    assert_eq!(
        reply(&mut c, &["EXEC"]),
        r#"Error(b"EXECABORT Transaction discarded because of previous errors.")"#
    );

    // ACL: allowed by +@all or +client, refused otherwise.
    for (rules, allowed) in [
        (&["+@all", "-get"][..], true),
        (&["-@all", "+client"][..], true),
        (&["-@all", "+get", "+client|setname"][..], false),
    ] {
        let mut args = vec!["ACL", "SETUSER", "u", "reset", "on", "nopass"];
        args.extend_from_slice(rules);
        assert_eq!(reply(&mut c, &args), r#"Simple(b"OK")"#);
        let mut u = Conn::connect(server.addr);
        assert_eq!(reply(&mut u, &["AUTH", "u", "x"]), r#"Simple(b"OK")"#);
        let expected = if allowed {
            r#"Simple(b"OK")"#
        } else {
            r#"Error(b"NOPERM this user has no permissions to run the 'client|setinfo' command")"#
        };
        assert_eq!(
            reply(&mut u, &["CLIENT", "SETINFO", "LIB-NAME", "x"]),
            expected,
            "{rules:?}"
        );
    }

    // RESP2 subscribed context.
    assert_eq!(
        show(&c.cmd(&["SUBSCRIBE", "ch"])),
        r#"Array([Bulk(b"subscribe"), Bulk(b"ch"), Integer(1)])"#
    );
    assert_eq!(
        reply(&mut c, &["CLIENT", "SETINFO", "LIB-NAME", "x"]),
        r#"Error(b"ERR Can't execute 'client|setinfo': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")"#
    );
}
