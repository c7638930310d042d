//! Typed commands, one file per family. Each command is written once, as the [`Cmd`] it
//! sends and the type its reply converts to; the `commands!` macro turns it into the same
//! method on all four command surfaces: [`Client`](crate::Client) and
//! [`ClusterClient`](crate::ClusterClient) (which send it and convert the reply) and
//! [`Pipeline`](crate::Pipeline) and [`ClusterPipeline`](crate::ClusterPipeline) (which
//! queue it). What differs per type is only the transport: how a command is routed
//! (one server, or a cluster slot / fan-out from the command table's key positions and
//! tips), and where a blocking one runs (a dedicated connection, for as long as
//! `redline_resp::command::blocking` says, plus the command timeout).
//!
//! Blocking commands (`blpop`, `brpop`, `blmove`, `bzpopmin`, `bzpopmax`, `wait`,
//! `xread_block`) exist on the two clients only: a pipeline shares its connection, which
//! they would stall, so a pipeline refuses them. `tests/method_parity.rs` checks that the
//! four types offer the same typed methods.
//!
//! [`Cmd`]: crate::Cmd

mod blocking;
mod functions;
mod geo;
mod hashes;
mod keys;
mod lists;
mod publish;
mod scripting;
mod server;
mod sets;
mod streams;
mod strings;
mod zsets;

pub use functions::{
    EngineStats, FunctionRestorePolicy, FunctionStats, Library, LibraryFunction, RunningFunction,
};
pub use geo::{GeoMatch, GeoSearch, GeoUnit};
pub use keys::ExpireCondition;
pub(crate) use scripting::load_missing;
pub use scripting::{Script, ScriptClient};
pub use streams::StreamEntry;
pub use strings::{Expiry, SetCondition, SetOptions};
pub use zsets::ZAddOptions;

/// Defines typed commands on `Client`, `ClusterClient`, `Pipeline` and `ClusterPipeline`.
///
/// ```text
/// commands! {
///     /// docs
///     fn name(args) -> ReplyType [as convert_fn] { cmd_expression }
///     /// A reply type the caller picks (EVAL, FCALL): `T: FromReply` on the clients;
///     /// pipelines convert at `query` and take no type parameter.
///     fn name<T>(args) -> T { cmd_expression }
/// }
/// commands! {
///     clients_only;
///     // Blocking commands: the two clients only (see the module docs).
///     fn name(args) -> ReplyType { cmd_expression }
/// }
/// ```
macro_rules! commands {
    (@convert [$ret:ty]) => { <$ret as $crate::FromReply>::from_reply };
    (@convert [$ret:ty] $convert:path) => { $convert };
    // One client type: sends the command and converts the reply. `query_with` is where
    // the types differ (routing, dedicated connections for blocking commands).
    (@client $client:path; $(
        $(#[$meta:meta])*
        fn $name:ident $(<$gen:ident>)? ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $(as $convert:path)? $body:block
    )*) => {
        impl $client {
            $(
                $(#[$meta])*
                pub fn $name<'a $(, $gen: $crate::FromReply + 'a)?>(&'a self, $($arg: $ty),*)
                    -> impl ::std::future::Future<Output = $crate::Result<$ret>> + Send + 'a
                {
                    self.query_with($body, commands!(@convert [$ret] $($convert)?))
                }
            )*
        }
    };
    // One pipeline type: queues the command (its reply is converted by `query`).
    (@pipeline $pipeline:path; $(
        $(#[$meta:meta])*
        fn $name:ident $(<$gen:ident>)? ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $(as $convert:path)? $body:block
    )*) => {
        impl $pipeline {
            $(
                $(#[$meta])*
                pub fn $name(&mut self, $($arg: $ty),*) -> &mut Self {
                    self.add($body)
                }
            )*
        }
    };
    (clients_only; $($items:tt)*) => {
        commands!(@client $crate::Client; $($items)*);
        commands!(@client $crate::ClusterClient; $($items)*);
    };
    ($($items:tt)*) => {
        commands!(clients_only; $($items)*);
        commands!(@pipeline $crate::Pipeline; $($items)*);
        commands!(@pipeline $crate::ClusterPipeline; $($items)*);
    };
}
pub(crate) use commands;
