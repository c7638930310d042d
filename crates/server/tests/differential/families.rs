//! The stateful generator for streams (consumer groups, pending entries, claims,
//! trimming), geo sets and SORT, with OBJECT ENCODING after the writes: the families the
//! main generator leaves to the docs-driven one, whose arguments rarely build up a
//! state worth reading (a group with pending entries, points close enough to be found).
//!
//! Replies that carry a clock are normalised by [`normalise`]: idle times and
//! delivery times become a word, everything else is compared as is.

use super::Gen;
use redline_resp::Frame;

/// Entry IDs: explicit ones only (`*` takes the clock), with `ms-*`, the edges and
/// malformed ones.
const IDS: &[&[u8]] = &[
    b"0-1",
    b"1",
    b"1-1",
    b"1-2",
    b"2-0",
    b"3-5",
    b"5-*",
    b"7",
    b"10-1",
    b"0-0",
    b"0",
    b"18446744073709551615-18446744073709551615",
    b"x",
    b"-1",
    b"1-x",
];

/// Range ends for XRANGE and friends.
const BOUNDS: &[&[u8]] = &[
    b"-", b"+", b"1", b"(1-1", b"2-0", b"(2", b"0", b"10", b"(+", b"x", b"3-5",
];

const GROUPS: &[&[u8]] = &[b"g1", b"g2", b"nogroup"];
const CONSUMERS: &[&[u8]] = &[b"alice", b"bob", b""];

/// Points around Sicily (a few tens of km apart, so radius searches find several),
/// the poles' edges and out-of-range pairs.
const PLACES: &[(&[u8], &[u8])] = &[
    (b"13.361389", b"38.115556"),
    (b"15.087269", b"37.502669"),
    (b"13.5", b"37.9"),
    (b"14.2", b"37.6"),
    (b"15.2", b"38.2"),
    (b"0", b"0"),
    (b"-180", b"-85.05112878"),
    (b"180", b"85.05112878"),
    (b"181", b"0"),
    (b"0", b"86"),
    (b"x", b"0"),
];

const UNITS: &[&[u8]] = &[b"m", b"km", b"ft", b"mi", b"KM", b"bad"];
const RADII: &[&[u8]] = &[b"0", b"10", b"100", b"200", b"1000", b"-1", b"x", b"50.5"];

impl Gen {
    fn id(&mut self) -> Vec<u8> {
        self.pick(IDS)
    }

    fn count_option(&mut self, into: &mut Vec<Vec<u8>>) {
        if self.chance(50) {
            into.push(b"COUNT".to_vec());
            into.push(self.pick(&[b"1", b"2", b"3", b"0", b"-1", b"x", b"100"]));
        }
    }

    /// `MAXLEN|MINID [=|~] threshold [LIMIT n]`, as XADD and XTRIM take it.
    fn trim_options(&mut self, into: &mut Vec<Vec<u8>>) {
        let minid = self.chance(40);
        into.push(if minid {
            b"MINID".to_vec()
        } else {
            b"MAXLEN".to_vec()
        });
        match self.rng.usize(..3) {
            0 => into.push(b"~".to_vec()),
            1 => into.push(b"=".to_vec()),
            _ => {}
        }
        into.push(if minid {
            self.id()
        } else {
            self.pick(&[b"0", b"1", b"2", b"3", b"5", b"-1", b"x"])
        });
        if self.chance(20) {
            into.push(b"LIMIT".to_vec());
            into.push(self.pick(&[b"0", b"1", b"10", b"-1"]));
        }
    }

