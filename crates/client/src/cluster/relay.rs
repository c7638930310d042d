//! Commands that arrive already encoded and whose replies leave encoded, as in a proxy
//! (`redline tunnel`): single-slot commands are neither copied into a [`Cmd`] nor
//! decoded on the way back. Each reply is handed over as the bytes the node sent.
//!
//! A [`RelayCommand`] is read once, in one pass over its bytes: where it ends, its
//! command-table entry, whether it may share a connection, and its slot. A proxy learns
//! all it needs to decide from that pass, and [`ClusterClient::relay`] reads nothing
//! again.
//!
//! [`Cmd`]: crate::Cmd

use bytes::{Bytes, BytesMut};
use redline_resp::command::{self, CommandSpec};
use redline_resp::{Limits, ProtocolError};

use crate::args::Args;
use crate::cmd::{traits_of, Restriction, Traits};
use crate::error::Error;

use super::batch::{self, BatchReply};
use super::client::{error_as_reply, multiplexable, ClusterClient};
use super::config::ReadFrom;
use super::exec::{send_to_slot, SlotCommand};
use super::route::{
    has_fixed_keys, keyed_target, route_with, CommonSlot, Fanout, KeyRange, Route, Target,
};

/// One command as a client sent it (a RESP array of bulk strings), read for
/// [`ClusterClient::relay`].
///
/// ```
/// use bytes::{Bytes, BytesMut};
/// use redline::RelayCommand;
///
/// // Whole commands are split off the front of a read buffer; the rest stays.
/// let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI"[..]);
/// let get = RelayCommand::split_from(&mut buf).unwrap();
/// assert_eq!(get.spec().map(|spec| spec.name), Some("get"));
/// assert!(get.shares_connection());
/// assert!(RelayCommand::split_from(&mut buf).is_none()); // incomplete
/// assert_eq!(&buf[..], b"*1\r\n$4\r\nPI");
///
/// let blpop = RelayCommand::new(Bytes::from_static(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nl\r\n$1\r\n0\r\n"));
/// assert!(!blpop.unwrap().shares_connection());
/// ```
#[derive(Debug, Clone)]
pub struct RelayCommand {
    bytes: Bytes,
    spec: Option<&'static CommandSpec>,
    restriction: Restriction,
    route: Route,
}

/// What one pass over a command learns.
struct Read {
    len: usize,
    spec: Option<&'static CommandSpec>,
    restriction: Restriction,
    route: Route,
}

impl RelayCommand {
    /// Reads `bytes`, which must be exactly one command; a protocol error otherwise.
    pub fn new(bytes: Bytes) -> Result<RelayCommand, Error> {
        match read(&bytes) {
            Some(read) if read.len == bytes.len() => Ok(RelayCommand::from_read(bytes, read)),
            _ => Err(Error::Protocol(ProtocolError::InvalidMultibulkLength)),
        }
    }

    /// Splits the command at the front of `buf` off it. `None`, with `buf` untouched,
    /// when `buf` does not start with a whole command this reads: incomplete, inline,
    /// empty (`*0`), or a header Redis would refuse. Decode those another way; a decoder
    /// gives the exact protocol error.
    pub fn split_from(buf: &mut BytesMut) -> Option<RelayCommand> {
        let read = read(buf)?;
        let bytes = buf.split_to(read.len).freeze();
        Some(RelayCommand::from_read(bytes, read))
    }

    fn from_read(bytes: Bytes, read: Read) -> RelayCommand {
        RelayCommand {
            bytes,
            spec: read.spec,
            restriction: read.restriction,
            route: read.route,
        }
    }

    /// The command as it was sent.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The command as it was sent, taken out.
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// The command's entry in the command table (the top-level command's, for a
    /// subcommand); `None` for a name the table does not have.
    pub fn spec(&self) -> Option<&'static CommandSpec> {
        self.spec
    }

    /// Whether it may run on a shared connection, so that [`ClusterClient::relay`] sends
    /// it. Commands that block (`BLPOP`, `XREAD ... BLOCK`, `WAIT`) or change the
    /// connection itself (`SUBSCRIBE`, `WATCH`, `MULTI`, `SELECT`...) may not.
    pub fn shares_connection(&self) -> bool {
        multiplexable(self.restriction).is_ok()
    }
}

