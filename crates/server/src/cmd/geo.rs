//! Geo commands (Redis's `geo.c`) on sorted sets whose scores are 52-bit geohashes
//! (see [`crate::geohash`]): GEOADD GEOPOS GEODIST GEOHASH GEORADIUS GEORADIUSBYMEMBER
//! (and their `_RO` forms) GEOSEARCH GEOSEARCHSTORE, with Redis's options, errors,
//! distances (4 decimals), coordinates (`%.17Lf`, trailing zeros trimmed) and result
//! order: the nine boxes around the centre in Redis's order, each in score order, then
//! sorted by distance when asked (or when COUNT is given without ANY).

use bytes::Bytes;
use redline_resp::{encode, Protocol};

use super::args::{int, is};
use super::float::parse_f64;
use super::reply::{CmdError, CmdResult, NOT_FLOAT, SYNTAX};
use super::zsets::{notify_store, store_zset, zset};
use super::{Ctx, Handler};
use crate::geohash::{self, Search, Shape};
use crate::store::encoding::EncodingLimits;
use crate::store::lookups::as_read;
use crate::store::ZSet;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("geoadd", geoadd),
    ("geopos", geopos),
    ("geodist", geodist),
    ("geohash", geohash_cmd),
    ("georadius", georadius),
    ("georadius_ro", georadius_ro),
    ("georadiusbymember", georadiusbymember),
    ("georadiusbymember_ro", georadiusbymember_ro),
    ("geosearch", geosearch),
    ("geosearchstore", geosearchstore),
];

const NO_MEMBER: CmdError = CmdError::Static("ERR could not decode requested zset member");

/// A double argument; `what` names it in the error (`need numeric radius`).
fn number(arg: &[u8], what: Option<&'static str>) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or(match what {
        Some(what) => CmdError::Static(what),
        None => NOT_FLOAT,
    })
}

/// A longitude/latitude pair in Redis's indexable range.
fn lon_lat(args: &[Bytes]) -> Result<(f64, f64), CmdError> {
    let longitude = number(&args[0], None)?;
    let latitude = number(&args[1], None)?;
    if !geohash::valid(longitude, latitude) {
        return Err(CmdError::Owned(format!(
            "ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}"
        )));
    }
    Ok((longitude, latitude))
}

/// Metres per unit.
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    let factor = if is(arg, "m") {
        1.0
    } else if is(arg, "km") {
        1000.0
    } else if is(arg, "ft") {
        0.3048
    } else if is(arg, "mi") {
        1609.34
    } else {
        return Err(CmdError::Static(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ));
    };
    Ok(factor)
}

/// `<radius> <unit>`: the radius and metres per unit.
fn radius(args: &[Bytes]) -> Result<(f64, f64), CmdError> {
    let r = number(&args[0], Some("ERR need numeric radius"))?;
    if r < 0.0 {
        return Err(CmdError::Static("ERR radius cannot be negative"));
    }
    Ok((r, unit(&args[1])?))
}

/// `<width> <height> <unit>`.
fn box_size(args: &[Bytes]) -> Result<(f64, f64, f64), CmdError> {
    let w = number(&args[0], Some("ERR need numeric width"))?;
    let h = number(&args[1], Some("ERR need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(CmdError::Static("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit(&args[2])?))
}

/// A distance as Redis prints it: rounded to 4 decimals (`fixedpoint_d2string`).
fn distance_text(d: f64) -> String {
    let units = (d * 10_000.0).round_ties_even();
    format!("{:.4}", units / 10_000.0)
}

/// A coordinate as Redis prints it (`ld2string` human mode: `%.17Lf`, trimmed).
fn coordinate_text(v: f64) -> String {
    let mut text = format!("{v:.17}");
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.pop();
    }
    if text == "-0" {
        text = "0".into();
    }
    text
}