    /// Streams: appends and trims, ranges, consumer groups, reads, acks, claims and the
    /// pending lists, XINFO.
    pub(super) fn stream_command(&mut self) -> Vec<Vec<u8>> {
        let w = |s: &str| s.as_bytes().to_vec();
        let stream = |g: &mut Gen| {
            if g.chance(70) {
                b"s1".to_vec()
            } else if g.chance(50) {
                b"s2".to_vec()
            } else {
                g.key()
            }
        };
        let mut c: Vec<Vec<u8>> = match self.rng.usize(..24) {
            0..=4 => {
                let mut c = vec![w("XADD"), stream(self)];
                if self.chance(10) {
                    c.push(w("NOMKSTREAM"));
                }
                if self.chance(25) {
                    self.trim_options(&mut c);
                }
                c.push(self.id());
                for _ in 0..1 + self.rng.usize(..2) {
                    c.push(self.member());
                    c.push(self.value());
                }
                c
            }
            5 => {
                let mut c = vec![w("XTRIM"), stream(self)];
                self.trim_options(&mut c);
                c
            }
            6 => {
                let mut c = vec![w("XDEL"), stream(self)];
                c.push(self.id());
                if self.chance(50) {
                    c.push(self.id());
                }
                c
            }
            7 => vec![w("XLEN"), stream(self)],
            8 | 9 => {
                let name = if self.chance(50) {
                    "XRANGE"
                } else {
                    "XREVRANGE"
                };
                let mut c = vec![w(name), stream(self), self.pick(BOUNDS), self.pick(BOUNDS)];
                self.count_option(&mut c);
                c
            }
            10 => {
                let mut c = vec![w("XGROUP"), w("CREATE"), stream(self), self.pick(GROUPS)];
                c.push(if self.chance(30) { w("$") } else { self.id() });
                if self.chance(40) {
                    c.push(w("MKSTREAM"));
                }
                if self.chance(20) {
                    c.push(w("ENTRIESREAD"));
                    c.push(self.pick(&[b"0", b"1", b"3", b"-1", b"x"]));
                }
                c
            }
            11 => {
                let mut c = vec![w("XGROUP"), w("SETID"), stream(self), self.pick(GROUPS)];
                c.push(if self.chance(30) { w("$") } else { self.id() });
                if self.chance(20) {
                    c.push(w("ENTRIESREAD"));
                    c.push(self.pick(&[b"0", b"2", b"-1"]));
                }
                c
            }
            12 => {
                let sub = ["DESTROY", "CREATECONSUMER", "DELCONSUMER"][self.rng.usize(..3)];
                let mut c = vec![w("XGROUP"), w(sub), stream(self), self.pick(GROUPS)];
                if sub != "DESTROY" {
                    c.push(self.pick(CONSUMERS));
                }
                c
            }
            13..=15 => {
                let mut c = vec![
                    w("XREADGROUP"),
                    w("GROUP"),
                    self.pick(GROUPS),
                    self.pick(CONSUMERS),
                ];
                self.count_option(&mut c);
                if self.chance(15) {
                    c.push(w("NOACK"));
                }
                c.push(w("STREAMS"));
                c.push(stream(self));
                c.push(if self.chance(70) { w(">") } else { self.id() });
                c
            }
            16 => {
                let mut c = vec![w("XREAD")];
                self.count_option(&mut c);
                c.push(w("STREAMS"));
                c.push(stream(self));
                c.push(if self.chance(20) { w("+") } else { self.id() });
                c
            }
            17 => {
                let mut c = vec![w("XACK"), stream(self), self.pick(GROUPS)];
                c.push(self.id());
                if self.chance(50) {
                    c.push(self.id());
                }
                c
            }
            18 => {
                let mut c = vec![w("XPENDING"), stream(self), self.pick(GROUPS)];
                if self.chance(60) {
                    if self.chance(20) {
                        c.push(w("IDLE"));
                        c.push(self.pick(&[b"0", b"100000000", b"-1"]));
                    }
                    c.push(self.pick(BOUNDS));
                    c.push(self.pick(BOUNDS));
                    c.push(self.pick(&[b"1", b"2", b"10", b"0", b"-1"]));
                    if self.chance(40) {
                        c.push(self.pick(CONSUMERS));
                    }
                }
                c
            }
            19 => {
                // A minimum idle time of 0 or far above the test's length: the same
                // entries qualify on both servers.
                let mut c = vec![
                    w("XCLAIM"),
                    stream(self),
                    self.pick(GROUPS),
                    self.pick(CONSUMERS),
                    self.pick(&[b"0", b"0", b"100000000", b"-1", b"x"]),
                    self.id(),
                ];
                if self.chance(40) {
                    c.push(self.id());
                }
                for _ in 0..self.rng.usize(..3) {
                    match self.rng.usize(..5) {
                        0 => c.push(w("JUSTID")),
                        1 => c.push(w("FORCE")),
                        2 => {
                            c.push(w("RETRYCOUNT"));
                            c.push(self.pick(&[b"0", b"5", b"-1"]));
                        }
                        3 => {
                            c.push(w("LASTID"));
                            c.push(self.id());
                        }
                        _ => {
                            c.push(w("IDLE"));
                            c.push(self.pick(&[b"0", b"100000000", b"-5"]));
                        }
                    }
                }
                c
            }
            20 => {
                let mut c = vec![
                    w("XAUTOCLAIM"),
                    stream(self),
                    self.pick(GROUPS),
                    self.pick(CONSUMERS),
                    self.pick(&[b"0", b"0", b"100000000", b"-1"]),
                    self.pick(BOUNDS),
                ];
                self.count_option(&mut c);
                if self.chance(30) {
                    c.push(w("JUSTID"));
                }
                c
            }
            21 => {
                let mut c = vec![w("XSETID"), stream(self), self.id()];
                if self.chance(30) {
                    c.push(w("ENTRIESADDED"));
                    c.push(self.pick(&[b"0", b"3", b"100", b"-1"]));
                }
                if self.chance(30) {
                    c.push(w("MAXDELETEDID"));
                    c.push(self.id());
                }
                c
            }
            _ => match self.rng.usize(..4) {
                0 => vec![w("XINFO"), w("STREAM"), stream(self)],
                1 => {
                    let mut c = vec![w("XINFO"), w("STREAM"), stream(self), w("FULL")];
                    self.count_option(&mut c);
                    c
                }
                2 => vec![w("XINFO"), w("GROUPS"), stream(self)],
                _ => vec![w("XINFO"), w("CONSUMERS"), stream(self), self.pick(GROUPS)],
            },
        };
        if self.chance(3) {
            c.truncate(2);
        }
        c
    }

