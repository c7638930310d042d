//! One command surface: `Client`, `ClusterClient`, `Pipeline` and `ClusterPipeline` offer
//! the same typed commands. Rust has no reflection, so the crate's sources are read: the
//! `pub fn`s of each type's inherent `impl` blocks, and the lists given to the `commands!`
//! macro (every item on all four types; after `clients_only;`, on the two clients).
//!
//! What may differ is listed below, each with its reason: type-specific APIs that are not
//! typed commands, the blocking commands (clients only), and script queuing (pipelines
//! only). A typed method added to one type alone fails this test. (The cached reads,
//! `cached_get`..., are generated for both clients by `cache/read.rs`'s own macro, which
//! this scan does not expand; pipelines bypass the client-side cache.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const TYPES: [&str; 4] = ["Client", "ClusterClient", "Pipeline", "ClusterPipeline"];

/// Methods of one type that are its own API, not typed commands.
const TYPE_SPECIFIC: &[(&str, &[&str])] = &[
    (
        "Client",
        &[
            // Connecting and sending what the caller built.
            "connect",
            "from_config",
            "cmd",
            "query",
            // Connections of its own, pipelines, WATCH transactions (on a cluster:
            // `dedicated_for` a slot, then `watch` there).
            "dedicated",
            "subscriber",
            "pipeline",
            "transaction",
        ],
    ),
    (
        "ClusterClient",
        &[
            "connect",
            "from_config",
            "cmd",
            "query",
            "query_from",
            "dedicated_for",
            "subscriber",
            "shard_subscriber",
            "pipeline",
            // Cluster topology and fan-out on request.
            "metrics",
            "masters",
            "refresh",
            "on_masters",
            "on_all_nodes",
            "on_node",
            "on_random",
            "keys_everywhere",
            // For proxies that route by slot (the smart tunnel): encoded commands in,
            // replies out as bytes. In front of one server, a proxy copies bytes as they
            // come and needs no client (the standalone tunnel).
            "relay",
        ],
    ),
    (
        "Pipeline",
        &[
            "atomic",
            "add",
            "cmd",
            "len",
            "is_empty",
            "clear",
            "query",
            "query_frames",
        ],
    ),
    (
        "ClusterPipeline",
        &[
            "atomic",
            "add",
            "cmd",
            "len",
            "is_empty",
            "query",
            "query_frames",
        ],
    ),
];

/// Typed commands the clients have and pipelines do not: they block, and a pipeline
/// shares its connection (it refuses them).
const CLIENTS_ONLY: &[&str] = &[
    "blpop",
    "brpop",
    "blmove",
    "bzpopmin",
    "bzpopmax",
    "wait",
    "xread_block",
];

/// Typed methods pipelines have and clients do not: `run_script` queues EVALSHA and loads
/// the script before sending (on a client, `Script::run` falls back to EVAL instead).
const PIPELINES_ONLY: &[&str] = &["run_script"];

#[test]
fn every_type_has_the_same_typed_commands() {
    let methods = public_methods(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let typed = |ty: &str| -> BTreeSet<String> {
        let own: &[&str] = TYPE_SPECIFIC
            .iter()
            .find(|(t, _)| *t == ty)
            .map_or(&[], |(_, m)| m);
        methods[ty]
            .iter()
            .filter(|m| !own.contains(&m.as_str()))
            .cloned()
            .collect()
    };
    let [client, cluster, pipeline, cluster_pipeline] = TYPES.map(typed);
    assert!(
        client.len() > 150,
        "too few typed commands found: {client:?}"
    );

    assert_same("Client", &client, "ClusterClient", &cluster);
    assert_same("Pipeline", &pipeline, "ClusterPipeline", &cluster_pipeline);
    let queued: BTreeSet<String> = client
        .iter()
        .filter(|m| !CLIENTS_ONLY.contains(&m.as_str()))
        .cloned()
        .chain(PIPELINES_ONLY.iter().map(|m| m.to_string()))
        .collect();
    assert_same(
        "Client (without blocking commands, with run_script)",
        &queued,
        "Pipeline",
        &pipeline,
    );
    for m in CLIENTS_ONLY {
        assert!(
            client.contains(*m),
            "{m} listed as blocking but not on Client"
        );
    }
    // The allow-lists name methods that exist (a stale entry would hide a removal).
    for (ty, own) in TYPE_SPECIFIC {
        for m in *own {
            assert!(
                methods[*ty].contains(*m),
                "{ty}::{m} is allow-listed but gone"
            );
        }
    }
}

fn assert_same(a_name: &str, a: &BTreeSet<String>, b_name: &str, b: &BTreeSet<String>) {
    let only_a: Vec<_> = a.difference(b).collect();
    let only_b: Vec<_> = b.difference(a).collect();
    assert!(
        only_a.is_empty() && only_b.is_empty(),
        "typed commands differ: only on {a_name}: {only_a:?}; only on {b_name}: {only_b:?} \
         (write the command once in a `commands!` list, or allow-list a type-specific API \
         in tests/method_parity.rs with its reason)"
    );
}

/// Public method names per type, from every `.rs` file below `dir`.
fn public_methods(dir: &Path) -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut out: BTreeMap<&'static str, BTreeSet<String>> =
        TYPES.iter().map(|t| (*t, BTreeSet::new())).collect();
    let mut files = vec![dir.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                files.push(entry.unwrap().path());
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let code = strip(&std::fs::read_to_string(&path).unwrap());
            scan(&tokens(&code), &mut out);
        }
    }
    out
}

