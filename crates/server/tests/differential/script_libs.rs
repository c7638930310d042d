//! Random scripts for the libraries Redis gives Lua (`cjson`, `cmsgpack`, `struct`,
//! `bit`) and for the conversion of a script's result into a reply: values built from
//! numbers at the edges of each encoding, binary strings, holes, sparse and nested
//! tables; JSON texts and msgpack payloads, well formed or broken, passed as ARGV.
//!
//! A value a script reads back is returned through `D`, a dump with its keys sorted, so
//! what is compared is the value itself and not the order `pairs` visits a table in.
//! The encoders' own output (JSON text, msgpack bytes) is compared byte for byte.

use super::Gen;

/// The dump every script starts with: a deterministic text of any Lua value (a table's
/// entries sorted as text, so the order `pairs` visits them in does not show).
const DUMP: &str = "local function D(v)
  if v == cjson.null then return 'null' end
  local t = type(v)
  if t == 'table' then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = D(k) .. '=' .. D(x) end
    table.sort(parts)
    return '{' .. table.concat(parts, ',') .. '}'
  elseif t == 'string' then return string.format('%q', v)
  elseif t == 'number' then return string.format('%.17g', v)
  end
  return t .. ':' .. tostring(v)
end
";

/// Numbers where an encoding changes: the integer widths of msgpack and struct, the
/// doubles a `%.14g` rounds, and the values without a JSON spelling.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "0.5",
    "-0.5",
    "1.5",
    "2.5",
    "127",
    "128",
    "-32",
    "-33",
    "255",
    "256",
    "-128",
    "-129",
    "65535",
    "65536",
    "-32768",
    "-32769",
    "2^31-1",
    "2^31",
    "-2^31",
    "-2^31-1",
    "2^32-1",
    "2^32",
    "2^53",
    "2^53+1",
    "2^63",
    "-2^63",
    "2^64",
    "1e300",
    "-1e300",
    "1e-300",
    "1/3",
    "0.1",
    "1e15",
    "1e16",
    "123456789012345",
    "1234567890123456",
    "3.0000000000000004",
    "0/0",
    "math.huge",
    "-math.huge",
    "4.9e-324",
    "3.4028234663852886e38",
];

/// Pieces of Lua string literals: escapes JSON and `%q` treat apart, UTF-8 (valid and
/// not), control bytes, NUL. Decimal escapes have three digits, so that a piece of
/// digits after one does not extend it.
const STRING_PIECES: &[&str] = &[
    "a",
    "key",
    "12",
    "-3.5",
    "\\000",
    "\\001",
    "\\031",
    "\\127",
    "\\128",
    "\\255",
    "\\\"",
    "\\\\",
    "/",
    "\\n",
    "\\r",
    "\\t",
    "\\b",
    "\\f",
    "\\195\\169",
    "\\226\\130\\172",
    "\\240\\159\\152\\128",
    "\\237\\160\\128",
    "\\192\\128",
    " ",
    "null",
    "true",
];

/// Lengths where msgpack's and struct's length prefixes change width.
const LONG_LENGTHS: &[usize] = &[31, 32, 255, 256, 65535, 65536];

impl Gen {
    /// A Lua number expression.
    fn lua_number(&mut self) -> String {
        match self.rng.usize(..5) {
            0 | 1 => NUMBERS[self.rng.usize(..NUMBERS.len())].to_string(),
            2 => self.rng.i64(-300..300).to_string(),
            3 => {
                // Around a power of two, either sign.
                let k = self.rng.u32(..64);
                let d = self.rng.i64(-1..=1);
                let sign = if self.chance(30) { "-" } else { "" };
                format!("{sign}(2^{k}{d:+})")
            }
            _ => {
                let mantissa = self.rng.f64() * 10.0;
                let exponent = self.rng.i32(-12..22);
                let sign = if self.chance(30) { "-" } else { "" };
                format!("{sign}{mantissa}e{exponent}")
            }
        }
    }

    /// A Lua string expression.
    fn lua_string(&mut self) -> String {
        if self.chance(8) {
            let n = LONG_LENGTHS[self.rng.usize(..LONG_LENGTHS.len())];
            return format!("string.rep('x', {n})");
        }
        let pieces: String = (0..self.rng.usize(..5))
            .map(|_| STRING_PIECES[self.rng.usize(..STRING_PIECES.len())])
            .collect();
        format!("\"{pieces}\"")
    }

