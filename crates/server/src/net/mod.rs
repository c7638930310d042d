//! Networking: the listener ([`listener`]), the per-connection read → execute → write
//! loop ([`connection`]), per-client state ([`client`]), the client table
//! ([`registry`]), each client's inbox for other connections ([`mailbox`]) and TLS on the
//! client port ([`tls`]).

pub mod client;
pub mod connection;
pub mod listener;
pub mod mailbox;
pub mod registry;
pub mod tls;
