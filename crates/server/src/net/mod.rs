//! Networking: the listener ([`listener`]), the per-connection read → execute → write
//! loop ([`connection`]), per-client state ([`client`]) and the client table
//! ([`registry`]).

pub mod client;
pub mod connection;
pub mod listener;
pub mod registry;
