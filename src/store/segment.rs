//! Segments: the leaves of the log's tree. A segment is the JSON Lines of
//! every operation whose id falls in its shard, one canonical record per
//! line, sorted by id, so a segment's bytes are a pure function of the set
//! of operations it holds.

use crate::ops::id::{LEN, TIME_LEN};
use crate::ops::record::{Record, RecordError};

/// The largest segment kapi reads (a remote can push anything).
pub(crate) const MAX_SEGMENT_BYTES: usize = 64 * 1024 * 1024;

/// The shard of an id: the first two characters of its random tail, so the
/// path of an operation is a pure function of its id. Two levels of 32
/// give 1,024 shards.
pub(crate) fn shard(id: &str) -> (u8, u8) {
    let b = id.as_bytes();
    (b[TIME_LEN], b[TIME_LEN + 1])
}

/// The id of a canonical line without parsing it: `"id":"…"` occurs once at
/// the top level of a record and cannot occur inside a JSON string (quotes
/// there are escaped).
pub(crate) fn line_id(line: &[u8]) -> Option<&str> {
    // One searcher for every line: a segment can hold millions.
    static ID_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"id\":\""));
    if line.first() != Some(&b'{') {
        return None;
    }
    let at = ID_KEY.find(line)? + 6;
    let id = line.get(at..at + LEN)?;
    if line.get(at + LEN) != Some(&b'"') {
        return None;
    }
    std::str::from_utf8(id).ok()
}

/// The newest valid id dated no later than `bound_ms` (Unix ms) among JSON
/// Lines bytes, found without parsing records (only for lines kapi wrote
/// itself: the journal).
pub fn newest_id(bytes: &[u8], bound_ms: u64) -> Option<crate::ops::id::OpId> {
    lines(bytes)
        .filter_map(|l| line_id(l).and_then(|id| crate::ops::id::OpId::parse(id).ok()))
        .filter(|id| id.unix_ms() <= bound_ms)
        .max()
}

/// The shortest line that can be a valid operation (its id, instant,
/// project, actor, kind and version alone take more).
pub(crate) const MIN_RECORD_LINE: usize = 96;

/// How many records a segment's bytes can hold at most, to size a buffer:
/// its lines, but never more than its bytes could hold as records (a
/// pushed segment of 30 million one-byte lines must not reserve room for
/// 30 million records).
pub(crate) fn capacity_for(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes)
        .count()
        .min(bytes.len() / MIN_RECORD_LINE + 1)
}

/// Sort lines by id (then bytes) and drop exact duplicates. Bytes are kept
/// exactly as they are: a line that cannot be read stays unreadable.
pub fn normalize(lines: &mut Vec<&[u8]>) {
    lines.sort_by(|a, b| {
        line_id(a)
            .unwrap_or("")
            .cmp(line_id(b).unwrap_or(""))
            .then_with(|| a.cmp(b))
    });
    lines.dedup();
}

/// Join lines into segment bytes.
pub fn to_bytes(lines: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

/// Split segment bytes into their non-blank lines, byte for byte.
pub fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
}