/// Collects the methods of inherent `impl <Type> { ... }` blocks and of `commands! { ... }`
/// lists from a token stream.
fn scan(toks: &[String], out: &mut BTreeMap<&'static str, BTreeSet<String>>) {
    let mut i = 0;
    while i < toks.len() {
        if toks[i] == "impl" {
            // Header up to the block: `impl [<...>] path::Type {` (no `for`: trait impls
            // are not inherent methods).
            let Some(open) = toks[i..].iter().position(|t| t == "{" || t == ";") else {
                break;
            };
            let open = i + open;
            let header = &toks[i + 1..open];
            let ty = header.last().map(String::as_str);
            if toks[open] == "{" && !header.iter().any(|t| t == "for") {
                if let Some(ty) = TYPES.iter().find(|t| Some(**t) == ty) {
                    let set = out.get_mut(ty).unwrap();
                    i = block(toks, open, |at| {
                        // `pub [async|const] fn name` at the block's own level.
                        if toks[at] == "pub" {
                            let f = at
                                + 1
                                + usize::from(matches!(toks[at + 1].as_str(), "async" | "const"));
                            if toks[f] == "fn" {
                                set.insert(toks[f + 1].clone());
                            }
                        }
                    });
                    continue;
                }
            }
        } else if toks[i] == "commands"
            && toks.get(i + 1).is_some_and(|t| t == "!")
            && toks.get(i + 2).is_some_and(|t| t == "{")
        {
            let open = i + 2;
            let clients_only = toks.get(open + 1).is_some_and(|t| t == "clients_only");
            let mut names = Vec::new();
            i = block(toks, open, |at| {
                if toks[at] == "fn" {
                    names.push(toks[at + 1].clone());
                }
            });
            let on: &[&str] = if clients_only { &TYPES[..2] } else { &TYPES };
            for ty in on {
                out.get_mut(ty).unwrap().extend(names.iter().cloned());
            }
            continue;
        }
        i += 1;
    }
}

/// Calls `each` with the index of every token directly inside the block opened at `open`
/// (not in nested blocks); returns the index after its closing brace.
fn block(toks: &[String], open: usize, mut each: impl FnMut(usize)) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < toks.len() {
        match toks[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ if depth == 1 => each(i),
            _ => {}
        }
        i += 1;
    }
    i
}

/// Identifiers and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in code.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The code without comments (doc comments hold examples with braces) and without the
/// contents of string and character literals.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            // Raw strings: r"..." and r#"..."#.
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#')) && starts_literal(b, i) => {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let start = i + 1 + hashes;
                if b.get(start) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                i = start + 1;
                while i < b.len() && !b[i..].starts_with(&close) {
                    i += 1;
                }
                i += close.len();
                out.push_str("\"\"");
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A character literal ('{', '\n', '\''), not a lifetime ('a).
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
            c => {
                // Source files are UTF-8; copy whole characters.
                let len = utf8_len(c);
                out.push_str(&src[i..i + len]);
                i += len;
            }
        }
    }
    out
}

/// `r` at `i` begins a raw string (`r"`, `br"`), not the end of an identifier.
fn starts_literal(b: &[u8], i: usize) -> bool {
    match i.checked_sub(1).map(|p| b[p]) {
        None => true,
        Some(b'b') => i < 2 || !is_ident(b[i - 2]),
        Some(c) => !is_ident(c),
    }
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    }
}

#[test]
fn the_scanner_reads_impls_and_command_lists() {
    let code = strip(
        r##"
        /// ```
        /// impl Client { pub fn in_a_doc_comment() {} }
        /// ```
        impl Client {
            pub fn one(&self) -> &str { "}" }
            pub(crate) fn hidden(&self) {}
            fn private(&self) { let _ = '{'; }
            pub async fn two<'a>(&'a self) {}
        }
        impl std::fmt::Debug for Pipeline { fn fmt(&self) {} }
        impl crate::ClusterPipeline { pub fn three(&mut self) -> &mut Self { self } }
        commands! {
            /// `X`
            fn x(key: impl ToArg) -> u64 { if true { Cmd::new("X{") } else { Cmd::new(r#"}"#) } }
            fn y<T>(a: u8) -> T { Cmd::new("Y") }
        }
        commands! {
            clients_only;
            fn z(t: Duration) -> u64 { Cmd::new("Z") }
        }
        "##,
    );
    let mut out = TYPES.iter().map(|t| (*t, BTreeSet::new())).collect();
    scan(&tokens(&code), &mut out);
    let names = |ty: &str| out[ty].iter().cloned().collect::<Vec<_>>();
    assert_eq!(names("Client"), ["one", "two", "x", "y", "z"]);
    assert_eq!(names("ClusterClient"), ["x", "y", "z"]);
    assert_eq!(names("Pipeline"), ["x", "y"]);
    assert_eq!(names("ClusterPipeline"), ["three", "x", "y"]);
}
