//! The benchmark's tests: redis-benchmark's names and commands, plus `mixed` and custom
//! commands with `__rand_int__`.

use bytes::Bytes;
use redline::Cmd;

/// One test: what it is called and how it makes its commands.
#[derive(Debug, Clone)]
pub(crate) struct Test {
    /// Lower-case id, as given to `-t` and written in JSON (`set`, `lrange_100`...), or
    /// the custom command's text.
    pub(crate) id: String,
    /// The title redis-benchmark prints (`SET`, `LRANGE_100 (first 100 elements)`...).
    pub(crate) title: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Ping,
    Set,
    Get,
    Incr,
    Lpush,
    Rpush,
    Lpop,
    Rpop,
    Sadd,
    Hset,
    Spop,
    Zadd,
    Zpopmin,
    Lrange100,
    Mset,
    Mixed,
    /// Arguments; `__rand_int__` inside any of them is replaced per command.
    Custom(Vec<Bytes>),
}

/// Every built-in test id, in redis-benchmark's order.
pub(crate) const ALL: &[&str] = &[
    "ping",
    "set",
    "get",
    "incr",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "sadd",
    "hset",
    "spop",
    "zadd",
    "zpopmin",
    "lrange_100",
    "mset",
    "mixed",
];

/// The short standard set run when `-t` is not given.
pub(crate) const STANDARD: &[&str] = &["ping", "set", "get", "mixed"];

impl Test {
    /// A built-in test by id (case-insensitive; redis-benchmark's `lrange` and
    /// `ping_mbulk` spellings accepted).
    pub(crate) fn named(id: &str) -> Option<Test> {
        let id = id.trim().to_ascii_lowercase();
        let (kind, title) = match id.as_str() {
            "ping" | "ping_mbulk" | "ping_inline" => (Kind::Ping, "PING"),
            "set" => (Kind::Set, "SET"),
            "get" => (Kind::Get, "GET"),
            "incr" => (Kind::Incr, "INCR"),
            "lpush" => (Kind::Lpush, "LPUSH"),
            "rpush" => (Kind::Rpush, "RPUSH"),
            "lpop" => (Kind::Lpop, "LPOP"),
            "rpop" => (Kind::Rpop, "RPOP"),
            "sadd" => (Kind::Sadd, "SADD"),
            "hset" => (Kind::Hset, "HSET"),
            "spop" => (Kind::Spop, "SPOP"),
            "zadd" => (Kind::Zadd, "ZADD"),
            "zpopmin" => (Kind::Zpopmin, "ZPOPMIN"),
            "lrange" | "lrange_100" => (Kind::Lrange100, "LRANGE_100 (first 100 elements)"),
            "mset" => (Kind::Mset, "MSET (10 keys)"),
            "mixed" => (Kind::Mixed, "MIXED (80% GET, 20% SET)"),
            _ => return None,
        };
        let id = match kind {
            Kind::Ping => "ping".to_owned(),
            Kind::Lrange100 => "lrange_100".to_owned(),
            _ => id,
        };
        Some(Test {
            id,
            title: title.to_owned(),
            kind,
        })
    }

    /// A custom command given on the command line.
    pub(crate) fn custom(args: Vec<Bytes>) -> Test {
        let text = args
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        Test {
            id: text.clone(),
            title: text,
            kind: Kind::Custom(args),
        }
    }