/// What is wrong with one stored operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("misplaced: operation {id} is stored in shard {found}, its id belongs in {expected}")]
    Misplaced {
        id: String,
        found: String,
        expected: String,
    },
    #[error(
        "duplicate id: {id} is stored twice with different bytes and the log's history does not say which it held first; neither copy is used. Import the copy you trust from a file you trust (`kapi store import`)"
    )]
    DuplicateId { id: String },
    #[error(
        "later copy: {id} is stored again with other bytes; the copy the log held first stands and this one is not used (an operation never changes once written)"
    )]
    LaterCopy { id: String },
    #[error(
        "dated ahead: {id} is dated {at}, more than 10 minutes past this machine's clock; new ids here are not minted past it. If this machine's clock is right, the operation came from a machine whose clock runs ahead (or was forged); it is kept and counts like any other"
    )]
    Ahead { id: String, at: String },
    #[error(
        "conflict: the log holds {id} with other bytes; an operation never changes once written, so this copy was refused"
    )]
    Conflict { id: String },
    #[error(
        "dated in the future: {id} is dated {at}, more than 10 minutes past this machine's clock; refused"
    )]
    Future { id: String, at: String },
    #[error(
        "no room: {id} belongs in segment {shard}, which would grow past the {MAX_SEGMENT_BYTES}-byte limit kapi reads; refused"
    )]
    SegmentFull { id: String, shard: String },
    #[error(
        "oversized segment: {bytes} bytes, the limit is {MAX_SEGMENT_BYTES}; its operations are not read. Someone wrote it with another tool: new operations are minted into other segments"
    )]
    OversizedSegment { bytes: usize },
    #[error("unexpected entry: the log's tree holds `{0}`, which is not a shard")]
    UnexpectedEntry(String),
    #[error("content: operation {id} names the content blob {blob}, {error}; it is not read")]
    Content {
        id: String,
        blob: String,
        error: ContentError,
    },
    #[error(
        "and {} that cannot be read (only the first {MAX_NAMED} of a segment or file are named)",
        crate::wording::count(*count, "more line", "more lines")
    )]
    More { count: usize },
    #[error("not UTF-8")]
    NotUtf8,
    /// A line told apart as junk before any JSON was parsed (no allocation:
    /// a segment can hold millions).
    #[error("malformed: {0}")]
    Junk(&'static str),
}

/// Why a record's content blob (`content.rs`) cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    #[error(
        "which this repository does not hold (fetch the log again with `kapi context sync`; a file `kapi store export` wrote carries no content blobs)"
    )]
    Missing,
    #[error("which is not a blob")]
    NotABlob,
    #[error("which has {found} bytes, not the {stated} the operation states")]
    Size { stated: u64, found: u64 },
    #[error("whose bytes do not match the SHA-256 the operation states")]
    Digest,
    #[error("whose bytes are not the term rules of an import: {0}")]
    Unparsable(String),
}

/// A problem found while reading, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `refs/kapi/ops:3/k line 2` or `ops.jsonl line 7`.
    pub location: String,
    pub error: EntryError,
}

/// At most this many bad lines of one segment or file are named one by
/// one; the rest are counted ([`EntryError::More`]). A pushed segment of
/// 30 million junk lines then costs a read its inflating and a glance at
/// each line, never a named problem per line.
pub(crate) const MAX_NAMED: usize = 16;

/// How many stored lines `problems` stand for: one each, and the count of
/// a [`EntryError::More`].
pub(crate) fn unreadable(problems: &[Problem]) -> usize {
    problems
        .iter()
        .map(|p| match p.error {
            EntryError::More { count } => count,
            _ => 1,
        })
        .sum()
}

/// The problems of one segment or file: the first [`MAX_NAMED`] named,
/// the rest counted.
pub(crate) struct Problems<'p> {
    out: &'p mut Vec<Problem>,
    origin: &'p str,
    named: usize,
    more: usize,
}

impl<'p> Problems<'p> {
    pub fn new(origin: &'p str, out: &'p mut Vec<Problem>) -> Self {
        Self {
            out,
            origin,
            named: 0,
            more: 0,
        }
    }

    /// Name the problem of line `n` (1-based), or count it past the cap.
    pub(crate) fn line(&mut self, n: usize, error: impl FnOnce() -> EntryError) {
        if self.named < MAX_NAMED {
            self.named += 1;
            self.out.push(Problem {
                location: format!("{} line {n}", self.origin),
                error: error(),
            });
        } else {
            self.more += 1;
        }
    }
}

impl Drop for Problems<'_> {
    fn drop(&mut self) {
        if self.more > 0 {
            self.out.push(Problem {
                location: self.origin.to_owned(),
                error: EntryError::More { count: self.more },
            });
        }
    }
}

