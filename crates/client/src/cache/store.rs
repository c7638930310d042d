//! The cache's memory: a bounded LRU of reply frames, indexed by command and by key.
//!
//! Entries are keyed by the encoded command that produced them (`GET k`, `HGET h f`...),
//! and each entry lists the Redis keys it read, so an invalidation for key `k` finds every
//! entry that depends on it through `by_key`. An entry is either **pending** (a read is in
//! flight; it holds only a token) or **ready** (a reply frame, its size and its expiry).
//! A pending entry is the in-flight guard: any invalidation, flush or eviction removes it,
//! and a reply may only be stored into the very placeholder (same token) that existed
//! when its command was sent. Removal of a placeholder therefore means "something changed
//! since this read was sent: do not keep its reply".
//!
//! Recency is an intrusive doubly linked list over a slab (indexes, no pointers), so a
//! hit, an insert and an eviction are O(1). Both bounds (bytes and entries) are enforced
//! after every insert by evicting from the least recently used end.

use std::collections::HashMap;

use bytes::Bytes;
use redline_resp::Frame;
use tokio::time::Instant;

/// Bookkeeping bytes charged per entry on top of its command, keys and reply (map slots,
/// slab node, key index), so that many tiny entries cannot exceed the byte bound unseen.
const ENTRY_OVERHEAD: usize = 128;

/// "No node" in the recency list.
const NIL: usize = usize::MAX;

/// Counters kept under the store's lock.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) invalidations: u64,
    pub(crate) evictions: u64,
    pub(crate) expirations: u64,
    pub(crate) flushes: u64,
}

/// What a read finds.
pub(crate) enum Lookup {
    /// A fresh reply.
    Hit(Frame),
    /// Not served from the cache: send the command, then [`Store::fill`] with this token.
    Fetch(u64),
}

enum State {
    Pending { token: u64 },
    Ready { frame: Frame, expires: Instant },
}

struct Entry {
    cmd: Bytes,
    keys: Box<[Bytes]>,
    state: State,
    /// Bytes charged against the bound.
    size: usize,
    prev: usize,
    next: usize,
}

/// The bounded LRU (see the module docs). Not synchronised: the cache wraps it in a mutex.
pub(crate) struct Store {
    by_cmd: HashMap<Bytes, usize>,
    by_key: HashMap<Bytes, Vec<usize>>,
    slab: Vec<Option<Entry>>,
    free: Vec<usize>,
    /// Most recently used.
    head: usize,
    /// Least recently used: evicted first.
    tail: usize,
    bytes: usize,
    max_bytes: usize,
    max_entries: usize,
    next_token: u64,
    pub(crate) counters: Counters,
}

impl Store {
    pub(crate) fn new(max_bytes: usize, max_entries: usize) -> Store {
        Store {
            by_cmd: HashMap::new(),
            by_key: HashMap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            bytes: 0,
            max_bytes,
            max_entries: max_entries.max(1),
            next_token: 1,
            counters: Counters::default(),
        }
    }

    /// Entries held (pending ones included).
    pub(crate) fn len(&self) -> usize {
        self.by_cmd.len()
    }

    /// Bytes charged against the bound.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Serves `cmd` if a fresh reply is held; otherwise makes sure a placeholder exists
    /// (registered under `keys`) and returns its token. Concurrent readers of the same
    /// command share one placeholder: whichever reply comes back first fills it.
    pub(crate) fn lookup(&mut self, cmd: &Bytes, keys: &[Bytes], now: Instant) -> Lookup {
        if let Some(&i) = self.by_cmd.get(cmd) {
            let found = match self.slab.get(i).and_then(Option::as_ref).map(|e| &e.state) {
                Some(State::Ready { frame, expires }) if *expires > now => {
                    Some(Lookup::Hit(frame.clone()))
                }
                Some(State::Ready { .. }) => None,
                Some(State::Pending { token }) => Some(Lookup::Fetch(*token)),
                None => None,
            };
            match found {
                Some(Lookup::Hit(frame)) => {
                    self.counters.hits += 1;
                    self.touch(i);
                    return Lookup::Hit(frame);
                }
                Some(fetch) => {
                    self.counters.misses += 1;
                    return fetch;
                }
                None => {
                    // Expired: its TTL cap passed.
                    self.counters.expirations += 1;
                    self.remove(i);
                }
            }
        }
        self.counters.misses += 1;
        let token = self.next_token;
        self.next_token += 1;
        let size = ENTRY_OVERHEAD + cmd.len() + keys.iter().map(Bytes::len).sum::<usize>();
        let i = self.insert(Entry {
            cmd: cmd.clone(),
            keys: keys.into(),
            state: State::Pending { token },
            size,
            prev: NIL,
            next: NIL,
        });
        for key in keys {
            self.by_key.entry(key.clone()).or_default().push(i);
        }
        self.enforce_bounds(Some(i));
        Lookup::Fetch(token)
    }