/// Reads the command at the start of `buf` in one pass: its length, entry, traits and,
/// when its keys sit at fixed positions, their slot. `None` when `buf` does not start
/// with a whole command of at least one argument whose headers Redis accepts.
fn read(buf: &[u8]) -> Option<Read> {
    let mut args = Args::new(buf)?;
    let argc = args.remaining();
    // A bulk longer than Redis accepts would end a shared connection: the decoder
    // refuses it instead.
    let mut next = || {
        args.next()
            .filter(|arg| arg.len() <= Limits::DEFAULT.max_bulk_len)
    };
    let name = next()?;
    let spec = command::lookup(name);
    let mut traits = spec.map_or(Traits::PLAIN, traits_of);
    let watches = traits.watches_args();
    // Keys are hashed on the way when their positions are fixed; other commands are
    // routed afterwards by the key-spec rules.
    let keys = spec
        .filter(|spec| has_fixed_keys(spec) && !spec.has_subcommands())
        .map(|spec| KeyRange::of(spec, argc));
    let mut slot = CommonSlot::default();
    for index in 1..argc {
        let arg = next()?;
        if watches {
            traits.after_arg(index, arg);
        }
        if let Some(Some(range)) = &keys {
            if range.holds(index) {
                slot.add(arg);
            }
        }
    }
    let len = args.position();
    let route = match (spec, keys) {
        (None, _) => Route::UNKNOWN,
        (Some(spec), Some(Some(_))) => Route {
            target: keyed_target(spec, slot.get()),
            readonly: spec.is_readonly(),
        },
        (Some(spec), Some(None)) => Route {
            target: Target::Keyless(Fanout::Any),
            readonly: spec.is_readonly(),
        },
        (Some(_), None) => route_with(spec, &buf[..len]),
    };
    Some(Read {
        len,
        spec,
        restriction: traits.restriction,
        route,
    })
}

impl ClusterClient {
    /// Sends commands received as RESP (each read into a [`RelayCommand`]) and returns
    /// each one's reply as the server encoded it, in order.
    ///
    /// For proxies: commands on one slot are forwarded as they came and grouped per node
    /// (one write per node, nodes in parallel), and their replies are the node's bytes,
    /// not decoded and encoded again. Redirects, failover and cross-slot splits are
    /// handled as for every command; keyless commands (`DBSIZE`, `KEYS`...) and splits run
    /// after the commands before them, so the order of effects is kept.
    ///
    /// Error replies are replies (`Ok`), including those the client gives as Redis would
    /// (`-CROSSSLOT`); `Err` is a command that got no reply (connection lost, timeout, a
    /// command that needs a connection of its own: see
    /// [`RelayCommand::shares_connection`]).
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// use bytes::Bytes;
    /// use redline::RelayCommand;
    ///
    /// let requests = [
    ///     RelayCommand::new(Bytes::from_static(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"))?,
    ///     RelayCommand::new(Bytes::from_static(b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n"))?,
    /// ];
    /// let replies = cluster.relay(&requests).await;
    /// assert_eq!(replies[0].as_deref().ok(), Some(&b"+OK\r\n"[..]));
    /// assert_eq!(replies[1].as_deref().ok(), Some(&b"$1\r\n1\r\n"[..]));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn relay(&self, requests: &[RelayCommand]) -> Vec<Result<Bytes, Error>> {
        let read_from = self.shared().cfg.read_from;
        if let [request] = requests {
            // One command (a client that does not pipeline): no batch bookkeeping.
            let reply = match multiplexable(request.restriction) {
                Ok(()) => self.relay_routed(request, read_from).await,
                Err(err) => Err(err),
            };
            return vec![reply];
        }
        // Runs of single-slot commands go out together. A command that does not join
        // one (keyless, split, refused) runs after the commands before it.
        let mut stage = Stage::new(0, requests.len());
        // Only a batch with such a command needs an output of its own; the usual one is
        // its single stage's replies as they come.
        let mut out: Option<Vec<Result<Bytes, Error>>> = None;
        for (i, request) in requests.iter().enumerate() {
            let shares = multiplexable(request.restriction);
            if let (Ok(()), Target::Slot(slot)) = (&shares, request.route.target) {
                let cmd = SlotCommand {
                    slot,
                    readonly: request.route.readonly,
                    replica: read_from == ReadFrom::Replica,
                };
                stage.items.push((request.bytes.clone(), cmd));
                continue;
            }
            // Every slot is filled; the placeholder costs nothing to build.
            let out =
                out.get_or_insert_with(|| requests.iter().map(|_| Err(Error::Closed)).collect());
            let rest = requests.len() - i - 1;
            std::mem::replace(&mut stage, Stage::new(i + 1, rest))
                .send(self, out)
                .await;
            out[i] = match shares {
                Ok(()) => self.relay_routed(request, read_from).await,
                Err(err) => Err(err),
            };
        }
        match out {
            None => stage.replies(self).await,
            Some(mut out) => {
                stage.send(self, &mut out).await;
                out
            }
        }
    }

    /// One command on the single-command path, its reply decoded and encoded again.
    async fn relay_routed(
        &self,
        request: &RelayCommand,
        read_from: ReadFrom,
    ) -> Result<Bytes, Error> {
        let reply = self
            .execute_routed(request.bytes.clone(), request.route, read_from)
            .await;
        error_as_reply(reply).map(Bytes::from_frame)
    }
}

