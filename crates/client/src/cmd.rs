//! Building commands: [`Cmd`] encodes arguments straight into the bytes that will be
//! written to the socket, and [`ToArg`] says how a Rust value becomes one argument.
//!
//! A command is encoded once, by its caller, into a single allocation: the array header
//! (`*<argc>`) is unknown until the last argument, so `Cmd` leaves room for it in front
//! and fills it in when the command is finished, instead of encoding twice or copying.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use redline_resp::command::{self, AclCategories, CommandFlags, CommandSpec};
use redline_resp::{encode, Frame};

use crate::args::Args;

/// Room for `*` + up to 20 digits + CRLF in front of the arguments.
const HEADER_ROOM: usize = 24;

/// A command being built: name, then arguments.
///
/// ```
/// use redline::Cmd;
///
/// let cmd = Cmd::new("SET").arg("counter").arg(42).arg("EX").arg(60);
/// assert_eq!(cmd.argc(), 5);
/// assert_eq!(
///     &cmd.to_bytes()[..],
///     b"*5\r\n$3\r\nSET\r\n$7\r\ncounter\r\n$2\r\n42\r\n$2\r\nEX\r\n$2\r\n60\r\n"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct Cmd {
    buf: BytesMut,
    argc: usize,
    /// The command-table entry `new` found for the name (`None`: not in the table), kept
    /// so routing and blocking decisions never look the name up again.
    spec: Option<&'static CommandSpec>,
    traits: Traits,
    /// How a pipeline reshapes this command's reply so the generic [`FromReply`]
    /// conversion of the typed method's return type accepts it (RESP2 and RESP3 differ
    /// for WITHSCORES pairs and XREAD).
    ///
    /// [`FromReply`]: crate::FromReply
    shape: Option<Shape>,
}

/// `Cmd::new("NAME")` with the name's table entry found at compile time.
macro_rules! cmd {
    ($name:literal) => {
        $crate::cmd::Cmd::named(
            $name,
            const { redline_resp::command::position_const($name) }
                .and_then(|i| redline_resp::command::COMMANDS.get(i)),
        )
    };
}
pub(crate) use cmd;

/// Rewrites one reply frame into the shape a typed method's return type converts from.
pub(crate) type Shape = fn(Frame) -> Frame;

