//! A derived read cache: the inflated bytes of the log's segments, keyed by
//! blob id, in one file (`.git/kapi/segments.cache`). Reading a packed log
//! is mostly inflating chains of deltas; with the cache a read inflates only
//! the segments that changed since the last read. The cache is never a
//! source of truth: records read from it pass the same checks as records
//! read from git, every entry carries a CRC-32 of its bytes so a damaged
//! entry is read from git instead, and the file is always safe to delete.

use std::collections::HashMap;
use std::path::Path;

use gix::ObjectId;

pub(super) const NAME: &str = "segments.cache";
const MAGIC: &[u8] = b"kapi segment cache v2\n";
/// Below this many bytes of segments a log reads fast enough without it.
pub const MIN_BYTES: usize = 256 * 1024;

/// The cache file, open, with where each entry's bytes lie in it: an
/// entry is read when asked for, so a read of a long log never holds the
/// whole file (at a million operations, a quarter of a cold read's peak)
/// beside the records it parses from it.
#[derive(Default)]
pub struct SegmentCache {
    file: Option<std::fs::File>,
    index: HashMap<ObjectId, (u64, usize, u32)>,
}

impl SegmentCache {
    /// Open the cache, or an empty one when it is missing or damaged.
    pub fn read(kapi_dir: &Path) -> Self {
        let Ok(file) =
            crate::fsutil::open_regular(&kapi_dir.join(NAME), crate::fsutil::Links::Refuse)
        else {
            return Self::default();
        };
        match index(&file) {
            Some(index) => Self {
                file: Some(file),
                index,
            },
            None => Self::default(),
        }
    }

