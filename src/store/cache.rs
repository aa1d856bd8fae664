//! A derived read cache: the inflated bytes of the log's segments, keyed by
//! blob id, in one file (`.git/kapi/segments.cache`). Reading a packed log
//! is mostly inflating chains of deltas; with the cache a read inflates only
//! the segments that changed since the last read. The cache is never a
//! source of truth, and always safe to delete.
//!
//! An entry is read *instead of* its blob, so it is obeyed: a forged entry
//! could add records the log does not hold (rules, decisions). So each
//! entry is tagged with the repository's secret (`.git/kapi/trust.secret`,
//! as `rules.cache` and `trust.verdicts` are): the tag is BLAKE3 in keyed
//! mode, a MAC, under a key derived from the secret for this file alone,
//! over the entry's bytes, its blob id and the magic line (an entry moved
//! under another id does not check out), checked by the reader thread that
//! reads the entry. An entry whose tag does not check out (damaged, forged)
//! is read from git instead, and the cache written anew. A file out of
//! shape, of an older format (v2 carried a CRC-32 only), or whose key line
//! says it was written under another key (copied from another clone, or the
//! secret made anew) is not read at all: the next read of a long log writes
//! it anew, streamed. Without a secret (one cannot be made: a read-only
//! repository) no cache is read or written. Records read from it pass the
//! same checks as records read from git.
//!
//! Format: the magic line; the key line ([`key_line`]); then entries,
//! `<blob id, hex> <length> <tag, 64 hex>\n` and the bytes.

use std::collections::HashMap;
use std::path::Path;

use gix::ObjectId;

pub(super) const NAME: &str = "segments.cache";
const MAGIC: &[u8] = b"kapi segment cache v3\n";
/// What the key of the entries' tags is derived for, from the secret.
const TAG_CONTEXT: &str = "kapi 2026 segments.cache entry tag";
/// Below this many bytes of segments a log reads fast enough without it.
pub const MIN_BYTES: usize = 256 * 1024;

/// Where an entry's bytes lie in the file, how many, and its tag.
#[derive(Clone, Copy)]
struct Entry {
    start: u64,
    len: usize,
    tag: [u8; 32],
}

/// A tag that checked out, with its entry's bytes: a cache written anew
/// copies it with them rather than hashing them again.
#[derive(Clone, Copy)]
pub struct Tag(blake3::Hash);

/// The cache file, open, with where each entry's bytes lie in it: an
/// entry is read when asked for, so a read of a long log never holds the
/// whole file (at a million operations, a quarter of a cold read's peak)
/// beside the records it parses from it.
#[derive(Default)]
pub struct SegmentCache {
    file: Option<std::fs::File>,
    /// The entries' tag key (derived from the secret; unused when empty).
    key: [u8; 32],
    index: HashMap<ObjectId, Entry>,
}

impl SegmentCache {
    /// Open the cache, or an empty one when it is missing or out of shape,
    /// or there is no secret to check its tags with.
    pub fn read(kapi_dir: &Path) -> Self {
        let Ok(file) =
            crate::fsutil::open_regular(&kapi_dir.join(NAME), crate::fsutil::Links::Refuse)
        else {
            return Self::default();
        };
        let Some(secret) = super::verdicts::secret(kapi_dir) else {
            return Self::default();
        };
        let key = key(&secret);
        match index(&file, &key) {
            Some(index) => Self {
                file: Some(file),
                key,
                index,
            },
            None => Self::default(),
        }
    }

    /// The bytes of a segment, if cached and its tag checks out.
    pub fn get(&self, blob: &ObjectId) -> Option<Vec<u8>> {
        self.get_tagged(blob).map(|(bytes, _)| bytes)
    }

    /// [`SegmentCache::get`], with the tag that checked out.
    pub fn get_tagged(&self, blob: &ObjectId) -> Option<(Vec<u8>, Tag)> {
        let mut bytes = Vec::new();
        let tag = self.checked_into(blob, &mut bytes)?;
        Some((bytes, tag))
    }

    /// Read a segment's bytes into `bytes` (replacing what it held), if
    /// cached and its tag checks out: a reader that reuses one buffer does
    /// not zero a new one for every segment (2% of a cold read's
    /// instructions).
    pub fn get_into(&self, blob: &ObjectId, bytes: &mut Vec<u8>) -> bool {
        self.checked_into(blob, bytes).is_some()
    }