/// Whether a command may share a multiplexed connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Restriction {
    /// Safe to interleave with other callers' commands.
    None,
    /// Only inside one pipeline sent as a unit (MULTI/EXEC/DISCARD).
    PipelineOnly(&'static str),
    /// Never on a shared connection: it blocks or changes the connection's state.
    Dedicated(&'static str),
    /// `CLIENT`: depends on the subcommand (REPLY must be refused).
    ClientSubcommand,
    /// `XREAD`/`XREADGROUP` before `STREAMS`: refused if a `BLOCK` option appears.
    StreamRead,
}

impl Cmd {
    /// Starts a command with its name (or any first argument).
    ///
    /// ```
    /// use redline::Cmd;
    ///
    /// let cmd = Cmd::new("PING");
    /// assert_eq!(cmd.argc(), 1);
    /// ```
    pub fn new(name: impl ToArg) -> Cmd {
        let mut buf = Cmd::buffer();
        name.write_arg(&mut buf);
        let spec = command::lookup(bulk_payload(&buf[HEADER_ROOM..]));
        Cmd::started(buf, spec)
    }

    /// [`Cmd::new`] for a name written in the source, whose table entry was found when
    /// the program was built (the [`cmd!`] macro): no lookup per command.
    pub(crate) fn named(name: &'static str, spec: Option<&'static CommandSpec>) -> Cmd {
        let mut buf = Cmd::buffer();
        encode::write_bulk(&mut buf, name.as_bytes());
        Cmd::started(buf, spec)
    }

    /// An empty command buffer (see `crate::buffers`) with room for the array header in
    /// front.
    fn buffer() -> BytesMut {
        let mut buf = crate::buffers::take();
        buf.put_bytes(0, HEADER_ROOM);
        buf
    }

    /// A command whose name `buf` holds after the header room.
    fn started(buf: BytesMut, spec: Option<&'static CommandSpec>) -> Cmd {
        Cmd {
            buf,
            argc: 1,
            spec,
            traits: spec.map_or(Traits::PLAIN, traits_of),
            shape: None,
        }
    }

    /// Builds a command from a list of arguments, the first being the name.
    ///
    /// Returns `None` for an empty list.
    ///
    /// ```
    /// use redline::Cmd;
    ///
    /// let cmd = Cmd::from_args(["HSET", "user:1", "name", "ann"]).unwrap();
    /// assert_eq!(cmd.argc(), 4);
    /// assert!(Cmd::from_args(Vec::<&str>::new()).is_none());
    /// ```
    pub fn from_args<I>(args: I) -> Option<Cmd>
    where
        I: IntoIterator,
        I::Item: ToArg,
    {
        let mut args = args.into_iter();
        let mut cmd = Cmd::new(args.next()?);
        for arg in args {
            cmd.push_arg(arg);
        }
        Some(cmd)
    }

    /// Takes a command already encoded as a RESP array of bulk strings (as a client sends
    /// it), copied once as is: no argument is decoded or encoded again. A proxy that
    /// received the bytes uses this instead of [`from_args`](Self::from_args).
    ///
    /// Returns `None` unless `encoded` is exactly one such array with at least one
    /// argument.
    ///
    /// ```
    /// use redline::Cmd;
    ///
    /// let cmd = Cmd::from_encoded(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n").unwrap();
    /// assert_eq!(cmd.argc(), 2);
    /// assert_eq!(cmd.to_bytes(), Cmd::new("GET").arg("k").to_bytes());
    /// assert!(Cmd::from_encoded(b"*1\r\n$3\r\nGET\r\n+extra").is_none());
    /// ```
    pub fn from_encoded(encoded: &[u8]) -> Option<Cmd> {
        let Inspected {
            argc,
            body,
            spec,
            traits,
        } = inspect(encoded)?;
        let mut buf = BytesMut::with_capacity(HEADER_ROOM + encoded.len() - body);
        buf.put_bytes(0, HEADER_ROOM);
        buf.extend_from_slice(&encoded[body..]);
        Some(Cmd {
            buf,
            argc,
            spec,
            traits,
            shape: None,
        })
    }

    /// Appends one argument.
    ///
    /// ```
    /// use redline::Cmd;
    ///
    /// let cmd = Cmd::new("EXPIRE").arg("session:9").arg(300);
    /// assert_eq!(&cmd.to_bytes()[..], b"*3\r\n$6\r\nEXPIRE\r\n$9\r\nsession:9\r\n$3\r\n300\r\n");
    /// ```
    #[must_use]
    pub fn arg(mut self, arg: impl ToArg) -> Cmd {
        self.push_arg(arg);
        self
    }

    /// Appends every argument of an iterator.
    ///
    /// ```
    /// use redline::Cmd;
    ///
    /// let cmd = Cmd::new("DEL").args(["a", "b", "c"]);
    /// assert_eq!(cmd.argc(), 4);
    /// ```
    #[must_use]
    pub fn args<I>(mut self, args: I) -> Cmd
    where
        I: IntoIterator,
        I::Item: ToArg,
    {
        for arg in args {
            self.push_arg(arg);
        }
        self
    }

    /// Appends one argument in place.
    ///
    /// ```
    /// use redline::Cmd;
    ///
    /// let mut cmd = Cmd::new("RPUSH").arg("list");
    /// for i in 0..3 {
    ///     cmd.push_arg(i);
    /// }
    /// assert_eq!(cmd.argc(), 5);
    /// ```
    pub fn push_arg(&mut self, arg: impl ToArg) {
        let start = self.buf.len();
        arg.write_arg(&mut self.buf);
        if self.traits.watches_args() {
            self.traits
                .after_arg(self.argc, bulk_payload(&self.buf[start..]));
        }
        self.argc += 1;
    }

    /// Number of arguments, the name included.
    ///
    /// ```
    /// assert_eq!(redline::Cmd::new("GET").arg("k").argc(), 2);
    /// ```
    pub fn argc(&self) -> usize {
        self.argc
    }

    /// The encoded command (a copy; the client itself encodes without copying).
    ///
    /// ```
    /// let bytes = redline::Cmd::new("GET").arg("k").to_bytes();
    /// assert_eq!(&bytes[..], b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    /// ```
    pub fn to_bytes(&self) -> Bytes {
        self.clone().into_bytes()
    }

    /// Finishes the command: writes the header into the room left for it and hands the
    /// bytes over without copying.
    pub(crate) fn into_bytes(self) -> Bytes {
        self.into_encoded().freeze()
    }

    /// [`into_bytes`](Self::into_bytes) without freezing: for a command sent once, whose
    /// buffer is copied to the socket's and freed (see `mux::Encoded`).
    pub(crate) fn into_encoded(mut self) -> BytesMut {
        let mut digits = itoa::Buffer::new();
        let count = digits.format(self.argc).as_bytes();
        let header_len = count.len() + 3;
        let start = HEADER_ROOM - header_len;
        let header = &mut self.buf[start..HEADER_ROOM];
        header[0] = b'*';
        header[1..1 + count.len()].copy_from_slice(count);
        header[1 + count.len()..].copy_from_slice(b"\r\n");
        self.buf.advance(start);
        self.buf
    }

    pub(crate) fn restriction(&self) -> Restriction {
        self.traits.restriction
    }

    /// Sets how a pipeline reshapes this command's reply (see [`Shape`]).
    pub(crate) fn with_shape(mut self, shape: Shape) -> Cmd {
        self.shape = Some(shape);
        self
    }

    pub(crate) fn shape(&self) -> Option<Shape> {
        self.shape
    }

    /// `readonly` in the command table (safe to re-send after a connection error).
    pub(crate) fn is_readonly(&self) -> bool {
        self.traits.readonly
    }

    /// It may block its connection (BLPOP, XREAD BLOCK, WAIT...).
    pub(crate) fn is_blocking(&self) -> bool {
        self.traits.blocking
    }

    /// The command-table entry of the name (not of a subcommand), if the table has it.
    pub(crate) fn spec(&self) -> Option<&'static CommandSpec> {
        self.spec
    }

    /// For a blocking command, how long it may block as its arguments say
    /// ([`command::blocking_with`]): `None` for "forever" (a zero timeout) or when the
    /// timeout is not known.
    pub(crate) fn block_time(&self) -> Option<Duration> {
        let args: Vec<&[u8]> = Args::bulks(&self.buf[HEADER_ROOM..], self.argc).collect();
        command::blocking_with(self.spec?, &args)?.duration()
    }

    /// Appends arguments encoded earlier (so a command retried in another form, like
    /// EVALSHA then EVAL, encodes its shared tail once).
    pub(crate) fn append_encoded(mut self, args: &EncodedArgs) -> Cmd {
        self.buf.extend_from_slice(&args.buf);
        self.argc += args.count;
        self
    }
}

