//! Pub/sub commands (Redis's `pubsub.c`): SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE
//! SSUBSCRIBE SUNSUBSCRIBE PUBLISH SPUBLISH PUBSUB.
//!
//! Subscriptions live in the server-wide [`crate::pubsub::PubSub`] table and in the
//! client's own sets (for the counts in the confirmations and for cleanup). Messages
//! reach subscribers through their mailbox, so PUBLISH never waits for a slow reader;
//! readers past `client-output-buffer-limit pubsub` are disconnected.

use bytes::Bytes;
use redline_resp::command::CommandFlags;
use redline_resp::encode;

use super::reply::{subcommand_syntax, CmdResult};
use super::{Ctx, Handler};
use crate::net::client::{ClientState, ReplyMode, Subscriptions};
use crate::pubsub::Kind;
use crate::shared::Shared;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("subscribe", subscribe),
    ("unsubscribe", unsubscribe),
    ("psubscribe", psubscribe),
    ("punsubscribe", punsubscribe),
    ("ssubscribe", ssubscribe),
    ("sunsubscribe", sunsubscribe),
    ("publish", publish),
    ("spublish", spublish),
    ("pubsub|channels", pubsub_channels),
    ("pubsub|numsub", pubsub_numsub),
    ("pubsub|numpat", pubsub_numpat),
    ("pubsub|shardchannels", pubsub_shardchannels),
    ("pubsub|shardnumsub", pubsub_shardnumsub),
    ("pubsub|help", pubsub_help),
];

/// Commands a RESP2 client in pub/sub mode may still run.
pub fn allowed_in_pubsub(name: &str) -> bool {
    matches!(
        name,
        "ping"
            | "subscribe"
            | "ssubscribe"
            | "unsubscribe"
            | "sunsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "quit"
            | "reset"
    )
}

fn words(kind: Kind) -> (&'static [u8], &'static [u8]) {
    match kind {
        Kind::Channel => (b"subscribe", b"unsubscribe"),
        Kind::Pattern => (b"psubscribe", b"punsubscribe"),
        Kind::Shard => (b"ssubscribe", b"sunsubscribe"),
    }
}

fn set_of(client: &mut ClientState, kind: Kind) -> &mut Subscriptions {
    match kind {
        Kind::Channel => &mut client.channels,
        Kind::Pattern => &mut client.patterns,
        Kind::Shard => &mut client.shard_channels,
    }
}

/// The count a confirmation reports: channels + patterns, or shard channels alone.
fn count(client: &ClientState, kind: Kind) -> i64 {
    match kind {
        Kind::Shard => client.shard_channels.len() as i64,
        _ => client.subscription_count() as i64,
    }
}

/// A confirmation's bytes besides the channel's name (its word, count and lengths).
const CONFIRM_FRAMING: usize = 40;

/// Writes pub/sub traffic for the client itself (a confirmation, a message it published
/// to its own channel), which CLIENT REPLY OFF/SKIP does not silence (Redis's
/// CLIENT_PUSHING): with replies on, among the replies; else through the mailbox, past
/// the reply filter.
fn write_pushed<R>(ctx: &mut Ctx<'_>, write: impl FnOnce(&mut bytes::BytesMut) -> R) -> R {
    if ctx.client.reply == ReplyMode::On {
        return write(ctx.out);
    }
    let mut own = bytes::BytesMut::new();
    let result = write(&mut own);
    if !own.is_empty() {
        ctx.client.mailbox.deliver(&own);
    }
    result
}

fn confirm(ctx: &mut Ctx<'_>, word: &[u8], name: Option<&[u8]>, n: i64) {
    let proto = ctx.proto();
    // As Redis checks each reply it adds: past the hard limit of the client's class at
    // this point (pub/sub while it is subscribed), it is closed after the command and
    // the rest of a million confirmations is not built.
    let len = name.map_or(0, <[u8]>::len) + CONFIRM_FRAMING;
    if ctx.client.reply == ReplyMode::On && ctx.client.reply_passes_hard_limit(ctx.out.len(), len) {
        return;
    }
    write_pushed(ctx, |out| {
        encode::write_push_len(out, proto, 3);
        encode::write_bulk(out, word);
        match name {
            Some(name) => encode::write_bulk(out, name),
            None => encode::write_null_bulk(out, proto),
        }
        encode::write_integer(out, n);
    });
}

