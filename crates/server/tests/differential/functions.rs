//! The generator for functions: FUNCTION LOAD of generated libraries (their metadata
//! line, `redis.register_function` in both forms, flags, and what a library may not do
//! while it loads), then FCALL and FCALL_RO of what they registered, FUNCTION LIST,
//! DELETE, FLUSH, STATS and RESTORE of payloads that are not one.
//!
//! FUNCTION LIST answers in the order of Redis's hash tables: it is compared as a
//! multiset, at every depth ([`super::encodings::sorted`]).

use super::Gen;

const LIBRARIES: &[&str] = &["lib0", "lib1", "LIB1", "lib_2"];
/// No two names that differ only in case: redis-server 7.0.15 lets one library
/// register both (its library's table compares case, the server-wide one does not), and
/// then asserts when that library is replaced or deleted (`functions.c:291`).
const FUNCTIONS: &[&str] = &["f0", "f1", "f_2", "bad-name", ""];
const FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
    "bad-flag",
];

/// Function bodies: writes, reads, what a function reads of its arguments, errors.
const BODIES: &[&str] = &[
    "return redis.call('set', keys[1] or 'k', args[1] or 'v')",
    "return redis.call('get', keys[1] or 'k')",
    "return redis.call('incr', 'counter')",
    "return #keys .. ':' .. #args",
    "return {keys, args}",
    "redis.setresp(3) return redis.call('hgetall', keys[1] or 'h')",
    "return redis.pcall('lpush', keys[1] or 'k', 'x')",
    "error('failed here')",
    "return redis.error_reply('MY own')",
    "return redis.status_reply('FINE')",
    "return cjson.encode(args)",
    "return KEYS",
];

impl Gen {
    fn function_name(&mut self) -> String {
        FUNCTIONS[self.rng.usize(..FUNCTIONS.len())].to_string()
    }

    fn library_name(&mut self) -> String {
        LIBRARIES[self.rng.usize(..LIBRARIES.len())].to_string()
    }

    /// The first line of a library: well formed mostly, then each way it can be wrong.
    fn library_metadata(&mut self) -> String {
        let name = self.library_name();
        match self.rng.usize(..14) {
            0..=7 => format!("#!lua name={name}"),
            8 => format!("#!lua name={name} extra=1"),
            9 => "#!lua".to_string(),
            10 => format!("#!js name={name}"),
            11 => "#!lua name=".to_string(),
            12 => format!("#!lua name={name} name=other"),
            _ => format!("#!lua name={name}-x"),
        }
    }

    /// A `{...}` of flags, or a value that is not one.
    fn function_flags(&mut self) -> String {
        if self.chance(10) {
            return ["'no-writes'", "1", "{1}"][self.rng.usize(..3)].to_string();
        }
        let flags: Vec<String> = (0..self.rng.usize(..3))
            .map(|_| format!("'{}'", FLAGS[self.rng.usize(..FLAGS.len())]))
            .collect();
        format!("{{{}}}", flags.join(", "))
    }

    /// One statement of a library's code: a registration (either form, right or
    /// wrong), or something a library may or may not do while it loads.
    fn library_statement(&mut self) -> String {
        let name = self.function_name();
        let body = BODIES[self.rng.usize(..BODIES.len())];
        let callback = format!("function(keys, args) {body} end");
        match self.rng.usize(..16) {
            0..=4 => format!("redis.register_function('{name}', {callback})"),
            5..=8 => {
                let mut fields = vec![
                    format!("function_name = '{name}'"),
                    format!("callback = {callback}"),
                ];
                if self.chance(60) {
                    fields.push(format!("flags = {}", self.function_flags()));
                }
                if self.chance(20) {
                    fields.push("description = 'what it does'".to_string());
                }
                if self.chance(10) {
                    fields.push("unknown = 1".to_string());
                }
                if self.chance(10) {
                    fields.remove(self.rng.usize(..fields.len()));
                }
                format!("redis.register_function{{{}}}", fields.join(", "))
            }
            9 => format!("redis.register_function('{name}', 'not a function')"),
            10 => format!("redis.register_function('{name}')"),
            11 => "redis.register_function()".to_string(),
            12 => format!("redis.register_function({{function_name = 1, callback = {callback}}})"),
            13 => [
                "redis.call('set', 'x', 'y')",
                "redis.log(redis.LOG_NOTICE, 'loading')",
                "redis.setresp(3)",
                "local x = cjson.encode({1})",
                "error('stop')",
                "return 1",
                "x = 1",
                "function(",
            ][self.rng.usize(..8)]
                .to_string(),
            14 => format!("redis.register_function('{name}', {callback}, 'extra')"),
            _ => format!("redis.register_function('{name}', {callback}) redis.register_function('{name}', {callback})"),
        }
    }

    fn library_source(&mut self) -> Vec<u8> {
        let mut lines = Vec::new();
        if !self.chance(4) {
            lines.push(self.library_metadata());
        }
        for _ in 0..self.rng.usize(..4) {
            lines.push(self.library_statement());
        }
        lines.join("\n").into_bytes()
    }

    /// A FUNCTION subcommand, FCALL or FCALL_RO.
    pub(super) fn function_command(&mut self) -> Vec<Vec<u8>> {
        let w = |s: &str| s.as_bytes().to_vec();
        match self.rng.usize(..20) {
            0..=5 => {
                let mut c = vec![w("FUNCTION"), w("LOAD")];
                if self.chance(40) {
                    c.push(w(["REPLACE", "replace", "BAD"][self.rng.usize(..3)]));
                }
                c.push(self.library_source());
                c
            }
            6..=11 => {
                let mut c = vec![
                    w(if self.chance(70) { "FCALL" } else { "FCALL_RO" }),
                    w(&self.function_name()),
                ];
                let keys = [0usize, 1, 2][self.rng.usize(..3)];
                c.push(w(if self.chance(5) {
                    ["-1", "x", "5"][self.rng.usize(..3)]
                } else {
                    ["0", "1", "2"][keys]
                }));
                for i in 0..keys {
                    c.push(w(&format!("key{i}")));
                }
                for _ in 0..self.rng.usize(..3) {
                    c.push(w(["v", "1", "", "arg"][self.rng.usize(..4)]));
                }
                c
            }
            12 | 13 => {
                let mut c = vec![w("FUNCTION"), w("LIST")];
                if self.chance(40) {
                    c.push(w("LIBRARYNAME"));
                    c.push(w(
                        ["lib*", "LIB1", "*_2", "nomatch", "lib?"][self.rng.usize(..5)]
                    ));
                }
                if self.chance(30) {
                    c.push(w("WITHCODE"));
                }
                if self.chance(5) {
                    c.push(w("BAD"));
                }
                c
            }
            14 => vec![w("FUNCTION"), w("DELETE"), w(&self.library_name())],
            15 => {
                let mut c = vec![w("FUNCTION"), w("FLUSH")];
                if self.chance(50) {
                    c.push(w(["ASYNC", "SYNC", "BAD"][self.rng.usize(..3)]));
                }
                c
            }
            16 => vec![w("FUNCTION"), w("STATS")],
            17 => vec![
                w("FUNCTION"),
                w("RESTORE"),
                w(["", "garbage", "\u{f5}\u{c3}@X@"][self.rng.usize(..3)]),
            ],
            18 => vec![w("FUNCTION"), w("KILL")],
            _ => vec![w("GET"), w(["k", "key0", "counter"][self.rng.usize(..3)])],
        }
    }
}
