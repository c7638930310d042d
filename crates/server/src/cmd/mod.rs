//! Commands: one file per family, dispatched through the shared command table of
//! `redline_resp::command` (the same table answers COMMAND INFO/COUNT/GETKEYS, and gives
//! every arity and flag), so a command's name, arity and flags are written once.
//!
//! [`execute`] runs one command the way Redis's `processCommand` does: look the name up
//! (then the subcommand), check the arity, check authentication, call the handler. A
//! handler writes its reply straight into the connection's output buffer; it returns
//! `Err` only before writing anything, and the dispatcher writes that error.

pub mod args;
pub mod float;
pub mod hashes;
pub mod keys;
pub mod lists;
pub mod long_double;
pub mod reply;
pub mod server;
pub mod sets;
pub mod strings;
pub mod zsets;

use std::collections::HashMap;
use std::sync::LazyLock;

use bytes::{Bytes, BytesMut};
use redline_resp::command::{self, CommandFlags, CommandSpec};
use redline_resp::{encode, Protocol};

use crate::net::client::ClientState;
use crate::shared::Shared;
use crate::store::{Db, Locked, Shard};
use parking_lot::MutexGuard;
pub use reply::{CmdError, CmdResult};

/// What a handler can reach: the server, its own connection's state, and the output.
pub struct Ctx<'a> {
    /// Server-wide state.
    pub shared: &'a Shared,
    /// The calling connection.
    pub client: &'a mut ClientState,
    /// Where replies go.
    pub out: &'a mut BytesMut,
}

impl<'a> Ctx<'a> {
    /// The selected database (borrowed from the server, not from `self`, so a shard can
    /// stay locked while the reply is written to `out`).
    #[inline]
    pub fn db(&self) -> &'a Db {
        self.shared.store.db(self.client.db)
    }

    /// Locks the shard of `key` in the selected database. Commands lock through the
    /// context, never `Db` directly, so MULTI/EXEC can later hand them the shards it
    /// already holds (see the module notes) without touching any command.
    #[inline]
    pub fn lock(&self, key: &[u8]) -> MutexGuard<'a, Shard> {
        self.db().lock(key)
    }

    /// Locks the shards of several keys in ascending order (multi-key commands).
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Locked<'a> {
        self.db().lock_keys(keys)
    }

    /// The connection's protocol.
    #[inline]
    pub fn proto(&self) -> Protocol {
        self.client.protocol
    }
}

/// A command implementation: `args[0]` is the command name.
pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// Every implemented command or subcommand, by its table name.
fn registrations() -> Vec<(&'static str, Handler)> {
    let mut all = Vec::new();
    all.extend_from_slice(server::COMMANDS);
    all.extend_from_slice(strings::COMMANDS);
    all.extend_from_slice(keys::COMMANDS);
    all.extend_from_slice(lists::COMMANDS);
    all.extend_from_slice(hashes::COMMANDS);
    all.extend_from_slice(sets::COMMANDS);
    all.extend_from_slice(zsets::COMMANDS);
    all
}

/// Resolves a table name (`get`, `client|setname`) to its entry.
fn spec_by_name(name: &str) -> Option<&'static CommandSpec> {
    match name.split_once('|') {
        Some((parent, sub)) => {
            command::lookup_subcommand(command::lookup(parent.as_bytes())?, sub.as_bytes())
        }
        None => command::lookup(name.as_bytes()),
    }
}

/// Handlers keyed by the address of their table entry: entries are statics, so the
/// address identifies them and hashing it is one multiplication.
static HANDLERS: LazyLock<HashMap<usize, Handler, foldhash::fast::RandomState>> =
    LazyLock::new(|| {
        registrations()
            .into_iter()
            .filter_map(|(name, handler)| Some((spec_key(spec_by_name(name)?), handler)))
            .collect()
    });

#[inline]
fn spec_key(spec: &'static CommandSpec) -> usize {
    spec as *const CommandSpec as usize
}

/// The handler of a table entry, if implemented.
#[inline]
pub fn handler_of(spec: &'static CommandSpec) -> Option<Handler> {
    HANDLERS.get(&spec_key(spec)).copied()
}

/// Runs one command and writes its reply.
pub fn execute(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    if let Err(e) = dispatch(ctx, args) {
        encode::write_error(ctx.out, e.text());
    }
}

#[inline]
fn dispatch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Some(name) = args.first() else {
        return Ok(());
    };
    let Some(mut spec) = command::lookup(name) else {
        return Err(reply::unknown_command(args));
    };
    if spec.has_subcommands() && args.len() >= 2 {
        spec = match command::lookup_subcommand(spec, &args[1]) {
            Some(sub) => sub,
            // Newer than Redis 7.0, sent by current clients during their handshake.
            None if spec.name == "client" && args::is(&args[1], "setinfo") => {
                return server::client_setinfo(ctx, args)
            }
            None => return Err(reply::unknown_subcommand(spec.name, &args[1])),
        };
    }
    if !spec.arity_ok(args.len()) {
        return Err(reply::wrong_arity(spec.name));
    }
    if !ctx.client.authenticated && !spec.flags.contains(CommandFlags::NO_AUTH) {
        return Err(reply::NOAUTH);
    }
    match handler_of(spec) {
        Some(handler) => handler(ctx, args),
        None => Err(reply::unknown_command(args)),
    }
}

/// Names of implemented commands (tests, COMMAND DOCS).
pub fn implemented() -> Vec<&'static str> {
    registrations().into_iter().map(|(n, _)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registration_is_in_the_table() {
        for (name, _) in registrations() {
            assert!(
                spec_by_name(name).is_some(),
                "{name} is not a Redis 7.0 command"
            );
        }
        assert_eq!(HANDLERS.len(), registrations().len());
    }
}
