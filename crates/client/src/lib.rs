//! redline: a Redis client built for throughput and dependable failure handling.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod config;
mod error;

pub use config::{Backoff, CaCerts, ClientCert, Config, FullQueue, PushHandler, TlsConfig};
pub use error::{Error, IoOp, Result, ServerErrorKind, TlsError, UrlError};
pub use redline_resp::{Frame, Protocol};
