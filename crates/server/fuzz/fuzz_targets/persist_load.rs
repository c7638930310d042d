//! The loaders the server runs at start, on arbitrary bytes: the first byte picks what
//! the rest is, and the rest goes to the same library function the server calls.
//!
//! - an RDB file (`snapshot::load`, as `dump.rdb` and an AOF base are loaded);
//! - one incremental AOF file (`aof_load::load_parts`), with `aof-load-truncated` on or
//!   off;
//! - a base and an incremental file, split where the second byte says;
//! - an AOF manifest (`aof_manifest::Manifest::parse`).
//!
//! Nothing may panic, hang or allocate without bound; a load that succeeds must say
//! whether it cut the file. The AOF runs commands, so the inputs the `requests` target
//! leaves out (Lua loops, MIGRATE, lifting `proto-max-bulk-len`) are left out here too;
//! commands that write files (SAVE, BGREWRITEAOF, CONFIG SET dir) are skipped as well.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redline_server::persist::aof_load::{load_parts, Contents, Part};
use redline_server::persist::aof_manifest::Manifest;
use redline_server::persist::snapshot::{load, LoadOptions};
use redline_server::shared::Shared;
use redline_server::Config;

fn contains(input: &[u8], word: &[u8]) -> bool {
    input
        .windows(word.len())
        .any(|w| w.eq_ignore_ascii_case(word))
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let skipped: [&[u8]; 10] = [
        b"while", b"repeat", b"for ", b"migrate", b"max-bulk-", b"save", b"rewriteaof",
        b"dir", b"shutdown", b"sleep",
    ];
    if skipped.iter().any(|word| contains(input, word)) {
        return;
    }
    let Ok(config) = Config::from_args([
        "--shards",
        "2",
        "--databases",
        "4",
        "--proto-max-bulk-len",
        "1048576",
    ]) else {
        return;
    };
    let shared = Shared::new(config, 0);
    match mode % 4 {
        0 => {
            let _ = load(&shared, input, LoadOptions::default(), None);
        }
        1 => {
            let parts = [Part {
                name: "fuzz.1.incr.aof",
                contents: Contents::Bytes(input),
            }];
            if let Ok(loaded) = load_parts(&shared, &parts, mode & 0x80 != 0) {
                if let Some(at) = loaded.truncated_at {
                    assert!(at <= input.len() as u64);
                }
            }
        }
        2 => {
            let Some((&cut, rest)) = input.split_first() else {
                return;
            };
            let (base, incr) = rest.split_at(usize::from(cut).min(rest.len()));
            let parts = [
                Part {
                    name: "fuzz.1.base.rdb",
                    contents: Contents::Bytes(base),
                },
                Part {
                    name: "fuzz.1.incr.aof",
                    contents: Contents::Bytes(incr),
                },
            ];
            let _ = load_parts(&shared, &parts, mode & 0x80 != 0);
        }
        _ => {
            if let Ok(manifest) = Manifest::parse(input) {
                assert!(manifest
                    .loadable()
                    .all(|f| f.seq > 0 && !f.name.contains('/')));
            }
        }
    }
});
