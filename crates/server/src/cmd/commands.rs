//! COMMAND and its subcommands (COUNT LIST INFO DOCS GETKEYS GETKEYSANDFLAGS) over the
//! shared command table.

use bytes::Bytes;
use redline_resp::command::{self, BeginSearch, CommandSpec, DocArg, FindKeys, KeysError};
use redline_resp::{encode, Protocol};

use super::reply::{CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::glob::glob_match;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("command", command_all),
    ("command|help", command_help),
    ("command|count", command_count),
    ("command|list", command_list),
    ("command|info", command_info),
    ("command|docs", command_docs),
    ("command|getkeys", command_getkeys),
    ("command|getkeysandflags", command_getkeysandflags),
];

fn command_all(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_array_len(ctx.out, command::COMMANDS.len());
    for spec in command::COMMANDS {
        write_command_info(ctx.out, ctx.client.protocol, spec);
    }
    Ok(())
}

fn command_count(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_integer(ctx.out, command::COMMANDS.len() as i64);
    Ok(())
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern].
fn command_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let all = command::all();
    let names: Vec<&str> = match &args[2..] {
        [] => all.map(|c| c.name).collect(),
        [filterby, kind, value] if super::args::is(filterby, "filterby") => {
            if super::args::is(kind, "module") {
                // No modules: no command comes from one.
                Vec::new()
            } else if super::args::is(kind, "aclcat") {
                let category = String::from_utf8_lossy(value).to_ascii_lowercase();
                match command::AclCategories::from_name(&category) {
                    Some(cat) => all
                        .filter(|c| c.acl_categories.contains(cat))
                        .map(|c| c.name)
                        .collect(),
                    None => Vec::new(),
                }
            } else if super::args::is(kind, "pattern") {
                all.filter(|c| glob_match(value, c.name.as_bytes(), true))
                    .map(|c| c.name)
                    .collect()
            } else {
                return Err(SYNTAX);
            }
        }
        _ => return Err(SYNTAX),
    };
    encode::write_array_len(ctx.out, names.len());
    for name in names {
        encode::write_bulk(ctx.out, name.as_bytes());
    }
    Ok(())
}

fn command_info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() == 2 {
        return command_all(ctx, args);
    }
    encode::write_array_len(ctx.out, args.len() - 2);
    for name in &args[2..] {
        match find_command(ctx.shared, name) {
            Some(spec) => write_command_info(ctx.out, ctx.client.protocol, spec),
            None => encode::write_null_bulk(ctx.out, ctx.client.protocol),
        }
    }
    Ok(())
}

/// A command by the name it has on this server, subcommands as `parent|sub`.
fn find_command(shared: &crate::shared::Shared, name: &[u8]) -> Option<&'static CommandSpec> {
    match name.iter().position(|&c| c == b'|') {
        Some(bar) => {
            command::lookup_subcommand(shared.renamed.lookup(&name[..bar])?, &name[bar + 1..])
        }
        None => shared.renamed.lookup(name),
    }
}

fn write_status_set<'a>(
    out: &mut bytes::BytesMut,
    proto: Protocol,
    items: impl Iterator<Item = &'a str>,
    prefix: &str,
) {
    let items: Vec<&str> = items.collect();
    encode::write_set_len(out, proto, items.len());
    for item in items {
        let mut line = String::with_capacity(prefix.len() + item.len());
        line.push_str(prefix);
        line.push_str(item);
        encode::write_simple(out, line.as_bytes());
    }
}

