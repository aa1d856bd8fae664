//! Operation ids: 24 characters of lower-case Crockford base32, eight for
//! the milliseconds since 2026-01-01T00:00Z at which the log accepted the
//! operation and sixteen random ones. Ids sort in acceptance order; a log
//! never mints one that sorts before an id it holds.

use std::fmt;

/// Crockford's base32 alphabet, lower case (no i, l, o, u).
pub(crate) const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// Characters in an id.
pub(crate) const LEN: usize = 24;
/// Characters of the time part.
pub(crate) const TIME_LEN: usize = 8;
/// Characters a log line shows.
pub(crate) const SHORT_LEN: usize = 10;
/// 2026-01-01T00:00:00Z in milliseconds since the Unix epoch.
pub const EPOCH_MS: u64 = 1_767_225_600_000;
/// The largest time part eight characters hold (40 bits).
const MAX_TIME: u64 = (1 << 40) - 1;

/// A valid operation id: 24 bytes held inline, so ids are `Copy` and
/// cost no allocation (the fold handles hundreds of thousands). Bytes
/// compare as the text does.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId([u8; LEN]);

impl fmt::Debug for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OpId({})", self.as_str())
    }
}

impl serde::Serialize for OpId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read back what kapi wrote (the fold's checkpoint): text that is no id is refused.
impl<'de> serde::Deserialize<'de> for OpId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        OpId::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error(
        "`{0}` is not an operation id: ids are 24 characters of 0-9 and a-z without i, l, o, u"
    )]
    Invalid(String),
    #[error("the clock is outside the range an id can hold (2026 to 2060)")]
    ClockOutOfRange,
}

impl OpId {
    /// Parse untrusted text as an id.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        // Checked where it lies, then copied whole: a copy checked byte by
        // byte was held a byte a register and stored a byte at a time (128
        // instructions a parse, four parses a usage signal on a cold read).
        match <&[u8; LEN]>::try_from(text.as_bytes()) {
            Ok(bytes) if all_id_chars(bytes) => Ok(Self(*bytes)),
            _ => Err(IdError::Invalid(text.to_owned())),
        }
    }

    /// Mint a new id at `now_ms` (Unix milliseconds) with 80 random bits,
    /// never sorting before `newest`: when the clock has not moved past it,
    /// the time part advances one millisecond past the newest id's.
    pub fn mint(now_ms: u64, random: u128, newest: Option<&OpId>) -> Result<Self, IdError> {
        let mut time = now_ms
            .checked_sub(EPOCH_MS)
            .ok_or(IdError::ClockOutOfRange)?;
        if let Some(newest) = newest {
            time = time.max(newest.time_part() + 1);
        }
        if time > MAX_TIME {
            return Err(IdError::ClockOutOfRange);
        }
        let mut out = [b'0'; LEN];
        push_base32(&mut out[..TIME_LEN], u128::from(time));
        push_base32(&mut out[TIME_LEN..], random & ((1u128 << 80) - 1));
        Ok(Self(out))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ids are ASCII")
    }

    /// The first ten characters, as a log line shows them.
    pub(crate) fn short(&self) -> &str {
        &self.as_str()[..SHORT_LEN]
    }

    /// A number that sorts as the id does (see [`key`]).
    pub(crate) fn key(&self) -> u128 {
        key(self.as_str())
    }

    /// Milliseconds since 2026-01-01T00:00Z.
    pub(crate) fn time_part(&self) -> u64 {
        time_of(self.as_str())
    }

    /// Unix milliseconds at which the log accepted the operation.
    pub(crate) fn unix_ms(&self) -> u64 {
        self.time_part() + EPOCH_MS
    }

    /// The instant as a record's `at` states it: `2026-11-30T05:07:39.123Z`.
    pub fn instant(&self) -> String {
        rfc3339_ms(self.unix_ms())
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Unix milliseconds as `2026-11-30T05:07:39.123Z` (UTC). Written out by
/// hand: every record read compares its `at` with this, so it must be cheap.
pub(crate) fn rfc3339_ms(unix_ms: u64) -> String {
    let ms = unix_ms % 1000;
    let secs = unix_ms / 1000;
    let (hour, minute, second) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{ms:03}Z")
}

fn push_base32(out: &mut [u8], mut n: u128) {
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(n & 31) as usize];
        n >>= 5;
    }
}

/// Each byte's value in the alphabet, or 255 for bytes outside it.
const VALUES: [u8; 256] = {
    let mut table = [255u8; 256];
    let mut i = 0;
    while i < 32 {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};

fn is_id_char(c: u8) -> bool {
    VALUES[c as usize] != 255
}

fn value(c: u8) -> u8 {
    VALUES[c as usize] & 31
}

/// The short form of an id held as text (a record's `target`, a rule's
/// id): its first ten characters, or all of it when shorter.
pub(crate) fn short(id: &str) -> &str {
    id.get(..SHORT_LEN).unwrap_or(id)
}

/// Whether `text` is an id, without allocating.
pub(crate) fn is_id(text: &str) -> bool {
    text.len() == LEN && all_id_chars(text.as_bytes())
}

/// Whether every byte is in the alphabet: the values OR'd together, one
/// lookup a byte and no branch (every record's ids are checked, some
/// twice, on a cold read of a long log).
fn all_id_chars(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |seen, &c| seen | VALUES[c as usize]) != 255
}

/// A valid id as a number that sorts as the id does (24 characters of 5
/// bits each fit in 120 bits): cheap to sort and search by.
pub(crate) fn key(id: &str) -> u128 {
    id.bytes()
        .fold(0u128, |acc, c| (acc << 5) | u128::from(value(c)))
}

