//! UTF-8 text laid out the way CPython stores a `str`: one code unit per character, each unit
//! as wide as the widest character needs (1, 2 or 4 bytes).
//!
//! CPython's own decoder does not know that width in advance: it starts narrow, widens and
//! copies when a wider character turns up, and shrinks the buffer at the end. Mixed text (an
//! accent here, an emoji there) pays for each of those steps. Knowing the width and length
//! first, from one pass that is only compares and adds, lets the binding allocate the `str`
//! once at its final size and fill it in a second pass. Nothing here depends on Python.

/// The code unit width of a Python `str` (PEP 393).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// Every character is ASCII: the UTF-8 bytes are the code units.
    Ascii,
    /// One byte per character, some of them in U+0080..=U+00FF.
    Latin1,
    /// Two bytes per character: the widest is in U+0100..=U+FFFF.
    Ucs2,
    /// Four bytes per character: some character is beyond U+FFFF.
    Ucs4,
}

impl Width {
    /// The largest code point of this width, as `PyUnicode_New` takes it.
    pub fn max_char(self) -> u32 {
        match self {
            Width::Ascii => 0x7F,
            Width::Latin1 => 0xFF,
            Width::Ucs2 => 0xFFFF,
            Width::Ucs4 => 0x10_FFFF,
        }
    }
}

/// How many characters `text` holds and how wide its widest one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub chars: usize,
    pub width: Width,
}

/// The shape of valid UTF-8 text.
///
/// The lead byte alone tells a character's width: C2 and C3 start U+0080..=U+00FF, C4..=DF
/// and the three-byte leads E0..=EF start characters up to U+FFFF, F0..=F4 start those beyond.
/// So the largest byte gives the width, and the characters are the bytes that are not
/// continuation bytes (10xxxxxx). Both are plain loops the compiler vectorises.
pub fn shape(text: &str) -> Shape {
    let bytes = text.as_bytes();
    let mut continuation = 0usize;
    let mut max = 0u8;
    // Blocks of 255 keep the per-block count in a `u8` lane: wide counters halve the vector.
    for block in bytes.chunks(255) {
        let mut count = 0u8;
        for &b in block {
            count += u8::from((b & 0xC0) == 0x80);
            max = max.max(b);
        }
        continuation += usize::from(count);
    }
    let width = match max {
        0..=0x7F => Width::Ascii,
        0x80..=0xC3 => Width::Latin1,
        0xC4..=0xEF => Width::Ucs2,
        _ => Width::Ucs4,
    };
    Shape {
        chars: bytes.len() - continuation,
        width,
    }
}

/// A code unit type of a Python `str`.
pub trait CodeUnit: Copy {
    /// `code_point` fits this unit: the caller picked the unit from the text's [`shape`].
    fn from_code_point(code_point: u32) -> Self;
    fn from_ascii(byte: u8) -> Self;
}

macro_rules! code_unit {
    ($($t:ty),*) => {$(
        impl CodeUnit for $t {
            #[inline]
            #[allow(clippy::cast_possible_truncation)] // the shape guarantees it fits
            fn from_code_point(code_point: u32) -> Self {
                code_point as $t
            }
            #[inline]
            fn from_ascii(byte: u8) -> Self {
                <$t>::from(byte)
            }
        }
    )*};
}
code_unit!(u8, u16, u32);

