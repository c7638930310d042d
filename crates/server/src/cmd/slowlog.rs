//! SLOWLOG GET / LEN / RESET / HELP over [`crate::slowlog`].

use bytes::Bytes;
use redline_resp::encode;

use super::args::int;
use super::reply::{help, ok, CmdError, CmdResult};
use super::{Ctx, Handler};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("slowlog|get", slowlog_get),
    ("slowlog|len", slowlog_len),
    ("slowlog|reset", slowlog_reset),
    ("slowlog|help", slowlog_help),
];

/// Entries SLOWLOG GET returns without a count.
const DEFAULT_COUNT: usize = 10;

fn slowlog_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // An optional count, nothing more.
    if args.len() > 3 {
        return Err(super::reply::subcommand_syntax("SLOWLOG", &args[1]));
    }
    let count = match args.get(2) {
        None => Some(DEFAULT_COUNT),
        // Redis gives this one text for a count that is no integer and for one below -1.
        Some(arg) => match int(arg).ok().filter(|&n| n >= -1) {
            Some(-1) => None,
            Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => {
                return Err(CmdError::Static(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        },
    };
    let entries = ctx.shared.slowlog.newest(count);
    let out = &mut *ctx.out;
    encode::write_array_len(out, entries.len());
    for e in entries {
        encode::write_array_len(out, 6);
        encode::write_integer(out, e.id as i64);
        encode::write_integer(out, e.time as i64);
        encode::write_integer(out, e.duration as i64);
        encode::write_array_len(out, e.args.len());
        for arg in &e.args {
            encode::write_bulk(out, arg);
        }
        encode::write_bulk(out, e.peer.as_bytes());
        encode::write_bulk(out, &e.name);
    }
    Ok(())
}

fn slowlog_len(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_integer(ctx.out, ctx.shared.slowlog.len() as i64);
    Ok(())
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.shared.slowlog.reset();
    ok(ctx.out);
    Ok(())
}

fn slowlog_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    help(
        ctx.out,
        &[
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}
