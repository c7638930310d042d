//! The commands a new connection runs before it carries traffic.
//!
//! Round trip 1: `HELLO 3 [AUTH user pass] [SETNAME name]`. A server without HELLO
//! (Redis < 6) or without RESP3 (`NOPROTO`) gets `AUTH` and `CLIENT SETNAME` instead and
//! the connection stays RESP2. Round trip 2, pipelined: `CLIENT SETINFO LIB-NAME`,
//! `CLIENT SETINFO LIB-VER` (errors ignored: Redis < 7.2 lacks them) and `SELECT db`.
//! All commands are encoded once per client, not per connection attempt.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use redline_resp::{encode, Frame, Protocol};

use super::Connection;
use crate::config::Config;
use crate::error::{Error, ServerErrorKind};

/// Pre-encoded handshake commands.
#[derive(Debug)]
pub(crate) struct Handshake {
    /// `HELLO 3 ...`, when RESP3 is wanted.
    hello: Option<Bytes>,
    /// `AUTH` and/or `CLIENT SETNAME`, pipelined, for RESP2 servers; and how many.
    legacy: Bytes,
    legacy_count: usize,
    /// `CLIENT SETINFO` x2 and `SELECT` if db != 0.
    post: Bytes,
    select: bool,
    /// `READONLY` last (cluster replica reads): set by [`Handshake::readonly`].
    readonly: bool,
}

impl Handshake {
    pub(crate) fn from_config(cfg: &Config) -> Handshake {
        let user = cfg.username.as_deref().unwrap_or("default");
        let hello = (cfg.protocol == Protocol::Resp3).then(|| {
            let mut args: Vec<&str> = vec!["HELLO", "3"];
            if let Some(pass) = &cfg.password {
                args.extend(["AUTH", user, pass]);
            }
            if let Some(name) = &cfg.client_name {
                args.extend(["SETNAME", name]);
            }
            encoded(&args)
        });

        let mut legacy = BytesMut::new();
        let mut legacy_count = 0;
        if let Some(pass) = &cfg.password {
            // Without a user name, the one-argument form also works on Redis < 6.
            match &cfg.username {
                Some(user) => encode::command(&mut legacy, ["AUTH", user, pass]),
                None => encode::command(&mut legacy, ["AUTH", pass]),
            }
            legacy_count += 1;
        }
        if let Some(name) = &cfg.client_name {
            encode::command(&mut legacy, ["CLIENT", "SETNAME", name]);
            legacy_count += 1;
        }

        let mut post = BytesMut::new();
        encode::command(&mut post, ["CLIENT", "SETINFO", "LIB-NAME", "redline"]);
        encode::command(
            &mut post,
            ["CLIENT", "SETINFO", "LIB-VER", env!("CARGO_PKG_VERSION")],
        );
        let select = cfg.db != 0;
        if select {
            let mut digits = itoa::Buffer::new();
            encode::command(&mut post, ["SELECT", digits.format(cfg.db)]);
        }
        Handshake {
            hello,
            legacy: legacy.freeze(),
            legacy_count,
            post: post.freeze(),
            select,
            readonly: false,
        }
    }

    /// Adds `READONLY` to the handshake, so every (re)connection may serve reads from a
    /// cluster replica.
    pub(crate) fn readonly(&mut self) {
        let mut post = BytesMut::from(&self.post[..]);
        encode::command(&mut post, ["READONLY"]);
        self.post = post.freeze();
        self.readonly = true;
    }

    /// Runs the handshake and returns the protocol the connection speaks.
    pub(crate) async fn run(
        &self,
        conn: &mut Connection,
        addr: &Arc<str>,
    ) -> Result<Protocol, Error> {
        let mut protocol = Protocol::Resp2;
        let mut need_legacy = true;
        if let Some(hello) = &self.hello {
            conn.write_all(hello, addr).await?;
            match conn.read_reply(addr).await? {
                Frame::Error(e) | Frame::BulkError(e) => {
                    let err = Error::from_server_reply(&e);
                    if !hello_unsupported(&err) {
                        return Err(err);
                    }
                }
                _ => {
                    protocol = Protocol::Resp3;
                    need_legacy = false;
                }
            }
        }
        if need_legacy && self.legacy_count > 0 {
            conn.write_all(&self.legacy, addr).await?;
            for _ in 0..self.legacy_count {
                if let Frame::Error(e) | Frame::BulkError(e) = conn.read_reply(addr).await? {
                    return Err(auth_error(Error::from_server_reply(&e)));
                }
            }
        }
        conn.write_all(&self.post, addr).await?;
        // CLIENT SETINFO: unknown before Redis 7.2; its errors do not matter.
        conn.read_reply(addr).await?;
        conn.read_reply(addr).await?;
        if self.select {
            if let Frame::Error(e) | Frame::BulkError(e) = conn.read_reply(addr).await? {
                return Err(Error::from_server_reply(&e));
            }
        }
        if self.readonly {
            if let Frame::Error(e) | Frame::BulkError(e) = conn.read_reply(addr).await? {
                return Err(Error::from_server_reply(&e));
            }
        }
        Ok(protocol)
    }
}

fn encoded(args: &[&str]) -> Bytes {
    let mut out = BytesMut::new();
    encode::command(&mut out, args.iter());
    out.freeze()
}

/// True when HELLO failed because the server lacks it or RESP3, not because of the
/// credentials: then the RESP2 path is tried.
fn hello_unsupported(err: &Error) -> bool {
    match err {
        Error::Server { kind, message } => match kind {
            ServerErrorKind::NoProto => true,
            ServerErrorKind::Err => message.to_ascii_lowercase().contains("unknown command"),
            _ => false,
        },
        _ => false,
    }
}

/// AUTH failures on old servers come as `-ERR invalid password`; report them as auth
/// errors like WRONGPASS.
fn auth_error(err: Error) -> Error {
    match err {
        Error::Server {
            kind: ServerErrorKind::Err,
            message,
        } if message.to_ascii_lowercase().contains("password") => Error::Auth {
            kind: ServerErrorKind::Err,
            message,
        },
        other => other,
    }
}