    fn place(&mut self, into: &mut Vec<Vec<u8>>) {
        let (lon, lat) = PLACES[self.rng.usize(..PLACES.len())];
        into.push(lon.to_vec());
        into.push(lat.to_vec());
    }

    /// `FROMMEMBER m | FROMLONLAT lon lat`, then `BYRADIUS r unit | BYBOX w h unit`.
    fn geo_shape(&mut self, into: &mut Vec<Vec<u8>>) {
        if self.chance(50) {
            into.push(b"FROMMEMBER".to_vec());
            into.push(self.member());
        } else {
            into.push(b"FROMLONLAT".to_vec());
            self.place(into);
        }
        if self.chance(50) {
            into.push(b"BYRADIUS".to_vec());
            into.push(self.pick(RADII));
        } else {
            into.push(b"BYBOX".to_vec());
            into.push(self.pick(RADII));
            into.push(self.pick(RADII));
        }
        into.push(self.pick(UNITS));
    }

    /// `ASC|DESC`, `COUNT n [ANY]` and the WITH flags, in any order. ANY returns
    /// whichever points the search met first, so it only comes with a sort.
    fn geo_options(&mut self, into: &mut Vec<Vec<u8>>, with: bool) {
        let sorted = self.chance(60);
        if sorted {
            into.push(self.pick(&[b"ASC", b"DESC", b"asc"]));
        }
        if self.chance(40) {
            into.push(b"COUNT".to_vec());
            into.push(self.pick(&[b"1", b"2", b"3", b"0", b"-1", b"x"]));
            if sorted && self.chance(30) {
                into.push(b"ANY".to_vec());
            }
        }
        if with {
            for flag in [&b"WITHCOORD"[..], b"WITHDIST", b"WITHHASH"] {
                if self.chance(30) {
                    into.push(flag.to_vec());
                }
            }
        }
    }