/// One stored line read as an operation of the shard `expected` (when
/// given). Junk is told apart before any JSON is parsed: a line that does
/// not open a JSON object, or (in a segment, whose lines kapi writes
/// canonical) carries no operation id, costs a glance.
pub(crate) fn parse_line(line: &[u8], expected: Option<(u8, u8)>) -> Result<Record, EntryError> {
    let opens_object = line
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{');
    if line.len() > crate::ops::record::MAX_RECORD_BYTES {
        return Err(RecordError::Oversized { bytes: line.len() }.into());
    }
    if !opens_object {
        return Err(EntryError::Junk("not a JSON object"));
    }
    if expected.is_some() && line_id(line).is_none() {
        return Err(EntryError::Junk("no operation id"));
    }
    let record = Record::from_untrusted(line)?;
    let found = shard(&record.id);
    match expected {
        Some(exp) if exp != found => Err(EntryError::Misplaced {
            id: record.id.to_string(),
            found: format!("{}/{}", exp.0 as char, exp.1 as char),
            expected: format!("{}/{}", found.0 as char, found.1 as char),
        }),
        _ => Ok(record),
    }
}

/// Whether a line carries a signature (`sig`). Of two copies of one id,
/// a log keeps both when either carries one: which stands is the fold's
/// to choose (one whose signature verifies, `crate::ops::fold`), so an
/// unsigned or forged copy that arrived first cannot shadow a signed
/// decision. Any other copy of a held id is a conflict, and refused.
pub(crate) fn carries_signature(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"\"sig\":").is_some()
        && parse_line(line, None).is_ok_and(|r| r.sig.is_some())
}

/// Whether `line`, a copy of an id the log holds as `held` with other
/// bytes, is kept beside them rather than refused as a conflict: when it
/// or a held copy carries a signature ([`carries_signature`]).
pub(crate) fn kept_beside(line: &[u8], held: &[&[u8]]) -> bool {
    carries_signature(line) || held.iter().any(|h| carries_signature(h))
}

/// Whether a stored line of the shard `expected` is worth carrying into
/// another tree: a valid operation of that shard, or one of a newer format
/// version (a newer kapi reads it) whose id belongs there. Junk, misplaced
/// and invalid lines are left behind (a merge names them).
pub(crate) fn keepable(line: &[u8], expected: (u8, u8)) -> Result<(), EntryError> {
    match parse_line(line, Some(expected)) {
        Ok(_) => Ok(()),
        Err(EntryError::Record(RecordError::UnknownVersion(_)))
            if line_id(line)
                .is_some_and(|id| crate::ops::id::is_id(id) && shard(id) == expected) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Parse one segment into records, naming its first bad lines (and
/// counting the rest) and skipping them.
pub fn parse(
    bytes: &[u8],
    expected: Option<(u8, u8)>,
    origin: &str,
    records: &mut Vec<Record>,
    problems: &mut Vec<Problem>,
) {
    parse_capped(
        bytes,
        expected,
        origin,
        MAX_SEGMENT_BYTES,
        records,
        problems,
    );
}

/// Parse JSON Lines of any size (an import file): only each line is capped.
pub(crate) fn parse_file(
    bytes: &[u8],
    origin: &str,
    records: &mut Vec<Record>,
    problems: &mut Vec<Problem>,
) {
    parse_capped(bytes, None, origin, usize::MAX, records, problems);
}

fn parse_capped(
    bytes: &[u8],
    expected: Option<(u8, u8)>,
    origin: &str,
    cap: usize,
    records: &mut Vec<Record>,
    problems: &mut Vec<Problem>,
) {
    if bytes.len() > cap {
        problems.push(Problem {
            location: origin.to_owned(),
            error: EntryError::OversizedSegment { bytes: bytes.len() },
        });
        return;
    }
    let mut bad = Problems::new(origin, problems);
    // Lines are split on bytes; each line's JSON parser checks its UTF-8.
    for (n, line) in memchr_lines(bytes) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(line, expected) {
            Ok(record) => records.push(record),
            Err(e) => bad.line(n + 1, || e),
        }
    }
}

/// Lines split on `\n` with their 0-based numbers (memchr: a segment of
/// millions of short lines is split at memory speed).
fn memchr_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut start = 0;
    let mut n = 0;
    std::iter::from_fn(move || {
        if start > bytes.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let line = &bytes[start..end];
        let numbered = (n, line);
        n += 1;
        start = end + 1;
        Some(numbered)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ids_are_found_without_parsing() {
        let line = br#"{"actor":{"kind":"agent","name":"a"},"id":"0n79tw5k9s0000000000000a","note":"\"id\":\"x"}"#;
        assert_eq!(line_id(line), Some("0n79tw5k9s0000000000000a"));
        assert_eq!(line_id(b"{}"), None);
    }
}
