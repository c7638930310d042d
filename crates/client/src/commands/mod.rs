//! Typed commands, one file per family. Each command is written once, as the [`Cmd`] it
//! sends and the type its reply converts to; the `commands!` macro turns it into a method
//! on [`Client`](crate::Client) (which sends it and converts the reply) and on
//! [`Pipeline`](crate::Pipeline) (which queues it).
//!
//! [`Cmd`]: crate::Cmd

mod blocking;
mod functions;
mod geo;
mod hashes;
mod keys;
mod lists;
mod scripting;
mod server;
mod sets;
mod streams;
mod strings;
mod zsets;

pub(crate) use functions::fcall_cmd;
pub use functions::{
    EngineStats, FunctionRestorePolicy, FunctionStats, Library, LibraryFunction, RunningFunction,
};
pub use geo::{GeoMatch, GeoSearch, GeoUnit};
pub use keys::ExpireCondition;
pub use scripting::Script;
pub(crate) use scripting::{load_missing, script_tail};
pub use streams::StreamEntry;
pub use strings::{Expiry, SetCondition, SetOptions};
pub use zsets::ZAddOptions;

/// Defines typed commands on `Client` and `Pipeline` (and their cluster twins).
///
/// `fn name(args) -> ReplyType [as convert_fn] { cmd_expression }`
macro_rules! commands {
    (@convert [$ret:ty]) => { <$ret as $crate::FromReply>::from_reply };
    (@convert [$ret:ty] $convert:path) => { $convert };
    ($(
        $(#[$meta:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $(as $convert:path)? $body:block
    )*) => {
        impl $crate::Client {
            $(
                $(#[$meta])*
                pub fn $name(&self, $($arg: $ty),*)
                    -> impl ::std::future::Future<Output = $crate::Result<$ret>> + Send + '_
                {
                    self.query_with($body, commands!(@convert [$ret] $($convert)?))
                }
            )*
        }
        impl $crate::Pipeline {
            $(
                $(#[$meta])*
                pub fn $name(&mut self, $($arg: $ty),*) -> &mut Self {
                    self.add($body)
                }
            )*
        }
        // The same commands on a cluster: routed by key slot (see `cluster/`).
        impl $crate::ClusterClient {
            $(
                $(#[$meta])*
                pub fn $name(&self, $($arg: $ty),*)
                    -> impl ::std::future::Future<Output = $crate::Result<$ret>> + Send + '_
                {
                    self.query_with($body, commands!(@convert [$ret] $($convert)?))
                }
            )*
        }
        impl $crate::ClusterPipeline {
            $(
                $(#[$meta])*
                pub fn $name(&mut self, $($arg: $ty),*) -> &mut Self {
                    self.add($body)
                }
            )*
        }
    };
}
pub(crate) use commands;