    /// Geo sets: GEOADD's flags, distances, hashes, positions, the searches and their
    /// STORE forms.
    pub(super) fn geo_command(&mut self) -> Vec<Vec<u8>> {
        let w = |s: &str| s.as_bytes().to_vec();
        let geo = |g: &mut Gen| {
            if g.chance(75) {
                b"g1".to_vec()
            } else {
                g.key()
            }
        };
        let mut c: Vec<Vec<u8>> = match self.rng.usize(..14) {
            0..=3 => {
                let mut c = vec![w("GEOADD"), geo(self)];
                for _ in 0..self.rng.usize(..3) {
                    c.push(self.pick(&[b"NX", b"XX", b"CH", b"ch"]));
                }
                for _ in 0..1 + self.rng.usize(..2) {
                    self.place(&mut c);
                    c.push(self.member());
                }
                c
            }
            4 => vec![
                w("GEODIST"),
                geo(self),
                self.member(),
                self.member(),
                self.pick(UNITS),
            ],
            5 | 6 => {
                let mut c = vec![w(if self.chance(50) { "GEOHASH" } else { "GEOPOS" })];
                c.push(geo(self));
                c.extend(self.members(0));
                c
            }
            7 | 8 => {
                let mut c = vec![w("GEOSEARCH"), geo(self)];
                self.geo_shape(&mut c);
                self.geo_options(&mut c, true);
                c
            }
            9 => {
                let mut c = vec![w("GEOSEARCHSTORE"), w("gdst"), geo(self)];
                self.geo_shape(&mut c);
                self.geo_options(&mut c, false);
                if self.chance(50) {
                    c.push(w("STOREDIST"));
                }
                c
            }
            10 | 11 => {
                let name = ["GEORADIUS", "GEORADIUS_RO"][self.rng.usize(..2)];
                let mut c = vec![w(name), geo(self)];
                self.place(&mut c);
                c.push(self.pick(RADII));
                c.push(self.pick(UNITS));
                self.geo_options(&mut c, true);
                c
            }
            _ => {
                let name = ["GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"][self.rng.usize(..2)];
                let mut c = vec![w(name), geo(self), self.member()];
                c.push(self.pick(RADII));
                c.push(self.pick(UNITS));
                let with = self.chance(60);
                self.geo_options(&mut c, with);
                if !name.ends_with("_RO") && self.chance(30) {
                    c.push(w(if self.chance(50) {
                        "STORE"
                    } else {
                        "STOREDIST"
                    }));
                    c.push(w("gdst"));
                }
                c
            }
        };
        if self.chance(3) {
            c.truncate(2);
        }
        c
    }

    /// SORT and SORT_RO over lists, sets and sorted sets, by weights in strings and
    /// hash fields, with GET patterns, LIMIT, ALPHA and STORE; and the writes that give
    /// them something to sort and weigh.
    pub(super) fn sort_command(&mut self) -> Vec<Vec<u8>> {
        let w = |s: &str| s.as_bytes().to_vec();
        let numbers: &[&[u8]] = &[b"3", b"1", b"2", b"10", b"-1", b"1.5", b"x", b"", b"02"];
        let sortable = |g: &mut Gen| g.pick(&[b"sl", b"ss", b"sz", b"s1", b"nokey"]);
        match self.rng.usize(..10) {
            0 => {
                let mut c = vec![w("RPUSH"), w("sl")];
                for _ in 0..1 + self.rng.usize(..3) {
                    c.push(self.pick(numbers));
                }
                c
            }
            1 => {
                let mut c = vec![w("SADD"), w("ss")];
                for _ in 0..1 + self.rng.usize(..3) {
                    c.push(self.pick(numbers));
                }
                c
            }
            2 => vec![
                w("ZADD"),
                w("sz"),
                self.pick(&[b"1", b"2", b"0"]),
                self.pick(numbers),
            ],
            3 => {
                let mut key = b"w_".to_vec();
                key.extend(self.pick(numbers));
                vec![w("SET"), key, self.pick(numbers)]
            }
            4 => {
                let mut key = b"h_".to_vec();
                key.extend(self.pick(numbers));
                vec![w("HSET"), key, w("f"), self.pick(numbers)]
            }
            _ => {
                let name = if self.chance(25) { "SORT_RO" } else { "SORT" };
                let key = sortable(self);
                let alpha = self.chance(40);
                // Under ALPHA, elements of equal weight (two missing keys) are left in
                // whatever order the C library's qsort leaves them, which is not the
                // input's (glibc's is not stable here): weights come with numbers only,
                // whose ties fall back to the elements. A set read unsorted is in
                // hash-table order: whole (`normalise` sorts it), never a LIMIT window,
                // and any key may hold a set by then (COPY and RENAME move them): no
                // LIMIT with `nosort` (`fixed_cases_match_redis` windows lists and
                // sorted sets read unsorted).
                let patterns: &[&[u8]] = match (&key[..], alpha) {
                    (b"ss", _) | (_, true) => &[b"nosort"],
                    _ => &[b"w_*", b"h_*->f", b"nosort", b"nokey_*", b"w_*->"],
                };
                let mut c = vec![w(name), key.clone()];
                let mut unsorted = false;
                if self.chance(40) {
                    c.push(w("BY"));
                    let pattern = self.pick(patterns);
                    unsorted = pattern == b"nosort";
                    c.push(pattern);
                }
                if self.chance(30) && !unsorted {
                    c.push(w("LIMIT"));
                    c.push(self.pick(&[b"0", b"1", b"-1", b"x"]));
                    c.push(self.pick(&[b"1", b"2", b"-1", b"10"]));
                }
                for _ in 0..self.rng.usize(..3) {
                    c.push(w("GET"));
                    c.push(self.pick(&[b"#", b"w_*", b"h_*->f", b"nokey_*"]));
                }
                if self.chance(40) {
                    c.push(self.pick(&[b"ASC", b"DESC"]));
                }
                if alpha {
                    c.push(w("ALPHA"));
                }
                if name == "SORT" && self.chance(25) {
                    c.push(w("STORE"));
                    c.push(self.pick(&[b"sdst", b"sl"]));
                }
                c
            }
        }
    }

