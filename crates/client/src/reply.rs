//! Converting replies to Rust types with [`FromReply`].
//!
//! Conversions accept both protocol versions' shapes, so typed code does not change with
//! `HELLO 3`: a map is a RESP3 map or a RESP2 flat array, a double is a RESP3 double or a
//! RESP2 bulk string, a boolean is `#t` or `:1`. A shape that does not fit is
//! [`Error::Type`]; an error reply anywhere in the way is [`Error::Server`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

use bytes::Bytes;
use redline_resp::Frame;

use crate::error::{describe, Error};

/// A Rust type a reply converts to.
///
/// ```
/// use bytes::Bytes;
/// use redline::{FromReply, Frame};
///
/// let reply = Frame::Array(vec![Frame::Bulk(Bytes::from_static(b"7")), Frame::Null]);
/// let values: Vec<Option<i64>> = FromReply::from_reply(reply)?;
/// assert_eq!(values, vec![Some(7), None]);
/// # Ok::<(), redline::Error>(())
/// ```
pub trait FromReply: Sized {
    /// Converts one reply.
    fn from_reply(frame: Frame) -> Result<Self, Error>;
}

/// Turns error replies into errors and unwraps RESP3 attributes.
#[inline]
pub(crate) fn check(frame: Frame) -> Result<Frame, Error> {
    match frame {
        Frame::Error(e) | Frame::BulkError(e) => Err(Error::from_server_reply(&e)),
        Frame::Attribute { value, .. } => check(*value),
        other => Ok(other),
    }
}

fn mismatch<T>(expected: &'static str, frame: &Frame) -> Result<T, Error> {
    Err(Error::type_mismatch(expected, describe(frame)))
}

impl FromReply for Frame {
    /// The reply as sent; only a top-level error reply becomes `Err`.
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        check(frame)
    }
}

impl FromReply for () {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        check(frame).map(drop)
    }
}

impl FromReply for Bytes {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        match check(frame)? {
            Frame::Bulk(b) | Frame::Simple(b) | Frame::BigNumber(b) => Ok(b),
            Frame::Verbatim { text, .. } => Ok(text),
            Frame::Integer(n) => Ok(Bytes::from(n.to_string())),
            Frame::Double(d) => Ok(Bytes::from(d.to_string())),
            other => mismatch("string", &other),
        }
    }
}

impl FromReply for String {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let bytes = Bytes::from_reply(frame)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::type_mismatch("UTF-8 string", "invalid UTF-8"))
    }
}

fn parse_text<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

macro_rules! int_reply {
    ($($ty:ty),*) => {$(
        impl FromReply for $ty {
            fn from_reply(frame: Frame) -> Result<Self, Error> {
                let frame = check(frame)?;
                let n: Option<$ty> = match &frame {
                    Frame::Integer(n) => (*n).try_into().ok(),
                    Frame::Bulk(b) | Frame::Simple(b) | Frame::BigNumber(b) => parse_text(b),
                    Frame::Boolean(b) => Some(<$ty>::from(*b)),
                    _ => None,
                };
                match n {
                    Some(n) => Ok(n),
                    None => mismatch(stringify!($ty), &frame),
                }
            }
        }
    )*};
}
int_reply!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl FromReply for f64 {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let frame = check(frame)?;
        let d = match &frame {
            Frame::Double(d) => Some(*d),
            Frame::Integer(n) => Some(*n as f64),
            Frame::Bulk(b) | Frame::Simple(b) | Frame::BigNumber(b) => parse_double(b),
            _ => None,
        };
        match d {
            Some(d) => Ok(d),
            None => mismatch("f64", &frame),
        }
    }
}

/// Redis writes infinities as `inf`/`-inf` (and accepts `+inf`); Rust's parser knows
/// `inf` and `infinity` in any case, so this is `str::parse` on valid UTF-8.
fn parse_double(b: &[u8]) -> Option<f64> {
    parse_text(b)
}

impl FromReply for bool {
    /// `#t`/`#f`, `:1`/`:0` (any non-zero is true), `+OK` is true and nil is false
    /// (so `SET ... NX` reads as "was it set").
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        match check(frame)? {
            Frame::Boolean(b) => Ok(b),
            Frame::Integer(n) => Ok(n != 0),
            Frame::Simple(s) if &s[..] == b"OK" => Ok(true),
            Frame::Null | Frame::NullBulk | Frame::NullArray => Ok(false),
            Frame::Bulk(b) if &b[..] == b"1" => Ok(true),
            Frame::Bulk(b) if &b[..] == b"0" => Ok(false),
            other => mismatch("bool", &other),
        }
    }
}