/// Arguments encoded without a command around them.
#[derive(Debug, Default)]
pub(crate) struct EncodedArgs {
    buf: BytesMut,
    count: usize,
}

impl EncodedArgs {
    pub(crate) fn push(&mut self, arg: impl ToArg) {
        arg.write_arg(&mut self.buf);
        self.count += 1;
    }

    pub(crate) fn extend(&mut self, other: &EncodedArgs) {
        self.buf.extend_from_slice(&other.buf);
        self.count += other.count;
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }
}

/// What the command table says about a command, as far as the client cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traits {
    pub(crate) restriction: Restriction,
    /// `readonly` in the command table: re-sending it cannot change anything, so it may
    /// be retried after a connection error when the caller opted in.
    pub(crate) readonly: bool,
    /// It may block the connection (`blocking` flag, or `WAIT`): the client runs it on a
    /// dedicated connection instead of refusing it.
    pub(crate) blocking: bool,
}

impl Traits {
    /// A command the table does not have (a module's, or newer than the table): sent as is.
    pub(crate) const PLAIN: Traits = Traits {
        restriction: Restriction::None,
        readonly: false,
        blocking: false,
    };

    /// Whether later arguments can change the traits (CLIENT's subcommand, XREAD's
    /// BLOCK): only then does `push_arg` read an argument back.
    pub(crate) fn watches_args(&self) -> bool {
        matches!(
            self.restriction,
            Restriction::ClientSubcommand | Restriction::StreamRead
        )
    }