    /// [`SegmentCache::get_into`], with the tag that checked out.
    fn checked_into(&self, blob: &ObjectId, bytes: &mut Vec<u8>) -> Option<Tag> {
        use std::os::unix::fs::FileExt;
        let entry = self.index.get(blob)?;
        let file = self.file.as_ref()?;
        // Only what the buffer did not hold yet is zeroed.
        bytes.resize(entry.len, 0);
        file.read_exact_at(bytes, entry.start).ok()?;
        let computed = tag(&self.key, blob, bytes);
        // `blake3::Hash` compares in constant time.
        (computed == blake3::Hash::from_bytes(entry.tag)).then_some(Tag(computed))
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the cache has an entry for `blob` (that checks out or not:
    /// read with [`SegmentCache::get`]).
    pub fn has(&self, blob: &ObjectId) -> bool {
        self.index.contains_key(blob)
    }

    /// How many bytes the cache's entry for `blob` holds, if it has one.
    pub fn size(&self, blob: &ObjectId) -> Option<usize> {
        self.index.get(blob).map(|e| e.len)
    }
}

/// The key of the entries' tags: this repository's, for this file alone.
fn key(secret: &[u8; 32]) -> [u8; 32] {
    blake3::derive_key(TAG_CONTEXT, secret)
}

/// An entry's tag: BLAKE3 keyed with [`key`] over the bytes, then the
/// blob id, its length (one byte), the bytes' length (eight, little-endian)
/// and the magic line, a suffix that reads back from the end alone. The
/// bytes come first so that BLAKE3 hashes them from a chunk boundary, many
/// chunks at once: after a prefix, the first chunks went one at a time,
/// and the tag cost half as much again.
fn tag(key: &[u8; 32], blob: &ObjectId, bytes: &[u8]) -> blake3::Hash {
    let id = blob.as_slice();
    let mut mac = blake3::Hasher::new_keyed(key);
    mac.update(bytes);
    mac.update(id);
    mac.update(&[id.len() as u8]);
    mac.update(&(bytes.len() as u64).to_le_bytes());
    mac.update(MAGIC);
    mac.finalize()
}

/// The line after the magic line: a tag of the magic line alone, which
/// says whether the file was written under this repository's key. A file
/// written under another (copied without its secret, or the secret made
/// anew) is not read at all, and is written anew streamed, as a missing one
/// is, rather than every entry found out one by one and its segment's bytes
/// held through the read for the cache.
fn key_line(key: &[u8; 32]) -> [u8; 65] {
    let mut line = [b'\n'; 65];
    line[..64].copy_from_slice(blake3::keyed_hash(key, MAGIC).to_hex().as_bytes());
    line
}

/// `<40 hex> <length> <64 hex tag>\n<bytes>` entries after the magic line
/// and the [`key_line`] (a file whose key line is not this key's is not
/// read): the headers are read one by one (each entry's bytes are skipped), and an
/// entry that claims more than the file holds or than a segment may hold
/// makes the whole file unread. Each entry's tag is checked when it is read
/// ([`SegmentCache::get_into`]), by whichever reader thread reads it.
fn index(file: &std::fs::File, key: &[u8; 32]) -> Option<HashMap<ObjectId, Entry>> {
    use std::os::unix::fs::FileExt;
    let size = file.metadata().ok()?.len();
    let expected = key_line(key);
    let mut start = vec![0; MAGIC.len() + expected.len()];
    file.read_exact_at(&mut start, 0).ok()?;
    let (magic, line) = start.split_at(MAGIC.len());
    if magic != MAGIC || line != expected {
        return None;
    }
    let mut at = start.len() as u64;
    let mut index = HashMap::new();
    // A header is 40 (or 64) hex digits, a length and a 64-digit tag: well
    // under this.
    let mut head = [0u8; 192];
    while at < size {
        let want = (size - at).min(head.len() as u64) as usize;
        file.read_exact_at(&mut head[..want], at).ok()?;
        let end = memchr::memchr(b'\n', &head[..want])?;
        let mut fields = head[..end].split(|&b| b == b' ');
        let id = ObjectId::from_hex(fields.next()?).ok()?;
        let len: usize = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
        let tag = crate::digest::unhex32(fields.next()?)?;
        if fields.next().is_some() {
            return None;
        }
        let start = at + end as u64 + 1;
        if len > super::segment::MAX_SEGMENT_BYTES || start.checked_add(len as u64)? > size {
            return None;
        }
        index.insert(id, Entry { start, len, tag });
        at = start + len as u64;
    }
    Some(index)
}

/// Replace the cache with the entries `fill` hands to `put`, one at a
/// time, each tagged and written as it comes (then the file renamed into
/// place): the caller holds one segment's bytes at a time, never the log's.
/// An entry copied from the cache before comes with the [`Tag`] it checked
/// out with, which is kept; any other is tagged here. Nothing is written
/// without a secret to tag the entries with.
pub fn write_each(
    kapi_dir: &Path,
    fill: impl FnOnce(
        &mut dyn FnMut(ObjectId, &[u8], Option<Tag>) -> std::io::Result<()>,
    ) -> std::io::Result<()>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(kapi_dir)?;
    let secret = super::verdicts::secret(kapi_dir).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "no repository secret to tag the read cache with",
        )
    })?;
    let key = key(&secret);
    crate::atomic::replace_derived(&kapi_dir.join(NAME), |out| {
        out.write_all(MAGIC)?;
        out.write_all(&key_line(&key))?;
        fill(&mut |id, bytes, checked| {
            let tag = checked.map_or_else(|| tag(&key, &id, bytes), |t| t.0);
            writeln!(out, "{} {} {}", id.to_hex(), bytes.len(), tag.to_hex())?;
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
                put(*id, bytes, None)?;
            }
            Ok(())
        })
    }

    const A: &[u8; 40] = b"0123456789012345678901234567890123456789";
    const B: &[u8; 40] = b"9876543210987654321098765432109876543210";

    /// The start of a file this repository's key wrote: the magic line and
    /// the key line.
    fn preamble(kapi_dir: &Path) -> String {
        let key = key(&crate::store::verdicts::secret(kapi_dir).unwrap());
        let line = key_line(&key);
        format!(
            "{}{}",
            std::str::from_utf8(MAGIC).unwrap(),
            std::str::from_utf8(&line).unwrap()
        )
    }

    /// The file's entries: each header's fields and the bytes.
    fn entries(raw: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut at = MAGIC.len() + 65;
        let mut out = Vec::new();
        while at < raw.len() {
            let end = at + memchr::memchr(b'\n', &raw[at..]).unwrap();
            let header = std::str::from_utf8(&raw[at..end]).unwrap().to_owned();
            let len: usize = header.split(' ').nth(1).unwrap().parse().unwrap();
            out.push((header, raw[end + 1..end + 1 + len].to_vec()));
            at = end + 1 + len;
        }
        out
    }

    /// A file of these entries, under the key line of `like`.
    fn assemble(like: &[u8], entries: &[(String, Vec<u8>)]) -> Vec<u8> {
        let mut raw = like[..MAGIC.len() + 65].to_vec();
        for (header, bytes) in entries {
            raw.extend_from_slice(header.as_bytes());
            raw.push(b'\n');
            raw.extend_from_slice(bytes);
        }
        raw
    }

    #[test]
    fn round_trips_and_ignores_damage() {
        let dir = tempfile::tempdir().unwrap();
        let a = ObjectId::from_hex(A).unwrap();
        let b = ObjectId::from_hex(B).unwrap();
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
        // Written anew with the tags that checked out: the same file.
        let before = std::fs::read(dir.path().join(NAME)).unwrap();
        write_each(dir.path(), |put| {
            for id in [a, b] {
                let (bytes, tag) = cache.get_tagged(&id).unwrap();
                put(id, &bytes, Some(tag))?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(dir.path().join(NAME)).unwrap(), before);
        let preamble = preamble(dir.path());
        assert!(
            std::fs::read(dir.path().join(NAME))
                .unwrap()
                .starts_with(preamble.as_bytes())
        );
        std::fs::write(dir.path().join(NAME), format!("{preamble}0123 9\nshort")).unwrap();
        assert_eq!(SegmentCache::read(dir.path()).len(), 0);
        // A flipped byte fails its tag: the entry is read from git.
        write(dir.path(), &[(a, b"one\n")]).unwrap();
        let mut raw = std::fs::read(dir.path().join(NAME)).unwrap();
        let last = raw.len() - 2;
        raw[last] = b'X';
        std::fs::write(dir.path().join(NAME), raw).unwrap();
        let damaged = SegmentCache::read(dir.path());
        assert!(damaged.has(&a));
        assert_eq!(damaged.get(&a), None);
        // An entry claiming more than a segment may hold (or than the file
        // holds), or with a tag out of shape, makes the file unread:
        // nothing that size is allocated.
        let zeros = "0".repeat(64);
        for (claim, tag) in [
            (u64::MAX, zeros.as_str()),
            (
                (super::super::segment::MAX_SEGMENT_BYTES + 1) as u64,
                &zeros,
            ),
            (5, &zeros),
            (3, "0"),
            (3, &"G".repeat(64)),
            (3, &"A".repeat(64)),
            (3, &format!("{zeros} 0")),
        ] {
            std::fs::write(
                dir.path().join(NAME),
                format!("{preamble}{} {claim} {tag}\nabc", a.to_hex()),
            )
            .unwrap();
            assert_eq!(SegmentCache::read(dir.path()).len(), 0, "{claim} {tag}");
        }
    }

    #[test]
    fn only_entries_tagged_with_the_secret_for_their_own_id_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let a = ObjectId::from_hex(A).unwrap();
        let b = ObjectId::from_hex(B).unwrap();
        write(dir.path(), &[(a, b"genuine a\n"), (b, b"genuine b\n")]).unwrap();
        let path = dir.path().join(NAME);
        let genuine = std::fs::read(&path).unwrap();
        let held = entries(&genuine);
        assert_eq!(
            SegmentCache::read(dir.path()).get(&a).unwrap(),
            b"genuine a\n"
        );

        // Other bytes under the genuine tag (a forged record added).
        let mut forged = held.clone();
        forged[0].1 = b"forged a\n".to_vec();
        let fields: Vec<&str> = held[0].0.split(' ').collect();
        forged[0].0 = format!("{} {} {}", fields[0], forged[0].1.len(), fields[2]);
        std::fs::write(&path, assemble(&genuine, &forged)).unwrap();
        let cache = SegmentCache::read(dir.path());
        assert_eq!(cache.len(), 2, "in shape: read, entry by entry");
        assert_eq!(cache.get(&a), None);
        assert_eq!(cache.get(&b).unwrap(), b"genuine b\n");

        // Both entries, tags and all, moved under each other's ids.
        let mut moved = held.clone();
        let (ida, idb) = (a.to_hex().to_string(), b.to_hex().to_string());
        moved[0].0 = moved[0].0.replacen(&ida, &idb, 1);
        moved[1].0 = moved[1].0.replacen(&idb, &ida, 1);
        std::fs::write(&path, assemble(&genuine, &moved)).unwrap();
        let cache = SegmentCache::read(dir.path());
        assert!(cache.has(&a) && cache.has(&b));
        assert_eq!((cache.get(&a), cache.get(&b)), (None, None));

        // Written under another repository's secret (the file copied alone,
        // or the secret made anew): its key line says so, and it is not
        // read at all (a read writes it anew, streamed).
        let other = tempfile::tempdir().unwrap();
        write(other.path(), &[(a, b"genuine a\n"), (b, b"genuine b\n")]).unwrap();
        let theirs = std::fs::read(other.path().join(NAME)).unwrap();
        assert_ne!(theirs, genuine, "each repository its own secret");
        std::fs::write(&path, &theirs).unwrap();
        assert_eq!(SegmentCache::read(dir.path()).len(), 0);
        // Its entries under this repository's key line: in shape, and no
        // entry checks out.
        std::fs::write(&path, assemble(&genuine, &entries(&theirs))).unwrap();
        let cache = SegmentCache::read(dir.path());
        assert_eq!(cache.len(), 2);
        assert_eq!((cache.get(&a), cache.get(&b)), (None, None));
        // ... or with the secret's own key in place of the derived one.
        let secret = crate::store::verdicts::secret(dir.path()).unwrap();
        let mut raw_key = held.clone();
        for (n, (id, bytes)) in [(a, b"genuine a\n"), (b, b"genuine b\n")]
            .iter()
            .enumerate()
        {
            let t = tag(&secret, id, *bytes).to_hex();
            raw_key[n].0 = format!("{} {} {t}", id.to_hex(), bytes.len());
        }
        std::fs::write(&path, assemble(&genuine, &raw_key)).unwrap();
        let cache = SegmentCache::read(dir.path());
        assert_eq!((cache.get(&a), cache.get(&b)), (None, None));

        // A v2 file (CRC-32 only, the layout before tags) is not read.
        let mut v2 = b"kapi segment cache v2\n".to_vec();
        v2.extend_from_slice(
            format!("{} 10 {}\n", a.to_hex(), crc32fast::hash(b"genuine a\n")).as_bytes(),
        );
        v2.extend_from_slice(b"genuine a\n");
        std::fs::write(&path, v2).unwrap();
        assert_eq!(SegmentCache::read(dir.path()).len(), 0);

        // The genuine file reads again.
        std::fs::write(&path, &genuine).unwrap();
        let cache = SegmentCache::read(dir.path());
        assert_eq!(cache.get(&a).unwrap(), b"genuine a\n");
        assert_eq!(cache.get(&b).unwrap(), b"genuine b\n");
    }

    #[test]
    fn without_a_secret_no_cache_is_read_or_written() {
        let dir = tempfile::tempdir().unwrap();
        let a = ObjectId::from_hex(A).unwrap();
        write(dir.path(), &[(a, b"one\n")]).unwrap();
        let genuine = std::fs::read(dir.path().join(NAME)).unwrap();
        // The secret's place taken by a folder: it can be neither read nor
        // made.
        std::fs::remove_file(dir.path().join("trust.secret")).unwrap();
        std::fs::create_dir(dir.path().join("trust.secret")).unwrap();
        assert_eq!(SegmentCache::read(dir.path()).len(), 0);
        assert!(write(dir.path(), &[(a, b"two\n")]).is_err());
        assert_eq!(std::fs::read(dir.path().join(NAME)).unwrap(), genuine);
    }
}