/// The time part of a valid id, in milliseconds since 2026-01-01.
pub(crate) fn time_of(id: &str) -> u64 {
    id.bytes()
        .take(TIME_LEN)
        .fold(0, |acc, c| (acc << 5) | u64::from(value(c)))
}

/// Parse exactly the form [`rfc3339_ms`] writes (`2026-11-30T05:07:39.123Z`)
/// into Unix milliseconds, without allocating; anything else is `None`.
pub(crate) fn parse_instant_ms(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    // Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let total = ((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + ms;
    u64::try_from(total).ok()
}

/// Whether `text` could start an id (used before resolving a prefix).
pub(crate) fn is_prefix(text: &str) -> bool {
    !text.is_empty() && text.len() <= LEN && text.bytes().all(is_id_char)
}

/// The result of resolving a prefix against the ids a log holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("`{0}` is not an operation id or the start of one (0-9 and a-z without i, l, o, u)")]
    NotAnId(String),
    #[error("no operation starts with `{0}`; `kapi context log` lists them")]
    Unknown(String),
    #[error("`{prefix}` starts {} operations: {}; give more characters", .candidates.len(), .candidates.join(", "))]
    Ambiguous {
        prefix: String,
        candidates: Vec<String>,
    },
}

/// Resolve a prefix (a leading `#` is allowed) against sorted ids.
pub(crate) fn resolve<'a>(prefix: &str, sorted_ids: &'a [OpId]) -> Result<&'a OpId, ResolveError> {
    let prefix = prefix.trim().trim_start_matches('#').to_ascii_lowercase();
    if !is_prefix(&prefix) {
        return Err(ResolveError::NotAnId(prefix));
    }
    let start = sorted_ids.partition_point(|id| id.as_str() < prefix.as_str());
    let hits: Vec<&OpId> = sorted_ids[start..]
        .iter()
        .take_while(|id| id.as_str().starts_with(&prefix))
        .collect();
    match hits.as_slice() {
        [] => Err(ResolveError::Unknown(prefix)),
        [one] => Ok(one),
        many => Err(ResolveError::Ambiguous {
            prefix,
            candidates: many.iter().map(|id| id.short().to_owned()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_valid_and_ordered() {
        let a = OpId::mint(EPOCH_MS + 5, 7, None).unwrap();
        assert_eq!(a.as_str().len(), LEN);
        assert!(OpId::parse(a.as_str()).is_ok());
        assert_eq!(a.time_part(), 5);
        // The clock went backwards: the id still sorts after `a`.
        let b = OpId::mint(EPOCH_MS + 1, 0, Some(&a)).unwrap();
        assert!(b > a);
        assert_eq!(b.time_part(), 6);
        assert_ne!(a.short(), b.short());
    }

    #[test]
    fn time_part_round_trips() {
        for ms in [0u64, 1, 31, 32, 1_000_000_007, MAX_TIME] {
            let id = OpId::mint(EPOCH_MS + ms, u128::MAX, None).unwrap();
            assert_eq!(id.time_part(), ms);
        }
        assert_eq!(
            OpId::mint(EPOCH_MS - 1, 0, None),
            Err(IdError::ClockOutOfRange)
        );
    }

    #[test]
    fn instants_format_like_rfc3339() {
        assert_eq!(rfc3339_ms(EPOCH_MS), "2026-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_772_323_200_123), "2026-03-01T00:00:00.123Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        for ms in [
            0u64,
            1_767_225_599_999,
            1_798_761_600_000,
            2_000_000_000_000,
        ] {
            let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
                .unwrap();
            let f = time::macros::format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
            );
            assert_eq!(rfc3339_ms(ms), t.format(f).unwrap());
        }
    }

    #[test]
    fn keys_sort_as_ids_do() {
        let mut ids = [
            "0a00000000000000000000zz",
            "0a0000000000000000000100",
            "0000000000000000000000zz",
            "zzzzzzzzzzzzzzzzzzzzzzzz",
        ];
        let mut by_key = ids;
        ids.sort();
        by_key.sort_by_key(|i| key(i));
        assert_eq!(ids, by_key);
    }

    #[test]
    fn instants_parse_back() {
        for ms in [
            EPOCH_MS,
            951_782_400_000,
            1_772_323_200_123,
            2_000_000_000_999,
        ] {
            assert_eq!(parse_instant_ms(&rfc3339_ms(ms)), Some(ms));
        }
        assert_eq!(parse_instant_ms("2026-13-01T00:00:00.000Z"), None);
        assert_eq!(parse_instant_ms("2026-01-01T00:00:00Z"), None);
    }

    #[test]
    fn parse_refuses_bad_text() {
        assert!(OpId::parse("0n79tw5k9s").is_err());
        assert!(OpId::parse("0n79tw5k9s00000000000000").is_ok());
        assert!(OpId::parse("0n79tw5k9s0000000000000i").is_err());
        assert!(OpId::parse("0N79TW5K9S00000000000000").is_err());
    }

    #[test]
    fn prefixes_resolve_or_name_candidates() {
        let mut ids: Vec<OpId> = [
            "0a00000000000000000000aa",
            "0a00000000000000000000ab",
            "0b00000000000000000000aa",
        ]
        .iter()
        .map(|s| OpId::parse(s).unwrap())
        .collect();
        ids.sort();
        assert_eq!(
            resolve("#0b", &ids).unwrap().as_str(),
            "0b00000000000000000000aa"
        );
        assert_eq!(resolve("0A00000000000000000000AB", &ids).unwrap(), &ids[1]);
        match resolve("0a", &ids) {
            Err(ResolveError::Ambiguous { candidates, .. }) => assert_eq!(candidates.len(), 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(resolve("0c", &ids), Err(ResolveError::Unknown(_))));
        assert!(matches!(resolve("0o", &ids), Err(ResolveError::NotAnId(_))));
    }
}
