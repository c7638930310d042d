//! `parse` on arbitrary bytes: never panics, leaves the buffer untouched when it needs
//! more input, and every frame it returns re-encodes to bytes that parse to the same frame.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use redline_resp::{encode, parse};

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    loop {
        let before = buf.clone();
        match parse(&mut buf) {
            Ok(Some(frame)) => {
                let mut wire = BytesMut::new();
                encode::frame(&mut wire, &frame);
                let again = parse(&mut wire);
                assert_eq!(again, Ok(Some(frame)), "re-encoded frame parses back");
                assert!(wire.is_empty());
            }
            Ok(None) => {
                assert_eq!(buf, before, "incomplete input is left untouched");
                break;
            }
            Err(_) => break,
        }
    }
});
