//! A tiny blocking RESP2 client for controlling test servers: readiness pings, `CLUSTER`
//! queries, `ROLE`, `INFO`.
//!
//! It is deliberately separate from `redline-resp` (testkit depends on nothing of ours) and
//! deliberately small: RESP2 replies only, one command at a time, plain TCP or TLS. It is
//! what the kit uses to decide a server is up; the code under test never goes through it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};

use crate::error::{Error, Result};

/// A RESP2 reply, as the control connection reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:1`
    Integer(i64),
    /// `$3\r\nabc`, or `None` for `$-1`.
    Bulk(Option<Vec<u8>>),
    /// `*2 ...`, or `None` for `*-1`.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as text: simple strings, bulks and integers; `None` for the rest.
    ///
    /// ```
    /// use redline_testkit::Reply;
    /// assert_eq!(Reply::Simple("PONG".into()).text().as_deref(), Some("PONG"));
    /// assert_eq!(Reply::Bulk(None).text(), None);
    /// ```
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Simple(s) => Some(s.clone()),
            Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            Reply::Integer(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// The elements of an array reply; `None` for anything else.
    pub fn items(&self) -> Option<&[Reply]> {
        match self {
            Reply::Array(Some(items)) => Some(items),
            _ => None,
        }
    }

    /// The integer of an integer reply.
    pub fn integer(&self) -> Option<i64> {
        match self {
            Reply::Integer(n) => Some(*n),
            _ => None,
        }
    }
}

/// TLS settings of a control connection: the CA to trust (DER).
#[derive(Clone, Debug)]
pub(crate) struct TlsClient {
    config: Arc<rustls::ClientConfig>,
}

impl TlsClient {
    pub(crate) fn new(ca_der: &[u8]) -> Result<Self> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(ca_der.to_vec()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(TlsClient {
            config: Arc::new(config),
        })
    }
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// One control connection to a server.
pub(crate) struct Conn {
    addr: SocketAddr,
    stream: BufReader<Stream>,
}

/// Bounds every control operation, so a wedged server fails a test instead of hanging it.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Control replies are small; a larger length means a confused stream, not data.
const MAX_BULK: usize = 64 << 20;

impl Conn {
    /// Connects (and authenticates when `password` is given).
    pub(crate) fn open(
        addr: SocketAddr,
        tls: Option<&TlsClient>,
        password: Option<&str>,
    ) -> Result<Self> {
        let ctx = |what: &str| format!("{what} {addr}");
        let tcp = TcpStream::connect_timeout(&addr, IO_TIMEOUT)
            .map_err(|e| Error::io(ctx("connect to"), e))?;
        tcp.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| tcp.set_write_timeout(Some(IO_TIMEOUT)))
            .and_then(|()| tcp.set_nodelay(true))
            .map_err(|e| Error::io(ctx("configure socket to"), e))?;
        let stream = match tls {
            None => Stream::Plain(tcp),
            Some(tls) => {
                let name = ServerName::IpAddress(addr.ip().into());
                let conn = rustls::ClientConnection::new(tls.config.clone(), name)?;
                let mut s = rustls::StreamOwned::new(conn, tcp);
                // Handshake now, so a TLS failure surfaces as such and not as a bad reply.
                while s.conn.is_handshaking() {
                    s.conn
                        .complete_io(&mut s.sock)
                        .map_err(|e| Error::io(ctx("TLS handshake with"), e))?;
                }
                Stream::Tls(Box::new(s))
            }
        };
        let mut conn = Conn {
            addr,
            stream: BufReader::new(stream),
        };
        if let Some(pw) = password {
            conn.expect_ok(&["AUTH", pw])?;
        }
        Ok(conn)
    }