    /// CONFIG SET of both stream node limits, small (nodes of one entry, of a few
    /// bytes) or Redis's defaults: where nodes are cut shows in XINFO STREAM FULL's
    /// radix tree and in what `MAXLEN ~` and `MINID ~` trim.
    pub(super) fn stream_node_limits(&mut self) -> Vec<Vec<u8>> {
        self.config_set(STREAM_NODE_LIMITS, Gen::stream_node_value)
    }

    /// CONFIG SET of one stream node limit.
    pub(super) fn stream_node_limit(&mut self) -> Vec<Vec<u8>> {
        self.config_set_one(STREAM_NODE_LIMITS, Gen::stream_node_value)
    }

    fn stream_node_value(&mut self, name: &str) -> Vec<u8> {
        if name == "stream-node-max-entries" {
            self.pick(&[b"1", b"2", b"3", b"5", b"100"])
        } else {
            // 0: no byte limit.
            self.pick(&[b"0", b"40", b"120", b"4096"])
        }
    }

    /// A sequence over streams, geo sets and SORT, with OBJECT ENCODING of the keys
    /// they wrote now and then.
    pub(super) fn family_command(&mut self) -> Vec<Vec<u8>> {
        let keys: &[&[u8]] = &[b"s1", b"s2", b"g1", b"gdst", b"sl", b"ss", b"sz", b"sdst"];
        if self.chance(8) {
            return vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), self.pick(keys)];
        }
        // Whole values copied, renamed, and saved and loaded again: groups, pending
        // entries, consumers and encodings must come through alike.
        if self.chance(5) {
            let mut c = vec![
                self.pick(&[b"COPY", b"RENAME", b"COPY"]),
                self.pick(keys),
                self.pick(keys),
            ];
            if c[0] == b"COPY" && self.chance(50) {
                c.push(b"REPLACE".to_vec());
            }
            return c;
        }
        if self.chance(2) {
            return vec![b"DEBUG".to_vec(), b"RELOAD".to_vec()];
        }
        match self.rng.usize(..10) {
            0..=4 => self.stream_command(),
            5..=7 => self.geo_command(),
            _ => self.sort_command(),
        }
    }
}

