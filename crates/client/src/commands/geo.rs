//! Geo: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH (members, or with distance,
//! coordinates and hash), GEOSEARCHSTORE.

use bytes::Bytes;
use redline_resp::Frame;

use super::commands;
use crate::cmd::{cmd, Cmd, ToArg};
use crate::error::Error;
use crate::reply::{check, FromReply};

/// Distance unit.
///
/// ```
/// use redline::{GeoSearch, GeoUnit};
///
/// let near = GeoSearch::from_lonlat(2.35, 48.85).radius(5.0, GeoUnit::Kilometers);
/// # let _ = near;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeoUnit {
    /// `m`
    Meters,
    /// `km`
    Kilometers,
    /// `mi`
    Miles,
    /// `ft`
    Feet,
}

impl GeoUnit {
    fn word(self) -> &'static str {
        match self {
            GeoUnit::Meters => "m",
            GeoUnit::Kilometers => "km",
            GeoUnit::Miles => "mi",
            GeoUnit::Feet => "ft",
        }
    }
}

/// Where a search is centred.
#[derive(Debug, Clone, PartialEq)]
enum Center {
    Member(Bytes),
    LonLat(f64, f64),
}

/// The area searched.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Radius(f64, GeoUnit),
    Box(f64, f64, GeoUnit),
}

/// A GEOSEARCH query: a centre, a shape, and optional order and count.
///
/// ```
/// use redline::{GeoSearch, GeoUnit};
///
/// let nearby = GeoSearch::from_lonlat(13.36, 38.11)
///     .radius(200.0, GeoUnit::Kilometers)
///     .nearest_first()
///     .count(5);
/// # let _ = nearby;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GeoSearch {
    center: Center,
    shape: Shape,
    ascending: Option<bool>,
    count: Option<(u64, bool)>,
}

impl GeoSearch {
    /// Centred on an existing member (`FROMMEMBER`), within 0 m until a shape is set.
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_member("Paris").radius(100.0, GeoUnit::Kilometers);
    /// # let _ = search;
    /// ```
    pub fn from_member(member: impl Into<Bytes>) -> GeoSearch {
        GeoSearch::new(Center::Member(member.into()))
    }

    /// Centred on a longitude/latitude (`FROMLONLAT`).
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_lonlat(2.35, 48.85).radius(1.0, GeoUnit::Miles);
    /// # let _ = search;
    /// ```
    pub fn from_lonlat(longitude: f64, latitude: f64) -> GeoSearch {
        GeoSearch::new(Center::LonLat(longitude, latitude))
    }

    fn new(center: Center) -> GeoSearch {
        GeoSearch {
            center,
            shape: Shape::Radius(0.0, GeoUnit::Meters),
            ascending: None,
            count: None,
        }
    }

    /// Within a circle (`BYRADIUS`).
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_lonlat(2.35, 48.85).radius(500.0, GeoUnit::Meters);
    /// # let _ = search;
    /// ```
    #[must_use]
    pub fn radius(mut self, radius: f64, unit: GeoUnit) -> Self {
        self.shape = Shape::Radius(radius, unit);
        self
    }

    /// Within an axis-aligned box (`BYBOX`).
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_lonlat(2.35, 48.85).rectangle(10.0, 5.0, GeoUnit::Kilometers);
    /// # let _ = search;
    /// ```
    #[must_use]
    pub fn rectangle(mut self, width: f64, height: f64, unit: GeoUnit) -> Self {
        self.shape = Shape::Box(width, height, unit);
        self
    }

    /// Nearest first (`ASC`).
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_member("Paris").radius(50.0, GeoUnit::Kilometers).nearest_first();
    /// # let _ = search;
    /// ```
    #[must_use]
    pub fn nearest_first(mut self) -> Self {
        self.ascending = Some(true);
        self
    }

    /// Farthest first (`DESC`).
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_member("Paris").radius(50.0, GeoUnit::Kilometers).farthest_first();
    /// # let _ = search;
    /// ```
    #[must_use]
    pub fn farthest_first(mut self) -> Self {
        self.ascending = Some(false);
        self
    }

    /// At most `n` results (`COUNT n`).
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_member("Paris").radius(50.0, GeoUnit::Kilometers).count(10);
    /// # let _ = search;
    /// ```
    #[must_use]
    pub fn count(mut self, n: u64) -> Self {
        self.count = Some((n, false));
        self
    }

    /// At most `n` results, returning as soon as enough are found (`COUNT n ANY`).
    ///
    /// ```
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let search = GeoSearch::from_member("Paris").radius(50.0, GeoUnit::Kilometers).count_any(3);
    /// # let _ = search;
    /// ```
    #[must_use]
    pub fn count_any(mut self, n: u64) -> Self {
        self.count = Some((n, true));
        self
    }