fn write_command_info(out: &mut bytes::BytesMut, proto: Protocol, spec: &CommandSpec) {
    encode::write_array_len(out, 10);
    encode::write_bulk(out, spec.name.as_bytes());
    encode::write_integer(out, i64::from(spec.arity));
    write_status_set(out, proto, spec.flags.names(), "");
    encode::write_integer(out, i64::from(spec.first_key));
    encode::write_integer(out, i64::from(spec.last_key));
    encode::write_integer(out, i64::from(spec.key_step));
    write_status_set(out, proto, spec.acl_categories.names(), "@");
    // Tips are bulk strings, unlike the flags.
    encode::write_set_len(out, proto, spec.tips.len());
    for tip in spec.tips {
        encode::write_bulk(out, tip.as_bytes());
    }
    encode::write_set_len(out, proto, spec.key_specs.len());
    for key_spec in spec.key_specs {
        let has_notes = !key_spec.notes.is_empty();
        encode::write_map_len(out, proto, 3 + usize::from(has_notes));
        if has_notes {
            encode::write_bulk(out, b"notes");
            encode::write_bulk(out, key_spec.notes.as_bytes());
        }
        encode::write_bulk(out, b"flags");
        write_status_set(out, proto, key_spec.flags.names(), "");
        encode::write_bulk(out, b"begin_search");
        encode::write_map_len(out, proto, 2);
        encode::write_bulk(out, b"type");
        match key_spec.begin_search {
            BeginSearch::Index(index) => {
                encode::write_bulk(out, b"index");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 1);
                encode::write_bulk(out, b"index");
                encode::write_integer(out, i64::from(index));
            }
            BeginSearch::Keyword {
                keyword,
                start_from,
            } => {
                encode::write_bulk(out, b"keyword");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 2);
                encode::write_bulk(out, b"keyword");
                encode::write_bulk(out, keyword.as_bytes());
                encode::write_bulk(out, b"startfrom");
                encode::write_integer(out, i64::from(start_from));
            }
            BeginSearch::Unknown => {
                encode::write_bulk(out, b"unknown");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 0);
            }
        }
        encode::write_bulk(out, b"find_keys");
        encode::write_map_len(out, proto, 2);
        encode::write_bulk(out, b"type");
        match key_spec.find_keys {
            FindKeys::Range {
                last_key,
                key_step,
                limit,
            } => {
                encode::write_bulk(out, b"range");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 3);
                encode::write_bulk(out, b"lastkey");
                encode::write_integer(out, i64::from(last_key));
                encode::write_bulk(out, b"keystep");
                encode::write_integer(out, i64::from(key_step));
                encode::write_bulk(out, b"limit");
                encode::write_integer(out, i64::from(limit));
            }
            FindKeys::Keynum {
                keynum_index,
                first_key,
                key_step,
            } => {
                encode::write_bulk(out, b"keynum");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 3);
                encode::write_bulk(out, b"keynumidx");
                encode::write_integer(out, i64::from(keynum_index));
                encode::write_bulk(out, b"firstkey");
                encode::write_integer(out, i64::from(first_key));
                encode::write_bulk(out, b"keystep");
                encode::write_integer(out, i64::from(key_step));
            }
            FindKeys::Unknown => {
                encode::write_bulk(out, b"unknown");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 0);
            }
        }
    }
    // Redis sends "no subcommands" as an empty set, and a list of them as an array.
    if spec.subcommands.is_empty() {
        encode::write_set_len(out, proto, 0);
    } else {
        encode::write_array_len(out, spec.subcommands.len());
    }
    for sub in spec.subcommands {
        write_command_info(out, proto, sub);
    }
}

fn command_docs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let specs: Vec<&'static CommandSpec> = if args.len() == 2 {
        command::COMMANDS.iter().collect()
    } else {
        args[2..]
            .iter()
            .filter_map(|n| find_command(ctx.shared, n))
            .collect()
    };
    let proto = ctx.client.protocol;
    encode::write_map_len(ctx.out, proto, specs.len());
    for spec in specs {
        encode::write_bulk(ctx.out, spec.name.as_bytes());
        write_command_docs(ctx.out, proto, spec);
    }
    Ok(())
}

/// One command's documentation, as Redis's `addReplyCommandDocs` writes it: the fields
/// it has, in Redis's order, then its subcommands' by their full names.
fn write_command_docs(out: &mut bytes::BytesMut, proto: Protocol, spec: &CommandSpec) {
    let docs = &spec.docs;
    let texts = [
        ("summary", docs.summary),
        ("since", docs.since),
        ("group", docs.group),
        ("complexity", docs.complexity),
    ];
    let tail = [
        ("deprecated_since", docs.deprecated_since),
        ("replaced_by", docs.replaced_by),
    ];
    let fields = present(&texts)
        + present(&tail)
        + usize::from(!docs.doc_flags.is_empty())
        + usize::from(!docs.history.is_empty())
        + usize::from(!docs.arguments.is_empty())
        + usize::from(!spec.subcommands.is_empty());
    encode::write_map_len(out, proto, fields);
    write_present(out, &texts);
    if !docs.doc_flags.is_empty() {
        encode::write_bulk(out, b"doc_flags");
        write_status_set(out, proto, docs.doc_flags.iter().copied(), "");
    }
    write_present(out, &tail);
    if !docs.history.is_empty() {
        encode::write_bulk(out, b"history");
        encode::write_set_len(out, proto, docs.history.len());
        for (version, change) in docs.history {
            encode::write_array_len(out, 2);
            encode::write_bulk(out, version.as_bytes());
            encode::write_bulk(out, change.as_bytes());
        }
    }
    if !docs.arguments.is_empty() {
        encode::write_bulk(out, b"arguments");
        write_doc_args(out, proto, docs.arguments);
    }
    if !spec.subcommands.is_empty() {
        encode::write_bulk(out, b"subcommands");
        encode::write_map_len(out, proto, spec.subcommands.len());
        for sub in spec.subcommands {
            encode::write_bulk(out, sub.name.as_bytes());
            write_command_docs(out, proto, sub);
        }
    }
}

