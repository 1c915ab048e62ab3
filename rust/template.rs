//! The byte cuts of a learned chunk template (`providers/_chunk_template.py`): where the varying
//! parts of a payload lie, if it has the template's shape. The binding (`TemplateCut`,
//! `NumberedCut`) decides what those parts mean; nothing here depends on Python.
//!
//! A template is `prefix` + JSON string body + `rest`, and how the payload ends after `rest`
//! ([`End`]). A numbered template has one more slot: `prefix` + unsigned decimal integer +
//! `middle` + body + `rest` (the `sequence_number` of `OpenAI` Responses, +1 on every event).

/// How a payload ends after the body.
#[derive(Clone, Copy, Debug)]
pub enum End<'a> {
    /// `rest` ends the payload.
    Exact,
    /// Spaces, then one `}` (Anthropic pads its JSON so).
    Spaces,
    /// `rest` ends with the opening quote of a padding value, which these bytes follow.
    PaddingValue(&'a [u8]),
}

/// The body of `raw` between `prefix` and `rest`, and the padding value (empty when there is
/// none), if `raw` has that shape and the body is not empty. Padded (spaces or a value), the
/// body ends at the first `rest`; should that lie inside the real body (after an escaped
/// quote), the body cut there ends in an odd run of backslashes and is refused as a body
/// later, as in Python. Always inlined: it is most of a `TemplateCut.read` call, made once per
/// frame, and a plain `#[inline]` left it a call (measured under callgrind).
#[allow(clippy::inline_always)]
#[inline(always)]
pub fn cut<'r>(
    raw: &'r [u8],
    prefix: &[u8],
    rest: &[u8],
    end: End<'_>,
) -> Option<(&'r [u8], &'r [u8])> {
    let after_prefix = raw.strip_prefix(prefix)?;
    let (body, value): (&[u8], &[u8]) = match end {
        End::Exact => (after_prefix.strip_suffix(rest)?, &[]),
        End::Spaces => {
            let (&b'}', head) = raw.split_last()? else {
                return None;
            };
            let end = memchr::memmem::find(after_prefix, rest)?;
            let after = prefix.len() + end + rest.len();
            if after > head.len() || head[after..].iter().any(|&b| b != b' ') {
                return None;
            }
            (&after_prefix[..end], &[])
        }
        End::PaddingValue(tail) => {
            let end = memchr::memmem::find(after_prefix, rest)?;
            let value_and_tail = &after_prefix[end + rest.len()..];
            let value_end = memchr::memchr(b'"', value_and_tail)?;
            if &value_and_tail[value_end..] != tail {
                return None;
            }
            (&after_prefix[..end], &value_and_tail[..value_end])
        }
    };
    (!body.is_empty()).then_some((body, value))
}

/// The number, body and padding value of `raw` if it is `prefix` + a JSON unsigned integer
/// that fits in `u64` + `middle` + what [`cut`] takes with no prefix.
///
/// The number must be written as JSON writes a non-negative integer: one or more digits with no
/// leading zero. Whatever else stands there (a sign, a fraction, an exponent, a leading zero,
/// more than `u64` holds) is refused: the payload is then parsed, which decides it. `middle`
/// never starts with a digit (the learned number ended there), so the digits are the number.
#[inline]
pub fn cut_numbered<'r>(
    raw: &'r [u8],
    prefix: &[u8],
    middle: &[u8],
    rest: &[u8],
    end: End<'_>,
) -> Option<(u64, &'r [u8], &'r [u8])> {
    let after_prefix = raw.strip_prefix(prefix)?;
    let digits = after_prefix
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(after_prefix.len());
    let number = unsigned(&after_prefix[..digits])?;
    let after_middle = after_prefix[digits..].strip_prefix(middle)?;
    let (body, value) = cut(after_middle, b"", rest, end)?;
    Some((number, body, value))
}

