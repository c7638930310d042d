//! The geohash arithmetic behind the GEO commands, bit for bit as Redis 7.0 computes it,
//! so scores, hashes, distances and search results are identical.
//!
//! A position is a sorted-set score: the 52-bit interleaving of its latitude (even bits)
//! and longitude (odd bits), each quantised to 26 bits over Redis's ranges (longitude
//! -180..180, latitude -85.05112878..85.05112878, the Web Mercator limits). A search
//! covers its shape with the geohash box around the centre and its eight neighbours, at
//! a precision chosen from the radius, and reads each box as one score range.

/// Redis's Earth radius (`EARTH_RADIUS_IN_METERS`).
pub const EARTH_RADIUS_M: f64 = 6_372_797.560856;
/// Longitude bounds.
pub const LONG_MIN: f64 = -180.0;
/// Longitude bounds.
pub const LONG_MAX: f64 = 180.0;
/// Latitude bounds (Web Mercator).
pub const LAT_MIN: f64 = -85.051_128_78;
/// Latitude bounds (Web Mercator).
pub const LAT_MAX: f64 = 85.051_128_78;
/// Bits per coordinate in a score (`GEO_STEP_MAX`).
pub const STEP_MAX: u8 = 26;
const MERCATOR_MAX: f64 = 20_037_726.37;

fn deg_rad(deg: f64) -> f64 {
    deg * (std::f64::consts::PI / 180.0)
}

fn rad_deg(rad: f64) -> f64 {
    rad / (std::f64::consts::PI / 180.0)
}

/// A geohash of `step` bits per coordinate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hash {
    /// Interleaved bits, latitude in the even positions.
    pub bits: u64,
    /// Bits per coordinate.
    pub step: u8,
}

impl Hash {
    /// The empty hash a search drops from its neighbours (`GZERO`).
    fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The score range `[min, max)` of the 52-bit positions inside this box.
    pub fn score_range(self) -> (u64, u64) {
        let shift = 52 - u32::from(self.step) * 2;
        (self.bits << shift, (self.bits + 1) << shift)
    }
}

/// Spreads the low 32 bits of `v` to the even bit positions.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bit positions of `x` into 32 bits.
fn squash(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// A coordinate range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

/// The ranges scores are computed over.
const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// The box a hash stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    /// Longitude span.
    pub longitude: Range,
    /// Latitude span.
    pub latitude: Range,
}

/// Whether a longitude/latitude pair can be indexed.
pub fn valid(longitude: f64, latitude: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&longitude) && (LAT_MIN..=LAT_MAX).contains(&latitude)
}

/// The hash of a position over the given ranges; `None` outside them.
pub fn encode_in(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<Hash> {
    if !valid(longitude, latitude)
        || !(lat_range.min..=lat_range.max).contains(&latitude)
        || !(long_range.min..=long_range.max).contains(&longitude)
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    // C converts to uint32_t by truncation.
    let bits = spread(lat_offset as u32) | (spread(long_offset as u32) << 1);
    Some(Hash { bits, step })
}

/// The hash of a position over Redis's ranges.
pub fn encode(longitude: f64, latitude: f64, step: u8) -> Option<Hash> {
    encode_in(LONG_RANGE, LAT_RANGE, longitude, latitude, step)
}

/// The 52-bit score of a position (GEOADD).
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode(longitude, latitude, STEP_MAX).map(|h| h.score_range().0)
}

/// The box of a hash.
pub fn decode(hash: Hash) -> Area {
    let lat_bits = squash(hash.bits);
    let long_bits = squash(hash.bits >> 1);
    let scale = (1u64 << hash.step) as f64;
    let lat_span = LAT_MAX - LAT_MIN;
    let long_span = LONG_MAX - LONG_MIN;
    Area {
        latitude: Range {
            min: LAT_MIN + (f64::from(lat_bits) / scale) * lat_span,
            max: LAT_MIN + ((f64::from(lat_bits) + 1.0) / scale) * lat_span,
        },
        longitude: Range {
            min: LONG_MIN + (f64::from(long_bits) / scale) * long_span,
            max: LONG_MIN + ((f64::from(long_bits) + 1.0) / scale) * long_span,
        },
    }
}

/// C's `(uint64_t)` cast of a double as x86-64 builds of Redis compute it. The cast is
/// undefined in C for what does not fit (a score a GEO command did not write: ZADD's
/// `-inf`, a negative or huge one); the compiler's instruction sequence gives the value
/// below, and redis-server's replies show it.
fn c_double_to_u64(value: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: truncation, or 0x8000_0000_0000_0000 for NaN and anything out of range.
    let cvt = |x: f64| -> u64 {
        if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
            1 << 63
        } else {
            x as i64 as u64
        }
    };
    if value >= TWO_63 {
        cvt(value - TWO_63) ^ (1 << 63)
    } else {
        cvt(value)
    }
}

