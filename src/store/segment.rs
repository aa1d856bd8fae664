//! Segments: the leaves of the log's tree. A segment is the JSON Lines of
//! every operation whose id falls in its shard, one canonical record per
//! line, sorted by id, so a segment's bytes are a pure function of the set
//! of operations it holds.

use crate::ops::id::{LEN, TIME_LEN};
use crate::ops::record::{Record, RecordError};

/// The largest segment kapi reads (a remote can push anything).
pub const MAX_SEGMENT_BYTES: usize = 64 * 1024 * 1024;

/// The shard of an id: the first two characters of its random tail, so the
/// path of an operation is a pure function of its id. Two levels of 32
/// give 1,024 shards.
pub fn shard(id: &str) -> (u8, u8) {
    let b = id.as_bytes();
    (b[TIME_LEN], b[TIME_LEN + 1])
}

/// The id of a canonical line without parsing it: `"id":"…"` occurs once at
/// the top level of a record and cannot occur inside a JSON string (quotes
/// there are escaped).
pub fn line_id(line: &[u8]) -> Option<&str> {
    let at = memchr::memmem::find(line, b"\"id\":\"")? + 6;
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
    #[error("not UTF-8")]
    NotUtf8,
}

/// A problem found while reading, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `refs/kapi/ops:3/k line 2` or `ops.jsonl line 7`.
    pub location: String,
    pub error: EntryError,
}

/// Parse one segment into records, reporting every bad line and skipping it.
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
pub fn parse_file(
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
    // Lines are split on bytes; each line's JSON parser checks its UTF-8.
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let location = || format!("{origin} line {}", n + 1);
        match Record::from_untrusted(line) {
            Ok(record) => {
                let found = shard(&record.id);
                if let Some(exp) = expected
                    && exp != found
                {
                    problems.push(Problem {
                        location: location(),
                        error: EntryError::Misplaced {
                            id: record.id.to_string(),
                            found: format!("{}/{}", exp.0 as char, exp.1 as char),
                            expected: format!("{}/{}", found.0 as char, found.1 as char),
                        },
                    });
                    continue;
                }
                records.push(record);
            }
            Err(e) => problems.push(Problem {
                location: location(),
                error: e.into(),
            }),
        }
    }
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
