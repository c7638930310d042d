//! N multiplexed connections to one server, picked round-robin.
//!
//! The counter belongs to this pool alone (one per server), never to the whole client:
//! a counter shared by every node is a cache line every caller on every core fights over.
//! With one connection (the default) there is no counter traffic at all.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::config::Config;
use crate::error::Error;
use crate::mux::Multiplexer;
use crate::net::{self, Endpoint};

#[derive(Debug)]
pub(crate) struct Pool {
    muxes: Box<[Multiplexer]>,
    next: AtomicUsize,
}

impl Pool {
    /// Opens `cfg.pool_size` connections now, so a wrong address or password fails here
    /// rather than on the first command.
    pub(crate) async fn connect(endpoint: Arc<Endpoint>, cfg: &Config) -> Result<Pool, Error> {
        let mut muxes = Vec::with_capacity(cfg.pool_size);
        for _ in 0..cfg.pool_size {
            let mut conn = net::connect(&endpoint).await?;
            if let Some(cache) = &cfg.tracker {
                cache.enable_tracking(&mut conn, &endpoint.addr).await?;
            }
            muxes.push(Multiplexer::spawn(endpoint.clone(), cfg, Some(conn)));
        }
        Ok(Pool {
            muxes: muxes.into_boxed_slice(),
            next: AtomicUsize::new(0),
        })
    }

    /// The connection for the next command.
    #[inline]
    pub(crate) fn pick(&self) -> &Multiplexer {
        let n = self.muxes.len();
        let i = if n == 1 {
            0
        } else {
            self.next.fetch_add(1, Ordering::Relaxed) % n
        };
        &self.muxes[i]
    }
}