    fn apply(&self, mut cmd: Cmd) -> Cmd {
        cmd = match &self.center {
            Center::Member(m) => cmd.arg("FROMMEMBER").arg(m),
            Center::LonLat(lon, lat) => cmd.arg("FROMLONLAT").arg(*lon).arg(*lat),
        };
        cmd = match self.shape {
            Shape::Radius(r, unit) => cmd.arg("BYRADIUS").arg(r).arg(unit.word()),
            Shape::Box(w, h, unit) => cmd.arg("BYBOX").arg(w).arg(h).arg(unit.word()),
        };
        match self.ascending {
            Some(true) => cmd.push_arg("ASC"),
            Some(false) => cmd.push_arg("DESC"),
            None => {}
        }
        if let Some((n, any)) = self.count {
            cmd = cmd.arg("COUNT").arg(n);
            if any {
                cmd.push_arg("ANY");
            }
        }
        cmd
    }
}

/// One GEOSEARCH result with its distance (in the query's unit), coordinates and
/// geohash score.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use redline::{GeoSearch, GeoUnit};
///
/// let search = GeoSearch::from_lonlat(15.0, 37.0).radius(200.0, GeoUnit::Kilometers);
/// for m in client.geosearch_with("Sicily", search).await? {
///     println!("{:?} {} km at {:?}", m.member, m.distance, m.coordinates);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GeoMatch {
    /// The member.
    pub member: Bytes,
    /// Distance from the centre.
    pub distance: f64,
    /// Longitude and latitude.
    pub coordinates: (f64, f64),
    /// The 52-bit geohash score.
    pub hash: i64,
}

/// `[member, dist, hash, [lon, lat]]` per match: Redis writes WITHDIST, WITHHASH and
/// WITHCOORD in that order.
fn geo_matches(frame: Frame) -> Result<Vec<GeoMatch>, Error> {
    FromReply::from_reply(frame)
}

/// One match of `GEOSEARCH ... WITHDIST WITHHASH WITHCOORD` (so a pipeline's
/// `Vec<GeoMatch>` converts like [`Client::geosearch_with`](crate::Client::geosearch_with)).
impl FromReply for GeoMatch {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let (member, distance, hash, coordinates) = FromReply::from_reply(check(frame)?)?;
        Ok(GeoMatch {
            member,
            distance,
            hash,
            coordinates,
        })
    }
}

commands! {
    /// `GEOADD key longitude latitude member...`: how many members were added.
    fn geoadd(key: impl ToArg, items: impl IntoIterator<Item = (f64, f64, impl ToArg)>) -> u64 {
        let mut cmd = cmd!("GEOADD").arg(key);
        for (lon, lat, member) in items {
            cmd.push_arg(lon);
            cmd.push_arg(lat);
            cmd.push_arg(member);
        }
        cmd
    }

    /// `GEODIST key member1 member2 unit`: `None` if either member is missing.
    fn geodist(key: impl ToArg, member1: impl ToArg, member2: impl ToArg, unit: GeoUnit) -> Option<f64> {
        cmd!("GEODIST").arg(key).arg(member1).arg(member2).arg(unit.word())
    }

    /// `GEOHASH key member...`: 11-character geohashes, `None` for missing members.
    fn geohash(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> Vec<Option<String>> {
        cmd!("GEOHASH").arg(key).args(members)
    }

    /// `GEOPOS key member...`: (longitude, latitude), `None` for missing members.
    fn geopos(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> Vec<Option<(f64, f64)>> {
        cmd!("GEOPOS").arg(key).args(members)
    }

    /// `GEOSEARCH key ...`: matching members.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::{GeoSearch, GeoUnit};
    ///
    /// let near = client
    ///     .geosearch("shops", GeoSearch::from_member("home").radius(2.0, GeoUnit::Kilometers).nearest_first())
    ///     .await?;
    /// # let _ = near;
    /// # Ok(()) }
    /// ```
    fn geosearch(key: impl ToArg, search: GeoSearch) -> Vec<Bytes> {
        search.apply(cmd!("GEOSEARCH").arg(key))
    }

    /// `GEOSEARCH key ... WITHDIST WITHHASH WITHCOORD`: matches with their details.
    fn geosearch_with(key: impl ToArg, search: GeoSearch) -> Vec<GeoMatch> as geo_matches {
        search
            .apply(cmd!("GEOSEARCH").arg(key))
            .arg("WITHDIST")
            .arg("WITHHASH")
            .arg("WITHCOORD")
    }

    /// `GEOSEARCHSTORE destination source ... [STOREDIST]`: how many members were stored
    /// (with `store_distance`, as scores holding the distance instead of the geohash).
    fn geosearchstore(destination: impl ToArg, source: impl ToArg, search: GeoSearch, store_distance: bool) -> u64 {
        let cmd = search.apply(cmd!("GEOSEARCHSTORE").arg(destination).arg(source));
        if store_distance { cmd.arg("STOREDIST") } else { cmd }
    }
}