fn write_coordinates(out: &mut bytes::BytesMut, proto: Protocol, (lon, lat): (f64, f64)) {
    encode::write_array_len(out, 2);
    encode::write_double_text_reply(out, proto, coordinate_text(lon).as_bytes());
    encode::write_double_text_reply(out, proto, coordinate_text(lat).as_bytes());
}

fn geoadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut first = 2;
    let (mut nx, mut xx) = (false, false);
    while first < args.len() {
        let opt = &args[first];
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if !is(opt, "ch") {
            break;
        }
        first += 1;
    }
    if (args.len() - first) % 3 != 0 || (xx && nx) {
        return Err(SYNTAX);
    }
    // ZADD key [options] score member ..., with every position checked first.
    let mut zadd: Vec<Bytes> = Vec::with_capacity(first + (args.len() - first) / 3 * 2);
    // Lower case, as Redis writes the command it replicates.
    zadd.push(Bytes::from_static(b"zadd"));
    zadd.extend_from_slice(&args[1..first]);
    for triple in args[first..].chunks(3) {
        let (longitude, latitude) = lon_lat(triple)?;
        let score = geohash::score_of(longitude, latitude).unwrap_or_default();
        zadd.push(Bytes::from(score.to_string()));
        zadd.push(triple[2].clone());
    }
    let before = crate::store::dirty::count();
    super::zsets::zadd(ctx, &zadd)?;
    if crate::store::dirty::count() != before {
        // Replicas and the AOF get the ZADD GEOADD became, as from Redis.
        crate::repl::propagate_instead(ctx, vec![zadd]);
    }
    Ok(())
}

fn geopos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let z = zset(&mut shard, key)?;
    encode::write_array_len(ctx.out, args.len() - 2);
    for member in &args[2..] {
        match z.as_ref().and_then(|z| z.score(member)) {
            Some(score) => write_coordinates(ctx.out, proto, geohash::position(score)),
            None => encode::write_null_array(ctx.out, proto),
        }
    }
    Ok(())
}

fn geodist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => unit(&args[4])?,
        _ => return Err(SYNTAX),
    };
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let scores = zset(&mut shard, key)?.map(|z| (z.score(&args[2]), z.score(&args[3])));
    match scores {
        Some((Some(a), Some(b))) => {
            let (a, b) = (geohash::position(a), geohash::position(b));
            let d = geohash::distance(a.0, a.1, b.0, b.1) / to_meters;
            encode::write_bulk(ctx.out, distance_text(d).as_bytes());
        }
        _ => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

fn geohash_cmd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let z = zset(&mut shard, key)?;
    encode::write_array_len(ctx.out, args.len() - 2);
    for member in &args[2..] {
        match z.as_ref().and_then(|z| z.score(member)) {
            Some(score) => encode::write_bulk(ctx.out, &geohash::geohash_string(score)),
            None => encode::write_null_bulk(ctx.out, proto),
        }
    }
    Ok(())
}

/// Which search command runs, and so which arguments it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// GEORADIUS key lon lat radius unit ... (STORE allowed unless `_RO`).
    Radius { store: bool },
    /// GEORADIUSBYMEMBER key member radius unit ...
    ByMember { store: bool },
    /// GEOSEARCH key FROM... BY...
    Search,
    /// GEOSEARCHSTORE dst key FROM... BY... [STOREDIST]
    SearchStore,
}

impl Variant {
    fn is_search(self) -> bool {
        matches!(self, Variant::Search | Variant::SearchStore)
    }

