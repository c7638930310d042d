//! A user as text, in Redis 7.0's words: the rule line of `ACL LIST` and the fields of
//! `ACL GETUSER`.
//!
//! Command rules are not kept as typed: like Redis 7.0 (`ACLDescribeSelectorCommandRules`)
//! they are rebuilt from the bitmap: start from `+@all` or `-@all` (the future-commands
//! bit), add or remove categories by Redis's best fit (the same categories, in the same
//! order), then single commands and allowed first arguments for what is still
//! different. Redis walks the single commands in hash-table order, random per process,
//! so only their order differs from its text; here they come in table order.

use redline_resp::command::AclCategories;

use super::ids::{self, CommandBits};
use super::selector::{KeyPattern, Selector};
use super::user::{hex, Sanitize, User};

/// The flag words, in Redis's order (`ACLUserFlags`).
pub fn flags(user: &User) -> Vec<&'static str> {
    let mut out = vec![if user.enabled { "on" } else { "off" }];
    if user.nopass {
        out.push("nopass");
    }
    match user.sanitize {
        Sanitize::Unset => {}
        Sanitize::Skip => out.push("skip-sanitize-payload"),
        Sanitize::Sanitize => out.push("sanitize-payload"),
    }
    out
}

fn pattern(out: &mut Vec<u8>, p: &KeyPattern) {
    match (p.read, p.write) {
        (true, false) => out.extend_from_slice(b"%R~"),
        (false, true) => out.extend_from_slice(b"%W~"),
        _ => out.push(b'~'),
    }
    out.extend_from_slice(&p.pattern);
}

/// `ACL GETUSER`'s `keys`: `~*`, or the patterns separated by spaces.
pub fn keys(user: &Selector) -> Vec<u8> {
    if user.allkeys {
        return b"~*".to_vec();
    }
    let mut out = Vec::new();
    for (i, p) in user.patterns.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        pattern(&mut out, p);
    }
    out
}

/// `ACL GETUSER`'s `channels`: `&*`, or the channels separated by spaces.
pub fn channels(user: &Selector) -> Vec<u8> {
    if user.allchannels {
        return b"&*".to_vec();
    }
    let mut out = Vec::new();
    for (i, c) in user.channels.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.push(b'&');
        out.extend_from_slice(c);
    }
    out
}

/// Commands of `flag` (and subcommands), counted as allowed or not in `bits`.
fn count_category(bits: &CommandBits, flag: AclCategories) -> (usize, usize) {
    let (mut on, mut off) = (0, 0);
    for spec in ids::top_level() {
        for s in std::iter::once(spec).chain(spec.subcommands) {
            if s.acl_categories.contains(flag) {
                match ids::id_of(s).is_some_and(|id| bits.get(id)) {
                    true => on += 1,
                    false => off += 1,
                }
            }
        }
    }
    (on, off)
}

