//! A text block's text while it is folded: its fragments appended as bytes, and made one
//! string only when the message is built.
//!
//! Kept as Python `str` pieces, a fragment of a few characters costs some fifty bytes of object
//! header for each one, and a long answer's pieces outweigh its text many times over while the
//! stream is open. Here it costs its UTF-8 bytes.
//!
//! Python text may hold lone surrogates: a host that cuts its text by UTF-16 units (JavaScript
//! servers) sends an emoji as `"\ud83d"` in one delta and `"\ude00"` in the next, and each
//! parses alone to a lone surrogate. They are stored as Python's `surrogatepass` codec writes
//! them (`ED A0..BF xx`, three bytes), so the bytes are UTF-8 but for them. When the text is
//! read ([`TextBytes::joined`]), a high surrogate directly followed by a low one becomes the
//! character they make, as the fold's joined text always did; a lone one stays as it came.
//!
//! Nothing here depends on Python.

use std::borrow::Cow;

use crate::surrogates::{combine, is_high, is_low};

/// The bytes of a block's text so far.
#[derive(Debug, Default)]
pub struct TextBytes {
    bytes: Vec<u8>,
    /// Some fragment held a surrogate: [`TextBytes::joined`] must look for pairs.
    surrogates: bool,
}

/// What [`TextBytes::joined`] gives: UTF-8, or UTF-8 with lone surrogates in it.
#[derive(Debug, PartialEq, Eq)]
pub enum Joined<'a> {
    Utf8(Cow<'a, str>),
    /// Bytes that are UTF-8 but for lone surrogates, each as `surrogatepass` writes it.
    WithSurrogates(Cow<'a, [u8]>),
}

impl TextBytes {
    pub fn new() -> Self {
        TextBytes::default()
    }

    /// Append a fragment.
    pub fn push_str(&mut self, text: &str) {
        self.bytes.extend_from_slice(text.as_bytes());
    }

    /// Append a fragment of ASCII bytes; `false` (nothing appended) if they are not ASCII.
    pub fn push_ascii(&mut self, bytes: &[u8]) -> bool {
        let ascii = bytes.is_ascii();
        if ascii {
            self.bytes.extend_from_slice(bytes);
        }
        ascii
    }

    /// Append a fragment that holds surrogates, in `surrogatepass` bytes.
    pub fn push_with_surrogates(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.surrogates = true;
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes held (the text's UTF-8 length).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// All of the text, each split pair made one character again.
    pub fn joined(&self) -> Joined<'_> {
        if !self.surrogates {
            // SAFETY: without surrogates, only `push_str`'s `&str`s and `push_ascii`'s ASCII
            // were appended.
            return Joined::Utf8(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(&self.bytes)
            }));
        }
        match pair_surrogates(&self.bytes) {
            Cow::Borrowed(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => Joined::Utf8(Cow::Borrowed(text)),
                Err(_) => Joined::WithSurrogates(Cow::Borrowed(bytes)),
            },
            Cow::Owned(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Joined::Utf8(Cow::Owned(text)),
                Err(e) => Joined::WithSurrogates(Cow::Owned(e.into_bytes())),
            },
        }
    }
}

/// The surrogate a 3-byte `surrogatepass` sequence at the start of `bytes` encodes.
fn surrogate_at(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [0xED, b1 @ 0xA0..=0xBF, b2 @ 0x80..=0xBF, ..] => {
            Some(0xD000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F))
        }
        _ => None,
    }
}