impl<T: FromReply> FromReply for Option<T> {
    /// Nil is `None`; anything else converts to `T`.
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        match check(frame)? {
            Frame::Null | Frame::NullBulk | Frame::NullArray => Ok(None),
            other => T::from_reply(other).map(Some),
        }
    }
}

/// The elements of an aggregate reply; a map is flattened to key, value, key, value.
fn elements(frame: Frame, expected: &'static str) -> Result<Vec<Frame>, Error> {
    match check(frame)? {
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => Ok(items),
        Frame::Map(pairs) => Ok(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()),
        // RESP2's null array, e.g. for an empty optional list.
        Frame::Null | Frame::NullArray => Ok(Vec::new()),
        other => mismatch(expected, &other),
    }
}

impl<T: FromReply> FromReply for Vec<T> {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        elements(frame, "array")?
            .into_iter()
            .map(T::from_reply)
            .collect()
    }
}

impl<T: FromReply + Eq + Hash, S: BuildHasher + Default> FromReply for HashSet<T, S> {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        elements(frame, "set")?
            .into_iter()
            .map(T::from_reply)
            .collect()
    }
}

/// Key/value pairs from a RESP3 map, a RESP2 flat array, or an array of two-element
/// arrays (RESP3 `ZRANGE ... WITHSCORES`).
/// Rewrites a map, or a flat array of even length, as an array of 2-element arrays (what
/// `Vec<(K, V)>` converts from); anything else is returned unchanged.
pub(crate) fn pairs_shape(frame: Frame) -> Frame {
    match frame {
        Frame::Map(pairs) => Frame::Array(
            pairs
                .into_iter()
                .map(|(k, v)| Frame::Array(vec![k, v]))
                .collect(),
        ),
        Frame::Array(items)
            if items.len() % 2 == 0
                && !items
                    .iter()
                    .all(|f| matches!(f, Frame::Array(p) if p.len() == 2)) =>
        {
            let mut out = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push(Frame::Array(vec![k, v]));
            }
            Frame::Array(out)
        }
        other => other,
    }
}

pub(crate) fn pairs<K: FromReply, V: FromReply>(frame: Frame) -> Result<Vec<(K, V)>, Error> {
    match check(frame)? {
        Frame::Map(pairs) => pairs
            .into_iter()
            .map(|(k, v)| Ok((K::from_reply(k)?, V::from_reply(v)?)))
            .collect(),
        Frame::Array(items) | Frame::Set(items) => {
            if items
                .iter()
                .all(|f| matches!(f, Frame::Array(p) if p.len() == 2))
                && !items.is_empty()
            {
                items.into_iter().map(<(K, V)>::from_reply).collect()
            } else if items.len() % 2 == 0 {
                let mut out = Vec::with_capacity(items.len() / 2);
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    out.push((K::from_reply(k)?, V::from_reply(v)?));
                }
                Ok(out)
            } else {
                Err(Error::type_mismatch(
                    "key/value pairs",
                    format_args!("array of odd length {}", items.len()),
                ))
            }
        }
        Frame::Null | Frame::NullArray => Ok(Vec::new()),
        other => mismatch("map", &other),
    }
}

impl<K, V, S> FromReply for HashMap<K, V, S>
where
    K: FromReply + Eq + Hash,
    V: FromReply,
    S: BuildHasher + Default,
{
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        Ok(pairs(frame)?.into_iter().collect())
    }
}

impl<K: FromReply + Ord, V: FromReply> FromReply for BTreeMap<K, V> {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        Ok(pairs(frame)?.into_iter().collect())
    }
}

