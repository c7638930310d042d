//! Networking: the listener ([`listener`]), the per-connection read → execute → write
//! loop ([`connection`]), per-client state ([`client`]), the client table
//! ([`registry`]) and the memory its clients hold ([`client_memory`]), each client's inbox for other connections ([`mailbox`]) and the
//! input a PUBLISH lets a listener run first ([`input_turns`]), the waits on
//! other connections' progress ([`signal`]), TLS on the
//! client port ([`tls`]) and the connections the server opens itself ([`outgoing`]).

pub mod buffer_peaks;
pub mod client;
pub mod client_memory;
pub mod connection;
pub mod counted;
pub mod input_turns;
pub mod listener;
pub mod mailbox;
pub mod outgoing;
pub mod peer;
pub mod recent_arrivals;
pub mod registry;
pub mod signal;
pub mod tls;
pub(crate) mod tls_v1;