/// `bytes` with every high surrogate directly followed by a low one written as the 4-byte
/// UTF-8 of the character they make. A UTF-8 lead byte `ED` followed by `A0..BF` is never a
/// character of valid UTF-8, and `ED` is never a continuation byte, so a byte-wise scan for
/// it finds exactly the surrogates.
fn pair_surrogates(bytes: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(found) = memchr::memchr(0xED, &bytes[i..]) {
        let at = i + found;
        let pair = surrogate_at(&bytes[at..])
            .filter(|&high| is_high(high))
            .zip(bytes.get(at + 3..).and_then(surrogate_at))
            .filter(|&(_, low)| is_low(low));
        let Some((high, low)) = pair else {
            i = at + 1;
            continue;
        };
        let joined = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
        joined.extend_from_slice(&bytes[copied..at]);
        let character = char::from_u32(combine(high, low)).unwrap_or(char::REPLACEMENT_CHARACTER);
        let mut buffer = [0; 4];
        joined.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
        i = at + 6;
        copied = i;
    }
    match out {
        None => Cow::Borrowed(bytes),
        Some(mut joined) => {
            joined.extend_from_slice(&bytes[copied..]);
            Cow::Owned(joined)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `surrogatepass` UTF-8 of a sequence of code points (surrogates included), as Python's
    /// `"".join(map(chr, points)).encode("utf-8", "surrogatepass")` gives.
    fn generalized(points: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &p in points {
            if let Some(c) = char::from_u32(p) {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            } else {
                // A surrogate, U+D800..U+DFFF: three bytes, each of them below 256.
                let byte = |bits: u32| u8::try_from(bits).expect("a byte");
                out.extend_from_slice(&[
                    byte(0xE0 | (p >> 12)),
                    byte(0x80 | ((p >> 6) & 0x3F)),
                    byte(0x80 | (p & 0x3F)),
                ]);
            }
        }
        out
    }

    /// The obvious reading: code points in, each high-then-low pair combined, as the fold's
    /// UTF-16 round trip (`encode("utf-16-le", "surrogatepass")` and back) does.
    fn reference(points: &[u32]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut k = 0;
        while k < points.len() {
            if k + 1 < points.len() && is_high(points[k]) && is_low(points[k + 1]) {
                out.push(combine(points[k], points[k + 1]));
                k += 2;
            } else {
                out.push(points[k]);
                k += 1;
            }
        }
        out
    }

    fn bytes_of(joined: &Joined<'_>) -> Vec<u8> {
        match joined {
            Joined::Utf8(text) => text.as_bytes().to_vec(),
            Joined::WithSurrogates(bytes) => bytes.to_vec(),
        }
    }

    #[test]
    fn plain_text_is_its_fragments_in_order() {
        let mut text = TextBytes::new();
        assert!(text.is_empty());
        assert!(text.push_ascii(b"Hello"));
        assert!(!text.push_ascii("é".as_bytes()));
        text.push_str(", wörld 🎉");
        assert_eq!(text.joined(), Joined::Utf8("Hello, wörld 🎉".into()));
        assert_eq!(text.len(), "Hello, wörld 🎉".len());
    }

    #[test]
    fn a_pair_split_across_fragments_is_one_character() {
        let mut text = TextBytes::new();
        text.push_str("a");
        text.push_with_surrogates(&generalized(&[0xD83D]));
        text.push_with_surrogates(&generalized(&[0xDE00]));
        text.push_str("b");
        assert_eq!(text.joined(), Joined::Utf8("a😀b".into()));
    }

    #[test]
    fn a_lone_surrogate_stays() {
        let mut text = TextBytes::new();
        text.push_with_surrogates(&generalized(&[0xDE00, 0xD83D]));
        assert_eq!(
            text.joined(),
            Joined::WithSurrogates(Cow::Owned(generalized(&[0xDE00, 0xD83D])))
        );
        let mut text = TextBytes::new();
        text.push_with_surrogates(&generalized(&[0xD83D, 0x61]));
        assert_eq!(bytes_of(&text.joined()), generalized(&[0xD83D, 0x61]));
    }

    fn point() -> impl Strategy<Value = u32> {
        prop_oneof![
            0x20_u32..0x80,
            0x80_u32..0x800,
            0xD7F0_u32..0xE010,
            Just(0xD83D_u32),
            Just(0xDE00_u32),
            0x1_F600_u32..0x1_F610,
        ]
    }

    proptest! {
        #[test]
        fn joined_is_the_utf16_round_trip(
            fragments in proptest::collection::vec(proptest::collection::vec(point(), 0..6), 0..8)
        ) {
            let mut text = TextBytes::new();
            let mut all = Vec::new();
            for fragment in &fragments {
                let bytes = generalized(fragment);
                match std::str::from_utf8(&bytes) {
                    Ok(s) => text.push_str(s),
                    Err(_) => text.push_with_surrogates(&bytes),
                }
                all.extend_from_slice(fragment);
            }
            prop_assert_eq!(bytes_of(&text.joined()), generalized(&reference(&all)));
            let lone = reference(&all).iter().any(|&p| (0xD800..0xE000).contains(&p));
            prop_assert_eq!(matches!(text.joined(), Joined::WithSurrogates(_)), lone);
        }
    }
}
