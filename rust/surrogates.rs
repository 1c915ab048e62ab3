//! Surrogates, in one place: what a high and a low one are, and the character a pair makes.
//!
//! A host that slices its text by UTF-16 units (JavaScript servers) can send an emoji as
//! `"\ud83d"` in one delta and `"\ude00"` in the next. Each half parses alone to a lone
//! surrogate; the JSON accumulator and the fold's text ([`crate::text_bytes`]) make such a
//! pair one character again.
//!
//! Nothing here depends on Python.

/// A UTF-16 high (leading) surrogate.
pub fn is_high(unit: u32) -> bool {
    unit & !0x3FF == 0xD800
}

/// A UTF-16 low (trailing) surrogate.
pub fn is_low(unit: u32) -> bool {
    unit & !0x3FF == 0xDC00
}

/// The character a high and a low surrogate make together.
pub fn combine(high: u32, low: u32) -> u32 {
    0x1_0000 + ((high - 0xD800) << 10) + (low - 0xDC00)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_makes_its_character() {
        assert!(is_high(0xD83D) && !is_low(0xD83D));
        assert!(is_low(0xDE00) && !is_high(0xDE00));
        assert!(!is_high(0xD7FF) && !is_low(0xE000));
        assert_eq!(combine(0xD83D, 0xDE00), 0x1_F600);
        assert_eq!(combine(0xDBFF, 0xDFFF), 0x10_FFFF);
    }
}
