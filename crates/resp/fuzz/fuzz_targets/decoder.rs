//! The resumable `Decoder`, fed the input in chunks chosen by the input's first bytes,
//! must produce exactly what `parse` produces from the whole input: the same frames, then
//! the same error or the same wait for more input.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use redline_resp::{parse, Decoder, Frame, ProtocolError};

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };

    let (expected, expected_end) = {
        let mut buf = BytesMut::from(input);
        let mut frames = Vec::new();
        let end = loop {
            match parse(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        (frames, end)
    };

    let mut decoder = Decoder::default();
    let mut buf = BytesMut::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut end: Option<ProtocolError> = None;
    let mut rest = input;
    let mut state = u32::from(seed) | 1;
    'feed: while !rest.is_empty() {
        // A small xorshift picks chunk sizes from 1 to 16 bytes, or the rest at once.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let size = if state % 8 == 0 {
            rest.len()
        } else {
            (state % 16) as usize + 1
        };
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        rest = tail;
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(e) => {
                    end = Some(e);
                    break 'feed;
                }
            }
        }
    }
    assert_eq!(frames, expected);
    assert_eq!(end, expected_end);
});