    /// Commands to run untimed before the test (LRANGE needs a list to read).
    pub(crate) fn setup(&self, data: &Bytes) -> Vec<Cmd> {
        match self.kind {
            Kind::Lrange100 => (0..100)
                .map(|_| Cmd::new("LPUSH").arg("mylist").arg(data.clone()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The next command, drawing keys from `keys`.
    pub(crate) fn command(&self, keys: &mut Keys, data: &Bytes) -> Cmd {
        match &self.kind {
            Kind::Ping => Cmd::new("PING"),
            Kind::Set => Cmd::new("SET").arg(keys.key("key:")).arg(data.clone()),
            Kind::Get => Cmd::new("GET").arg(keys.key("key:")),
            Kind::Incr => Cmd::new("INCR").arg(keys.key("counter:")),
            Kind::Lpush => Cmd::new("LPUSH").arg("mylist").arg(data.clone()),
            Kind::Rpush => Cmd::new("RPUSH").arg("mylist").arg(data.clone()),
            Kind::Lpop => Cmd::new("LPOP").arg("mylist"),
            Kind::Rpop => Cmd::new("RPOP").arg("mylist"),
            Kind::Sadd => Cmd::new("SADD").arg("myset").arg(keys.key("element:")),
            Kind::Hset => Cmd::new("HSET")
                .arg("myhash")
                .arg(keys.key("element:"))
                .arg(data.clone()),
            Kind::Spop => Cmd::new("SPOP").arg("myset"),
            Kind::Zadd => Cmd::new("ZADD")
                .arg("myzset")
                .arg(keys.score())
                .arg(keys.key("element:")),
            Kind::Zpopmin => Cmd::new("ZPOPMIN").arg("myzset"),
            Kind::Lrange100 => Cmd::new("LRANGE").arg("mylist").arg(0).arg(99),
            Kind::Mset => {
                let mut cmd = Cmd::new("MSET");
                for _ in 0..10 {
                    cmd.push_arg(keys.key("key:"));
                    cmd.push_arg(data.clone());
                }
                cmd
            }
            Kind::Mixed => {
                if fastrand::u8(0..10) < 8 {
                    Cmd::new("GET").arg(keys.key("key:"))
                } else {
                    Cmd::new("SET").arg(keys.key("key:")).arg(data.clone())
                }
            }
            Kind::Custom(args) => {
                let mut cmd: Option<Cmd> = None;
                for arg in args {
                    let arg = keys.substitute(arg);
                    match &mut cmd {
                        None => cmd = Some(Cmd::new(arg)),
                        Some(cmd) => cmd.push_arg(arg),
                    }
                }
                cmd.unwrap_or_else(|| Cmd::new("PING"))
            }
        }
    }
}

/// Key names as redis-benchmark makes them: `prefix__rand_int__` literally without `-r`,
/// `prefix` + a 12-digit random number below the keyspace with `-r`.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    keyspace: Option<u64>,
    rng: fastrand::Rng,
    /// The last key made; commands copy it while encoding, so no allocation per key.
    buf: Vec<u8>,
}

const PLACEHOLDER: &[u8] = b"__rand_int__";

impl Keys {
    /// Keys for one worker; `keyspace` is `-r`.
    pub(crate) fn new(keyspace: Option<u64>) -> Keys {
        Keys {
            keyspace,
            rng: fastrand::Rng::new(),
            buf: Vec::with_capacity(32),
        }
    }

    fn number(&mut self) -> String {
        match self.keyspace {
            Some(n) => format!("{:012}", self.rng.u64(0..n.max(1))),
            None => "__rand_int__".to_owned(),
        }
    }

    fn key(&mut self, prefix: &str) -> &[u8] {
        self.buf.clear();
        self.buf.extend_from_slice(prefix.as_bytes());
        match self.keyspace {
            Some(n) => {
                // redis-benchmark's %012d.
                let mut v = self.rng.u64(0..n.max(1));
                let start = self.buf.len();
                self.buf.resize(start + 12, b'0');
                let mut pos = start + 12;
                while v > 0 && pos > start {
                    pos -= 1;
                    self.buf[pos] = b'0' + (v % 10) as u8;
                    v /= 10;
                }
            }
            None => self.buf.extend_from_slice(PLACEHOLDER),
        }
        &self.buf
    }

    fn score(&mut self) -> u64 {
        self.rng.u64(0..self.keyspace.unwrap_or(1_000_000).max(1))
    }

    /// `arg` with every `__rand_int__` replaced (each by its own number, as redis-benchmark).
    fn substitute(&mut self, arg: &Bytes) -> Bytes {
        if self.keyspace.is_none() || !contains(arg, PLACEHOLDER) {
            return arg.clone();
        }
        let mut out = Vec::with_capacity(arg.len());
        let mut rest = &arg[..];
        while let Some(at) = find(rest, PLACEHOLDER) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(self.number().as_bytes());
            rest = &rest[at + PLACEHOLDER.len()..];
        }
        out.extend_from_slice(rest);
        Bytes::from(out)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_resolves() {
        for id in ALL {
            let test = Test::named(id);
            assert_eq!(test.map(|t| t.id), Some((*id).to_owned()));
        }
        assert!(Test::named("nope").is_none());
    }

    #[test]
    fn rand_int_is_replaced_with_a_keyspace() {
        let mut keys = Keys::new(Some(10));
        let out = keys.substitute(&Bytes::from_static(b"k:__rand_int__:__rand_int__"));
        assert_eq!(out.len(), "k::".len() + 24);
        assert!(out.starts_with(b"k:00000000000"));
        let mut fixed = Keys::new(None);
        assert_eq!(fixed.key("key:"), b"key:__rand_int__");
        let mut random = Keys::new(Some(1000));
        let key = random.key("key:").to_vec();
        assert_eq!(key.len(), 4 + 12);
        assert!(key.starts_with(b"key:000000000"), "{key:?}");
    }
}