/// The value of ASCII `digits` as JSON writes an unsigned integer, if it fits in `u64`.
fn unsigned(digits: &[u8]) -> Option<u64> {
    match digits {
        [] | [b'0', _, ..] => None, // none, or a leading zero (not JSON)
        _ => digits.iter().try_fold(0_u64, |number, &digit| {
            number.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
        }),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const PREFIX: &[u8] = b"{\"type\":\"d\",\"sequence_number\":";
    const MIDDLE: &[u8] = b",\"delta\":\"";
    const REST: &[u8] = b"\",\"obfuscation\":\"";
    const TAIL: &[u8] = b"\"}";

    fn numbered(raw: &[u8]) -> Option<(u64, &[u8], &[u8])> {
        cut_numbered(raw, PREFIX, MIDDLE, REST, End::PaddingValue(TAIL))
    }

    #[test]
    fn a_numbered_payload_is_cut_into_its_parts() {
        let raw =
            b"{\"type\":\"d\",\"sequence_number\":401,\"delta\":\"I'm\",\"obfuscation\":\"uGU\"}";
        assert_eq!(numbered(raw), Some((401, &b"I'm"[..], &b"uGU"[..])));
        let zero = b"{\"type\":\"d\",\"sequence_number\":0,\"delta\":\"a\",\"obfuscation\":\"\"}";
        assert_eq!(numbered(zero), Some((0, &b"a"[..], &b""[..])));
    }

    #[test]
    fn numbers_json_would_not_write_so_are_refused() {
        for number in [
            &b""[..],
            b"-1",
            b"01",
            b"00",
            b"1.0",
            b"1e3",
            b"1E3",
            b"+1",
            b" 1",
            b"1 ",
            b"18446744073709551616",
            b"99999999999999999999999",
            b"\"1\"",
            b"null",
        ] {
            let raw = [PREFIX, number, MIDDLE, b"x", REST, b"v", TAIL].concat();
            assert_eq!(numbered(&raw), None, "{}", String::from_utf8_lossy(number));
        }
        let max = [PREFIX, b"18446744073709551615", MIDDLE, b"x", REST, TAIL].concat();
        assert_eq!(numbered(&max).map(|cut| cut.0), Some(u64::MAX));
    }

    #[test]
    fn the_other_parts_must_match() {
        let good = [PREFIX, b"7", MIDDLE, b"x", REST, b"v", TAIL].concat();
        assert!(numbered(&good).is_some());
        for bad in [
            [
                b"{\"type\":\"e\",",
                &b"\"sequence_number\":7"[..],
                MIDDLE,
                b"x",
                REST,
            ]
            .concat(),
            [PREFIX, b"7", b",\"delta\":", b"x", REST, TAIL].concat(),
            [PREFIX, b"7", MIDDLE, b"", REST, TAIL].concat(), // an empty body
            [PREFIX, b"7", MIDDLE, b"x", REST, b"v"].concat(), // no tail
            [PREFIX, b"7", MIDDLE, b"x", REST, b"v", TAIL, b" "].concat(),
            [PREFIX, b"7", MIDDLE, b"x"].concat(),
            PREFIX.to_vec(),
        ] {
            assert_eq!(numbered(&bad), None, "{}", String::from_utf8_lossy(&bad));
        }
    }

    #[test]
    fn without_padding_the_payload_ends_with_rest() {
        let raw = [PREFIX, b"12", MIDDLE, b"hi", b"\"}"].concat();
        let got = cut_numbered(&raw, PREFIX, MIDDLE, b"\"}", End::Exact);
        assert_eq!(got, Some((12, &b"hi"[..], &b""[..])));
        let spaced = [PREFIX, b"12", MIDDLE, b"hi", b"\"  }"].concat();
        let got = cut_numbered(&spaced, PREFIX, MIDDLE, b"\"", End::Spaces);
        assert_eq!(got, Some((12, &b"hi"[..], &b""[..])));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The number found is the one written, whenever it is written as JSON writes a
        /// `u64`; any other digits, signs or dots there are refused.
        #[test]
        fn numbers_are_read_as_json_writes_them(
            number in prop_oneof![any::<u64>().prop_map(|n| n.to_string()), "[-+.eE0-9]{0,22}"],
            body in "[a-z\"\\\\ ]{1,6}",
        ) {
            let raw = [PREFIX, number.as_bytes(), MIDDLE, body.as_bytes(), REST, b"Ab9", TAIL]
                .concat();
            let json_u64 = number
                .parse::<u64>()
                .ok()
                .filter(|n| n.to_string() == number);
            let got = numbered(&raw);
            prop_assert_eq!(got.map(|cut| cut.0), json_u64);
            if got.is_some() && !body.contains("\",\"obfuscation\":\"") {
                prop_assert_eq!(got.map(|cut| cut.1), Some(body.as_bytes()));
            }
        }

        /// A numbered cut is the plain cut of what follows the number and `middle`.
        #[test]
        fn a_numbered_cut_is_a_plain_cut_after_the_number(
            raw in proptest::collection::vec(
                prop_oneof![
                    Just(PREFIX.to_vec()), Just(MIDDLE.to_vec()), Just(REST.to_vec()),
                    Just(TAIL.to_vec()), "[0-9a\"]{0,3}".prop_map(String::into_bytes),
                ],
                0..8,
            ).prop_map(|parts| parts.concat()),
        ) {
            let plain = raw.strip_prefix(PREFIX).and_then(|after| {
                let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
                let after = after[digits..].strip_prefix(MIDDLE)?;
                cut(after, b"", REST, End::PaddingValue(TAIL))
            });
            match numbered(&raw) {
                Some((_, body, value)) => prop_assert_eq!(plain, Some((body, value))),
                None => {
                    // Only the number may refuse what the plain cut takes.
                    if plain.is_some() {
                        let after = &raw[PREFIX.len()..];
                        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
                        prop_assert!(unsigned(&after[..digits]).is_none());
                    }
                }
            }
        }
    }
}