/// A run of single-slot commands, collected to go out together.
struct Stage {
    /// Where the run starts in the output.
    start: usize,
    items: Vec<(Bytes, SlotCommand)>,
}

impl Stage {
    fn new(start: usize, capacity: usize) -> Stage {
        Stage {
            start,
            items: Vec::with_capacity(capacity),
        }
    }

    /// The run's replies, in order.
    async fn replies(mut self, client: &ClusterClient) -> Vec<Result<Bytes, Error>> {
        let shared = client.shared();
        if self.items.len() > 1 {
            return batch::run::<Bytes>(shared, self.items).await;
        }
        // Alone, the single-command path costs fewer allocations than a batch, and
        // decoding and encoding one reply is less than the batch's bookkeeping.
        match self.items.pop() {
            Some((bytes, cmd)) => vec![send_to_slot(shared, bytes, cmd)
                .await
                .map(Bytes::from_frame)],
            None => Vec::new(),
        }
    }

    /// The run's replies, into their places in `out`.
    async fn send(self, client: &ClusterClient, out: &mut [Result<Bytes, Error>]) {
        let start = self.start;
        for (slot, reply) in out[start..].iter_mut().zip(self.replies(client).await) {
            *slot = reply;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::route::route;
    use crate::cmd::inspect;
    use crate::Cmd;

    const COMMANDS: &[&[&str]] = &[
        &["GET", "k"],
        &["get", "user:{42}:name"],
        &["SET", "k", "v", "EX", "10"],
        &["MGET", "a", "b", "c"],
        &["MGET", "{t}a", "{t}b"],
        &["MSET", "a", "1", "b", "2"],
        &["DEL", "a"],
        &["LMOVE", "{x}a", "{x}b", "LEFT", "RIGHT"],
        &["EVAL", "return 1", "2", "{s}a", "{s}b", "arg"],
        &["XREAD", "COUNT", "2", "STREAMS", "s1", "0"],
        &["XREAD", "BLOCK", "0", "STREAMS", "s1", "$"],
        &["OBJECT", "ENCODING", "k"],
        &["CLIENT", "LIST"],
        &["CLIENT", "REPLY", "OFF"],
        &["PING"],
        &["DBSIZE"],
        &["KEYS", "*"],
        &["NOSUCHCOMMAND", "x"],
        &["GET"],
        &["ZUNIONSTORE", "{z}d", "2", "{z}a", "{z}b"],
        &["BLPOP", "l", "0"],
        &["WAIT", "1", "0"],
        &["MULTI"],
        &["SUBSCRIBE", "ch"],
        &["SELECT", "1"],
        &["BITOP", "AND", "{b}d", "{b}s"],
    ];

    /// The one pass agrees with the two it replaces: `inspect` (entry and restriction)
    /// and the router (target and readonly).
    #[test]
    fn one_pass_agrees_with_inspect_and_route() {
        for args in COMMANDS {
            let bytes = Cmd::from_args(args.iter().copied()).unwrap().into_bytes();
            let command = RelayCommand::new(bytes.clone()).unwrap();
            let inspected = inspect(&bytes).unwrap();
            assert_eq!(
                command.spec.map(|s| s.name),
                inspected.spec.map(|s| s.name),
                "{args:?}"
            );
            assert_eq!(
                command.restriction, inspected.traits.restriction,
                "{args:?}"
            );
            assert_eq!(command.route, route(&bytes), "{args:?}");
            assert_eq!(
                command.shares_connection(),
                multiplexable(inspected.traits.restriction).is_ok()
            );
        }
    }

    #[test]
    fn splits_whole_commands_off_the_front() {
        let first = Cmd::from_args(["SET", "k", "v"]).unwrap().into_bytes();
        let second = Cmd::from_args(["GET", "k"]).unwrap().into_bytes();
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&first);
        buf.extend_from_slice(&second);
        assert_eq!(
            RelayCommand::split_from(&mut buf).unwrap().into_bytes(),
            first
        );
        // Every cut of the second leaves it where it is.
        for cut in 0..second.len() {
            let mut part = BytesMut::from(&second[..cut]);
            assert!(RelayCommand::split_from(&mut part).is_none(), "{cut}");
            assert_eq!(part.len(), cut);
        }
        assert_eq!(
            RelayCommand::split_from(&mut buf).unwrap().into_bytes(),
            second
        );
        assert!(buf.is_empty());
    }

    /// Pieces of requests, well-formed and not, glued at random.
    const PIECES: &[&[u8]] = &[
        b"*1\r\n",
        b"*2\r\n",
        b"*02\r\n",
        b"*0\r\n",
        b"*-1\r\n",
        b"$1\r\n",
        b"$3\r\n",
        b"$03\r\n",
        b"$-1\r\n",
        b"$0\r\n",
        b"GET",
        b"get",
        b"k",
        b"{",
        b"}",
        b"\r\n",
        b"\r",
        b"\n",
        b"7",
        b"-",
        b" ",
        b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
        b"*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n",
    ];

    proptest::proptest! {
        /// What `split_from` takes is forwarded on a shared connection without being
        /// decoded, so it must be what the decoder (Redis's rules) reads as the first
        /// command of the same bytes, to the byte, with the same table entry.
        #[test]
        fn takes_only_what_the_decoder_takes(
            chosen in proptest::collection::vec(proptest::sample::select(PIECES), 0..24)
        ) {
            let input = chosen.concat();
            let mut buf = BytesMut::from(&input[..]);
            if let Some(command) = RelayCommand::split_from(&mut buf) {
                let taken = command.bytes().len();
                proptest::prop_assert_eq!(&buf[..], &input[taken..]);
                let mut all = BytesMut::from(&input[..]);
                let decoded = redline_resp::RequestDecoder::default().decode(&mut all);
                let Ok(Some(args)) = decoded else {
                    return Err(proptest::test_runner::TestCaseError::fail(format!(
                        "took {:?}, the decoder: {decoded:?}",
                        String::from_utf8_lossy(&input[..taken])
                    )));
                };
                proptest::prop_assert_eq!(input.len() - all.len(), taken);
                proptest::prop_assert_eq!(
                    command.spec().map(|spec| spec.name),
                    command::lookup(&args[0]).map(|spec| spec.name)
                );
            }
        }
    }

    /// What the decoder must answer (with Redis's error) or skip is left to it.
    #[test]
    fn leaves_what_redis_refuses_or_skips_to_the_decoder() {
        for request in [
            &b"*+1\r\n$4\r\nPING\r\n"[..],
            b"*01\r\n$4\r\nPING\r\n",
            b"*1\r\n$04\r\nPING\r\n",
            b"*1\r\n$-0\r\n\r\n",
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n",
            b"*1\r\n+PING\r\n",
            b"*1\r\n$4\r\nPINGxx",
            b"*0\r\n",
            b"*-1\r\n",
            b"PING\r\n",
            b"\r\n",
        ] {
            let mut buf = BytesMut::from(request);
            assert!(
                RelayCommand::split_from(&mut buf).is_none(),
                "{:?}",
                String::from_utf8_lossy(request)
            );
            assert_eq!(&buf[..], request);
        }
    }
}