/// Whether `command` is a SORT that may look keys up (BY and GET patterns) in the order
/// of a set's or a sorted set's hash table: its `keymiss` events come in that order.
/// Any key may hold one by then (COPY and RENAME move them), so every patterned SORT
/// counts.
pub(super) fn looks_up_in_hash_order(command: &[Vec<u8>]) -> bool {
    let sort =
        command[0].eq_ignore_ascii_case(b"sort") || command[0].eq_ignore_ascii_case(b"sort_ro");
    let patterned = command.windows(2).any(|w| {
        (w[0].eq_ignore_ascii_case(b"by") || w[0].eq_ignore_ascii_case(b"get"))
            && w[1].contains(&b'*')
    });
    sort && patterned
}

/// Replies whose numbers are clocks: XPENDING's extended form (idle time), XINFO
/// CONSUMERS (idle), XINFO STREAM FULL (seen-time, and each pending entry's delivery
/// time). `None` when the command is not one of them.
pub(super) fn normalise(name: &str, command: &[Vec<u8>], reply: &Frame) -> Option<String> {
    let sub = command
        .get(1)
        .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase())
        .unwrap_or_default();
    let clocked = match name {
        "XPENDING" => command.len() > 3,
        "XINFO" => sub == "CONSUMERS" || sub == "STREAM",
        _ => false,
    };
    clocked.then(|| format!("{:?}", without_clocks(reply)))
}

/// `frame` with every figure that reads a clock replaced: values of the fields named
/// `idle`, `seen-time`, `active-time` and `inactive`; the third of each four-long
/// array of an ID, a name, a number and a number (a pending entry's delivery time or
/// idle time); the second of each array of an ID and two numbers (a consumer's pending
/// entry).
fn without_clocks(frame: &Frame) -> Frame {
    let clock = || Frame::Simple("clock".into());
    let is_clock_field = |f: &Frame| {
        matches!(f, Frame::Bulk(b) | Frame::Simple(b)
            if [&b"idle"[..], b"seen-time", b"active-time", b"inactive"].contains(&&b[..]))
    };
    match frame {
        Frame::Array(items) => {
            if let [Frame::Bulk(_), Frame::Bulk(_), Frame::Integer(_), Frame::Integer(n)] =
                &items[..]
            {
                return Frame::Array(vec![
                    items[0].clone(),
                    items[1].clone(),
                    clock(),
                    Frame::Integer(*n),
                ]);
            }
            // A consumer's own pending entry: an ID, its delivery time, its count.
            if let [Frame::Bulk(_), Frame::Integer(_), Frame::Integer(n)] = &items[..] {
                return Frame::Array(vec![items[0].clone(), clock(), Frame::Integer(*n)]);
            }
            let mut out = Vec::with_capacity(items.len());
            let mut clock_next = false;
            for item in items {
                out.push(if clock_next {
                    clock()
                } else {
                    without_clocks(item)
                });
                clock_next = is_clock_field(item);
            }
            Frame::Array(out)
        }
        Frame::Map(pairs) => Frame::Map(
            pairs
                .iter()
                .map(|(k, v)| {
                    let v = if is_clock_field(k) {
                        clock()
                    } else {
                        without_clocks(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Reads of every key the families write: entries, groups, members with their scores.
/// The limits Redis cuts a stream's listpack nodes at.
const STREAM_NODE_LIMITS: &[&str] = &["stream-node-max-entries", "stream-node-max-bytes"];

pub(super) fn dump() -> Vec<Vec<Vec<u8>>> {
    let read: &[&[&str]] = &[
        &["SELECT", "0"],
        &["XRANGE", "s1", "-", "+"],
        &["XRANGE", "s2", "-", "+"],
        &["XINFO", "GROUPS", "s1"],
        &["XINFO", "GROUPS", "s2"],
        &["XINFO", "STREAM", "s1", "FULL"],
        &["ZRANGE", "g1", "0", "-1", "WITHSCORES"],
        &["ZRANGE", "gdst", "0", "-1", "WITHSCORES"],
        &["LRANGE", "sl", "0", "-1"],
        &["LRANGE", "sdst", "0", "-1"],
        &["SMEMBERS", "ss"],
        &["ZRANGE", "sz", "0", "-1", "WITHSCORES"],
    ];
    read.iter()
        .map(|c| c.iter().map(|a| a.as_bytes().to_vec()).collect())
        .collect()
}
