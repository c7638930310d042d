//! A bounds-checked cursor over RDB bytes: lengths, strings (plain, integer-encoded,
//! LZF-compressed) and doubles, as Redis's `rdbLoadLen`, `rdbGenericLoadStringObject`,
//! `rdbLoadDoubleValue` and `rdbLoadBinaryDoubleValue` read them.
//!
//! Every length read from the input is checked against the bytes that remain before
//! anything is reserved, so a hostile length is an error, never an allocation.

use std::borrow::Cow;

use super::{lzf, Corrupt};

/// A 6-bit length in one byte.
const LEN_6BIT: u8 = 0;
/// A 14-bit length in two bytes.
const LEN_14BIT: u8 = 1;
/// The byte announces a special encoding (integer or LZF string).
const ENCVAL: u8 = 3;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// What a length field holds.
enum Length {
    /// A length.
    Plain(u64),
    /// A special string encoding (`RDB_ENC_*`).
    Encoded(u8),
}

/// A cursor over a byte slice.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    deep: bool,
    /// A read went past the end of `buf` (rather than finding it malformed): for an
    /// image arriving in pieces, the item goes on in bytes not here yet.
    ran_out: bool,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from the start, with every check.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            deep: true,
            ran_out: false,
        }
    }

    /// Whether a read went past the end of the bytes given (see [`Reader::new`]).
    pub fn ran_out(&self) -> bool {
        self.ran_out
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Skips the checks of redundant counts that only Redis's deep sanitization makes
    /// (`sanitize-dump-payload no`): what is read is still checked whole, since the
    /// value is rebuilt from it, never kept as the encoded bytes.
    pub fn shallow(mut self) -> Self {
        self.deep = false;
        self
    }

    /// Whether the deep checks apply.
    pub fn deep(&self) -> bool {
        self.deep
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// One byte.
    pub fn byte(&mut self) -> Result<u8, Corrupt> {
        let Some(&b) = self.buf.get(self.pos) else {
            self.ran_out = true;
            return Err(Corrupt("truncated"));
        };
        self.pos += 1;
        Ok(b)
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if n > self.remaining() {
            self.ran_out = true;
            return Err(Corrupt("truncated"));
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn length(&mut self) -> Result<Length, Corrupt> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            LEN_6BIT => Length::Plain(u64::from(first & 0x3f)),
            LEN_14BIT => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(self.byte()?)),
            ENCVAL => Length::Encoded(first & 0x3f),
            _ => match first {
                LEN_32BIT => Length::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                LEN_64BIT => Length::Plain(u64::from_be_bytes(self.array()?)),
                _ => return Err(Corrupt("unknown length encoding")),
            },
        })
    }

    /// A length (`rdbLoadLen`); like Redis, an encoded-value byte in this place reads as
    /// its low six bits.
    pub fn count(&mut self) -> Result<u64, Corrupt> {
        Ok(match self.length()? {
            Length::Plain(n) => n,
            Length::Encoded(n) => u64::from(n),
        })
    }

    /// A length that must fit in the bytes left (each counted thing takes at least one).
    fn bounded_len(&mut self) -> Result<usize, Corrupt> {
        let n = self.count()?;
        self.fit(n)
    }

    /// `n` as a size, if that many bytes remain.
    fn fit(&mut self, n: u64) -> Result<usize, Corrupt> {
        let fits = usize::try_from(n).ok().filter(|&n| n <= self.remaining());
        if fits.is_none() {
            self.ran_out = true;
        }
        fits.ok_or(Corrupt("length beyond the payload"))
    }

    /// A string, decoded: integer encodings become their decimal text, LZF is
    /// decompressed.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, Corrupt> {
        match self.length()? {
            Length::Plain(n) => {
                let n = self.fit(n)?;
                Ok(Cow::Borrowed(self.take(n)?))
            }
            Length::Encoded(ENC_INT8) => Ok(decimal(i64::from(i8::from_le_bytes(self.array()?)))),
            Length::Encoded(ENC_INT16) => Ok(decimal(i64::from(i16::from_le_bytes(self.array()?)))),
            Length::Encoded(ENC_INT32) => Ok(decimal(i64::from(i32::from_le_bytes(self.array()?)))),
            Length::Encoded(ENC_LZF) => {
                let compressed_len = self.bounded_len()?;
                let len = usize::try_from(self.count()?).map_err(|_| Corrupt("LZF length"))?;
                let compressed = self.take(compressed_len)?;
                lzf::decompress(compressed, len)
                    .map(Cow::Owned)
                    .ok_or(Corrupt("invalid LZF compressed string"))
            }
            Length::Encoded(_) => Err(Corrupt("unknown string encoding")),
        }
    }

    /// A score as `rdbLoadDoubleValue` reads it: a length byte (253 NaN, 254 +inf,
    /// 255 -inf) then that many characters of decimal text.
    pub fn text_double(&mut self) -> Result<f64, Corrupt> {
        match self.byte()? {
            255 => Ok(f64::NEG_INFINITY),
            254 => Ok(f64::INFINITY),
            253 => Ok(f64::NAN),
            n => parse_double(self.take(usize::from(n))?).ok_or(Corrupt("bad double text")),
        }
    }

    /// A score as `rdbLoadBinaryDoubleValue` reads it: 8 bytes, IEEE 754 little endian.
    pub fn binary_double(&mut self) -> Result<f64, Corrupt> {
        Ok(f64::from_le_bytes(self.array()?))
    }
}

fn decimal(n: i64) -> Cow<'static, [u8]> {
    Cow::Owned(itoa::Buffer::new().format(n).as_bytes().to_vec())
}

/// A double as C's `strtod` reads the start of `text`: leading spaces skipped, then the
/// longest prefix that is a number; `None` when no prefix is one. Trailing bytes are
/// ignored, as C ignores them.
pub fn parse_double(text: &[u8]) -> Option<f64> {
    let read = crate::cmd::float::strtod(text);
    (read.len > 0).then_some(read.value)
}

#[cfg(test)]
mod tests {
    use super::parse_double;

    #[test]
    fn strtod_prefixes() {
        let cases: [(&[u8], Option<f64>); 14] = [
            (b"1.5", Some(1.5)),
            (b"  -2", Some(-2.0)),
            (b"3abc", Some(3.0)),
            (b"1e5x", Some(1e5)),
            (b"1e", Some(1.0)),
            (b"1.", Some(1.0)),
            (b".5", Some(0.5)),
            (b"-inf", Some(f64::NEG_INFINITY)),
            (b"Infinity", Some(f64::INFINITY)),
            (b"+inf", Some(f64::INFINITY)),
            (b"1e400", Some(f64::INFINITY)),
            (b"(inf", None),
            (b".", None),
            (b"", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_double(text),
                want,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        assert!(parse_double(b"nan").is_some_and(f64::is_nan));
    }
}
