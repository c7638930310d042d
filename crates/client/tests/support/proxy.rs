//! A TCP relay in front of a real redis-server that can hold or cut traffic: the network
//! faults a test cannot get from redis-server itself (a peer that stops answering without
//! closing; a connection lost while the server stays up). Redis answers everything; the
//! relay only moves bytes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Default)]
struct State {
    /// While set, bytes from clients are read but not passed on (a black hole).
    hold: AtomicBool,
    accepted: AtomicUsize,
    pumps: Mutex<Vec<JoinHandle<()>>>,
}

/// The relay; stops with the test's runtime.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Proxy {
    /// Listens on a free loopback port and relays every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let st = state.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                st.accepted.fetch_add(1, Ordering::SeqCst);
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let up = tokio::spawn(pump(cr, sw, Some(st.clone())));
                let down = tokio::spawn(pump(sr, cw, None));
                st.pumps.lock().unwrap().extend([up, down]);
            }
        });
        Proxy { addr, state }
    }

    /// `redis://` URL of the relay.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Stops passing client bytes on; they wait in the relay.
    pub fn hold(&self) {
        self.state.hold.store(true, Ordering::SeqCst);
    }

    /// Passes bytes on again (held ones first, on connections still open).
    pub fn resume(&self) {
        self.state.hold.store(false, Ordering::SeqCst);
    }

    /// Drops every relayed connection (held bytes are lost); the listener stays.
    pub fn cut(&self) {
        for pump in self.state.pumps.lock().unwrap().drain(..) {
            pump.abort();
        }
    }

    /// Connections relayed so far.
    pub fn accepted(&self) -> usize {
        self.state.accepted.load(Ordering::SeqCst)
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    hold: Option<Arc<State>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some(state) = &hold {
            while state.hold.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
