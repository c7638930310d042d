//! `RequestDecoder` on arbitrary bytes: never panics, never returns an empty command, and
//! gives the same commands and the same final error whether the input arrives at once or
//! in chunks chosen by the input's first byte.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use redline_resp::{ProtocolError, RequestDecoder};

fn run(
    input: &[u8],
    mut chunk_size: impl FnMut() -> usize,
) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::new();
    let mut commands = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(chunk_size().min(rest.len()));
        rest = tail;
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty());
                    commands.push(args);
                }
                Ok(None) => break,
                Err(e) => return (commands, Some(e)),
            }
        }
    }
    (commands, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let whole = run(input, || usize::MAX);
    let mut state = u32::from(seed) | 1;
    let chunked = run(input, || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % 16) as usize + 1
    });
    assert_eq!(whole, chunked);
});