const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Write the characters of valid UTF-8 `text` into `out`, one unit each.
///
/// `out` must hold exactly `shape(text).chars` units of a type at least as wide as
/// `shape(text).width`; a unit too narrow would truncate characters, and the function panics
/// if `out` is too short. Runs of ASCII, most of any model's output, go eight bytes at a time.
pub fn decode_into<T: CodeUnit>(text: &str, out: &mut [T]) {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut o = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let word: [u8; 8] = word.try_into().unwrap_or([0x80; 8]);
            if u64::from_ne_bytes(word) & HIGH_BITS == 0 {
                for (dst, &b) in out[o..o + 8].iter_mut().zip(&word) {
                    *dst = T::from_ascii(b);
                }
                i += 8;
                o += 8;
                continue;
            }
        }
        let lead = bytes[i];
        let (code_point, len) = match lead {
            0..=0x7F => (u32::from(lead), 1),
            0xC0..=0xDF => (
                (u32::from(lead & 0x1F) << 6) | u32::from(bytes[i + 1] & 0x3F),
                2,
            ),
            0xE0..=0xEF => (
                (u32::from(lead & 0x0F) << 12)
                    | (u32::from(bytes[i + 1] & 0x3F) << 6)
                    | u32::from(bytes[i + 2] & 0x3F),
                3,
            ),
            _ => (
                (u32::from(lead & 0x07) << 18)
                    | (u32::from(bytes[i + 1] & 0x3F) << 12)
                    | (u32::from(bytes[i + 2] & 0x3F) << 6)
                    | u32::from(bytes[i + 3] & 0x3F),
                4,
            ),
        };
        out[o] = T::from_code_point(code_point);
        i += len;
        o += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn widen<T: CodeUnit + Default>(text: &str) -> Vec<T> {
        let mut out = vec![T::default(); shape(text).chars];
        decode_into(text, &mut out);
        out
    }

    #[test]
    fn widths_follow_the_widest_character() {
        let cases = [
            ("", Width::Ascii, 0),
            ("plain ascii", Width::Ascii, 11),
            ("\u{7f}", Width::Ascii, 1),
            ("caf\u{e9}", Width::Latin1, 4),
            ("\u{80}", Width::Latin1, 1),
            ("\u{ff}", Width::Latin1, 1),
            ("\u{100}", Width::Ucs2, 1),
            ("\u{3a9}mega", Width::Ucs2, 5),
            ("\u{65e5}\u{672c}", Width::Ucs2, 2),
            ("\u{ffff}", Width::Ucs2, 1),
            ("\u{10000}", Width::Ucs4, 1),
            ("ok \u{1f642}", Width::Ucs4, 4),
            ("\u{10ffff}", Width::Ucs4, 1),
        ];
        for (text, width, chars) in cases {
            assert_eq!(shape(text), Shape { chars, width }, "{text:?}");
        }
    }

    #[test]
    fn long_text_counts_past_one_block() {
        let text = "\u{e9}".repeat(1000) + &"a".repeat(300);
        assert_eq!(shape(&text).chars, 1300);
    }

    #[test]
    fn decodes_every_width() {
        let text = "a\u{e9}\u{3a9}\u{1f642} ascii run of more than eight bytes \u{65e5}";
        let expected: Vec<u32> = text.chars().map(u32::from).collect();
        assert_eq!(widen::<u32>(text), expected);
        let bmp = "ascii run of more than eight \u{e9}\u{3a9}\u{65e5}";
        let expected: Vec<u16> = bmp
            .chars()
            .map(|c| u16::try_from(u32::from(c)).unwrap())
            .collect();
        assert_eq!(widen::<u16>(bmp), expected);
        let latin = "caf\u{e9} na\u{ef}ve \u{ff}\u{80}";
        let expected: Vec<u8> = latin
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap())
            .collect();
        assert_eq!(widen::<u8>(latin), expected);
    }

    proptest! {
        #[test]
        fn matches_chars(text in "\\PC*|[a-z\u{e0}-\u{ff}]*|[ -~\u{100}-\u{3ff}\u{10000}-\u{10100}]*") {
            let chars: Vec<u32> = text.chars().map(u32::from).collect();
            let s = shape(&text);
            prop_assert_eq!(s.chars, chars.len());
            let max = chars.iter().copied().max().unwrap_or(0);
            prop_assert!(max <= s.width.max_char());
            // The width is the narrowest that fits: CPython requires that of every `str`.
            let narrower = match s.width {
                Width::Ascii => None,
                Width::Latin1 => Some(0x7F),
                Width::Ucs2 => Some(0xFF),
                Width::Ucs4 => Some(0xFFFF),
            };
            prop_assert!(narrower.is_none_or(|n| max > n));
            prop_assert_eq!(widen::<u32>(&text), chars);
        }
    }
}
