//! LZF compression as saves and DUMP use it (`rdbcompression yes`).
//!
//! Run: `cargo bench -p redline-server --bench lzf -- --warm-up-time 1 --measurement-time 3`.
//! Incompressible 1 MiB values are the costly case: the compressor reads the whole value
//! before it gives up, as Redis's does. Text compresses; 64-byte strings show the fixed
//! cost every string longer than 20 bytes pays.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use redline_server::persist::rdb::lzf;

/// xorshift64: incompressible bytes without a dependency.
fn random_bytes(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Words from a small vocabulary: compresses about 3:1.
fn text_bytes(len: usize) -> Vec<u8> {
    const WORDS: [&str; 8] = [
        "redis ", "value ", "key ", "stream ", "list ", "set ", "hash ", "zset ",
    ];
    let picks = random_bytes(len);
    let mut out = Vec::with_capacity(len + 8);
    let mut i = 0;
    while out.len() < len {
        out.extend_from_slice(WORDS[usize::from(picks[i] % 8)].as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

fn compress(c: &mut Criterion) {
    let mut group = c.benchmark_group("lzf_compress");
    for (name, input) in [
        ("random_1mib", random_bytes(1 << 20)),
        ("text_1mib", text_bytes(1 << 20)),
        ("text_64b", text_bytes(64)),
    ] {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| lzf::compress(black_box(&input), input.len() - 4))
        });
    }
    group.finish();
}

criterion_group!(benches, compress);
criterion_main!(benches);
