//! Where a command goes: the slot of its keys, found from the command table's key
//! positions (never "the first argument"), or a fan-out for keyless commands whose Redis
//! request policy says so.
//!
//! Fast path: a command whose keys sit at fixed positions (`first`/`last`/`step`, no
//! `movablekeys`) is routed by reading just those arguments. Commands with movable keys
//! (`EVAL` numkeys, `XREAD ... STREAMS`, `ZUNIONSTORE` numkeys, `MIGRATE`, `SORT`...) go
//! through the rules a node routes by (`redline_resp::command::routing_keys_into`).

use redline_resp::command::{self, CommandFlags, CommandSpec};
use redline_resp::slot::key_slot;

use crate::args::Args;

/// How the replies of a fanned-out command are combined (Redis's `response_policy` tips).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Sum of the integer replies (`DBSIZE`, `DEL` over slots).
    Sum,
    /// Smallest integer reply.
    Min,
    /// Largest integer reply.
    Max,
    /// Element-wise AND of arrays of 0/1 (`SCRIPT EXISTS`).
    And,
    /// Element-wise OR of arrays of 0/1.
    Or,
    /// Every node must succeed; the first reply is returned (`FLUSHALL`, `SCRIPT LOAD`).
    AllSucceeded,
    /// One success is enough (`SCRIPT KILL`).
    OneSucceeded,
    /// Arrays concatenated (`KEYS`).
    Concat,
}

/// Which nodes a keyless command runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fanout {
    /// Any one node (a master).
    Any,
    /// Every master, replies combined.
    Masters(Policy),
    /// Every node, replicas included, replies combined.
    AllNodes(Policy),
}

/// A multi-key command the client splits by slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split {
    /// `MGET`: values in the caller's key order.
    Mget,
    /// `MSET`: key/value pairs; OK when every part is OK.
    Mset,
    /// `DEL`, `UNLINK`, `EXISTS`, `TOUCH`: integer replies summed.
    Count,
}

impl Split {
    /// Arguments per key (MSET takes key and value).
    pub(crate) fn step(self) -> usize {
        match self {
            Split::Mset => 2,
            Split::Mget | Split::Count => 1,
        }
    }
}

/// The router's decision for one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Every key is in this slot.
    Slot(u16),
    /// No keys.
    Keyless(Fanout),
    /// Keys in several slots of a command the client splits.
    Split(Split),
    /// Keys in several slots of a command that cannot be split.
    CrossSlot,
    /// The command is not in the table (a module's): ask a node with `COMMAND GETKEYS`.
    Unknown,
}

/// Routing decision plus what the command table says about retrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) target: Target,
    /// Read-only: may be served by a replica and re-sent after a connection error.
    pub(crate) readonly: bool,
}

impl Route {
    pub(crate) const UNKNOWN: Route = Route {
        target: Target::Unknown,
        readonly: false,
    };
}

/// Routes one encoded command, looking its name up in the command table (for bytes that
/// did not come from a [`Cmd`](crate::Cmd), which knows its entry: see [`route_with`]).
pub(crate) fn route(bytes: &[u8]) -> Route {
    let spec = Args::new(bytes)
        .and_then(|mut args| args.next())
        .and_then(command::lookup);
    route_with(spec, bytes)
}

/// Routes one encoded command whose name's table entry is known already (`spec`, found by
/// [`Cmd::new`](crate::Cmd::new); `None`: not in the table). Only a subcommand (the second
/// argument) is looked up here, and the arguments are read once, as far as the keys.
pub(crate) fn route_with(spec: Option<&'static CommandSpec>, bytes: &[u8]) -> Route {
    let Some(mut spec) = spec else {
        return Route::UNKNOWN;
    };
    let Some(mut args) = Args::new(bytes) else {
        return Route::UNKNOWN;
    };
    let argc = args.remaining();
    // The name: its entry is `spec`.
    if args.next().is_none() {
        return Route::UNKNOWN;
    }
    if spec.has_subcommands() {
        if let Some(sub) = args.clone().next() {
            match command::lookup_subcommand(spec, sub) {
                Some(s) => spec = s,
                None => return Route::UNKNOWN,
            }
        }
    }
    let readonly = spec.is_readonly();
    let target = if has_fixed_keys(spec) {
        fixed_keys(spec, args, argc)
    } else if spec.has_keys() || !spec.key_specs.is_empty() {
        movable_keys(spec, bytes)
    } else {
        Target::Keyless(fanout(spec))
    };
    Route { target, readonly }
}