    /// Updates what depends on later arguments once the argument at `index` is known.
    pub(crate) fn after_arg(&mut self, index: usize, arg: &[u8]) {
        match self.restriction {
            Restriction::ClientSubcommand if index == 1 => {
                self.restriction = client_subcommand_restriction(arg);
            }
            Restriction::StreamRead => {
                if arg.eq_ignore_ascii_case(b"BLOCK") {
                    self.restriction = Restriction::Dedicated("xread block");
                    self.blocking = true;
                } else if arg.eq_ignore_ascii_case(b"STREAMS") {
                    // Keys and ids follow; a key named BLOCK is just a key.
                    self.restriction = Restriction::None;
                }
            }
            _ => {}
        }
    }
}

/// What [`Cmd::from_encoded`] learns from an encoded command before copying it.
pub(crate) struct Inspected {
    pub(crate) argc: usize,
    /// Where the first argument starts (after the `*N` header).
    pub(crate) body: usize,
    pub(crate) spec: Option<&'static CommandSpec>,
    pub(crate) traits: Traits,
}

/// Reads an encoded command (exactly one RESP array of bulk strings, at least one
/// argument): its table entry and traits. `None` when it is not one such command.
pub(crate) fn inspect(encoded: &[u8]) -> Option<Inspected> {
    let mut args = Args::new(encoded)?;
    let argc = args.remaining();
    let body = args.position();
    let spec = command::lookup(args.next()?);
    let mut traits = spec.map_or(Traits::PLAIN, traits_of);
    for index in 1..argc {
        traits.after_arg(index, args.next()?);
    }
    // Nothing may follow the last argument.
    if args.position() != encoded.len() {
        return None;
    }
    Some(Inspected {
        argc,
        body,
        spec,
        traits,
    })
}

/// Commands that change the connection itself in ways the command table has no flag for:
/// they must never run on a shared connection.
const CONNECTION_STATE: &[&str] = &[
    "select", "hello", "auth", "reset", "quit", "monitor", "sync", "psync",
];

/// The traits of a table entry, classified once per entry (entries are numbered in
/// `command::all`'s order): every command a caller builds asks, and classifying
/// compares names.
pub(crate) fn traits_of(spec: &'static CommandSpec) -> Traits {
    static TRAITS: std::sync::LazyLock<command::PerEntry<Traits>> =
        std::sync::LazyLock::new(|| command::PerEntry::new(classify));
    TRAITS.get(spec)
}

/// Classifies a command from the shared command table (`redline_resp::command`), so the
/// client and the server agree on what blocks and what changes connection state.
fn classify(spec: &'static CommandSpec) -> Traits {
    let flags = spec.flags;
    let readonly = flags.contains(CommandFlags::READONLY);
    let restriction = match spec.name {
        "client" => Restriction::ClientSubcommand,
        // Blocking only with a BLOCK option; decided while arguments are added.
        "xread" | "xreadgroup" => Restriction::StreamRead,
        // Whether given arguments block, and how long, is `command::blocking`'s answer.
        name if command::may_block(spec) => {
            return Traits {
                restriction: Restriction::Dedicated(name),
                readonly,
                blocking: true,
            }
        }
        // SUBSCRIBE and friends: pub/sub commands Redis forbids in scripts because they
        // switch the connection into subscriber mode (PUBLISH is allowed there).
        name if flags.contains(CommandFlags::PUBSUB) && flags.contains(CommandFlags::NOSCRIPT) => {
            Restriction::Dedicated(name)
        }
        name if spec.acl_categories.contains(AclCategories::TRANSACTION) => match name {
            // Only meaningful as one unit with the commands they wrap.
            "multi" | "exec" | "discard" => Restriction::PipelineOnly(name),
            // WATCH/UNWATCH: connection state that outlives the command.
            _ => Restriction::Dedicated(name),
        },
        name if CONNECTION_STATE.contains(&name) => Restriction::Dedicated(name),
        _ => Restriction::None,
    };
    Traits {
        restriction,
        readonly,
        blocking: false,
    }
}

fn client_subcommand_restriction(sub: &[u8]) -> Restriction {
    // CLIENT REPLY OFF/SKIP would silence replies other callers are waiting for.
    if sub.eq_ignore_ascii_case(b"REPLY") {
        Restriction::Dedicated("client reply")
    } else {
        Restriction::None
    }
}

