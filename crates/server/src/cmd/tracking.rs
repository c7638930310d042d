//! CLIENT TRACKING, CLIENT CACHING, CLIENT TRACKINGINFO and CLIENT GETREDIR: the
//! commands of client-side caching (the machinery is in [`crate::tracking`]).

use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{ok, CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::tracking::Options;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("client|tracking", client_tracking),
    ("client|caching", client_caching),
    ("client|trackinginfo", client_trackinginfo),
    ("client|getredir", client_getredir),
];

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]... [BCAST] [OPTIN] [OPTOUT] [NOLOOP]`.
fn client_tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut options = Options::default();
    let mut i = 3;
    while let Some(arg) = args.get(i) {
        let more = i + 1 < args.len();
        if is(arg, "redirect") && more {
            i += 1;
            if options.redirect != 0 {
                return Err(CmdError::Static(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = int(&args[i])?;
            if id <= 0 || !ctx.shared.clients.contains(id as u64) {
                return Err(CmdError::Static(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            options.redirect = id as u64;
        } else if is(arg, "bcast") {
            options.bcast = true;
        } else if is(arg, "optin") {
            options.optin = true;
        } else if is(arg, "optout") {
            options.optout = true;
        } else if is(arg, "noloop") {
            options.noloop = true;
        } else if is(arg, "prefix") && more {
            i += 1;
            // Copied: kept as a view, it would keep the request's read buffer allocated.
            options.prefixes.push(Bytes::copy_from_slice(&args[i]));
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    if is(&args[2], "on") {
        ctx.client.tracking_prefixes = ctx
            .shared
            .tracking
            .enable(ctx.shared, ctx.client.id, &ctx.client.mailbox, options)
            .map_err(CmdError::Owned)?;
        ctx.client.tracking = true;
    } else if is(&args[2], "off") {
        disable(ctx);
    } else {
        return Err(SYNTAX);
    }
    ok(ctx.out);
    Ok(())
}

/// Turns tracking off for the calling client (CLIENT TRACKING OFF, RESET).
pub fn disable(ctx: &mut Ctx<'_>) {
    if ctx.client.tracking {
        ctx.shared.tracking.disable(ctx.shared, ctx.client.id);
    }
    ctx.client.tracking = false;
    ctx.client.tracking_prefixes = 0;
    ctx.client.tracking_caching = false;
}

/// `CLIENT CACHING YES|NO`: for the next command, in OPTIN / OPTOUT mode.
fn client_caching(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let info = match ctx.shared.tracking.info(ctx.client.id) {
        Some(info) if ctx.client.tracking => info,
        _ => {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
            ))
        }
    };
    if is(&args[2], "yes") {
        if !info.options.optin {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(&args[2], "no") {
        if !info.options.optout {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(SYNTAX);
    }
    ctx.client.tracking_caching = true;
    ok(ctx.out);
    Ok(())
}

/// `CLIENT GETREDIR`: the redirect id, 0 without one, -1 when tracking is off.
fn client_getredir(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let redirect = match ctx.shared.tracking.info(ctx.client.id) {
        Some(info) => info.options.redirect as i64,
        None => -1,
    };
    encode::write_integer(ctx.out, redirect);
    Ok(())
}

/// `CLIENT TRACKINGINFO`: flags, redirect and prefixes.
fn client_trackinginfo(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let proto = ctx.proto();
    let info = ctx.shared.tracking.info(ctx.client.id);
    let mut flags: Vec<&[u8]> = Vec::new();
    match &info {
        None => flags.push(b"off"),
        Some(info) => {
            let o = &info.options;
            flags.push(b"on");
            if o.bcast {
                flags.push(b"bcast");
            }
            if o.optin {
                flags.push(b"optin");
                if ctx.client.tracking_caching {
                    flags.push(b"caching-yes");
                }
            }
            if o.optout {
                flags.push(b"optout");
                if ctx.client.tracking_caching {
                    flags.push(b"caching-no");
                }
            }
            if o.noloop {
                flags.push(b"noloop");
            }
            if info.broken_redirect {
                flags.push(b"broken_redirect");
            }
        }
    }
    encode::write_map_len(ctx.out, proto, 3);
    encode::write_bulk(ctx.out, b"flags");
    encode::write_set_len(ctx.out, proto, flags.len());
    for f in flags {
        encode::write_bulk(ctx.out, f);
    }
    encode::write_bulk(ctx.out, b"redirect");
    encode::write_integer(
        ctx.out,
        info.as_ref().map_or(-1, |i| i.options.redirect as i64),
    );
    encode::write_bulk(ctx.out, b"prefixes");
    let prefixes = info.map(|i| i.prefixes).unwrap_or_default();
    encode::write_array_len(ctx.out, prefixes.len());
    for p in prefixes {
        encode::write_bulk(ctx.out, &p);
    }
    Ok(())
}