/// The command rules (`-@all +@hash -hset +get`).
pub fn commands(user: &Selector) -> String {
    let additive = !user.future;
    let mut rules: Vec<String> = vec![if additive { "-@all" } else { "+@all" }.into()];
    // `fake` replays the emitted rules; `temp` has each emitted category undone, so a
    // category is counted once.
    let mut fake = Selector::new();
    let _ = fake.apply(if additive { b"-@all" } else { b"+@all" });
    let mut temp = Selector::new();
    temp.commands = user.commands.clone();
    let all: Vec<(&'static str, AclCategories)> = AclCategories::from_bits(u32::MAX)
        .names()
        .filter_map(|name| Some((name, AclCategories::from_name(name)?)))
        .collect();
    // Redis's best fit, round after round: of the categories not yet emitted (in
    // `ACL CAT` order), the one with more commands agreeing than not, the fewest
    // disagreeing, then the most agreeing; the first such wins a tie.
    let mut applied = vec![false; all.len()];
    loop {
        let mut best: Option<(usize, usize, usize)> = None;
        for (j, (_, flag)) in all.iter().enumerate() {
            if applied[j] {
                continue;
            }
            let (on, off) = count_category(&temp.commands, *flag);
            let (same, diff) = if additive { (on, off) } else { (off, on) };
            let better = match best {
                None => true,
                Some((_, best_diff, best_same)) => {
                    diff < best_diff || (diff == best_diff && same > best_same)
                }
            };
            if same > diff && better {
                best = Some((j, diff, same));
            }
        }
        let Some((j, _, _)) = best else { break };
        let (name, flag) = all[j];
        fake.set_category(flag, additive);
        temp.set_category(flag, !additive);
        rules.push(format!("{}@{name}", if additive { '+' } else { '-' }));
        applied[j] = true;
    }
    for spec in ids::top_level() {
        for s in std::iter::once(spec).chain(spec.subcommands) {
            let Some(id) = ids::id_of(s) else { continue };
            let wanted = user.commands.get(id);
            if wanted != fake.commands.get(id) {
                rules.push(format!("{}{}", if wanted { '+' } else { '-' }, s.name));
                fake.change(s, wanted);
            }
            if !wanted {
                for arg in user.firstargs.get(&id).into_iter().flatten() {
                    rules.push(format!("+{}|{}", s.name, String::from_utf8_lossy(arg)));
                }
            }
        }
    }
    rules.join(" ")
}

/// A selector's keys, channels and commands as `ACL LIST` spells them.
fn selector_text(out: &mut Vec<u8>, sel: &Selector) {
    if sel.allkeys {
        out.extend_from_slice(b"~* ");
    } else {
        for p in &sel.patterns {
            pattern(out, p);
            out.push(b' ');
        }
    }
    if sel.allchannels {
        out.extend_from_slice(b"&* ");
    } else {
        out.extend_from_slice(b"resetchannels ");
        for c in &sel.channels {
            out.push(b'&');
            out.extend_from_slice(c);
            out.push(b' ');
        }
    }
    out.extend_from_slice(commands(sel).as_bytes());
}

/// One `ACL LIST` line: `user alice on #<sha256> ~cached:* resetchannels -@all +get`,
/// then each extra selector in parentheses.
pub fn line(name: &[u8], user: &User) -> Vec<u8> {
    let mut out = b"user ".to_vec();
    out.extend_from_slice(name);
    out.push(b' ');
    for flag in flags(user) {
        out.extend_from_slice(flag.as_bytes());
        out.push(b' ');
    }
    for p in &user.passwords {
        out.push(b'#');
        out.extend_from_slice(hex(p).as_bytes());
        out.push(b' ');
    }
    selector_text(&mut out, &user.root);
    for sel in &user.selectors {
        out.extend_from_slice(b" (");
        selector_text(&mut out, sel);
        out.push(b')');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::user::PubsubDefault;

    fn user(rules: &[&str]) -> Selector {
        let mut u = User::new(PubsubDefault::ResetChannels);
        for r in rules {
            u.apply(r.as_bytes(), PubsubDefault::ResetChannels).unwrap();
        }
        u.root
    }

    #[test]
    fn lines_as_redis_prints_them() {
        assert_eq!(
            String::from_utf8(line(b"alice", &User::new(PubsubDefault::ResetChannels))).unwrap(),
            "user alice off resetchannels -@all"
        );
        assert_eq!(
            String::from_utf8(line(b"default", &User::default_user(b""))).unwrap(),
            "user default on nopass ~* &* +@all"
        );
        assert_eq!(
            commands(&user(&["+get", "+@hash", "-hset", "+select|0"])),
            "-@all +@hash +get -hset +select|0"
        );
        assert_eq!(
            commands(&user(&["+config|get", "+config"])),
            "-@all +config"
        );
        assert_eq!(
            commands(&user(&["+config", "-config|get"])),
            "-@all +config -config|get"
        );
        assert_eq!(
            commands(&user(&["-@all", "+@dangerous"])),
            "-@all +@dangerous"
        );
        assert_eq!(
            String::from_utf8(keys(&user(&["%rw~a", "%r~b", "%W~c", "~b"]))).unwrap(),
            "~a ~b %W~c"
        );
        let mut u = User::new(PubsubDefault::ResetChannels);
        u.apply(b"(+get ~x)", PubsubDefault::ResetChannels).unwrap();
        u.apply(b"( )", PubsubDefault::ResetChannels).unwrap();
        assert_eq!(
            String::from_utf8(line(b"s", &u)).unwrap(),
            "user s off resetchannels -@all (~x resetchannels -@all +get) (resetchannels -@all)"
        );
    }
}
