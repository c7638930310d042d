//! MODULE LIST / LOAD / LOADEX / UNLOAD / HELP. redline-server does not load Redis
//! modules (they are C libraries written against Redis's own structures), so the list
//! is always empty and every load fails, with the replies Redis gives when a module
//! cannot be loaded or is not there; the reason goes to the log, as Redis logs it.

use bytes::Bytes;
use redline_resp::encode;

use super::reply::{help, CmdError, CmdResult};
use super::{Ctx, Handler};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("module|list", module_list),
    ("module|load", module_load),
    ("module|loadex", module_load),
    ("module|unload", module_unload),
    ("module|help", module_help),
];

fn module_list(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_array_len(ctx.out, 0);
    Ok(())
}

fn module_load(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    tracing::warn!(
        "Module {} failed to load: redline-server does not load Redis modules",
        String::from_utf8_lossy(&args[2])
    );
    Err(CmdError::Static(
        "ERR Error loading the extension. Please check the server logs.",
    ))
}

fn module_unload(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::Static(
        "ERR Error unloading module: no such module with that name",
    ))
}

fn module_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    help(
        ctx.out,
        &[
            "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}
