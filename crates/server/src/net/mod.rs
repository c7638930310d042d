//! Networking: the listener ([`listener`]), the per-connection read → execute → write
//! loop ([`connection`]), per-client state ([`client`]), the client table
//! ([`registry`]) and each client's inbox for other connections ([`mailbox`]).

pub mod client;
pub mod connection;
pub mod listener;
pub mod mailbox;
pub mod registry;
