//! The embedded redline-server `bench` starts when no server is named: a free loopback
//! port, its own runtime and worker threads (as a separate process would have), stopped
//! when dropped.

use std::net::SocketAddr;

use redline_server::{Config, Server, ShutdownHandle};

/// A running in-process server.
pub(crate) struct Embedded {
    addr: SocketAddr,
    stop: ShutdownHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Embedded {
    /// Binds 127.0.0.1 on a free port and serves on a background thread with its own
    /// runtime. Call it outside any runtime.
    pub(crate) fn start() -> std::io::Result<Embedded> {
        let config = Config {
            port: 0,
            bind: vec!["127.0.0.1".to_owned()],
            // A benchmark's keys are throwaway: no dump file.
            save: String::new(),
            ..Config::default()
        };
        let runtime = redline_server::runtime::build(config.effective_workers(), "redline-server")?;
        let server = runtime.block_on(Server::bind(config))?;
        let addr = server.local_addr();
        let stop = server.shutdown_handle();
        let thread = std::thread::Builder::new()
            .name("redline-server-main".to_owned())
            .spawn(move || {
                let _ = runtime.block_on(server.run());
            })?;
        Ok(Embedded {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        self.stop.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