/// Whether the command's keys sit at fixed positions (`first`/`last`/`step`, no
/// `movablekeys`), so they can be read without Redis's key-spec rules.
pub(crate) fn has_fixed_keys(spec: &CommandSpec) -> bool {
    !spec.flags.contains(CommandFlags::MOVABLE_KEYS) && spec.first_key > 0
}

/// Where a fixed-key command's keys sit among its arguments (the name is argument 0).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyRange {
    first: usize,
    /// May be below `first`: then the command has no key arguments.
    last: usize,
    step: usize,
}

impl KeyRange {
    /// The range for `argc` arguments; `None` when they are too few for a range counted
    /// from the end (the node answers with its own arity error).
    pub(crate) fn of(spec: &CommandSpec, argc: usize) -> Option<KeyRange> {
        let last = if spec.last_key < 0 {
            argc.checked_sub(spec.last_key.unsigned_abs() as usize)?
        } else {
            (spec.last_key as usize).min(argc.saturating_sub(1))
        };
        Some(KeyRange {
            first: spec.first_key.max(1) as usize,
            last,
            step: spec.key_step.max(1) as usize,
        })
    }

    /// Whether the argument at `index` is a key.
    pub(crate) fn holds(&self, index: usize) -> bool {
        (self.first..=self.last).contains(&index) && (index - self.first) % self.step == 0
    }
}

/// Keys in a [`KeyRange`]; `args` starts at argument 1 (after the name).
fn fixed_keys(spec: &CommandSpec, args: Args<'_>, argc: usize) -> Target {
    let Some(range) = KeyRange::of(spec, argc) else {
        return Target::Keyless(Fanout::Any);
    };
    // Arguments 1..=last, from `first` on, every `step`-th.
    let keys = args
        .take(range.last)
        .skip(range.first - 1)
        .step_by(range.step);
    keyed_target(spec, common_slot(keys))
}

/// The target of a command whose keys hash to `slot` (`None`: it was given no keys).
pub(crate) fn keyed_target(spec: &CommandSpec, slot: Result<Option<u16>, CrossSlot>) -> Target {
    match slot {
        Err(CrossSlot) => cross_slot(spec),
        Ok(Some(s)) => Target::Slot(s),
        Ok(None) => Target::Keyless(fanout(spec)),
    }
}

/// Keys that hash to more than one slot.
pub(crate) struct CrossSlot;

/// The one slot of the keys seen so far, added one at a time.
#[derive(Default)]
pub(crate) struct CommonSlot(Option<Result<u16, CrossSlot>>);

impl CommonSlot {
    pub(crate) fn add(&mut self, key: &[u8]) {
        if let Some(Err(CrossSlot)) = self.0 {
            return;
        }
        let s = key_slot(key);
        self.0 = match self.0 {
            Some(Ok(prev)) if prev != s => Some(Err(CrossSlot)),
            _ => Some(Ok(s)),
        };
    }

    /// The slot every key hashes to; `None` without keys.
    pub(crate) fn get(self) -> Result<Option<u16>, CrossSlot> {
        self.0.transpose()
    }
}

/// The one slot every key hashes to (`None` without keys).
pub(crate) fn common_slot<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
) -> Result<Option<u16>, CrossSlot> {
    let mut slot = CommonSlot::default();
    keys.into_iter().for_each(|key| slot.add(key));
    slot.get()
}