macro_rules! tuple_reply {
    ($n:literal: $($name:ident),+) => {
        impl<$($name: FromReply),+> FromReply for ($($name,)+) {
            /// An array of exactly this many elements (e.g. a pipeline's replies).
            fn from_reply(frame: Frame) -> Result<Self, Error> {
                let items = elements(frame, "array")?;
                if items.len() != $n {
                    return Err(Error::type_mismatch(
                        concat!("array of ", $n),
                        format_args!("array of {}", items.len()),
                    ));
                }
                let mut it = items.into_iter();
                Ok(($(
                    $name::from_reply(it.next().unwrap_or(Frame::Null))?,
                )+))
            }
        }
    };
}
tuple_reply!(1: A);
tuple_reply!(2: A, B);
tuple_reply!(3: A, B, C);
tuple_reply!(4: A, B, C, D);
tuple_reply!(5: A, B, C, D, E);
tuple_reply!(6: A, B, C, D, E, F);
tuple_reply!(7: A, B, C, D, E, F, G);
tuple_reply!(8: A, B, C, D, E, F, G, H);

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn scalars_across_protocols() {
        assert_eq!(i64::from_reply(Frame::Integer(5)).unwrap(), 5);
        assert_eq!(i64::from_reply(bulk("-12")).unwrap(), -12);
        assert!(u8::from_reply(Frame::Integer(300)).is_err());
        assert_eq!(f64::from_reply(Frame::Double(1.5)).unwrap(), 1.5);
        assert_eq!(f64::from_reply(bulk("2.25")).unwrap(), 2.25);
        assert_eq!(f64::from_reply(bulk("inf")).unwrap(), f64::INFINITY);
        assert_eq!(f64::from_reply(bulk("-inf")).unwrap(), f64::NEG_INFINITY);
        assert!(bool::from_reply(Frame::Boolean(true)).unwrap());
        assert!(bool::from_reply(Frame::Integer(1)).unwrap());
        assert!(!bool::from_reply(Frame::NullBulk).unwrap());
        assert_eq!(String::from_reply(bulk("hé")).unwrap(), "hé");
        assert_eq!(
            String::from_reply(Frame::Verbatim {
                format: *b"txt",
                text: Bytes::from_static(b"info")
            })
            .unwrap(),
            "info"
        );
        assert_eq!(Option::<Bytes>::from_reply(Frame::Null).unwrap(), None);
        assert_eq!(Option::<Bytes>::from_reply(Frame::NullBulk).unwrap(), None);
    }

    #[test]
    fn mismatches_and_errors_are_typed() {
        let err = i64::from_reply(bulk("abc")).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Type {
                    expected: "i64",
                    ..
                }
            ),
            "{err}"
        );
        let err = Bytes::from_reply(Frame::Null).unwrap_err();
        assert!(matches!(err, Error::Type { .. }));
        let err =
            Option::<Bytes>::from_reply(Frame::Error(Bytes::from_static(b"ERR boom"))).unwrap_err();
        assert!(matches!(err, Error::Server { .. }));
        let err = Vec::<i64>::from_reply(Frame::Array(vec![
            Frame::Integer(1),
            Frame::Error(Bytes::from_static(b"WRONGTYPE x")),
        ]))
        .unwrap_err();
        assert!(matches!(err, Error::Server { .. }));
    }

    #[test]
    fn maps_from_both_shapes() {
        let resp2 = Frame::Array(vec![bulk("a"), bulk("1"), bulk("b"), bulk("2")]);
        let resp3 = Frame::Map(vec![
            (bulk("a"), Frame::Integer(1)),
            (bulk("b"), Frame::Integer(2)),
        ]);
        let m2: HashMap<String, i64> = FromReply::from_reply(resp2).unwrap();
        let m3: HashMap<String, i64> = FromReply::from_reply(resp3).unwrap();
        assert_eq!(m2, m3);
        let nested = Frame::Array(vec![
            Frame::Array(vec![bulk("m"), Frame::Double(1.0)]),
            Frame::Array(vec![bulk("n"), Frame::Double(2.0)]),
        ]);
        let p: Vec<(String, f64)> = pairs(nested).unwrap();
        assert_eq!(p, vec![("m".into(), 1.0), ("n".into(), 2.0)]);
        assert!(pairs::<String, String>(Frame::Array(vec![bulk("odd")])).is_err());
    }

    #[test]
    fn tuples() {
        let t: (i64, Option<String>, ()) = FromReply::from_reply(Frame::Array(vec![
            Frame::Integer(1),
            Frame::NullBulk,
            Frame::Simple(Bytes::from_static(b"OK")),
        ]))
        .unwrap();
        assert_eq!(t, (1, None, ()));
        assert!(<(i64, i64)>::from_reply(Frame::Array(vec![Frame::Integer(1)])).is_err());
    }
}