    fn accepts_store(self) -> bool {
        matches!(
            self,
            Variant::Radius { store: true } | Variant::ByMember { store: true }
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// A parsed search.
#[derive(Debug, Clone)]
struct Query {
    /// The centre; `None` when it is a member of a missing key.
    centre: Option<(f64, f64)>,
    /// The shape in the caller's unit, and metres per unit (`None` as for the centre).
    shape: Option<(Shape, f64)>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    any: bool,
    count: usize,
    order: Order,
    store: Option<Bytes>,
    store_dist: bool,
}

/// One match.
#[derive(Clone)]
struct Found<'z> {
    /// Borrowed from the set, whose shard stays locked until the reply is written.
    member: &'z [u8],
    score: f64,
    position: (f64, f64),
    /// In metres.
    distance: f64,
}

/// The position of `member` of the source set.
fn member_position(z: &ZSet, member: &[u8]) -> Result<(f64, f64), CmdError> {
    z.score(member).map(geohash::position).ok_or(NO_MEMBER)
}

/// Parses a search's arguments in Redis's order, so the first bad argument is the one
/// reported; members named as the centre are looked up in `z`, the source set (when
/// it is missing, the search answers empty once the arguments are checked).
fn parse_query(args: &[Bytes], variant: Variant, z: Option<&ZSet>) -> Result<Query, CmdError> {
    let mut q = Query {
        centre: None,
        shape: None,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        any: false,
        count: 0,
        order: Order::None,
        store: (variant == Variant::SearchStore).then(|| args[1].clone()),
        store_dist: false,
    };
    let base = match variant {
        Variant::Radius { .. } => {
            q.centre = Some(lon_lat(&args[2..4])?);
            let (r, unit) = radius(&args[4..6])?;
            q.shape = Some((Shape::Radius(r), unit));
            6
        }
        Variant::ByMember { .. } => {
            if let Some(z) = z {
                q.centre = Some(member_position(z, &args[2])?);
                let (r, unit) = radius(&args[3..5])?;
                q.shape = Some((Shape::Radius(r), unit));
            }
            5
        }
        Variant::Search => 2,
        Variant::SearchStore => 3,
    };
    let rest = &args[base..];
    let mut i = 0;
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) =
        (false, false, false, false);
    while i < rest.len() {
        let arg = &rest[i];
        let more = rest.len() - 1 - i;
        if is(arg, "withdist") {
            q.with_dist = true;
        } else if is(arg, "withhash") {
            q.with_hash = true;
        } else if is(arg, "withcoord") {
            q.with_coord = true;
        } else if is(arg, "any") {
            q.any = true;
        } else if is(arg, "asc") {
            q.order = Order::Asc;
        } else if is(arg, "desc") {
            q.order = Order::Desc;
        } else if is(arg, "count") && more >= 1 {
            let n = int(&rest[i + 1])?;
            if n <= 0 {
                return Err(CmdError::Static("ERR COUNT must be > 0"));
            }
            q.count = usize::try_from(n).unwrap_or(usize::MAX);
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && more >= 1 && variant.accepts_store()
        {
            q.store = Some(rest[i + 1].clone());
            q.store_dist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && variant == Variant::SearchStore {
            q.store_dist = true;
        } else if is(arg, "frommember") && more >= 1 && variant.is_search() && !from_lonlat {
            if let Some(z) = z {
                q.centre = Some(member_position(z, &rest[i + 1])?);
            }
            from_member = true;
            i += 1;
        } else if is(arg, "fromlonlat") && more >= 2 && variant.is_search() && !from_member {
            q.centre = Some(lon_lat(&rest[i + 1..i + 3])?);
            from_lonlat = true;
            i += 2;
        } else if is(arg, "byradius") && more >= 2 && variant.is_search() && !by_box {
            let (r, unit) = radius(&rest[i + 1..i + 3])?;
            q.shape = Some((Shape::Radius(r), unit));
            by_radius = true;
            i += 2;
        } else if is(arg, "bybox") && more >= 3 && variant.is_search() && !by_radius {
            let (w, h, unit) = box_size(&rest[i + 1..i + 4])?;
            q.shape = Some((Shape::Box(w, h), unit));
            by_box = true;
            i += 3;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    if q.store.is_some() && (q.with_dist || q.with_hash || q.with_coord) {
        let who = if variant == Variant::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(CmdError::Owned(format!(
            "ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = String::from_utf8_lossy(&args[0]).into_owned();
    if variant.is_search() && !(from_member || from_lonlat) {
        return Err(CmdError::Owned(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if variant.is_search() && !(by_radius || by_box) {
        return Err(CmdError::Owned(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if q.any && q.count == 0 {
        return Err(CmdError::Static(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    Ok(q)
}

/// The members inside the search, box by box in Redis's order; with `limit`, stops
/// once that many are found (ANY).
fn find<'z>(z: &'z ZSet, search: &Search, limit: usize) -> Vec<Found<'z>> {
    let mut found = Vec::new();
    for hash in search.boxes() {
        if limit > 0 && found.len() >= limit {
            break;
        }
        let (min, max) = hash.score_range();
        for (member, score) in z.range_from(min as f64) {
            if score >= max as f64 {
                break;
            }
            let position = geohash::position(score);
            if let Some(distance) = search.distance_if_inside(position.0, position.1) {
                found.push(Found {
                    member,
                    score,
                    position,
                    distance,
                });
            }
            if limit > 0 && found.len() >= limit {
                break;
            }
        }
    }
    found
}

/// Keeps the `count` matches a stable sort by `cmp` (on distances) would put first, in
/// their order of discovery: those before the `count`-th distance, then as many at that
/// distance as fit, earliest first. Sorting only those (COUNT 10 of a few hundred) costs
/// a selection instead of a sort of them all.
fn keep_first(
    found: &mut Vec<Found<'_>>,
    count: usize,
    cmp: impl Fn(f64, f64) -> std::cmp::Ordering,
) {
    if count >= found.len() {
        return;
    }
    let mut distances: Vec<f64> = found.iter().map(|f| f.distance).collect();
    let (_, &mut cut, _) = distances.select_nth_unstable_by(count - 1, |a, b| cmp(*a, *b));
    let before = found
        .iter()
        .filter(|f| cmp(f.distance, cut).is_lt())
        .count();
    let mut ties = count - before;
    found.retain(|f| match cmp(f.distance, cut) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Equal if ties > 0 => {
            ties -= 1;
            true
        }
        _ => false,
    });
}

/// Runs a parsed search on `z`: the matches, nearest first when sorted, distances in
/// the caller's unit.
fn run_query<'z>(z: &'z ZSet, q: &Query) -> Vec<Found<'z>> {
    let (Some((longitude, latitude)), Some((shape, unit))) = (q.centre, q.shape) else {
        return Vec::new();
    };
    let in_meters = match shape {
        Shape::Radius(r) => Shape::Radius(r * unit),
        Shape::Box(w, h) => Shape::Box(w * unit, h * unit),
    };
    let search = Search {
        longitude,
        latitude,
        shape: in_meters,
    };
    let limit = if q.any { q.count } else { 0 };
    let mut found = find(z, &search, limit);
    // COUNT picks the nearest: sorted unless ANY asked for any matches.
    let order = if q.count > 0 && q.order == Order::None && !q.any {
        Order::Asc
    } else {
        q.order
    };
    let by_order = |a: f64, b: f64| match order {
        Order::Desc => b.total_cmp(&a),
        _ => a.total_cmp(&b),
    };
    if order != Order::None {
        if q.count > 0 {
            keep_first(&mut found, q.count, by_order);
        }
        found.sort_by(|a, b| by_order(a.distance, b.distance));
    }
    if q.count > 0 {
        found.truncate(q.count);
    }
    for f in &mut found {
        f.distance /= unit;
    }
    found
}

fn search_generic(ctx: &mut Ctx<'_>, args: &[Bytes], variant: Variant) -> CmdResult {
    let src = if variant == Variant::SearchStore {
        &args[2]
    } else {
        &args[1]
    };
    let proto = ctx.proto();
    // The source and, for STORE, the destination (found by the command's key specs).
    let indexes = redline_resp::command::keys(args).unwrap_or_default();
    let mut locked = ctx.lock_keys(
        std::iter::once(&src[..])
            .chain(indexes.iter().filter_map(|&i| args.get(i).map(|a| &a[..]))),
    );
    // WRONGTYPE before any argument is looked at, as Redis. The matches borrow the set's
    // members: a reply is written, and what GEOSEARCHSTORE stores copied, before the
    // shards are let go.
    // A read lookup, as Redis's, for the forms that may store too.
    let z = as_read(|| zset(locked.shard(src), src))?;
    let q = parse_query(args, variant, z.as_deref())?;
    let found = z.map(|z| run_query(z, &q)).unwrap_or_default();
    if let Some(dst) = &q.store {
        let n = found.len();
        let items = found
            .into_iter()
            .map(|f| {
                let score = if q.store_dist { f.distance } else { f.score };
                (f.member.to_vec(), score)
            })
            .collect();
        let limits = EncodingLimits::now(&ctx.shared.hot);
        let stored = store_zset(locked.shard(dst), dst, items, &limits);
        if stored == Some(true) {
            // Redis counts a change a member stored (ZUNIONSTORE and the like, one).
            crate::store::dirty::mark_rest(n);
        }
        drop(locked);
        let event = if variant.is_search() {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        notify_store(ctx, stored, event, dst);
        encode::write_integer(ctx.out, n as i64);
        return Ok(());
    }
    let out = &mut *ctx.out;
    let extras = usize::from(q.with_dist) + usize::from(q.with_hash) + usize::from(q.with_coord);
    encode::write_array_len(out, found.len());
    for f in found {
        if extras > 0 {
            encode::write_array_len(out, extras + 1);
        }
        encode::write_bulk(out, f.member);
        if q.with_dist {
            encode::write_bulk(out, distance_text(f.distance).as_bytes());
        }
        if q.with_hash {
            encode::write_integer(out, f.score as i64);
        }
        if q.with_coord {
            write_coordinates(out, proto, f.position);
        }
    }
    Ok(())
}

fn georadius(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, Variant::Radius { store: true })
}

fn georadius_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, Variant::Radius { store: false })
}

fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, Variant::ByMember { store: true })
}

fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, Variant::ByMember { store: false })
}

fn geosearch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, Variant::Search)
}

fn geosearchstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, Variant::SearchStore)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_redis() {
        assert_eq!(distance_text(166_274.151_557_5), "166274.1516");
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(
            coordinate_text(13.361_389_338_970_184),
            "13.36138933897018433"
        );
        assert_eq!(coordinate_text(-1.5), "-1.5");
    }

    #[test]
    fn keeping_the_first_matches_equals_sorting_then_truncating() {
        let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
        for seed in 0..200u64 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let n = rng.usize(0..40);
            // Few distinct distances, so ties straddle the cut.
            let found: Vec<Found<'_>> = (0..n)
                .map(|i| Found {
                    member: &names[i],
                    score: 0.0,
                    position: (0.0, 0.0),
                    distance: f64::from(rng.u8(0..6)),
                })
                .collect();
            let count = rng.usize(1..12);
            for desc in [false, true] {
                let cmp = |a: f64, b: f64| {
                    if desc {
                        b.total_cmp(&a)
                    } else {
                        a.total_cmp(&b)
                    }
                };
                let mut expected: Vec<&[u8]> = {
                    let mut all: Vec<&Found<'_>> = found.iter().collect();
                    all.sort_by(|a, b| cmp(a.distance, b.distance));
                    all.iter().take(count).map(|f| f.member).collect()
                };
                let mut got = found.clone();
                keep_first(&mut got, count, cmp);
                got.sort_by(|a, b| cmp(a.distance, b.distance));
                got.truncate(count);
                let got: Vec<&[u8]> = got.iter().map(|f| f.member).collect();
                expected.truncate(count);
                assert_eq!(got, expected, "seed {seed}, count {count}, desc {desc}");
            }
        }
    }
}