    /// The bytes of a segment, if cached and intact.
    pub fn get(&self, blob: &ObjectId) -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        self.get_into(blob, &mut bytes).then_some(bytes)
    }

    /// Read a segment's bytes into `bytes` (replacing what it held), if
    /// cached and intact: a reader that reuses one buffer does not zero a
    /// new one for every segment (2% of a cold read's instructions).
    pub fn get_into(&self, blob: &ObjectId, bytes: &mut Vec<u8>) -> bool {
        use std::os::unix::fs::FileExt;
        let Some(&(start, len, crc)) = self.index.get(blob) else {
            return false;
        };
        let Some(file) = self.file.as_ref() else {
            return false;
        };
        // Only what the buffer did not hold yet is zeroed.
        bytes.resize(len, 0);
        file.read_exact_at(bytes, start).is_ok() && crc32fast::hash(bytes) == crc
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the cache has an entry for `blob` (intact or not: read with
    /// [`SegmentCache::get`]).
    pub fn has(&self, blob: &ObjectId) -> bool {
        self.index.contains_key(blob)
    }

    /// How many bytes the cache's entry for `blob` holds, if it has one.
    pub fn size(&self, blob: &ObjectId) -> Option<usize> {
        self.index.get(blob).map(|&(_, len, _)| len)
    }
}

/// `<40 hex> <length> <crc32>\n<bytes>` entries after the magic line: the
/// headers are read one by one (each entry's bytes are skipped), and an
/// entry that claims more than the file holds or than a segment may hold
/// makes the whole file unread.
fn index(file: &std::fs::File) -> Option<HashMap<ObjectId, (u64, usize, u32)>> {
    use std::os::unix::fs::FileExt;
    let size = file.metadata().ok()?.len();
    let mut magic = vec![0; MAGIC.len()];
    file.read_exact_at(&mut magic, 0).ok()?;
    if magic != MAGIC {
        return None;
    }
    let mut at = MAGIC.len() as u64;
    let mut index = HashMap::new();
    // A header is 40 (or 64) hex digits, a length and a CRC: well under this.
    let mut head = [0u8; 128];
    while at < size {
        let want = (size - at).min(head.len() as u64) as usize;
        file.read_exact_at(&mut head[..want], at).ok()?;
        let end = memchr::memchr(b'\n', &head[..want])?;
        let header = std::str::from_utf8(&head[..end]).ok()?;
        let mut fields = header.split(' ');
        let id = ObjectId::from_hex(fields.next()?.as_bytes()).ok()?;
        let len: usize = fields.next()?.parse().ok()?;
        let crc: u32 = fields.next()?.parse().ok()?;
        let start = at + end as u64 + 1;
        if len > super::segment::MAX_SEGMENT_BYTES || start.checked_add(len as u64)? > size {
            return None;
        }
        index.insert(id, (start, len, crc));
        at = start + len as u64;
    }
    Some(index)
}

/// Replace the cache with the entries `fill` hands to `put`, one at a
/// time, each written as it comes (then the file renamed into place): the
/// caller holds one segment's bytes at a time, never the log's.
pub fn write_each(
    kapi_dir: &Path,
    fill: impl FnOnce(&mut dyn FnMut(ObjectId, &[u8]) -> std::io::Result<()>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(kapi_dir)?;
    crate::atomic::replace_derived(&kapi_dir.join(NAME), |out| {
        out.write_all(MAGIC)?;
        fill(&mut |id, bytes| {
            writeln!(
                out,
                "{} {} {}",
                id.to_hex(),
                bytes.len(),
                crc32fast::hash(bytes)
            )?;
            out.write_all(bytes)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(kapi_dir: &Path, segments: &[(ObjectId, &[u8])]) -> std::io::Result<()> {
        write_each(kapi_dir, |put| {
            for (id, bytes) in segments {
                put(*id, bytes)?;
            }
            Ok(())
        })
    }

    #[test]
    fn round_trips_and_ignores_damage() {
        let dir = tempfile::tempdir().unwrap();
        let a = ObjectId::from_hex(b"0123456789012345678901234567890123456789").unwrap();
        let b = ObjectId::from_hex(b"9876543210987654321098765432109876543210").unwrap();
        write(dir.path(), &[(a, b"one\n"), (b, b"")]).unwrap();
        let cache = SegmentCache::read(dir.path());
        assert_eq!(cache.get(&a).as_deref(), Some(&b"one\n"[..]));
        assert_eq!(cache.get(&b).as_deref(), Some(&b""[..]));
        // Into a buffer that held more, or less, than the entry.
        let mut buffer = b"a longer buffer than the entry".to_vec();
        assert!(cache.get_into(&a, &mut buffer));
        assert_eq!(buffer, b"one\n");
        assert!(cache.get_into(&b, &mut buffer));
        assert_eq!(buffer, b"");
        assert!(cache.get_into(&a, &mut buffer));
        assert_eq!(buffer, b"one\n");
        std::fs::write(
            dir.path().join(NAME),
            b"kapi segment cache v2\n0123 9\nshort",
        )
        .unwrap();
        assert_eq!(SegmentCache::read(dir.path()).len(), 0);
        // A flipped byte fails its checksum: the entry is read from git.
        write(dir.path(), &[(a, b"one\n")]).unwrap();
        let mut raw = std::fs::read(dir.path().join(NAME)).unwrap();
        let last = raw.len() - 2;
        raw[last] = b'X';
        std::fs::write(dir.path().join(NAME), raw).unwrap();
        assert_eq!(SegmentCache::read(dir.path()).get(&a), None);
        // An entry claiming more than a segment may hold (or than the file
        // holds) makes the file unread: nothing that size is allocated.
        for claim in [
            u64::MAX,
            (super::super::segment::MAX_SEGMENT_BYTES + 1) as u64,
            5,
        ] {
            std::fs::write(
                dir.path().join(NAME),
                format!("kapi segment cache v2\n{} {claim} 0\nabc", a.to_hex()),
            )
            .unwrap();
            assert_eq!(SegmentCache::read(dir.path()).len(), 0, "{claim}");
        }
    }
}
