//! UTF-8 text laid out the way `CPython` stores a `str`: one code unit per character, each unit
//! as wide as the widest character needs (1, 2 or 4 bytes).
//!
//! `CPython`'s own decoder does not know that width in advance: it starts narrow, widens and
//! copies when a wider character turns up, and shrinks the buffer at the end. Mixed text (an
//! accent here, an emoji there) pays for each of those steps. Knowing the width and length
//! first lets the binding allocate the `str` once at its final size and fill it in one more
//! pass, so the work is two passes over the bytes, both mostly 16 bytes at a time:
//!
//! - [`shape`] counts characters and finds the widest one; it only compares and adds, in
//!   fixed-size blocks the compiler turns into vector instructions (SSE2 is enough).
//! - [`decode_into`] validates and writes: runs of ASCII are widened 16 bytes at a time, other
//!   characters are checked and decoded one by one. Invalid UTF-8 is reported, not repaired:
//!   the caller then takes the rare lossy path.
//!
//! Nothing here depends on Python.

use std::mem::MaybeUninit;

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

/// How many characters the text holds and how wide its widest one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub chars: usize,
    pub width: Width,
}

/// Bytes per block of the vector loops: one SSE2 register.
const BLOCK: usize = 16;

/// The shape of UTF-8 `bytes`: exact when they are valid UTF-8.
///
/// The lead byte alone tells a character's width: C2 and C3 start U+0080..=U+00FF, C4..=DF
/// and the three-byte leads E0..=EF start characters up to U+FFFF, F0..=F4 start those beyond.
/// So the largest byte gives the width, and the characters are the bytes that are not
/// continuation bytes (10xxxxxx).
///
/// Invalid bytes give some shape; [`decode_into`] then reports them. Its checks do not rely
/// on this shape: whatever the bytes, it writes no more units than `chars` (each unit it
/// writes has a lead byte of its own) and refuses a character wider than the unit.
pub fn shape(bytes: &[u8]) -> Shape {
    let (continuation, max) = scan(bytes);
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

/// How many continuation bytes `bytes` holds, and its largest byte: with SSE2, part of every
/// x86-64 CPU, 16 bytes in four instructions.
///
/// Left to itself the compiler vectorises the portable loop ([`scan_portable`]) with 16-bit
/// counters, or, written with fixed-size blocks, across the blocks with byte gathers (several
/// times slower than `CPython`'s whole decoder); the intrinsics say what is meant.
#[cfg(target_arch = "x86_64")]
fn scan(bytes: &[u8]) -> (usize, u8) {
    #[allow(clippy::wildcard_imports)]
    use std::arch::x86_64::*;

    /// Lanes `16 - n..16` of the 16 bytes at `n` are 0xFF, the others 0: they pick the last
    /// `n` bytes of a block.
    static LAST: [u8; 2 * BLOCK] = {
        let mut lanes = [0u8; 2 * BLOCK];
        let mut k = BLOCK;
        while k < 2 * BLOCK {
            lanes[k] = 0xFF;
            k += 1;
        }
        lanes
    };

    let Some((first, _)) = bytes.split_first_chunk::<BLOCK>() else {
        return scan_portable(bytes);
    };
    let mut continuation = 0;
    // SAFETY: SSE2 is part of the x86-64 baseline, so every intrinsic here is available (the
    // `unsafe` is needed for the unaligned loads, and for all of them before Rust 1.87). Each
    // load reads the 16 bytes of a `&[u8; 16]`.
    #[allow(unused_unsafe)]
    unsafe {
        let load = |block: &[u8; BLOCK]| _mm_loadu_si128(block.as_ptr().cast());
        // A continuation byte (0x80..=0xBF) is an `i8` below -64.
        let below = _mm_set1_epi8(-0x40);
        let mut max = load(first);
        let mut tail = bytes;
        while tail.len() >= BLOCK {
            // Per-lane counts in bytes, subtracting the compare's -1s: at most 255 blocks
            // before they are summed (`psadbw`), so they cannot overflow.
            let mut counts = _mm_setzero_si128();
            for _ in 0..255 {
                let Some((block, rest)) = tail.split_first_chunk::<BLOCK>() else {
                    break;
                };
                let v = load(block);
                counts = _mm_sub_epi8(counts, _mm_cmpgt_epi8(below, v));
                max = _mm_max_epu8(max, v);
                tail = rest;
            }
            let sums = _mm_sad_epu8(counts, _mm_setzero_si128());
            continuation += lane_sum(sums);
        }
        // The last 1..=15 bytes: the block that ends them, counting only its last lanes.
        if let (n @ 1.., Some(last)) = (tail.len(), bytes.last_chunk::<BLOCK>()) {
            let v = load(last);
            let fresh = load(LAST[n..n + BLOCK].first_chunk().unwrap_or(&[0; BLOCK]));
            let counts = _mm_and_si128(_mm_cmpgt_epi8(below, v), fresh);
            let counts = _mm_sub_epi8(_mm_setzero_si128(), counts);
            continuation += lane_sum(_mm_sad_epu8(counts, _mm_setzero_si128()));
            max = _mm_max_epu8(max, v);
        }
        // The largest of the 16 lanes: fold halves onto each other.
        max = _mm_max_epu8(max, _mm_srli_si128::<8>(max));
        max = _mm_max_epu8(max, _mm_srli_si128::<4>(max));
        max = _mm_max_epu8(max, _mm_srli_si128::<2>(max));
        max = _mm_max_epu8(max, _mm_srli_si128::<1>(max));
        let max = _mm_cvtsi128_si32(max).to_le_bytes()[0];
        (continuation, max)
    }
}

/// The two 64-bit sums `psadbw` leaves, added (each is at most 8 * 255).
#[cfg(target_arch = "x86_64")]
#[inline]
fn lane_sum(sums: std::arch::x86_64::__m128i) -> usize {
    let mut lanes = [0u64; 2];
    // SAFETY: a 16-byte store into the 16 bytes of `lanes`; SSE2 is in the x86-64 baseline.
    unsafe { std::arch::x86_64::_mm_storeu_si128(lanes.as_mut_ptr().cast(), sums) };
    usize::try_from(lanes[0] + lanes[1]).unwrap_or(usize::MAX)
}

#[cfg(not(target_arch = "x86_64"))]
fn scan(bytes: &[u8]) -> (usize, u8) {
    scan_portable(bytes)
}

/// [`scan`] as plain loops, for short text and other CPUs.
fn scan_portable(bytes: &[u8]) -> (usize, u8) {
    let mut continuation = 0;
    let mut max = 0;
    // 16-bit counters (the scalar loop's, and the vector lanes' when vectorised) for at most
    // 65535 bytes at a time.
    for group in bytes.chunks(usize::from(u16::MAX)) {
        let mut count = 0u16;
        for &b in group {
            count += u16::from(is_continuation(b));
            max = max.max(b);
        }
        continuation += usize::from(count);
    }
    (continuation, max)
}

/// 10xxxxxx, as one signed compare (0x80..=0xBF are the `i8`s below -64).
#[inline]
fn is_continuation(b: u8) -> bool {
    i8::from_ne_bytes([b]) < -0x40
}

/// A code unit type of a Python `str`.
pub trait CodeUnit: Copy {
    /// The largest code point one unit holds.
    const MAX: u32;
    /// The unit of `code_point`, which is at most [`Self::MAX`].
    fn from_code_point(code_point: u32) -> Self;
    fn from_byte(byte: u8) -> Self;
}

macro_rules! code_unit {
    ($($t:ty),*) => {$(
        impl CodeUnit for $t {
            const MAX: u32 = <$t>::MAX as u32;
            #[inline]
            #[allow(clippy::cast_possible_truncation)] // the caller checked `MAX`
            fn from_code_point(code_point: u32) -> Self {
                code_point as $t
            }
            #[inline]
            fn from_byte(byte: u8) -> Self {
                <$t>::from(byte)
            }
        }
    )*};
}
code_unit!(u8, u16, u32);

/// The bytes are not valid UTF-8, or their characters do not fit the output: a unit too
/// narrow for one of them, or not exactly one unit per character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// Write the characters of UTF-8 `bytes` into `out`, one unit each, validating as it goes.
///
/// `Ok` means the bytes are valid UTF-8 (exactly as [`std::str::from_utf8`] judges) and `out`
/// now holds their characters, every unit of it written. `out` should hold
/// [`shape`]`(bytes).chars` units of a type at least as wide as its width; anything else is
/// an [`Invalid`], as are invalid bytes. After an error `out` is partly written.
///
/// Runs of ASCII go 16 bytes at a time (8 near the end): the whole block is widened into
/// `out` and both move on by its ASCII prefix only. The units written past that prefix are
/// written again later, since every unit of `out` is (that is what `Ok` checks).
pub fn decode_into<T: CodeUnit>(bytes: &[u8], out: &mut [MaybeUninit<T>]) -> Result<(), Invalid> {
    let mut src = bytes;
    let mut dst = out;
    loop {
        // Blocks, then halves: widen them all, stop at the first byte that is not ASCII.
        let non_ascii = loop {
            if let (Some((block, src_rest)), Some(units)) =
                (src.split_first_chunk::<BLOCK>(), dst.first_chunk_mut())
            {
                widen(block, units);
                if let Some(ascii) = first_non_ascii(block) {
                    break ascii;
                }
                // All ASCII: on by a constant, so that the next block's loads need not wait
                // for this one's bytes (as they would for a step computed from them).
                src = src_rest;
                dst = std::mem::take(&mut dst)
                    .get_mut(BLOCK..)
                    .unwrap_or_default();
            } else if let (Some((half, src_rest)), Some(units)) =
                (src.split_first_chunk::<8>(), dst.first_chunk_mut())
            {
                widen(half, units);
                if let Some(ascii) = first_non_ascii_8(*half) {
                    break ascii;
                }
                src = src_rest;
                dst = std::mem::take(&mut dst).get_mut(8..).unwrap_or_default();
            } else {
                break 0;
            }
        };
        (src, dst) = advance(src, std::mem::take(&mut dst), non_ascii);
        // One character: not ASCII, or one of the last few bytes.
        let Some(&lead) = src.first() else { break };
        let (code_point, len) = if lead < 0x80 {
            (u32::from(lead), 1)
        } else {
            decode_char(src).ok_or(Invalid)?
        };
        if code_point > T::MAX {
            return Err(Invalid);
        }
        let Some((unit, rest)) = std::mem::take(&mut dst).split_first_mut() else {
            return Err(Invalid);
        };
        unit.write(T::from_code_point(code_point));
        dst = rest;
        src = src.get(len..).unwrap_or_default();
    }
    if dst.is_empty() {
        Ok(())
    } else {
        Err(Invalid)
    }
}

/// Both, past their first `n` bytes and units (no more than either has).
#[inline]
fn advance<'s, 'd, T>(
    src: &'s [u8],
    dst: &'d mut [MaybeUninit<T>],
    n: usize,
) -> (&'s [u8], &'d mut [MaybeUninit<T>]) {
    (
        src.get(n..).unwrap_or_default(),
        dst.get_mut(n..).unwrap_or_default(),
    )
}

/// Each byte of `block` as a unit: the compiler makes this a copy or SSE2 unpacks.
#[inline]
fn widen<T: CodeUnit, const N: usize>(block: &[u8; N], units: &mut [MaybeUninit<T>; N]) {
    for (unit, &b) in units.iter_mut().zip(block) {
        unit.write(T::from_byte(b));
    }
}

/// Where the first byte of `block` that is not ASCII is, if any.
#[inline]
fn first_non_ascii(block: &[u8; BLOCK]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `block`.
    #[allow(unused_unsafe)]
    let high: u32 = unsafe {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
        // One bit per byte, its top bit: 16 bits, so the cast is exact.
        #[allow(clippy::cast_sign_loss)]
        let mask = _mm_movemask_epi8(_mm_loadu_si128(block.as_ptr().cast())) as u32;
        mask
    };
    #[cfg(not(target_arch = "x86_64"))]
    let high: u32 = block
        .iter()
        .enumerate()
        .fold(0, |mask, (k, &b)| mask | (u32::from(b >> 7) << k));
    (high != 0).then(|| high.trailing_zeros() as usize)
}

/// Where the first byte of `half` that is not ASCII is, if any.
#[inline]
fn first_non_ascii_8(half: [u8; 8]) -> Option<usize> {
    let high = u64::from_le_bytes(half) & 0x8080_8080_8080_8080;
    (high != 0).then(|| (high.trailing_zeros() / 8) as usize)
}

/// The character that `text` starts with, whose lead byte is not ASCII, and its length in
/// bytes; `None` if it is not valid UTF-8. The second byte's ranges are those of the Unicode
/// standard's table 3-7 (no overlong forms, no surrogates, nothing past U+10FFFF), as
/// [`std::str::from_utf8`] checks them.
#[inline]
fn decode_char(text: &[u8]) -> Option<(u32, usize)> {
    let low6 = |b: u8| u32::from(b & 0x3F);
    match *text {
        [lead @ 0xC2..=0xDF, b1, ..] if is_continuation(b1) => {
            Some(((u32::from(lead & 0x1F) << 6) | low6(b1), 2))
        }
        [lead @ 0xE0..=0xEF, b1, b2, ..] => {
            let second = match lead {
                0xE0 => 0xA0..=0xBF,
                0xED => 0x80..=0x9F,
                _ => 0x80..=0xBF,
            };
            (second.contains(&b1) && is_continuation(b2)).then(|| {
                let c = (u32::from(lead & 0x0F) << 12) | (low6(b1) << 6) | low6(b2);
                (c, 3)
            })
        }
        [lead @ 0xF0..=0xF4, b1, b2, b3, ..] => {
            let second = match lead {
                0xF0 => 0x90..=0xBF,
                0xF4 => 0x80..=0x8F,
                _ => 0x80..=0xBF,
            };
            (second.contains(&b1) && is_continuation(b2) && is_continuation(b3)).then(|| {
                let c =
                    (u32::from(lead & 0x07) << 18) | (low6(b1) << 12) | (low6(b2) << 6) | low6(b3);
                (c, 4)
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `bytes` decoded into units of `T` through [`shape`] and [`decode_into`], as the binding
    /// does it.
    fn units<T: CodeUnit>(bytes: &[u8]) -> Result<Vec<T>, Invalid> {
        let chars = shape(bytes).chars;
        let mut out = Vec::with_capacity(chars);
        decode_into(bytes, &mut out.spare_capacity_mut()[..chars])?;
        // SAFETY: `Ok` means every one of the `chars` units was written.
        unsafe { out.set_len(chars) };
        Ok(out)
    }

    fn code_points(text: &str) -> Vec<u32> {
        text.chars().map(u32::from).collect()
    }

    /// The narrowest width that holds every character: what `CPython` requires of a `str`.
    fn canonical(text: &str) -> Width {
        match text.chars().map(u32::from).max().unwrap_or(0) {
            0..=0x7F => Width::Ascii,
            0x80..=0xFF => Width::Latin1,
            0x100..=0xFFFF => Width::Ucs2,
            _ => Width::Ucs4,
        }
    }

    /// Everything the binding relies on, for any bytes: valid UTF-8 has its exact shape and
    /// decodes, into the canonical width and any wider one, to its characters; a narrower unit
    /// is refused; invalid UTF-8 is refused at every width, and its lossy repair (the
    /// binding's fallback) decodes to the repaired characters.
    fn check(bytes: &[u8]) {
        assert_eq!(scan(bytes), scan_portable(bytes), "{bytes:x?}");
        let widths = [Width::Ascii, Width::Latin1, Width::Ucs2, Width::Ucs4];
        let width_ok = |width: Width, unit_max: u32| width.max_char() <= unit_max;
        if let Ok(text) = std::str::from_utf8(bytes) {
            let expected = code_points(text);
            let s = shape(bytes);
            assert_eq!(s.chars, expected.len(), "{text:?}");
            assert_eq!(s.width, canonical(text), "{text:?}");
            assert!(widths.contains(&s.width));
            let to_u32 = |v: Vec<u16>| v.into_iter().map(u32::from).collect::<Vec<_>>();
            let u8s = units::<u8>(bytes).map(|v| v.into_iter().map(u32::from).collect());
            let u16s = units::<u16>(bytes).map(to_u32);
            let u32s = units::<u32>(bytes);
            for (got, unit_max) in [(u8s, 0xFF), (u16s, 0xFFFF), (u32s, 0x10_FFFF)] {
                if width_ok(s.width, unit_max) {
                    assert_eq!(got.as_ref(), Ok(&expected), "{text:?}");
                } else {
                    assert_eq!(got, Err(Invalid), "{text:?}");
                }
            }
        } else {
            assert_eq!(units::<u8>(bytes), Err(Invalid), "{bytes:x?}");
            assert_eq!(units::<u16>(bytes), Err(Invalid), "{bytes:x?}");
            assert_eq!(units::<u32>(bytes), Err(Invalid), "{bytes:x?}");
            let repaired = String::from_utf8_lossy(bytes);
            assert_eq!(shape(repaired.as_bytes()).width, canonical(&repaired));
            assert_eq!(
                units::<u32>(repaired.as_bytes()),
                Ok(code_points(&repaired))
            );
        }
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
            assert_eq!(shape(text.as_bytes()), Shape { chars, width }, "{text:?}");
            check(text.as_bytes());
        }
    }

    #[test]
    fn long_text_counts_past_one_group_of_blocks() {
        for n in [4079, 4080, 4081, 8160, 8161, 20000] {
            let text = "\u{e9}".repeat(n) + &"a".repeat(300);
            assert_eq!(shape(text.as_bytes()).chars, n + 300);
            check(text.as_bytes());
        }
    }

    #[test]
    fn every_width_at_every_block_position() {
        let lengths = [
            0, 1, 2, 7, 8, 9, 14, 15, 16, 17, 31, 32, 33, 47, 48, 255, 256, 257,
        ];
        for wide in [
            "\u{e9}",
            "\u{3a9}",
            "\u{65e5}",
            "\u{1f642}",
            "\u{80}",
            "\u{10ffff}",
        ] {
            for &before in &lengths {
                for &after in &lengths {
                    let text = "x".repeat(before) + wide + &"y".repeat(after);
                    check(text.as_bytes());
                    let run = wide.repeat(before) + &"z".repeat(after) + wide;
                    check(run.as_bytes());
                }
            }
        }
    }

    #[test]
    fn invalid_sequences_are_refused() {
        let cases: [&[u8]; 22] = [
            b"\x80",
            b"\xbf",
            b"\xc0\x80",
            b"\xc1\xbf",
            b"\xc2",
            b"\xc2\x41",
            b"\xe0\x80\x80",
            b"\xe0\x9f\xbf",
            b"\xed\xa0\x80",
            b"\xed\xbf\xbf",
            b"\xe1\x80",
            b"\xe1\x80\x41",
            b"\xf0\x80\x80\x80",
            b"\xf0\x8f\xbf\xbf",
            b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80",
            b"\xf1\x80\x80",
            b"\xf1\x80\x80\x41",
            b"\xff",
            b"\xfe",
            b"0123456789abcdef\xc3",
            b"0123456789abcde\xe2\x82",
        ];
        for bytes in cases {
            assert!(std::str::from_utf8(bytes).is_err());
            check(bytes);
            let padded = [
                &b"a long run of ascii before it..."[..],
                bytes,
                b"and after",
            ]
            .concat();
            check(&padded);
        }
    }

    #[test]
    fn output_of_the_wrong_length_is_refused() {
        let text = "caf\u{e9} \u{3a9} and more ascii text";
        let chars = shape(text.as_bytes()).chars;
        for len in [0, chars - 1, chars + 1, chars + 20] {
            let mut out = vec![MaybeUninit::<u32>::uninit(); len];
            assert_eq!(
                decode_into(text.as_bytes(), &mut out),
                Err(Invalid),
                "{len}"
            );
        }
    }

    /// One of the bytes that matter to UTF-8: ASCII, continuation, every kind of lead.
    fn utf8ish_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            4 => 0x20u8..0x7F,
            2 => 0x80u8..=0xBF,
            1 => 0xC0u8..=0xDF,
            1 => 0xE0u8..=0xEF,
            1 => 0xF0u8..=0xFF,
        ]
    }

    /// Text mostly ASCII, with characters of every width, in runs of any length.
    fn mixed_text() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            8 => proptest::char::range(' ', '~'),
            1 => proptest::char::range('\u{80}', '\u{ff}'),
            1 => proptest::char::range('\u{100}', '\u{7ff}'),
            1 => proptest::char::range('\u{800}', '\u{ffff}'),
            1 => proptest::char::range('\u{10000}', '\u{10ffff}'),
        ];
        proptest::collection::vec(ch, 0..600).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_text(text in "\\PC*|[a-z\u{e0}-\u{ff}]*|[ -~\u{100}-\u{3ff}\u{10000}-\u{10100}]*") {
            check(text.as_bytes());
        }

        #[test]
        fn mixed_text_of_every_width(text in mixed_text()) {
            check(text.as_bytes());
        }

        #[test]
        fn one_character_after_a_run(
            before in 0usize..300,
            c in any::<char>(),
            after in 0usize..40,
        ) {
            let text = "a".repeat(before) + &c.to_string() + &"b".repeat(after);
            check(text.as_bytes());
        }

        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            check(&bytes);
        }

        #[test]
        fn utf8ish_bytes(bytes in proptest::collection::vec(utf8ish_byte(), 0..600)) {
            check(&bytes);
        }

        #[test]
        fn damaged_text(text in mixed_text(), at in any::<prop::sample::Index>(), byte in any::<u8>(), how in 0..3) {
            let mut bytes = text.into_bytes();
            let at = at.index(bytes.len() + 1);
            match how {
                0 => bytes.insert(at, byte),
                1 if at < bytes.len() => bytes[at] = byte,
                _ => bytes.truncate(at),
            }
            check(&bytes);
        }
    }
}