/// Keys found on the whole argument list as a cluster node finds the keys it routes by
/// (`routing_keys_into`: the command's key finder, e.g. GEORADIUS's last STORE target
/// only). Arguments Redis would refuse have none: a node answers with its own error.
fn movable_keys(spec: &CommandSpec, bytes: &[u8]) -> Target {
    let Some(args) = Args::new(bytes) else {
        return Target::Unknown;
    };
    let args: Vec<&[u8]> = args.collect();
    let mut positions = Vec::new();
    command::routing_keys_into(spec, &args, &mut positions);
    match common_slot(positions.iter().filter_map(|&i| args.get(i).copied())) {
        Ok(None) => Target::Keyless(Fanout::Any),
        slot => keyed_target(spec, slot),
    }
}

fn cross_slot(spec: &CommandSpec) -> Target {
    match spec.name {
        "mget" => Target::Split(Split::Mget),
        "mset" => Target::Split(Split::Mset),
        "del" | "unlink" | "exists" | "touch" => Target::Split(Split::Count),
        _ => Target::CrossSlot,
    }
}

/// The fan-out Redis's tips ask for. Only explicit aggregations fan out automatically;
/// `PING`, `INFO`, `RANDOMKEY`, `SLOWLOG GET` and other "special" ones go to one node
/// (the fan-out API runs them everywhere on request).
fn fanout(spec: &CommandSpec) -> Fanout {
    if spec.name == "ping" {
        return Fanout::Any;
    }
    let mut all_nodes = false;
    let mut shards = false;
    let mut policy = None;
    for tip in spec.tips {
        match *tip {
            "request_policy:all_nodes" => all_nodes = true,
            "request_policy:all_shards" => shards = true,
            "response_policy:agg_sum" => policy = Some(Policy::Sum),
            "response_policy:agg_min" => policy = Some(Policy::Min),
            "response_policy:agg_max" => policy = Some(Policy::Max),
            "response_policy:agg_logical_and" => policy = Some(Policy::And),
            "response_policy:agg_logical_or" => policy = Some(Policy::Or),
            "response_policy:all_succeeded" => policy = Some(Policy::AllSucceeded),
            "response_policy:one_succeeded" => policy = Some(Policy::OneSucceeded),
            "nondeterministic_output_order" => {
                policy.get_or_insert(Policy::Concat);
            }
            _ => {}
        }
    }
    match (policy, all_nodes, shards) {
        (Some(p), true, _) => Fanout::AllNodes(p),
        (Some(p), false, true) => Fanout::Masters(p),
        _ => Fanout::Any,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cmd;

    /// The route from the bytes alone, checked against the one from the entry the
    /// `Cmd` found (what the cluster client uses).
    fn target(args: &[&str]) -> Target {
        let cmd = Cmd::from_args(args).unwrap();
        let spec = cmd.spec();
        let bytes = cmd.into_bytes();
        let by_name = route(&bytes);
        assert_eq!(route_with(spec, &bytes), by_name, "{args:?}");
        by_name.target
    }

    #[test]
    fn keys_by_position() {
        let s = key_slot(b"k");
        assert_eq!(target(&["GET", "k"]), Target::Slot(s));
        assert_eq!(target(&["SET", "k", "v", "EX", "5"]), Target::Slot(s));
        assert_eq!(target(&["OBJECT", "ENCODING", "k"]), Target::Slot(s));
        assert_eq!(target(&["MEMORY", "USAGE", "k"]), Target::Slot(s));
        assert_eq!(
            target(&["EVAL", "return 1", "1", "k", "x"]),
            Target::Slot(s)
        );
        assert_eq!(
            target(&["EVAL", "return 1", "0", "k"]),
            Target::Keyless(Fanout::Any)
        );
        assert_eq!(
            target(&["XREAD", "COUNT", "1", "STREAMS", "k", "0"]),
            Target::Slot(s)
        );
        // A node checks only GEORADIUS's last STORE target, as Redis's key finder does.
        let radius = [
            "GEORADIUS",
            "k",
            "0",
            "0",
            "1",
            "m",
            "STORE",
            "a",
            "STOREDIST",
            "{k}b",
        ];
        assert_eq!(target(&radius), Target::Slot(s));
        assert_eq!(
            target(&["ZUNIONSTORE", "{k}d", "2", "{k}a", "{k}b"]),
            Target::Slot(key_slot(b"k"))
        );
        assert_eq!(
            target(&["MIGRATE", "h", "1", "", "0", "5", "KEYS", "k"]),
            Target::Slot(s)
        );
        assert_eq!(target(&["SPUBLISH", "k", "m"]), Target::Slot(s));
    }

    #[test]
    fn multi_key() {
        assert_eq!(
            target(&["MGET", "{a}1", "{a}2"]),
            Target::Slot(key_slot(b"a"))
        );
        assert_eq!(target(&["MGET", "a", "b"]), Target::Split(Split::Mget));
        assert_eq!(
            target(&["MSET", "a", "b", "c", "d"]),
            Target::Split(Split::Mset)
        );
        // Values are not keys: "b" in another slot than "a" does not matter.
        assert_eq!(target(&["MSET", "a", "b"]), Target::Slot(key_slot(b"a")));
        assert_eq!(target(&["DEL", "a", "b"]), Target::Split(Split::Count));
        assert_eq!(target(&["SUNIONSTORE", "a", "b"]), Target::CrossSlot);
        assert_eq!(target(&["RENAME", "a", "b"]), Target::CrossSlot);
    }

    #[test]
    fn keyless() {
        assert_eq!(target(&["PING"]), Target::Keyless(Fanout::Any));
        assert_eq!(
            target(&["DBSIZE"]),
            Target::Keyless(Fanout::Masters(Policy::Sum))
        );
        assert_eq!(
            target(&["KEYS", "*"]),
            Target::Keyless(Fanout::Masters(Policy::Concat))
        );
        assert_eq!(
            target(&["SCRIPT", "LOAD", "return 1"]),
            Target::Keyless(Fanout::AllNodes(Policy::AllSucceeded))
        );
        assert_eq!(target(&["INFO"]), Target::Keyless(Fanout::Any));
        assert_eq!(target(&["NOSUCHCMD", "x"]), Target::Unknown);
        assert!(route(&Cmd::new("GET").arg("k").into_bytes()).readonly);
        assert!(!route(&Cmd::new("SET").arg("k").arg("v").into_bytes()).readonly);
    }
}

#[cfg(test)]
mod cost {
    use super::*;
    use crate::Cmd;

    /// Prints the routing cost per command (not asserted; run with --ignored --nocapture).
    #[test]
    #[ignore]
    fn routing_cost() {
        cost("route(GET key)", route);
    }

    /// The same with the entry `Cmd::new` found (what the cluster client does): no
    /// second lookup of the name.
    #[test]
    #[ignore]
    fn routing_cost_known_entry() {
        let spec = Cmd::new("GET").spec();
        cost("route_with(GET key)", |bytes| route_with(spec, bytes));
    }

    /// Routes 1,000 GETs 1,000 times.
    fn cost(label: &str, route: impl Fn(&[u8]) -> Route) {
        let cmds: Vec<bytes::Bytes> = (0..1000)
            .map(|i| Cmd::new("GET").arg(format!("key:{i}")).into_bytes())
            .collect();
        let started = std::time::Instant::now();
        let mut acc = 0u64;
        for _ in 0..1000 {
            for c in &cmds {
                if let Target::Slot(s) = route(c).target {
                    acc += u64::from(s);
                }
            }
        }
        let per = started.elapsed() / 1_000_000;
        println!("{label} {per:?} per command ({acc})");
    }
}