    /// Stores a reply into the placeholder with `token`, if that placeholder still exists
    /// (nothing invalidated it since the command was sent). Returns whether it was stored.
    pub(crate) fn fill(
        &mut self,
        cmd: &Bytes,
        token: u64,
        frame: &Frame,
        expires: Instant,
    ) -> bool {
        let Some(&i) = self.by_cmd.get(cmd) else {
            return false;
        };
        let Some(entry) = self.slab.get_mut(i).and_then(Option::as_mut) else {
            return false;
        };
        if !matches!(entry.state, State::Pending { token: t } if t == token) {
            return false;
        }
        let grown = frame_size(frame);
        entry.state = State::Ready {
            frame: detached(frame),
            expires,
        };
        entry.size += grown;
        self.bytes += grown;
        self.touch(i);
        self.enforce_bounds(None);
        // A reply larger than the whole bound evicts itself.
        self.by_cmd.contains_key(cmd)
    }

    /// Drops the placeholder with `token` (its read failed or was abandoned).
    pub(crate) fn abandon(&mut self, cmd: &Bytes, token: u64) {
        if let Some(&i) = self.by_cmd.get(cmd) {
            let pending = self
                .slab
                .get(i)
                .and_then(Option::as_ref)
                .is_some_and(|e| matches!(e.state, State::Pending { token: t } if t == token));
            if pending {
                self.remove(i);
            }
        }
    }

    /// Removes every entry (pending or ready) that read `key`. Returns how many.
    pub(crate) fn invalidate(&mut self, key: &[u8]) -> usize {
        let Some(ids) = self.by_key.remove(key) else {
            return 0;
        };
        let mut n = 0;
        for i in ids {
            if self.slab.get(i).is_some_and(Option::is_some) {
                self.remove(i);
                n += 1;
            }
        }
        self.counters.invalidations += n as u64;
        n
    }

    /// Removes everything.
    pub(crate) fn flush(&mut self) {
        self.by_cmd.clear();
        self.by_key.clear();
        self.slab.clear();
        self.free.clear();
        self.head = NIL;
        self.tail = NIL;
        self.bytes = 0;
        self.counters.flushes += 1;
    }

