//! Surrogates, in one place: what a high and a low one are, the character a pair makes, and
//! finding a character cut in two (a high surrogate directly followed by a low one) in the
//! code units of a Python `str` (2 or 4 bytes each).
//!
//! A host that slices its text by UTF-16 units (JavaScript servers) can send an emoji as
//! `"\ud83d"` in one delta and `"\ude00"` in the next. Each half parses alone to a lone
//! surrogate, and the fold's joined text then holds the two halves side by side, a `str` that
//! `encode()` refuses. The fold asks this module whether that happened before it repairs the
//! text: nearly all text has no surrogate at all, and a first pass that only looks for a high
//! one runs branch-free over blocks of units, which the compiler vectorises.
//!
//! Nothing here depends on Python.

/// Units looked at per block of the first pass.
const BLOCK: usize = 64;

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

/// Whether some high surrogate in `units` is directly followed by a low one.
pub fn has_split_pair<T: Copy + Into<u32>>(units: &[T]) -> bool {
    let any_high = units.chunks(BLOCK).any(|block| {
        block
            .iter()
            .fold(false, |seen, &u| seen | is_high(u.into()))
    });
    any_high
        && units
            .windows(2)
            .any(|pair| is_high(pair[0].into()) && is_low(pair[1].into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The obvious reading: every adjacent pair of units, one by one.
    fn reference(units: &[u32]) -> bool {
        (1..units.len()).any(|i| {
            (0xD800..=0xDBFF).contains(&units[i - 1]) && (0xDC00..=0xDFFF).contains(&units[i])
        })
    }

    #[test]
    fn finds_a_pair_only_in_its_order() {
        assert!(has_split_pair(&[0x61_u16, 0xD83D, 0xDE00]));
        assert!(!has_split_pair(&[0xDE00_u16, 0xD83D]));
        assert!(!has_split_pair(&[0xD83D_u16]));
        assert!(!has_split_pair(&[0xD83D_u32, 0x61, 0xDE00]));
        assert!(!has_split_pair::<u16>(&[]));
        assert!(!has_split_pair(&[0xD7FF_u32, 0xE000, 0x1_F600]));
        assert!(has_split_pair(&[0xDBFF_u32, 0xDC00]));
    }

    #[test]
    fn a_pair_across_two_blocks_is_found() {
        let mut units = vec![0x61_u32; 2 * BLOCK];
        units[BLOCK - 1] = 0xD83D;
        units[BLOCK] = 0xDE00;
        assert!(has_split_pair(&units));
    }

    fn unit() -> impl Strategy<Value = u32> {
        prop_oneof![
            0x20_u32..0x80,
            0xD7F0_u32..0xE010,
            Just(0xD83D_u32),
            Just(0xDE00_u32),
            0x1_F600_u32..0x1_F610,
        ]
    }

    proptest! {
        #[test]
        fn agrees_with_the_reference(units in proptest::collection::vec(unit(), 0..300)) {
            prop_assert_eq!(has_split_pair(&units), reference(&units));
            let narrow: Vec<u16> = units.iter().filter_map(|&u| u16::try_from(u).ok()).collect();
            let wide: Vec<u32> = narrow.iter().map(|&u| u32::from(u)).collect();
            prop_assert_eq!(has_split_pair(&narrow), reference(&wide));
        }
    }
}