/// The payload of one encoded bulk (`$<n>\r\n<payload>\r\n`).
fn bulk_payload(bulk: &[u8]) -> &[u8] {
    let Some(nl) = bulk.iter().position(|&b| b == b'\n') else {
        return &[];
    };
    let end = bulk.len().saturating_sub(2);
    bulk.get(nl + 1..end).unwrap_or(&[])
}

/// A value that can be one command argument. Arguments are binary-safe; numbers are sent
/// as their decimal text, as Redis expects.
///
/// ```
/// use bytes::{BytesMut};
/// use redline::{Cmd, ToArg};
///
/// /// A user id sent as its decimal text.
/// struct UserId(u64);
///
/// impl ToArg for UserId {
///     fn write_arg(&self, out: &mut BytesMut) {
///         format!("user:{}", self.0).as_str().write_arg(out)
///     }
/// }
///
/// let cmd = Cmd::new("GET").arg(UserId(7));
/// assert!(cmd.to_bytes().ends_with(b"$6\r\nuser:7\r\n"));
/// ```
pub trait ToArg {
    /// Writes the argument as a RESP bulk string.
    fn write_arg(&self, out: &mut BytesMut);
}

impl<T: ToArg + ?Sized> ToArg for &T {
    fn write_arg(&self, out: &mut BytesMut) {
        (**self).write_arg(out)
    }
}

macro_rules! bytes_arg {
    ($($ty:ty),*) => {$(
        impl ToArg for $ty {
            #[inline]
            fn write_arg(&self, out: &mut BytesMut) {
                encode::write_bulk(out, AsRef::<[u8]>::as_ref(self));
            }
        }
    )*};
}
bytes_arg!(str, String, [u8], Vec<u8>, Bytes, BytesMut);

impl<const N: usize> ToArg for [u8; N] {
    fn write_arg(&self, out: &mut BytesMut) {
        encode::write_bulk(out, self);
    }
}

macro_rules! int_arg {
    ($($ty:ty),*) => {$(
        impl ToArg for $ty {
            #[inline]
            fn write_arg(&self, out: &mut BytesMut) {
                let mut digits = itoa::Buffer::new();
                encode::write_bulk(out, digits.format(*self).as_bytes());
            }
        }
    )*};
}
int_arg!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl ToArg for f64 {
    fn write_arg(&self, out: &mut BytesMut) {
        // Redis parses `inf`, `-inf` and the shortest round-trip decimal Rust prints.
        if self.is_infinite() {
            encode::write_bulk(out, if *self > 0.0 { b"+inf" } else { b"-inf" });
        } else {
            encode::write_bulk(out, self.to_string().as_bytes());
        }
    }
}