    /// Sends one command and reads its reply (error replies are `Ok(Reply::Error)`).
    pub(crate) fn cmd(&mut self, args: &[&str]) -> Result<Reply> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        let w = self.stream.get_mut();
        w.write_all(&out)
            .and_then(|()| w.flush())
            .map_err(|e| Error::io(format!("send {} to {}", args.join(" "), self.addr), e))?;
        self.read_reply(0)
    }

    /// Sends a command and requires `+OK`.
    pub(crate) fn expect_ok(&mut self, args: &[&str]) -> Result<()> {
        match self.cmd(args)? {
            Reply::Simple(s) if s == "OK" => Ok(()),
            other => Err(self.unexpected(args, &other)),
        }
    }

    /// Sends a command and requires a bulk or simple string.
    pub(crate) fn text(&mut self, args: &[&str]) -> Result<String> {
        let reply = self.cmd(args)?;
        match reply.text() {
            Some(t) if !matches!(reply, Reply::Integer(_)) => Ok(t),
            _ => Err(self.unexpected(args, &reply)),
        }
    }

    pub(crate) fn unexpected(&self, args: &[&str], reply: &Reply) -> Error {
        // AUTH's argument is a secret only by convention here, but keep it out of logs anyway.
        let command = match args.first() {
            Some(first) if first.eq_ignore_ascii_case("AUTH") => "AUTH ***".to_string(),
            _ => args.join(" "),
        };
        Error::Reply {
            command,
            addr: self.addr.to_string(),
            reply: format!("{reply:?}"),
        }
    }

    fn read_reply(&mut self, depth: usize) -> Result<Reply> {
        if depth > 32 {
            return Err(self.protocol("nesting deeper than 32"));
        }
        let line = self.read_line()?;
        let (kind, rest) = match line.split_first() {
            Some((k, rest)) => (*k, String::from_utf8_lossy(rest).into_owned()),
            None => return Err(self.protocol("empty line")),
        };
        match kind {
            b'+' => Ok(Reply::Simple(rest)),
            b'-' => Ok(Reply::Error(rest)),
            b':' => Ok(Reply::Integer(self.number(&rest)?)),
            b'$' => {
                let len = self.number(&rest)?;
                if len < 0 {
                    return Ok(Reply::Bulk(None));
                }
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&n| n <= MAX_BULK)
                    .ok_or_else(|| self.protocol(&format!("bulk length {len}")))?;
                let mut data = vec![0; len + 2];
                self.stream
                    .read_exact(&mut data)
                    .map_err(|e| Error::io(format!("read from {}", self.addr), e))?;
                data.truncate(len);
                Ok(Reply::Bulk(Some(data)))
            }
            b'*' => {
                let len = self.number(&rest)?;
                if len < 0 {
                    return Ok(Reply::Array(None));
                }
                let mut items = Vec::new();
                for _ in 0..len {
                    items.push(self.read_reply(depth + 1)?);
                }
                Ok(Reply::Array(Some(items)))
            }
            other => Err(self.protocol(&format!("unexpected type byte {:?}", other as char))),
        }
    }

    fn read_line(&mut self) -> Result<Vec<u8>> {
        let mut line = Vec::new();
        let n = self
            .stream
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(format!("read from {}", self.addr), e))?;
        if n == 0 {
            return Err(Error::io(
                format!("read from {}", self.addr),
                std::io::ErrorKind::UnexpectedEof.into(),
            ));
        }
        if !line.ends_with(b"\r\n") {
            return Err(self.protocol("line without CRLF"));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }

    fn number(&self, text: &str) -> Result<i64> {
        text.parse()
            .map_err(|_| self.protocol(&format!("bad number {text:?}")))
    }

    fn protocol(&self, detail: &str) -> Error {
        Error::Protocol {
            addr: self.addr.to_string(),
            detail: detail.to_string(),
        }
    }
}

/// Parses `key:value` lines of `INFO` or `CLUSTER INFO`.
pub(crate) fn info_field<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k == key).then(|| v.trim_end())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fields() {
        let info = "# Cluster\r\ncluster_state:ok\r\ncluster_known_nodes:6\r\n";
        assert_eq!(info_field(info, "cluster_state"), Some("ok"));
        assert_eq!(info_field(info, "cluster_known_nodes"), Some("6"));
        assert_eq!(info_field(info, "missing"), None);
    }
}