/// The position a score stands for: the centre of its box, as `(longitude, latitude)`.
pub fn position(score: f64) -> (f64, f64) {
    let area = decode(Hash {
        bits: c_double_to_u64(score),
        step: STEP_MAX,
    });
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (longitude, latitude)
}

/// The standard 11-character geohash of a score (GEOHASH): re-encoded over latitude
/// -90..90, as other geohash tools expect.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (longitude, latitude) = position(score);
    let standard_lat = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits =
        encode_in(LONG_RANGE, standard_lat, longitude, latitude, STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    // 52 bits make ten characters; the eleventh is '0', as Redis answers.
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let index = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[index as usize];
    }
    out
}

/// Distance between two latitudes on the same meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Great-circle distance in metres (haversine, Redis's `geohashGetDistance`).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// What a search covers, in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// BYRADIUS / GEORADIUS.
    Radius(f64),
    /// BYBOX: width and height.
    Box(f64, f64),
}

/// A search: its centre `(longitude, latitude)` and shape (in metres).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    /// Centre longitude.
    pub longitude: f64,
    /// Centre latitude.
    pub latitude: f64,
    /// What it covers.
    pub shape: Shape,
}

impl Search {
    /// The distance from the centre to a point, if the point is inside the shape.
    pub fn distance_if_inside(&self, longitude: f64, latitude: f64) -> Option<f64> {
        match self.shape {
            Shape::Radius(radius) => {
                let d = distance(self.longitude, self.latitude, longitude, latitude);
                (d <= radius).then_some(d)
            }
            Shape::Box(width, height) => {
                // The cheaper latitude test first, as Redis.
                if lat_distance(latitude, self.latitude) > height / 2.0 {
                    return None;
                }
                if distance(longitude, latitude, self.longitude, latitude) > width / 2.0 {
                    return None;
                }
                Some(distance(self.longitude, self.latitude, longitude, latitude))
            }
        }
    }

