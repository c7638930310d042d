//! The server's request path on arbitrary bytes: two clients of one fresh server get
//! interleaved chunks of the input (chunk sizes and owners chosen by the first byte),
//! and every complete command is parsed and executed exactly as a connection would
//! (`run_commands`). Nothing may panic, hang or grow without bound: replies are
//! discarded as they come, strings are capped by a 1 MiB `proto-max-bulk-len`, and a
//! command that blocks is timed out at once.
#![no_main]

use std::net::SocketAddr;

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use redline_resp::{Limits, RequestDecoder};
use redline_server::net::client::ClientState;
use redline_server::net::connection::{run_commands, Progress};
use redline_server::shared::Shared;
use redline_server::{cmd, Config};

struct Client {
    state: ClientState,
    decoder: RequestDecoder,
    input: BytesMut,
    closed: bool,
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    // CONFIG SET proto-max-bulk-len could lift the cap that keeps one input's memory
    // bounded (a 4 GB SETRANGE is legal then, as in Redis): leave that directive alone.
    if input
        .windows(9)
        .any(|w| w.eq_ignore_ascii_case(b"max-bulk-"))
    {
        return;
    }
    // A script may loop forever, as in Redis (only SCRIPT KILL stops it): leave Lua's
    // loops to the scripting tests.
    if [&b"while"[..], b"repeat", b"for "]
        .iter()
        .any(|word| input.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word)))
    {
        return;
    }
    // MIGRATE connects wherever its arguments say: keep the fuzzer off the network.
    if input.windows(7).any(|w| w.eq_ignore_ascii_case(b"migrate")) {
        return;
    }
    let Ok(config) = Config::from_args([
        "--shards",
        "2",
        "--proto-max-bulk-len",
        "1048576",
        "--databases",
        "4",
        // A SHUTDOWN must not write a dump into the fuzzer's directory.
        "--save",
        "",
    ]) else {
        return;
    };
    let limits = Limits {
        max_bulk_len: 1 << 20,
        ..Limits::default()
    };
    let shared = Shared::new(config, 0);
    let peer: SocketAddr = ([127, 0, 0, 1], 1).into();
    let mut clients: Vec<Client> = (1..=2)
        .map(|id| Client {
            state: ClientState::new(id, peer, true),
            decoder: RequestDecoder::new(limits),
            input: BytesMut::new(),
            closed: false,
        })
        .collect();
    let mut output = BytesMut::new();
    let mut state = u32::from(seed) | 1;
    let mut rest = input;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let size = if seed & 1 == 0 {
            usize::MAX
        } else {
            (state % 64) as usize + 1
        };
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        rest = tail;
        let client = &mut clients[(state >> 8) as usize % 2];
        if client.closed {
            continue;
        }
        client.input.extend_from_slice(chunk);
        loop {
            let progress = run_commands(
                &shared,
                &mut client.state,
                &mut client.decoder,
                &mut client.input,
                &mut output,
            );
            client.state.mailbox.drain_into(&mut output);
            output.clear();
            match progress {
                Progress::Drained => break,
                Progress::OutputFull => continue,
                // No clock runs here: a pause ends at once.
                Progress::Paused => shared.pause.unpause(),
                // One client runs at a time here and `run_commands` lets the script turn
                // go when it returns: the turn is free, and no script is left running.
                Progress::Script => {
                    client.state.script_wait = None;
                    client.state.script_turn = shared.scripting.turn.try_take();
                }
                // No debugger client here: the session is dropped unstarted and the
                // script turn it held is let go.
                Progress::Debug => {
                    client.state.debug.pending = None;
                    client.state.script_turn = None;
                }
                // In-process clients have no socket: nobody has input to run first.
                Progress::OthersInput => {
                    client.state.input_wait.clear();
                    client.state.input_waited = true;
                }
                Progress::Blocked => {
                    // No clock runs here: the wait times out at once.
                    if let Some(blocked) = client.state.blocked.take() {
                        cmd::blocking::time_out(&shared, &blocked.waiter, &mut output);
                    }
                }
                // No replica answers here: WAIT ends at once, and a SYNC/PSYNC (which would
                // turn the connection into a replica link) closes the client.
                Progress::Replication => {
                    client.state.wait = None;
                    if client.state.replica_start.take().is_some() {
                        client.closed = true;
                        break;
                    }
                }
            }
        }
        if client.state.close_after_reply {
            client.closed = true;
        }
    }
    for client in clients.iter_mut() {
        if let Some(blocked) = client.state.blocked.take() {
            cmd::blocking::cancel(&shared, &blocked.waiter);
        }
        cmd::tx::unwatch_all(&shared, &mut client.state);
        cmd::pubsub::unsubscribe_all(&shared, &mut client.state);
    }
});
