//! CLUSTER, ASKING, READONLY and READWRITE on a server without cluster support: what
//! redis-server answers when `cluster-enabled` is `no`. redline-server runs standalone
//! (`cluster-enabled yes` is refused at start), so a cluster-aware client probing it gets
//! Redis's own answer instead of "unknown command".

use bytes::Bytes;
use redline_resp::command;

use super::reply::{CmdError, CmdResult};
use super::{Ctx, Handler};

/// Redis's reply to every cluster command when cluster support is disabled.
const DISABLED: CmdError = CmdError::Static("ERR This instance has cluster support disabled");

/// This family's handlers: the three plain commands and every CLUSTER subcommand in the
/// table (an unknown subcommand keeps the dispatcher's "unknown subcommand" error, as in
/// Redis, where the subcommand lookup comes before the command runs).
pub fn registrations() -> Vec<(&'static str, Handler)> {
    let mut all: Vec<(&'static str, Handler)> = vec![
        ("asking", disabled),
        ("readonly", disabled),
        ("readwrite", disabled),
    ];
    if let Some(cluster) = command::lookup(b"cluster") {
        all.extend(
            cluster
                .subcommands
                .iter()
                .map(|s| (s.name, disabled as Handler)),
        );
    }
    all
}

fn disabled(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(DISABLED)
}