    /// The bounding box `[min_lon, min_lat, max_lon, max_lat]` of the shape.
    fn bounds(&self) -> [f64; 4] {
        let (half_height, half_width) = match self.shape {
            Shape::Radius(r) => (r, r),
            Shape::Box(w, h) => (h / 2.0, w / 2.0),
        };
        let lat_delta = rad_deg(half_height / EARTH_RADIUS_M);
        let long_delta_top =
            rad_deg(half_width / EARTH_RADIUS_M / deg_rad(self.latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(half_width / EARTH_RADIUS_M / deg_rad(self.latitude - lat_delta).cos());
        // The widest edge is the one nearer the pole.
        let long_delta = if self.latitude < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.longitude - long_delta,
            self.latitude - lat_delta,
            self.longitude + long_delta,
            self.latitude + lat_delta,
        ]
    }

    /// The distance from the centre to the farthest point of the shape.
    fn reach(&self) -> f64 {
        match self.shape {
            Shape::Radius(r) => r,
            Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
        }
    }

    /// The boxes to read, in Redis's order (centre, N, S, E, W, NE, NW, SE, SW), without
    /// those the shape cannot reach and without a box equal to the one before it.
    pub fn boxes(&self) -> Vec<Hash> {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let mut step = steps_for_radius(self.reach(), self.latitude);
        let around = |step: u8| {
            let hash = encode(self.longitude, self.latitude, step).unwrap_or_default();
            (hash, Neighbours::of(hash), decode(hash))
        };
        let (mut hash, mut n, mut area) = around(step);
        // Near a box edge the estimated precision may leave part of the shape outside
        // the nine boxes: one step coarser then.
        let too_fine = decode(n.north).latitude.max < max_lat
            || decode(n.south).latitude.min > min_lat
            || decode(n.east).longitude.max < max_lon
            || decode(n.west).longitude.min > min_lon;
        if step > 1 && too_fine {
            step -= 1;
            (hash, n, area) = around(step);
        }
        if step >= 2 {
            let zero = Hash::default();
            if area.latitude.min < min_lat {
                (n.south, n.south_west, n.south_east) = (zero, zero, zero);
            }
            if area.latitude.max > max_lat {
                (n.north, n.north_east, n.north_west) = (zero, zero, zero);
            }
            if area.longitude.min < min_lon {
                (n.west, n.south_west, n.north_west) = (zero, zero, zero);
            }
            if area.longitude.max > max_lon {
                (n.east, n.south_east, n.north_east) = (zero, zero, zero);
            }
        }
        let all = [
            hash,
            n.north,
            n.south,
            n.east,
            n.west,
            n.north_east,
            n.north_west,
            n.south_east,
            n.south_west,
        ];
        let mut out: Vec<Hash> = Vec::with_capacity(9);
        for h in all {
            if h.is_zero() || out.last() == Some(&h) {
                continue;
            }
            out.push(h);
        }
        out
    }
}

/// The precision whose boxes are about the size of `radius` at `latitude`.
fn steps_for_radius(radius: f64, latitude: f64) -> u8 {
    if radius == 0.0 {
        return STEP_MAX;
    }
    let mut range = radius;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Boxes narrow towards the poles.
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// The eight boxes around one.
#[derive(Debug, Clone, Copy)]
struct Neighbours {
    north: Hash,
    south: Hash,
    east: Hash,
    west: Hash,
    north_east: Hash,
    north_west: Hash,
    south_east: Hash,
    south_west: Hash,
}

impl Neighbours {
    fn of(hash: Hash) -> Neighbours {
        let at = |dx: i8, dy: i8| move_y(move_x(hash, dx), dy);
        Neighbours {
            east: at(1, 0),
            west: at(-1, 0),
            south: at(0, -1),
            north: at(0, 1),
            north_west: at(-1, 1),
            north_east: at(1, 1),
            south_east: at(1, -1),
            south_west: at(-1, -1),
        }
    }
}

/// Moves one box east (`d` > 0) or west, wrapping around the antimeridian.
fn move_x(hash: Hash, d: i8) -> Hash {
    if d == 0 {
        return hash;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let mut x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = hash.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    Hash {
        bits: x | y,
        step: hash.step,
    }
}

/// Moves one box north (`d` > 0) or south.
fn move_y(hash: Hash, d: i8) -> Hash {
    if d == 0 {
        return hash;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = hash.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    Hash {
        bits: x | y,
        step: hash.step,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_and_positions_match_redis() {
        // GEOADD Sicily 13.361389 38.115556 Palermo → ZSCORE 3479099956230698.
        assert_eq!(score_of(13.361389, 38.115556), Some(3_479_099_956_230_698));
        assert_eq!(score_of(15.087269, 37.502669), Some(3_479_447_370_796_909));
        let (lon, lat) = position(3_479_099_956_230_698.0);
        assert!((lon - 13.361_389_338_970_184).abs() < 1e-12);
        assert!((lat - 38.115_556_395_496_3).abs() < 1e-12);
        assert_eq!(&geohash_string(3_479_099_956_230_698.0), b"sqc8b49rny0");
        assert_eq!(&geohash_string(3_479_447_370_796_909.0), b"sqdtr74hyu0");
    }

    #[test]
    fn scores_no_geo_command_wrote_decode_as_in_redis() {
        // x86-64's conversion: out of range and NaN give the sign bit, negatives wrap.
        assert_eq!(c_double_to_u64(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(c_double_to_u64(f64::NAN), 1 << 63);
        assert_eq!(c_double_to_u64(f64::INFINITY), 0);
        assert_eq!(c_double_to_u64(-1.0), u64::MAX);
        assert_eq!(c_double_to_u64(1.9), 1);
        assert_eq!(c_double_to_u64(1.5e19), 15_000_000_000_000_000_000);
        // ZADD k -inf m, then GEOPOS k m on redis-server 7.0.15.
        let (lon, lat) = position(f64::NEG_INFINITY);
        assert_eq!(lon, 180.0);
        assert!((lat - -85.051_127_512_639_42).abs() < 1e-12);
    }

    #[test]
    fn distance_matches_redis() {
        // GEODIST Sicily Palermo Catania → 166274.1516 m.
        let (a, b) = (
            position(3_479_099_956_230_698.0),
            position(3_479_447_370_796_909.0),
        );
        let d = distance(a.0, a.1, b.0, b.1);
        assert_eq!(format!("{d:.4}"), "166274.1516");
    }

    #[test]
    fn interleaving_round_trips() {
        for v in [0u32, 1, 0x3ff_ffff, 0x155_5555, 12_345_678] {
            assert_eq!(squash(spread(v)), v);
        }
    }

    #[test]
    fn out_of_range_positions_have_no_score() {
        assert_eq!(score_of(181.0, 0.0), None);
        assert_eq!(score_of(0.0, 86.0), None);
    }

    #[test]
    fn search_boxes_cover_the_centre() {
        let search = Search {
            longitude: 15.0,
            latitude: 37.0,
            shape: Shape::Radius(200_000.0),
        };
        let boxes = search.boxes();
        assert!(!boxes.is_empty() && boxes.len() <= 9);
        let centre = score_of(15.0, 37.0).unwrap_or_default();
        assert!(boxes.iter().any(|b| {
            let (lo, hi) = b.score_range();
            (lo..hi).contains(&centre)
        }));
    }
}