    /// Removes every entry with a key for which `affected` is true (a scan: for rare
    /// events such as a slot changing owner). Returns how many.
    pub(crate) fn remove_where(&mut self, affected: impl Fn(&[u8]) -> bool) -> usize {
        let doomed: Vec<usize> = self
            .slab
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.as_ref()
                    .filter(|e| e.keys.iter().any(|k| affected(k)))
                    .map(|_| i)
            })
            .collect();
        for &i in &doomed {
            self.remove(i);
        }
        self.counters.invalidations += doomed.len() as u64;
        doomed.len()
    }

    /// Evicts least recently used entries until both bounds hold. `keep` (a placeholder
    /// just made, at the front) goes last.
    fn enforce_bounds(&mut self, keep: Option<usize>) {
        while self.bytes > self.max_bytes || self.by_cmd.len() > self.max_entries {
            let mut victim = self.tail;
            if Some(victim) == keep {
                let prev = self
                    .slab
                    .get(victim)
                    .and_then(Option::as_ref)
                    .map_or(NIL, |e| e.prev);
                if prev != NIL {
                    victim = prev;
                }
            }
            if victim == NIL {
                break;
            }
            self.remove(victim);
            self.counters.evictions += 1;
        }
    }

    fn insert(&mut self, entry: Entry) -> usize {
        self.bytes += entry.size;
        let cmd = entry.cmd.clone();
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(entry);
                i
            }
            None => {
                self.slab.push(Some(entry));
                self.slab.len() - 1
            }
        };
        self.by_cmd.insert(cmd, i);
        self.link_front(i);
        i
    }

    fn remove(&mut self, i: usize) {
        self.unlink(i);
        let Some(entry) = self.slab.get_mut(i).and_then(Option::take) else {
            return;
        };
        self.free.push(i);
        self.bytes = self.bytes.saturating_sub(entry.size);
        self.by_cmd.remove(&entry.cmd);
        for key in entry.keys.iter() {
            if let Some(ids) = self.by_key.get_mut(key) {
                ids.retain(|&j| j != i);
                if ids.is_empty() {
                    self.by_key.remove(key);
                }
            }
        }
    }

    fn touch(&mut self, i: usize) {
        if self.head != i {
            self.unlink(i);
            self.link_front(i);
        }
    }

    fn link_front(&mut self, i: usize) {
        let old_head = self.head;
        if let Some(e) = self.slab.get_mut(i).and_then(Option::as_mut) {
            e.prev = NIL;
            e.next = old_head;
        }
        if let Some(h) = self.slab.get_mut(old_head).and_then(Option::as_mut) {
            h.prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    fn unlink(&mut self, i: usize) {
        let Some((prev, next)) = self
            .slab
            .get(i)
            .and_then(Option::as_ref)
            .map(|e| (e.prev, e.next))
        else {
            return;
        };
        match self.slab.get_mut(prev).and_then(Option::as_mut) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.slab.get_mut(next).and_then(Option::as_mut) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
        if let Some(e) = self.slab.get_mut(i).and_then(Option::as_mut) {
            e.prev = NIL;
            e.next = NIL;
        }
    }
}

/// `frame` with every payload copied into an allocation of its own. A reply's bytes are
/// views into the connection's 64 KiB read buffer: stored as they are, an entry would
/// keep its whole read buffer allocated, and after evictions have thinned the cache
/// each survivor could hold a buffer of its own, far past the byte bound.
fn detached(frame: &Frame) -> Frame {
    let copy = |b: &Bytes| Bytes::copy_from_slice(b);
    let all = |items: &[Frame]| items.iter().map(detached).collect();
    let pairs = |pairs: &[(Frame, Frame)]| {
        pairs
            .iter()
            .map(|(k, v)| (detached(k), detached(v)))
            .collect()
    };
    match frame {
        Frame::Simple(b) => Frame::Simple(copy(b)),
        Frame::Error(b) => Frame::Error(copy(b)),
        Frame::Bulk(b) => Frame::Bulk(copy(b)),
        Frame::BigNumber(b) => Frame::BigNumber(copy(b)),
        Frame::BulkError(b) => Frame::BulkError(copy(b)),
        Frame::Verbatim { format, text } => Frame::Verbatim {
            format: *format,
            text: copy(text),
        },
        Frame::Array(items) => Frame::Array(all(items)),
        Frame::Set(items) => Frame::Set(all(items)),
        Frame::Push(items) => Frame::Push(all(items)),
        Frame::Map(kv) => Frame::Map(pairs(kv)),
        Frame::Attribute { attrs, value } => Frame::Attribute {
            attrs: pairs(attrs),
            value: Box::new(detached(value)),
        },
        Frame::Integer(_)
        | Frame::NullBulk
        | Frame::NullArray
        | Frame::Null
        | Frame::Double(_)
        | Frame::Boolean(_) => frame.clone(),
    }
}

/// Approximate heap bytes of a reply frame (payloads plus a per-frame overhead).
pub(crate) fn frame_size(frame: &Frame) -> usize {
    const FRAME: usize = std::mem::size_of::<Frame>();
    FRAME
        + match frame {
            Frame::Simple(b)
            | Frame::Error(b)
            | Frame::Bulk(b)
            | Frame::BigNumber(b)
            | Frame::BulkError(b) => b.len(),
            Frame::Verbatim { text, .. } => text.len(),
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
                items.iter().map(frame_size).sum()
            }
            Frame::Map(pairs) => pairs
                .iter()
                .map(|(k, v)| frame_size(k) + frame_size(v))
                .sum(),
            Frame::Attribute { attrs, value } => {
                attrs
                    .iter()
                    .map(|(k, v)| frame_size(k) + frame_size(v))
                    .sum::<usize>()
                    + frame_size(value)
            }
            _ => 0,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn fetch(store: &mut Store, cmd: &str, key: &str) -> u64 {
        match store.lookup(&b(cmd), &[b(key)], Instant::now()) {
            Lookup::Fetch(t) => t,
            Lookup::Hit(_) => panic!("unexpected hit for {cmd}"),
        }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[test]
    fn stored_replies_share_no_read_buffer() {
        // A reply as the connection decodes it: views into one read buffer.
        let read = Bytes::from_static(b"+OK\r\n$5\r\nhello\r\n$2\r\nhi\r\n");
        let reply = Frame::Array(vec![
            Frame::Bulk(read.slice(9..14)),
            Frame::Map(vec![(
                Frame::Simple(read.slice(1..3)),
                Frame::Bulk(read.slice(20..22)),
            )]),
            Frame::Integer(7),
        ]);
        let mut s = Store::new(1 << 20, 100);
        let t = fetch(&mut s, "GET a", "a");
        assert!(s.fill(&b("GET a"), t, &reply, later()));
        let Lookup::Hit(stored) = s.lookup(&b("GET a"), &[b("a")], Instant::now()) else {
            panic!("expected a hit");
        };
        assert_eq!(stored, reply);
        let within = |b: &Bytes| read.as_ptr_range().contains(&b.as_ptr());
        let Frame::Array(items) = &stored else {
            panic!("an array");
        };
        let Frame::Bulk(hello) = &items[0] else {
            panic!("a bulk");
        };
        assert!(
            !within(hello),
            "the stored bulk is a view into the read buffer"
        );
        let Frame::Map(kv) = &items[1] else {
            panic!("a map");
        };
        let (Frame::Simple(k), Frame::Bulk(v)) = &kv[0] else {
            panic!("a pair");
        };
        assert!(!within(k) && !within(v));
    }

    #[test]
    fn fill_then_hit_then_invalidate() {
        let mut s = Store::new(1 << 20, 100);
        let t = fetch(&mut s, "GET a", "a");
        assert!(s.fill(&b("GET a"), t, &Frame::Bulk(b("1")), later()));
        assert!(
            matches!(s.lookup(&b("GET a"), &[b("a")], Instant::now()), Lookup::Hit(Frame::Bulk(v)) if v == "1")
        );
        assert_eq!(s.invalidate(b"a"), 1);
        assert!(matches!(
            s.lookup(&b("GET a"), &[b("a")], Instant::now()),
            Lookup::Fetch(_)
        ));
        assert_eq!(s.counters.hits, 1);
        assert_eq!(s.counters.invalidations, 1);
    }

    #[test]
    fn invalidation_while_in_flight_refuses_the_reply() {
        let mut s = Store::new(1 << 20, 100);
        let t = fetch(&mut s, "GET a", "a");
        s.invalidate(b"a");
        assert!(!s.fill(&b("GET a"), t, &Frame::Bulk(b("old")), later()));
        // A new read gets a new token; the stale token cannot fill it either.
        let t2 = fetch(&mut s, "GET a", "a");
        assert_ne!(t, t2);
        assert!(!s.fill(&b("GET a"), t, &Frame::Bulk(b("old")), later()));
        assert!(s.fill(&b("GET a"), t2, &Frame::Bulk(b("new")), later()));
    }

    #[test]
    fn flush_refuses_in_flight_replies() {
        let mut s = Store::new(1 << 20, 100);
        let t = fetch(&mut s, "GET a", "a");
        s.flush();
        assert!(!s.fill(&b("GET a"), t, &Frame::Bulk(b("x")), later()));
        assert_eq!(s.len(), 0);
        assert_eq!(s.bytes(), 0);
    }

    #[test]
    fn ttl_cap_expires_entries() {
        let mut s = Store::new(1 << 20, 100);
        let t = fetch(&mut s, "GET a", "a");
        assert!(s.fill(&b("GET a"), t, &Frame::Bulk(b("1")), Instant::now()));
        assert!(matches!(
            s.lookup(&b("GET a"), &[b("a")], Instant::now()),
            Lookup::Fetch(_)
        ));
        assert_eq!(s.counters.expirations, 1);
    }

    #[test]
    fn bounds_evict_least_recently_used() {
        let mut s = Store::new(1 << 20, 3);
        for k in ["a", "b", "c"] {
            let cmd = format!("GET {k}");
            let t = fetch(&mut s, &cmd, k);
            assert!(s.fill(&b(&cmd), t, &Frame::Bulk(b(k)), later()));
        }
        // Touch a: b is now the least recently used.
        assert!(matches!(
            s.lookup(&b("GET a"), &[b("a")], Instant::now()),
            Lookup::Hit(_)
        ));
        let t = fetch(&mut s, "GET d", "d");
        assert!(s.fill(&b("GET d"), t, &Frame::Bulk(b("d")), later()));
        assert_eq!(s.len(), 3);
        assert!(matches!(
            s.lookup(&b("GET b"), &[b("b")], Instant::now()),
            Lookup::Fetch(_)
        ));
        assert!(s.counters.evictions >= 1);

        let mut s = Store::new(4096, 1_000_000);
        for i in 0..1000 {
            let cmd = format!("GET k{i}");
            let t = fetch(&mut s, &cmd, &format!("k{i}"));
            s.fill(
                &b(&cmd),
                t,
                &Frame::Bulk(Bytes::from(vec![0u8; 100])),
                later(),
            );
            assert!(s.bytes() <= 4096, "{} bytes held", s.bytes());
        }
        // The index holds exactly the live entries.
        assert_eq!(s.by_key.len(), s.len());
    }

    #[test]
    fn remove_where_drops_matching_keys() {
        let mut s = Store::new(1 << 20, 100);
        for k in ["a1", "a2", "b1"] {
            let cmd = format!("GET {k}");
            let t = fetch(&mut s, &cmd, k);
            s.fill(&b(&cmd), t, &Frame::Bulk(b(k)), later());
        }
        assert_eq!(s.remove_where(|k| k.starts_with(b"a")), 2);
        assert_eq!(s.len(), 1);
    }
}