    /// A Lua string expression under 32 bytes.
    fn short_lua_string(&mut self) -> String {
        let pieces: String = (0..self.rng.usize(..4))
            .map(|_| STRING_PIECES[self.rng.usize(..STRING_PIECES.len())])
            .collect();
        format!("\"{pieces}\"")
    }

    /// A Lua value expression: scalars, `cjson.null`, and tables (arrays with holes,
    /// maps, sparse and mixed keys, deep nesting, a table that holds itself).
    fn lua_value(&mut self, depth: u32) -> String {
        self.lua_value_within(depth, u32::MAX)
    }

    /// [`Gen::lua_value`] nested at most `levels` deep (a script's result becomes a reply
    /// as deep as it is, which the test's own parser reads recursively).
    fn lua_value_within(&mut self, depth: u32, levels: u32) -> String {
        let scalar = depth >= 3 || self.chance(45);
        if scalar {
            return match self.rng.usize(..10) {
                0..=3 => self.lua_number(),
                4..=6 => self.lua_string(),
                7 => ["true", "false"][self.rng.usize(..2)].to_string(),
                8 => "cjson.null".to_string(),
                _ => "nil".to_string(),
            };
        }
        match self.rng.usize(..12) {
            0..=3 => {
                let items: Vec<String> = (0..self.rng.usize(..6))
                    .map(|_| self.lua_value_within(depth + 1, levels))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            4..=6 => {
                let items: Vec<String> = (0..self.rng.usize(..5))
                    .map(|_| {
                        let key = self.lua_key();
                        format!("[{key}] = {}", self.lua_value_within(depth + 1, levels))
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            7 | 8 => {
                // A sparse array: how far apart the indexes are decides array or error.
                let indexes = ["1", "2", "3", "4", "5", "10", "11", "12", "20", "0", "-1"];
                let items: Vec<String> = (0..1 + self.rng.usize(..4))
                    .map(|_| {
                        let index = indexes[self.rng.usize(..indexes.len())];
                        format!("[{index}] = {}", self.lua_value_within(depth + 1, levels))
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            9 => {
                let first = self.lua_value_within(depth + 1, levels);
                let key = self.lua_string();
                let value = self.lua_value_within(depth + 1, levels);
                format!("{{{first}, [{key}] = {value}}}")
            }
            10 if levels == u32::MAX => {
                // Nested past cmsgpack's 16 levels and past cjson's 1000.
                let levels = [15, 16, 17, 18, 999, 1000, 1001][self.rng.usize(..7)];
                let inner = self.lua_value(3);
                format!(
                    "(function() local t = {inner} for i = 1, {levels} do t = {{t}} end return t end)()"
                )
            }
            11 if levels == u32::MAX => {
                "(function() local t = {1} t[2] = t return t end)()".to_string()
            }
            _ => "{}".to_string(),
        }
    }

    /// A table key: strings mostly, then numbers (fractional, negative), booleans.
    /// Strings stay under 32 bytes: Redis's Lua hashes every byte of a longer string
    /// and stock Lua 5.1 (this server's) samples them, so such keys are visited in a
    /// different order by `pairs` (and encoded in a different order), which Lua leaves
    /// undefined.
    fn lua_key(&mut self) -> String {
        match self.rng.usize(..10) {
            0..=5 => self.short_lua_string(),
            6 | 7 => self.lua_number(),
            8 => ["true", "false"][self.rng.usize(..2)].to_string(),
            _ => "1.5".to_string(),
        }
    }

    /// A JSON text, well formed or close to it, with the spellings Lua CJSON accepts
    /// beyond JSON (`nan`, `inf`, hex) and the ones it refuses.
    fn json_text(&mut self, depth: u32) -> Vec<u8> {
        const NUMBERS: &[&str] = &[
            "0",
            "-0",
            "1",
            "-1",
            "01",
            "1.",
            "1.5",
            ".5",
            "1e5",
            "1E+2",
            "1e-2",
            "-1.5e300",
            "1e400",
            "-",
            "1e",
            "0x10",
            "0X1f",
            "123456789012345678901234567890",
            "Infinity",
            "-Infinity",
            "NaN",
            "nan",
            "-nan",
            "inf",
            "-inf",
            "+1",
            "1.0e+",
            "2e308",
            "4.9e-324",
            "9007199254740993",
            "-9223372036854775808",
            "0.1",
        ];
        const PIECES: &[&[u8]] = &[
            b"a",
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\b",
            b"\\f",
            b"\\n",
            b"\\r",
            b"\\t",
            b"\\u0041",
            b"\\u00e9",
            b"\\u20AC",
            b"\\ud83d\\ude00",
            b"\\ud83d",
            b"\\ude00",
            b"\\u0000",
            b"\\x",
            b"\\u12",
            b"\\uzzzz",
            b"\xc3\xa9",
            b"\x01",
            b"\x7f",
            b"\xff",
            b"'",
            b" ",
        ];
        const WORDS: &[&str] = &[
            "true", "false", "null", "tru", "nul", "True", "NULL", "falsey",
        ];
        let scalar = depth >= 4 || self.chance(50);
        let mut out = Vec::new();
        if self.chance(10) {
            out.extend_from_slice([&b" "[..], b"\t", b"\n", b"\r", b"\x0b"][self.rng.usize(..5)]);
        }
        if scalar {
            match self.rng.usize(..3) {
                0 => out.extend_from_slice(NUMBERS[self.rng.usize(..NUMBERS.len())].as_bytes()),
                1 => {
                    out.push(b'"');
                    for _ in 0..self.rng.usize(..4) {
                        out.extend_from_slice(PIECES[self.rng.usize(..PIECES.len())]);
                    }
                    if !self.chance(3) {
                        out.push(b'"');
                    }
                }
                _ => out.extend_from_slice(WORDS[self.rng.usize(..WORDS.len())].as_bytes()),
            }
            return out;
        }
        match self.rng.usize(..7) {
            0..=2 => {
                out.push(b'[');
                for i in 0..self.rng.usize(..5) {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(self.json_text(depth + 1));
                }
                if self.chance(5) {
                    out.push(b',');
                }
                out.push(b']');
            }
            3..=5 => {
                out.push(b'{');
                for i in 0..self.rng.usize(..5) {
                    if i > 0 {
                        out.push(b',');
                    }
                    if self.chance(5) {
                        out.extend(self.json_text(depth + 1));
                    } else {
                        let key = ["a", "b", "1", "", "a", "\\u0000"][self.rng.usize(..6)];
                        out.extend_from_slice(format!("\"{key}\"").as_bytes());
                    }
                    if !self.chance(3) {
                        out.push(b':');
                    }
                    out.extend(self.json_text(depth + 1));
                }
                out.push(b'}');
            }
            _ => {
                // Nested around the decoder's depth limit.
                let levels = [999, 1000, 1001][self.rng.usize(..3)];
                out.extend(std::iter::repeat_n(b'[', levels));
                out.extend(std::iter::repeat_n(b']', levels));
            }
        }
        out
    }

    /// Appends one msgpack object: every type marker, the unused one (0xc1) and the
    /// ext types included, with lengths that do not always match what follows.
    fn msgpack_object(&mut self, depth: u32, out: &mut Vec<u8>) {
        let scalar = depth >= 3 || self.chance(60);
        let bytes = |gen: &mut Gen, n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    if gen.chance(30) {
                        [0x00, 0x7f, 0x80, 0xff][gen.rng.usize(..4)]
                    } else {
                        gen.rng.u8(..)
                    }
                })
                .collect()
        };
        if scalar {
            match self.rng.usize(..12) {
                0 => out.push([0xc0, 0xc2, 0xc3, 0xc1][self.rng.usize(..4)]),
                1 => out.push(self.rng.u8(..0x80)),
                2 => out.push(self.rng.u8(0xe0..)),
                3 => {
                    let (marker, n) =
                        [(0xcc, 1), (0xcd, 2), (0xce, 4), (0xcf, 8)][self.rng.usize(..4)];
                    out.push(marker);
                    out.extend(bytes(self, n));
                }
                4 => {
                    let (marker, n) =
                        [(0xd0, 1), (0xd1, 2), (0xd2, 4), (0xd3, 8)][self.rng.usize(..4)];
                    out.push(marker);
                    out.extend(bytes(self, n));
                }
                5 => {
                    out.push(0xca);
                    if self.chance(50) {
                        let f = [0.1f32, -2.5, 1e30, f32::MAX, f32::MIN_POSITIVE, 3.0]
                            [self.rng.usize(..6)];
                        out.extend(f.to_be_bytes());
                    } else {
                        out.extend(bytes(self, 4));
                    }
                }
                6 => {
                    out.push(0xcb);
                    if self.chance(50) {
                        let f = [0.1f64, -2.5, 1e300, 1.0 / 3.0, 2f64.powi(63), 0.5]
                            [self.rng.usize(..6)];
                        out.extend(f.to_be_bytes());
                    } else {
                        out.extend(bytes(self, 8));
                    }
                }
                7..=9 => {
                    let len = self.rng.usize(..40);
                    match self.rng.usize(..6) {
                        0 | 1 => out.push(0xa0 | (len as u8 & 0x1f)),
                        2 => out.extend([0xd9, len as u8]),
                        3 => out.extend([0xda, 0, len as u8]),
                        4 => out.extend([0xdb, 0, 0, 0, len as u8]),
                        _ => out.extend([[0xc4, 0xc5, 0xc6][self.rng.usize(..3)], len as u8]),
                    }
                    let body = bytes(self, len.min(31));
                    out.extend(body);
                }
                10 => {
                    // fixext 1..16, ext 8.
                    let marker = [0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xc7][self.rng.usize(..6)];
                    out.push(marker);
                    let n = 1 + self.rng.usize(..4);
                    out.extend(bytes(self, n));
                }
                _ => {
                    // A length far past the payload.
                    out.extend([
                        [0xdb, 0xdd, 0xdf, 0xc6][self.rng.usize(..4)],
                        0xff,
                        0xff,
                        0xff,
                        0xff,
                    ]);
                }
            }
            return;
        }
        let n = self.rng.usize(..5);
        let map = self.chance(45);
        match (map, self.rng.usize(..3)) {
            (false, 0) => out.extend([0xdc, 0, n as u8]),
            (false, 1) => out.extend([0xdd, 0, 0, 0, n as u8]),
            (false, _) => out.push(0x90 | n as u8),
            (true, 0) => out.extend([0xde, 0, n as u8]),
            (true, 1) => out.extend([0xdf, 0, 0, 0, n as u8]),
            (true, _) => out.push(0x80 | n as u8),
        }
        let items = if map { 2 * n } else { n };
        for _ in 0..items {
            self.msgpack_object(depth + 1, out);
        }
    }

    /// A msgpack payload of one to three objects, cut short or with a byte changed now
    /// and then.
    fn msgpack_payload(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.chance(5) {
            // Arrays nested around lua-cmsgpack's limits (and past the C stack's).
            let levels = [15, 16, 17, 100, 1999, 3998, 3999, 4000, 5000][self.rng.usize(..9)];
            out.extend(std::iter::repeat_n(0x91, levels));
            out.push(0xc0);
            return out;
        }
        for _ in 0..1 + self.rng.usize(..3) {
            self.msgpack_object(0, &mut out);
        }
        if !out.is_empty() && self.chance(15) {
            out.truncate(self.rng.usize(..out.len()));
        } else if !out.is_empty() && self.chance(10) {
            let at = self.rng.usize(..out.len());
            out[at] = self.rng.u8(..);
        }
        out
    }

    /// A `struct` format: the byte orders, alignment, every type with and without a
    /// size (in range or not), padding and spaces.
    fn struct_format(&mut self) -> String {
        const ITEMS: &[&str] = &[
            "<", ">", "!", "!1", "!2", "!4", "!8", "!3", "=", " ", "b", "B", "h", "H", "l", "L",
            "T", "i", "I", "i1", "i2", "i3", "I4", "i7", "I8", "i9", "I16", "i17", "i0", "f", "d",
            "s", "c", "c0", "c1", "c3", "x", "xx", "z", "q",
        ];
        (0..self.rng.usize(..5))
            .map(|_| ITEMS[self.rng.usize(..ITEMS.len())])
            .collect()
    }

    /// Arguments for `struct.pack`: numbers, strings, and now and then a table.
    fn struct_args(&mut self) -> Vec<String> {
        (0..self.rng.usize(..5))
            .map(|_| match self.rng.usize(..8) {
                0..=4 => self.lua_number(),
                5 | 6 => self.lua_string(),
                _ => "{}".to_string(),
            })
            .collect()
    }

    /// Bytes for `struct.unpack`.
    fn struct_data(&mut self) -> Vec<u8> {
        let n = [0, 1, 2, 3, 4, 8, 9, 16, 20][self.rng.usize(..9)];
        (0..n)
            .map(|_| {
                if self.chance(40) {
                    [0, 0xff, 0x80][self.rng.usize(..3)]
                } else {
                    self.rng.u8(..)
                }
            })
            .collect()
    }

    /// One `EVAL` of a generated script over the libraries or the result conversion,
    /// with its payload (JSON, msgpack or struct bytes) as ARGV[1].
    pub(super) fn script_lib_command(&mut self) -> Vec<Vec<u8>> {
        let mut argv: Option<Vec<u8>> = None;
        let body = match self.rng.usize(..28) {
            0..=2 => format!("return cjson.encode({})", self.lua_value(0)),
            3 => format!(
                "return D(cjson.decode(cjson.encode({})))",
                self.lua_value(0)
            ),
            4..=6 => {
                argv = Some(self.json_text(0));
                "return D(cjson.decode(ARGV[1]))".to_string()
            }
            7 | 8 => {
                let values: Vec<String> = (0..self.rng.usize(..3))
                    .map(|_| self.lua_value(0))
                    .collect();
                format!("return cmsgpack.pack({})", values.join(", "))
            }
            9 => format!(
                "return D({{cmsgpack.unpack(cmsgpack.pack({}))}})",
                self.lua_value(0)
            ),
            10..=12 => {
                argv = Some(self.msgpack_payload());
                match self.rng.usize(..4) {
                    0 | 1 => "return D({cmsgpack.unpack(ARGV[1])})".to_string(),
                    2 => format!(
                        "return D({{cmsgpack.unpack_one(ARGV[1], {})}})",
                        ["0", "1", "2", "-1", "100"][self.rng.usize(..5)]
                    ),
                    _ => format!(
                        "return D({{cmsgpack.unpack_limit(ARGV[1], {}, {})}})",
                        ["0", "1", "2", "-1"][self.rng.usize(..4)],
                        ["0", "1", "3"][self.rng.usize(..3)]
                    ),
                }
            }
            13 | 14 => {
                let mut args = vec![format!("'{}'", self.struct_format())];
                args.extend(self.struct_args());
                format!("return struct.pack({})", args.join(", "))
            }
            15 | 16 => {
                argv = Some(self.struct_data());
                let format = self.struct_format();
                let position = if self.chance(30) {
                    format!(
                        ", {}",
                        ["0", "1", "2", "-1", "5", "1.5", "100"][self.rng.usize(..7)]
                    )
                } else {
                    String::new()
                };
                format!("return D({{struct.unpack('{format}', ARGV[1]{position})}})")
            }
            17 => format!("return struct.size('{}')", self.struct_format()),
            18 | 19 => {
                let (op, arity) = [
                    ("tobit", 1),
                    ("tohex", 1),
                    ("tohex", 2),
                    ("bnot", 1),
                    ("band", 2),
                    ("bor", 3),
                    ("bxor", 2),
                    ("lshift", 2),
                    ("rshift", 2),
                    ("arshift", 2),
                    ("rol", 2),
                    ("ror", 2),
                    ("bswap", 1),
                ][self.rng.usize(..13)];
                let args: Vec<String> = (0..arity)
                    .map(|_| {
                        if self.chance(10) {
                            ["'12'", "' 0x10 '", "'x'", "true"][self.rng.usize(..4)].to_string()
                        } else {
                            self.lua_number()
                        }
                    })
                    .collect();
                format!("return D(bit.{op}({}))", args.join(", "))
            }
            20 => self.cjson_settings("cjson"),
            21 => {
                // A second cjson with settings of its own.
                let settings = self.cjson_settings("c");
                format!(
                    "local c = cjson.new() {} return c.encode({})",
                    settings.replacen("return ", "local _ = ", 1),
                    self.lua_value(0)
                )
            }
            22 => {
                // Short: a reply line of 64 KB is more than this test's parser reads.
                let text = self.short_lua_string();
                match self.rng.usize(..5) {
                    0 => format!("return redis.error_reply({text})"),
                    1 => format!("return redis.status_reply({text})"),
                    2 => format!("error({{err = {text}}})"),
                    3 => format!("error({text})"),
                    _ => format!("return {{pcall(error, {{err = {text}}})}}"),
                }
            }
            23 => {
                // Errors caught by pcall: the string a C library raises, with the
                // caller's place only when the caller is Lua code.
                match self.rng.usize(..5) {
                    0 => {
                        argv = Some(self.json_text(0));
                        "return D({pcall(cjson.decode, ARGV[1])})".to_string()
                    }
                    1 => {
                        argv = Some(self.msgpack_payload());
                        "return D({pcall(cmsgpack.unpack, ARGV[1])})".to_string()
                    }
                    2 => {
                        argv = Some(self.struct_data());
                        format!("return D({{pcall(struct.unpack, '{}', ARGV[1])}})", self.struct_format())
                    }
                    3 => format!(
                        "return D({{pcall(function() return cjson.encode({}) end)}})",
                        self.lua_value(0)
                    ),
                    _ => format!(
                        "local f = bit.{} return D({{pcall(f, {}), pcall(function() return f({}) end)}})",
                        ["band", "tohex", "lshift"][self.rng.usize(..3)],
                        self.lua_number(),
                        ["'x'", "{}", "nil"][self.rng.usize(..3)]
                    ),
                }
            }
            _ => self.script_result(),
        };
        let mut command = vec![
            b"EVAL".to_vec(),
            format!("{DUMP}{body}").into_bytes(),
            b"0".to_vec(),
        ];
        command.extend(argv);
        command
    }

    /// A call of one of `cjson`'s settings functions (on the table named `table`), its
    /// results dumped: valid and invalid values, too many arguments.
    fn cjson_settings(&mut self, table: &str) -> String {
        const NUMBERS: &[&str] = &[
            "1", "0", "-1", "2", "3", "10", "14", "15", "1.5", "2^31", "'5'", "'x'", "{}", "nil",
            "true",
        ];
        const CHOICES: &[&str] = &[
            "true", "false", "'on'", "'off'", "'null'", "'x'", "1", "nil", "{}",
        ];
        let pick = |gen: &mut Gen, from: &[&str]| from[gen.rng.usize(..from.len())].to_string();
        let (name, args) = match self.rng.usize(..7) {
            0 => (
                "encode_sparse_array",
                vec![
                    pick(self, CHOICES),
                    pick(self, NUMBERS),
                    pick(self, NUMBERS),
                ],
            ),
            1 => ("encode_max_depth", vec![pick(self, NUMBERS)]),
            2 => ("decode_max_depth", vec![pick(self, NUMBERS)]),
            3 => ("encode_number_precision", vec![pick(self, NUMBERS)]),
            4 => ("encode_keep_buffer", vec![pick(self, CHOICES)]),
            5 => ("encode_invalid_numbers", vec![pick(self, CHOICES)]),
            _ => ("decode_invalid_numbers", vec![pick(self, CHOICES)]),
        };
        let count = args.len().min(self.rng.usize(..=args.len() + 1));
        let mut args: Vec<String> = args.into_iter().take(count).collect();
        if self.chance(5) {
            args.push("1".to_string());
        }
        format!("return D({{{table}.{name}({})}})", args.join(", "))
    }

    /// A script whose result is converted to a reply: plain values, the status and
    /// error tables, and under RESP3 the double, map, set and big-number tables.
    fn script_result(&mut self) -> String {
        let resp3 = if self.chance(50) {
            "redis.setresp(3) "
        } else {
            ""
        };
        let value = match self.rng.usize(..8) {
            0..=2 => self.lua_value_within(0, 8),
            3 => format!("{{err = {}}}", self.lua_string()),
            4 => format!("{{ok = {}}}", self.lua_string()),
            5 => format!("{{double = {}}}", self.lua_number()),
            6 => format!(
                "{{map = {{[{}] = {}, [{}] = {}}}}}",
                self.lua_key(),
                self.lua_value_within(1, 8),
                self.lua_key(),
                self.lua_value_within(1, 8)
            ),
            _ => match self.rng.usize(..3) {
                0 => format!(
                    "{{set = {{[{}] = true, [{}] = {}}}}}",
                    self.lua_key(),
                    self.lua_key(),
                    self.lua_value_within(2, 8)
                ),
                // Digits only: a RESP3 big number that is not one is not something this
                // test's parser (or any client) reads.
                1 => format!(
                    "{{big_number = '{}'}}",
                    [
                        "0",
                        "-1",
                        "12345678901234567890123",
                        "-98765432109876543210"
                    ][self.rng.usize(..4)]
                ),
                _ => format!(
                    "{{verbatim_string = {{format = 'txt', string = {}}}}}",
                    self.lua_string()
                ),
            },
        };
        format!("{resp3}return {value}")
    }
}