impl ToArg for f32 {
    fn write_arg(&self, out: &mut BytesMut) {
        f64::from(*self).write_arg(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traits_kept_per_entry_are_the_classification() {
        for spec in command::all() {
            assert_eq!(traits_of(spec), classify(spec), "{}", spec.name);
        }
    }

    #[test]
    fn names_known_at_compile_time_build_the_same_command() {
        let pairs = [
            (cmd!("GET"), Cmd::new("GET")),
            (cmd!("client"), Cmd::new("client")),
            (cmd!("XREADGROUP"), Cmd::new("XREADGROUP")),
            (cmd!("NOT-A-COMMAND"), Cmd::new("NOT-A-COMMAND")),
        ];
        for (known, built) in pairs {
            let entry = |cmd: &Cmd| cmd.spec().map(|s| s as *const CommandSpec);
            assert_eq!(entry(&known), entry(&built), "the table's own entry");
            assert_eq!(known.traits, built.traits);
            assert_eq!(known.arg("k").into_bytes(), built.arg("k").into_bytes());
        }
    }

    #[test]
    fn header_is_filled_in_place() {
        let cmd = Cmd::new("GET").arg("k");
        assert_eq!(&cmd.into_bytes()[..], b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
        let mut cmd = Cmd::new("RPUSH");
        for i in 0..1000 {
            cmd.push_arg(i);
        }
        let bytes = cmd.into_bytes();
        assert!(bytes.starts_with(b"*1001\r\n$5\r\nRPUSH\r\n$1\r\n0\r\n"));
    }

    #[test]
    fn encoded_commands_match_built_ones() {
        let commands: &[&[&str]] = &[
            &["GET", "k"],
            &["client", "reply", "off"],
            &["CLIENT", "SETNAME", "x"],
            &["XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "$"],
            &["xread", "STREAMS", "BLOCK", "0"],
            &["BLPOP", "a", "0"],
            &["MULTI"],
            &["SET", "k", "a\r\nb"],
        ];
        for args in commands {
            let built = Cmd::from_args(args.iter().copied()).unwrap();
            let encoded = built.to_bytes();
            let cmd = Cmd::from_encoded(&encoded).unwrap();
            assert_eq!(cmd.argc(), built.argc(), "{args:?}");
            assert_eq!(cmd.traits, built.traits, "{args:?}");
            assert_eq!(cmd.into_bytes(), encoded, "{args:?}");
        }
        for bad in [
            &b""[..],
            b"*0\r\n",
            b"*2\r\n$3\r\nGET\r\n",
            b"*1\r\n$3\r\nGET\r\n$1\r\nk\r\n",
            b"*1\r\n$3\r\nGETX\r\n",
            b"*1\r\n:3\r\n",
            b"GET k\r\n",
        ] {
            assert!(Cmd::from_encoded(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn argument_kinds() {
        let cmd = Cmd::new("X")
            .arg(-5i64)
            .arg(1.5f64)
            .arg(f64::NEG_INFINITY)
            .arg(b"\0\r\n".as_slice())
            .arg(Bytes::from_static(b"b"))
            .arg(String::from("s"))
            .arg([1u8, 2]);
        assert_eq!(
            &cmd.into_bytes()[..],
            b"*8\r\n$1\r\nX\r\n$2\r\n-5\r\n$3\r\n1.5\r\n$4\r\n-inf\r\n$3\r\n\0\r\n\r\n$1\r\nb\r\n$1\r\ns\r\n$2\r\n\x01\x02\r\n"
        );
    }

    #[test]
    fn restrictions() {
        assert_eq!(Cmd::new("get").restriction(), Restriction::None);
        assert!(Cmd::new("get").is_readonly() && !Cmd::new("set").is_readonly());
        let blpop = Cmd::new("blpop").arg("k").arg(1.5);
        assert_eq!(blpop.restriction(), Restriction::Dedicated("blpop"));
        assert!(blpop.is_blocking());
        assert_eq!(blpop.block_time(), Some(Duration::from_millis(1500)));
        assert_eq!(Cmd::new("BLPOP").arg("k").arg(0).block_time(), None);
        assert_eq!(
            Cmd::from_args(["BLMPOP", "2", "1", "k", "LEFT"])
                .unwrap()
                .block_time(),
            Some(Duration::from_secs(2))
        );
        let wait = Cmd::new("WAIT").arg(1).arg(250);
        assert!(wait.is_blocking());
        assert_eq!(wait.block_time(), Some(Duration::from_millis(250)));
        assert_eq!(
            Cmd::new("multi").restriction(),
            Restriction::PipelineOnly("multi")
        );
        assert_eq!(
            Cmd::new("WATCH").arg("k").restriction(),
            Restriction::Dedicated("watch")
        );
        assert_eq!(
            Cmd::new("subscribe").restriction(),
            Restriction::Dedicated("subscribe")
        );
        assert_eq!(Cmd::new("PUBLISH").restriction(), Restriction::None);
        assert_eq!(
            Cmd::new("select").restriction(),
            Restriction::Dedicated("select")
        );
        assert_eq!(Cmd::new("NOT-A-COMMAND").restriction(), Restriction::None);
        assert_eq!(
            Cmd::new("CLIENT").arg("reply").arg("off").restriction(),
            Restriction::Dedicated("client reply")
        );
        assert_eq!(
            Cmd::new("CLIENT").arg("SETNAME").arg("x").restriction(),
            Restriction::None
        );
        assert!(Cmd::from_args(Vec::<&str>::new()).is_none());
        let xread =
            Cmd::from_args(["XREAD", "COUNT", "1", "block", "100", "STREAMS", "s", "$"]).unwrap();
        assert_eq!(xread.restriction(), Restriction::Dedicated("xread block"));
        assert!(xread.is_blocking());
        assert_eq!(xread.block_time(), Some(Duration::from_millis(100)));
        let xread = Cmd::from_args(["XREAD", "STREAMS", "BLOCK", "0"]).unwrap();
        assert_eq!(xread.restriction(), Restriction::None);
        assert!(!xread.is_blocking());
    }
}