/// How many of these documentation fields Redis writes: those it has (an empty text is
/// one it leaves out).
fn present(fields: &[(&str, &str)]) -> usize {
    fields.iter().filter(|(_, value)| !value.is_empty()).count()
}

/// Writes the fields [`present`] counts, name then text.
fn write_present(out: &mut bytes::BytesMut, fields: &[(&str, &str)]) {
    for (field, value) in fields.iter().filter(|(_, value)| !value.is_empty()) {
        encode::write_bulk(out, field.as_bytes());
        encode::write_bulk(out, value.as_bytes());
    }
}

/// Documented arguments, as Redis's `addReplyCommandArgList` writes them.
fn write_doc_args(out: &mut bytes::BytesMut, proto: Protocol, args: &[DocArg]) {
    encode::write_array_len(out, args.len());
    for arg in args {
        let texts = [
            ("summary", arg.summary),
            ("since", arg.since),
            ("deprecated_since", arg.deprecated_since),
        ];
        let nested = matches!(arg.kind, "oneof" | "block");
        let fields = 2
            + usize::from(arg.key_spec_index.is_some())
            + usize::from(arg.token.is_some())
            + present(&texts)
            + usize::from(!arg.flags.is_empty())
            + usize::from(nested);
        encode::write_map_len(out, proto, fields);
        encode::write_bulk(out, b"name");
        encode::write_bulk(out, arg.name.as_bytes());
        encode::write_bulk(out, b"type");
        encode::write_bulk(out, arg.kind.as_bytes());
        if let Some(index) = arg.key_spec_index {
            encode::write_bulk(out, b"key_spec_index");
            encode::write_integer(out, i64::from(index));
        }
        if let Some(token) = arg.token {
            encode::write_bulk(out, b"token");
            encode::write_bulk(out, token.as_bytes());
        }
        write_present(out, &texts);
        if !arg.flags.is_empty() {
            encode::write_bulk(out, b"flags");
            write_status_set(out, proto, arg.flags.iter().copied(), "");
        }
        if nested {
            encode::write_bulk(out, b"arguments");
            write_doc_args(out, proto, arg.arguments);
        }
    }
}

fn keys_error(e: KeysError) -> CmdError {
    CmdError::Owned(match e {
        KeysError::UnknownCommand => "ERR Invalid command specified".to_string(),
        other => format!("ERR {other}"),
    })
}

/// COMMAND GETKEYSANDFLAGS: each key with its key-spec flags (`RW access delete`...).
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let command_args = &args[2..];
    let keys = command::keys_and_flags(command_args).map_err(keys_error)?;
    encode::write_array_len(ctx.out, keys.len());
    for (index, flags) in keys {
        encode::write_array_len(ctx.out, 2);
        encode::write_bulk(
            ctx.out,
            command_args.get(index).map_or(&b""[..], |a| &a[..]),
        );
        let names: Vec<&str> = flags.names().collect();
        encode::write_set_len(ctx.out, ctx.client.protocol, names.len());
        for name in names {
            encode::write_simple(ctx.out, name.as_bytes());
        }
    }
    Ok(())
}

fn command_getkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let command_args = &args[2..];
    let keys = command::getkeys(command_args).map_err(keys_error)?;
    encode::write_array_len(ctx.out, keys.len());
    for index in keys {
        encode::write_bulk(
            ctx.out,
            command_args.get(index).map_or(&b""[..], |a| &a[..]),
        );
    }
    Ok(())
}

/// COMMAND HELP: Redis's text.
fn command_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}