fn subscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    ctx.client.mailbox.set_protocol(ctx.client.protocol);
    for name in &args[1..] {
        if !set_of(ctx.client, kind).contains_key(&name[..]) {
            // Copied: kept as a view, the subscription would keep the request's whole
            // read buffer allocated for as long as it lasts.
            let name = Bytes::copy_from_slice(name);
            set_of(ctx.client, kind).insert(name.clone(), ());
            ctx.shared
                .pubsub
                .subscribe(kind, &name, ctx.client.id, &ctx.client.mailbox);
        }
        let n = count(ctx.client, kind);
        confirm(ctx, words(kind).0, Some(name), n);
    }
    ctx.client.mailbox.set_subscribed(ctx.client.in_pubsub());
    Ok(())
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    let word = words(kind).1;
    let names: Vec<Bytes> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        set_of(ctx.client, kind).keys().cloned().collect()
    };
    if names.is_empty() {
        let n = count(ctx.client, kind);
        confirm(ctx, word, None, n);
        return Ok(());
    }
    for name in names {
        if set_of(ctx.client, kind).swap_remove(&name[..]).is_some() {
            ctx.shared.pubsub.unsubscribe(kind, &name, ctx.client.id);
        }
        let n = count(ctx.client, kind);
        confirm(ctx, word, Some(&name), n);
    }
    let set = set_of(ctx.client, kind);
    if set.is_empty() {
        // What a million subscriptions grew is given back.
        *set = Subscriptions::default();
    }
    ctx.client.mailbox.set_subscribed(ctx.client.in_pubsub());
    Ok(())
}

/// Drops every subscription of a client (RESET, disconnect), without replies.
pub fn unsubscribe_all(shared: &Shared, client: &mut ClientState) {
    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
        for name in std::mem::take(set_of(client, kind)).keys() {
            shared.pubsub.unsubscribe(kind, name, client.id);
        }
    }
    client.mailbox.set_subscribed(false);
}

fn subscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Channel)
}

fn psubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Pattern)
}

fn ssubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Shard)
}

fn unsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Channel)
}

fn punsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Pattern)
}

fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Shard)
}

/// Whether this PUBLISH (or SPUBLISH) waits first for listeners that have input they
/// have not run yet, as Redis, on one thread, would have run it before (see
/// [`crate::net::input_turns`]); so does PUBSUB's introspection for every connection,
/// any of which may be subscribing. The wait goes into `input_wait`.
pub fn lets_listeners_run_first(
    ctx: &mut Ctx<'_>,
    spec: &redline_resp::command::CommandSpec,
    args: &[Bytes],
) -> bool {
    // One bit test for every other command before any name is compared.
    if !spec.flags.contains(CommandFlags::PUBSUB) {
        return false;
    }
    let me = ctx.client.id;
    let arrival = ctx.client.mailbox.input_turns().waits_before();
    let unsettled = match (spec.name, args) {
        ("publish", [_, channel, _]) => {
            ctx.shared
                .pubsub
                .unsettled_listeners(Kind::Channel, channel, me, arrival)
        }
        ("spublish", [_, channel, _]) => {
            ctx.shared
                .pubsub
                .unsettled_listeners(Kind::Shard, channel, me, arrival)
        }
        (name, _) if name.starts_with("pubsub|") && name != "pubsub|help" => {
            ctx.shared.clients.unsettled_inputs(me, arrival, usize::MAX)
        }
        _ => return false,
    };
    ctx.client.waits_for_inputs(unsettled)
}

fn publish_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    let limit = ctx.shared.config.read().client_output_buffer_limit[2];
    let (pubsub, me) = (&ctx.shared.pubsub, ctx.client.id);
    // A message to the publisher itself is written as its own pub/sub traffic.
    let published = write_pushed(ctx, |own_output| {
        pubsub.publish(kind, &args[1], &args[2], &limit, me, own_output)
    });
    for id in published.overflowed {
        ctx.shared.clients.close_for_output_limit(id);
    }
    if ctx.shared.cluster.enabled() {
        crate::cluster::bus::propagate_publish(ctx.shared, kind == Kind::Shard, &args[1], &args[2]);
    }
    encode::write_integer(ctx.out, published.receivers);
    Ok(())
}

fn publish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    publish_generic(ctx, args, Kind::Channel)
}

fn spublish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    publish_generic(ctx, args, Kind::Shard)
}

fn channels_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax("PUBSUB", &args[1]));
    }
    let list = ctx.shared.pubsub.active(kind, args.get(2).map(|p| &p[..]));
    encode::write_array_len(ctx.out, list.len());
    for c in list {
        encode::write_bulk(ctx.out, &c);
    }
    Ok(())
}

fn numsub_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    let names = &args[2..];
    encode::write_array_len(ctx.out, names.len() * 2);
    for name in names {
        encode::write_bulk(ctx.out, name);
        encode::write_integer(ctx.out, ctx.shared.pubsub.listeners(kind, name) as i64);
    }
    Ok(())
}

fn pubsub_channels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    channels_generic(ctx, args, Kind::Channel)
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    channels_generic(ctx, args, Kind::Shard)
}

fn pubsub_numsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    numsub_generic(ctx, args, Kind::Channel)
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    numsub_generic(ctx, args, Kind::Shard)
}

fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_integer(
        ctx.out,
        ctx.shared.pubsub.count(crate::pubsub::Kind::Pattern) as i64,
    );
    Ok(())
}

fn pubsub_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}
