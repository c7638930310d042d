//! Parse and encode throughput of the RESP codec.
//!
//! Run: `cargo bench -p redline-resp --bench codec -- --warm-up-time 1 --measurement-time 3`.
//! Each pipelined-stream benchmark starts from a fresh buffer holding the whole input (its
//! creation is not timed). Large bulks are fed in 64 KiB reads and the time includes
//! appending each read to the buffer, as a socket read loop would: parsing a bulk that is
//! already whole is constant time (the payload is sliced, not copied), so a throughput
//! figure for it would measure nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use redline_resp::{encode, parse, Decoder, Frame, RequestDecoder};

const COMMANDS: usize = 1_000;
const VALUE: [u8; 64] = [b'v'; 64];

/// 1,000 pipelined commands alternating `SET key:NNNN <64 bytes>` and `GET key:NNNN`.
fn request_stream() -> BytesMut {
    let mut out = BytesMut::new();
    for i in 0..COMMANDS {
        let key = format!("key:{:04}", i / 2);
        if i % 2 == 0 {
            encode::command(&mut out, [&b"SET"[..], key.as_bytes(), &VALUE]);
        } else {
            encode::command(&mut out, [&b"GET"[..], key.as_bytes()]);
        }
    }
    out
}

/// The replies to `request_stream`: `+OK` and the 64-byte bulk, alternating.
fn reply_stream() -> BytesMut {
    let mut out = BytesMut::new();
    for i in 0..COMMANDS {
        if i % 2 == 0 {
            encode::write_simple(&mut out, b"OK");
        } else {
            encode::write_bulk(&mut out, &VALUE);
        }
    }
    out
}

fn requests(c: &mut Criterion) {
    let wire = request_stream();
    let mut group = c.benchmark_group("request");
    group.throughput(Throughput::Bytes(wire.len() as u64));
    group.bench_function("RequestDecoder 1000 SET/GET", |b| {
        b.iter_batched_ref(
            || wire.clone(),
            |buf| {
                let mut decoder = RequestDecoder::default();
                let mut n = 0;
                while let Some(args) = decoder.decode(buf).unwrap() {
                    n += args.len();
                }
                black_box(n)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn replies(c: &mut Criterion) {
    let wire = reply_stream();
    let mut group = c.benchmark_group("reply");
    group.throughput(Throughput::Bytes(wire.len() as u64));
    group.bench_function("Decoder 1000 OK/bulk64", |b| {
        b.iter_batched_ref(
            || wire.clone(),
            |buf| {
                let mut decoder = Decoder::default();
                let mut n = 0;
                while let Some(frame) = decoder.decode(buf).unwrap() {
                    n += matches!(frame, Frame::Bulk(_)) as usize;
                }
                black_box(n)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("parse 1000 OK/bulk64", |b| {
        b.iter_batched_ref(
            || wire.clone(),
            |buf| {
                let mut n = 0;
                while let Some(frame) = parse(buf).unwrap() {
                    n += matches!(frame, Frame::Bulk(_)) as usize;
                }
                black_box(n)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn large_bulks(c: &mut Criterion) {
    let mut group = c.benchmark_group("large bulk");
    group.sample_size(10);
    for (name, size) in [("1 MiB", 1usize << 20), ("64 MiB", 64 << 20)] {
        let mut wire = BytesMut::new();
        encode::write_bulk(&mut wire, &vec![b'x'; size]);
        group.throughput(Throughput::Bytes(wire.len() as u64));
        group.bench_function(format!("Decoder {name} in 64 KiB reads"), |b| {
            b.iter(|| {
                let mut decoder = Decoder::default();
                let mut buf = BytesMut::with_capacity(64 << 10);
                let mut frame = None;
                for read in wire.chunks(64 << 10) {
                    buf.extend_from_slice(read);
                    if let Some(f) = decoder.decode(&mut buf).unwrap() {
                        frame = Some(f);
                    }
                }
                black_box(frame)
            })
        });
    }
    group.finish();
}

fn encoding(c: &mut Criterion) {
    let mut probe = BytesMut::new();
    encode::command(&mut probe, [&b"SET"[..], b"key:0001", &VALUE]);
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Bytes(probe.len() as u64));
    let mut out = BytesMut::with_capacity(4096);
    group.bench_function("command SET 64-byte value", |b| {
        b.iter(|| {
            out.clear();
            encode::command(
                &mut out,
                [
                    &b"SET"[..],
                    black_box(&b"key:0001"[..]),
                    black_box(&VALUE[..]),
                ],
            );
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, requests, replies, large_bulks, encoding);
criterion_main!(benches);
