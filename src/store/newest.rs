//! The newest id a log holds, for minting ids that sort after it. It is
//! taken from the operations the log holds and can read, never from a
//! commit message (anyone who can push can write any message), and an
//! operation dated more than [`AHEAD_BOUND_MS`] past this machine's clock is
//! set apart: a pushed operation dated 2060 must not drag every later id
//! here into 2060. `kapi store doctor` names such operations.
//!
//! Reading a whole log for this on every append would cost what a full
//! read costs, so the answer is kept in a derived cache
//! (`.git/kapi/newest`), one entry per ref keyed by the tree it was
//! computed from. When the ref has moved, only the segments that differ
//! between the cached tree and the new one are read. The cache is safe to
//! delete: a missing or damaged one is rebuilt from the log.
//!
//! The cache is obeyed (it decides what ids are minted past), so it is
//! tagged with the repository's secret (`.git/kapi/trust.secret`, as
//! `trust.verdicts` and `rules.cache` are): a tagged entry was computed
//! here from its tree, and a tree's content never changes, so it is taken
//! without reading a segment. A file whose tag does not check out (forged,
//! copied from another clone, torn) is not read at all. An untagged cache
//! (an older kapi's, with a CRC-32; or written where no secret can be
//! made) is taken only where the newest id it names is found in its tree
//! (one segment read), and is written back tagged.

use std::collections::BTreeMap;
use std::path::Path;

use gix::ObjectId;

use super::tree::{self, Entries};
use super::{LogRef, StoreError, segment};
use crate::ops::id::OpId;
use crate::ops::record::Record;

/// How far past this machine's clock an operation may be dated and still
/// count as the newest id when minting (10 minutes).
pub const AHEAD_BOUND_MS: u64 = 10 * 60 * 1000;

/// Whether the operation `id` is dated more than [`AHEAD_BOUND_MS`] past
/// `now_ms` (Unix milliseconds): held back by the fold, refused by an
/// import, named by doctor and sync.
pub fn is_ahead(id: &str, now_ms: u64) -> bool {
    crate::ops::id::time_of(id) + crate::ops::id::EPOCH_MS > now_ms.saturating_add(AHEAD_BOUND_MS)
}
/// This machine's clock in Unix milliseconds, read from the system whatever
/// `KAPI_NOW` says: the bound no id is minted past.
pub fn system_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// At most this many ahead ids are remembered per ref.
const MAX_AHEAD: usize = 1024;

pub(super) const NAME: &str = "newest";
const MAGIC: &str = "kapi newest v1";
/// What the tag says the file is.
const TAG_DOMAIN: &str = "kapi newest cache tag";
/// The tag's line, last before the CRC-32: written as an entry of this
/// name (the tag's first 160 bits where a tree is, then an empty entry),
/// which an older kapi reads and writes back like any other (stale then:
/// the cache is looked up in the log as an untagged one is).
const TAG_NAME: &str = "tag";

/// The newest ids of one log's tree, as seen at `seen_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Newest {
    /// The newest id dated within the bound of `seen_at`.
    pub within: Option<OpId>,
    /// Ids dated past the bound of `seen_at`, ascending (at most 1,024).
    pub ahead: Vec<OpId>,
    /// Whether ids were left out of `ahead` for its cap.
    pub truncated: bool,
    pub seen_at: u64,
}

impl Newest {
    fn empty(seen_at: u64) -> Self {
        Self {
            within: None,
            ahead: Vec::new(),
            truncated: false,
            seen_at,
        }
    }

    fn add(&mut self, id: OpId) {
        if id.unix_ms() > self.seen_at + AHEAD_BOUND_MS {
            if let Err(at) = self.ahead.binary_search(&id) {
                self.ahead.insert(at, id);
            }
            if self.ahead.len() > MAX_AHEAD {
                self.ahead.pop();
                self.truncated = true;
            }
        } else {
            self.within = self.within.take().max(Some(id));
        }
    }

    /// The same ids seen at a later instant: ahead ids whose time has come
    /// count as within. An earlier instant (writers read their clocks
    /// before they queue for the lock) reads as `seen_at`: an id within
    /// the bound of `seen_at` is at most that much further ahead. `None`
    /// when a truncated list of ahead ids ran out (a fresh read is needed).
    fn at(&self, now_ms: u64) -> Option<Newest> {
        // Seen at an instant far past `now_ms` (a clock that was pinned
        // ahead): what it counted as within cannot be trusted now.
        if self.seen_at > now_ms.saturating_add(AHEAD_BOUND_MS) {
            return None;
        }
        let now_ms = now_ms.max(self.seen_at);
        let mut out = Newest::empty(now_ms);
        out.within = self.within;
        out.truncated = self.truncated;
        for id in &self.ahead {
            out.add(*id);
        }
        if self.truncated && out.ahead.is_empty() {
            return None;
        }
        Some(out)
    }

    /// The newest id to mint past at `now_ms`.
    pub fn for_minting(&self) -> Option<&OpId> {
        self.within.as_ref()
    }
}

/// One cache entry: the tree it describes and what it holds.
struct Entry {
    tree: ObjectId,
    newest: Newest,
}

/// The cache's entries, and whether the repository's secret vouches for
/// them (a tag that checks out); nothing when the file does not check out.
fn read_cache(kapi_dir: &Path) -> (BTreeMap<String, Entry>, bool) {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(kapi_dir.join(NAME)) else {
        return (out, false);
    };
    // The last line checksums the rest: a write a crash tore reads as none.
    let Some((body, crc)) = text
        .strip_suffix('\n')
        .and_then(|t| t.rsplit_once('\n'))
        .and_then(|(body, last)| Some((body, last.strip_prefix("crc ")?.parse::<u32>().ok()?)))
    else {
        return (out, false);
    };
    if crc32fast::hash(body.as_bytes()) != crc {
        return (out, false);
    }
    // The tag vouches for every byte before its line.
    let (body, tagged) = match body.rsplit_once('\n') {
        Some((before, last)) if last.starts_with(&format!("{TAG_NAME} ")) => {
            let claimed = last.split(' ').nth(1).unwrap_or_default();
            let tagged = claimed.len() == 40
                && super::verdicts::tag_hex(kapi_dir, TAG_DOMAIN, format!("{before}\n").as_bytes())
                    .is_some_and(|hex| hex.starts_with(claimed));
            (before, tagged)
        }
        _ => (body, false),
    };
    let mut lines = body.lines();
    if lines.next() != Some(MAGIC) {
        return (out, false);
    }
    for line in lines {
        let mut fields = line.split(' ');
        let parsed = (|| {
            let name = fields.next()?.to_owned();
            let tree = ObjectId::from_hex(fields.next()?.as_bytes()).ok()?;
            let seen_at: u64 = fields.next()?.parse().ok()?;
            let within = match fields.next()? {
                "-" => None,
                id => Some(OpId::parse(id).ok()?),
            };
            let truncated = fields.next()? == "1";
            let mut ahead = Vec::new();
            for id in fields {
                ahead.push(OpId::parse(id).ok()?);
            }
            Some((
                name,
                Entry {
                    tree,
                    newest: Newest {
                        within,
                        ahead,
                        truncated,
                        seen_at,
                    },
                },
            ))
        })();
        match parsed {
            Some((name, _)) if name == TAG_NAME => {}
            Some((name, entry)) => {
                out.insert(name, entry);
            }
            None => return (BTreeMap::new(), false),
        }
    }
    (out, tagged)
}

/// Write the cache (call under the journal lock, which every writer of the
/// cache holds; best effort: the cache is derived), not synced. Every
/// append rewrites it, so while it is under a page it is written over in
/// place (`fsutil::overwrite`: one write, no block freed and allocated
/// again, which ext4 with `discard` makes the writer wait for); a larger
/// one is renamed in whole (`atomic::replace_derived`). Either way a
/// writer killed while writing leaves the cache it found (or, killed
/// between the write and the cut of a longer old one, a tail that fails
/// the checksum), and a crash that tears it fails its checksum: it is
/// computed again from the log.
fn write_cache(kapi_dir: &Path, entries: &BTreeMap<String, Entry>) {
    let mut text = format!("{MAGIC}\n");
    for (name, e) in entries.iter().filter(|(name, _)| *name != TAG_NAME) {
        let n = &e.newest;
        text.push_str(&format!(
            "{name} {} {} {} {}",
            e.tree.to_hex(),
            n.seen_at,
            n.within.as_ref().map_or("-", OpId::as_str),
            u8::from(n.truncated)
        ));
        for id in &n.ahead {
            text.push(' ');
            text.push_str(id.as_str());
        }
        text.push('\n');
    }
    if let Some(hex) = super::verdicts::tag_hex(kapi_dir, TAG_DOMAIN, text.as_bytes()) {
        text.push_str(&format!("{TAG_NAME} {} 0 - 0\n", &hex[..40]));
    }
    let crc = crc32fast::hash(text.trim_end_matches('\n').as_bytes());
    text.push_str(&format!("crc {crc}\n"));
    let path = kapi_dir.join(NAME);
    if text.len() <= IN_PLACE_BYTES
        && crate::fsutil::overwrite_regular(&path, crate::fsutil::Links::Refuse, text.as_bytes())
            .is_ok()
    {
        return;
    }
    let _ = crate::atomic::replace_derived(&path, |out| {
        std::io::Write::write_all(out, text.as_bytes())
    });
}

/// The largest cache written over in place: one page, written by one
/// `write` a kill cannot split.
const IN_PLACE_BYTES: usize = 4096;

/// The newest ids of the log `which` whose tip tree is `root`, as of
/// `now_ms`; the second value says whether the cache should be rewritten
/// with it (done by [`remember`], under the journal lock).
pub fn of_tree(
    repo: &gix::Repository,
    kapi_dir: &Path,
    which: LogRef,
    root: Option<ObjectId>,
    now_ms: u64,
) -> Result<(Newest, bool), StoreError> {
    let Some(root) = root else {
        return Ok((Newest::empty(now_ms), false));
    };
    let (cache, tagged) = read_cache(kapi_dir);
    // The cache is derived, so it is obeyed only where it checks out
    // against the log (`ref moved back`, `git gc`, a forged file).
    let cached = cache
        .get(which.name())
        .filter(|e| checks_out(repo, e, tagged).unwrap_or(false));
    if let Some(e) = cached
        && e.tree == root
        && let Some(n) = e.newest.at(now_ms)
    {
        // An untagged entry that checked out is written back tagged.
        return Ok((n, !tagged));
    }
    let mut newest = Newest::empty(now_ms);
    let changed = match cached.and_then(|e| e.newest.at(now_ms).map(|n| (e.tree, n))) {
        Some((old_tree, old)) => {
            newest = old;
            changed_segments(repo, old_tree, root)?
        }
        None => all_segments(repo, root)?,
    };
    scan(repo, kapi_dir, &changed, &mut newest)?;
    Ok((newest, true))
}

/// Whether a cache entry agrees with the log: its tree is there, the
/// newest id it names is dated within the bound of when it was seen and,
/// unless the secret's tag vouches for the entry (computed here from that
/// tree), is held in that tree (one segment read), and where it names none
/// the tree is empty (every id ahead of the clock is the only other way,
/// and is computed again). Anything else is computed again from the log.
fn checks_out(repo: &gix::Repository, e: &Entry, tagged: bool) -> Result<bool, StoreError> {
    let n = &e.newest;
    if n.ahead
        .iter()
        .any(|id| id.unix_ms() <= n.seen_at + AHEAD_BOUND_MS)
    {
        return Ok(false);
    }
    if !repo.has_object(e.tree) {
        return Ok(false);
    }
    let Some(within) = &n.within else {
        return Ok(tree::read_entries(repo, e.tree)?.is_empty());
    };
    if within.unix_ms() > n.seen_at + AHEAD_BOUND_MS {
        return Ok(false);
    }
    if tagged {
        return Ok(true);
    }
    let Some(bytes) = tree::read_segment(repo, e.tree, segment::shard(within.as_str()))? else {
        return Ok(false);
    };
    Ok(segment::lines(&bytes).any(|l| {
        segment::line_id(l) == Some(within.as_str())
            && Record::from_untrusted(l).is_ok_and(|r| r.id == within.as_str())
    }))
}

/// Keep what [`of_tree`] computed for the next writer.
pub fn remember(kapi_dir: &Path, which: LogRef, root: ObjectId, newest: &Newest) {
    // The other log's entry is kept only where the tag vouches for it:
    // written back tagged, an unverified one would be taken unread.
    let (mut cache, tagged) = read_cache(kapi_dir);
    if !tagged {
        cache.clear();
    }
    cache.insert(
        which.name().to_owned(),
        Entry {
            tree: root,
            newest: newest.clone(),
        },
    );
    write_cache(kapi_dir, &cache);
}

/// After a commit moved `which` from `old` to `new` by adding `ids`: if the
/// cache described `old`, it now describes `new` (call under the journal
/// lock). The next writer then finds its answer without reading a segment.
pub fn advance(
    kapi_dir: &Path,
    which: LogRef,
    old: Option<ObjectId>,
    new: ObjectId,
    ids: &[OpId],
    now_ms: u64,
) {
    let (mut cache, tagged) = read_cache(kapi_dir);
    if !tagged {
        cache.clear();
    }
    let newest = match (old, cache.get(which.name())) {
        (None, _) => Newest::empty(now_ms),
        (Some(old), Some(e)) if e.tree == old => match e.newest.at(now_ms) {
            Some(n) => n,
            None => return,
        },
        _ => return,
    };
    let mut newest = newest;
    for id in ids {
        newest.add(*id);
    }
    cache.insert(which.name().to_owned(), Entry { tree: new, newest });
    write_cache(kapi_dir, &cache);
}

/// Add the newest valid, correctly placed operations of these segments.
/// Ids are found without parsing (`line_id`), then only the candidates
/// from the newest down are parsed and checked, until one within the bound
/// is valid: a full scan of a large log costs its inflating, not a parse of
/// every record. Segments come from the read cache where it has them.
fn scan(
    repo: &gix::Repository,
    kapi_dir: &Path,
    segments: &[((u8, u8), ObjectId)],
    newest: &mut Newest,
) -> Result<(), StoreError> {
    let cache = if segments.len() > 64 {
        super::cache::SegmentCache::read(kapi_dir)
    } else {
        super::cache::SegmentCache::default()
    };
    let mut blobs: Vec<std::borrow::Cow<'_, [u8]>> = Vec::with_capacity(segments.len());
    for (_, blob) in segments {
        match cache.get(blob) {
            Some(bytes) => blobs.push(bytes.into()),
            None => blobs.push(
                tree::read_capped_segment(repo, *blob)?
                    .unwrap_or_default()
                    .into(),
            ),
        }
    }
    let mut candidates: Vec<(u128, usize, &[u8])> = Vec::new();
    for (n, bytes) in blobs.iter().enumerate() {
        for line in segment::lines(bytes) {
            if let Some(id) = segment::line_id(line)
                && crate::ops::id::is_id(id)
            {
                candidates.push((crate::ops::id::key(id), n, line));
            }
        }
    }
    candidates.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
    let bound = newest.seen_at.saturating_add(AHEAD_BOUND_MS);
    let floor = newest
        .within
        .as_ref()
        .map(|id| crate::ops::id::key(id.as_str()));
    for (key, n, line) in candidates {
        if floor.is_some_and(|f| key <= f) {
            break;
        }
        let Ok(record) = Record::from_untrusted(line) else {
            continue;
        };
        if segment::shard(&record.id) != segments[n].0 {
            continue;
        }
        let id = record.op_id();
        let within = id.unix_ms() <= bound;
        newest.add(id);
        if within {
            break;
        }
    }
    Ok(())
}

pub(super) type Segments = Vec<((u8, u8), ObjectId)>;

/// Shard entries of one level (`read_entries` gives only one-character
/// shard names): trees at the top, blobs below.
fn shard_entries(entries: &Entries, tree: bool) -> BTreeMap<u8, ObjectId> {
    entries
        .iter()
        .filter(|e| {
            if tree {
                e.mode.is_tree()
            } else {
                e.mode.is_blob()
            }
        })
        .map(|e| (e.filename[0], e.oid))
        .collect()
}

pub(super) fn all_segments(repo: &gix::Repository, root: ObjectId) -> Result<Segments, StoreError> {
    let mut out = Vec::new();
    for (a, level) in shard_entries(&tree::read_entries(repo, root)?, true) {
        for (b, blob) in shard_entries(&tree::read_entries(repo, level)?, false) {
            out.push(((a, b), blob));
        }
    }
    Ok(out)
}

/// The segments of `new` that `old` does not hold with the same bytes.
fn changed_segments(
    repo: &gix::Repository,
    old: ObjectId,
    new: ObjectId,
) -> Result<Segments, StoreError> {
    if old == new {
        return Ok(Vec::new());
    }
    let old_top = shard_entries(&tree::read_entries(repo, old)?, true);
    let mut out = Vec::new();
    for (a, level) in shard_entries(&tree::read_entries(repo, new)?, true) {
        let old_leaves = match old_top.get(&a) {
            Some(old_level) if *old_level == level => continue,
            Some(old_level) => shard_entries(&tree::read_entries(repo, *old_level)?, false),
            None => BTreeMap::new(),
        };
        for (b, blob) in shard_entries(&tree::read_entries(repo, level)?, false) {
            if old_leaves.get(&b) != Some(&blob) {
                out.push(((a, b), blob));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, tail: u128) -> OpId {
        OpId::mint(ms, tail, None).unwrap()
    }

    #[test]
    fn ids_past_the_bound_are_set_apart_until_their_time_comes() {
        let now = crate::ops::id::EPOCH_MS + 1_000_000;
        let mut n = Newest::empty(now);
        n.add(id(now - 5, 1));
        n.add(id(now + AHEAD_BOUND_MS + 60_000, 2));
        assert_eq!(n.for_minting(), Some(&id(now - 5, 1)));
        assert_eq!(n.ahead.len(), 1);
        let later = n.at(now + 120_000).unwrap();
        assert_eq!(
            later.for_minting(),
            Some(&id(now + AHEAD_BOUND_MS + 60_000, 2))
        );
        assert!(later.ahead.is_empty());
        assert_eq!(n.at(now - 1).unwrap().for_minting(), n.for_minting());
    }

    fn entries(n: usize) -> BTreeMap<String, Entry> {
        let now = crate::ops::id::EPOCH_MS + 1_000_000;
        let mut newest = Newest::empty(now);
        newest.add(id(now - 5, 1));
        for k in 0..n {
            newest.add(id(now + AHEAD_BOUND_MS + 60_000 + k as u64, k as u128));
        }
        let tree = ObjectId::from_hex(b"4b825dc642cb6eb9a060e54bf8d69288fbca4904").unwrap();
        BTreeMap::from([(LogRef::Shared.name().to_owned(), Entry { tree, newest })])
    }

    #[test]
    fn the_cache_reads_back_written_in_place_or_renamed_and_a_left_tail_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(NAME);
        let same = |a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, a), (kb, b))| ka == kb && a.tree == b.tree && a.newest == b.newest)
        };
        // Many ids ahead: over a page, renamed in whole.
        let big = entries(300);
        write_cache(dir.path(), &big);
        assert!(std::fs::metadata(&path).unwrap().len() as usize > IN_PLACE_BYTES);
        assert!(same(&read_cache(dir.path()).0, &big));
        // Under a page: written over the larger one in place, cut to size.
        let small = entries(1);
        write_cache(dir.path(), &small);
        assert!((std::fs::metadata(&path).unwrap().len() as usize) < IN_PLACE_BYTES);
        assert!(same(&read_cache(dir.path()).0, &small));
        // A writer killed between writing a shorter cache over a longer one
        // and cutting it leaves the old tail: the checksum refuses it.
        let longer = std::fs::read(&path).unwrap();
        write_cache(dir.path(), &entries(0));
        let mut torn = std::fs::read(&path).unwrap();
        torn.extend_from_slice(&longer[torn.len()..]);
        std::fs::write(&path, &torn).unwrap();
        assert!(read_cache(dir.path()).0.is_empty());
    }

    #[test]
    fn only_the_secret_s_tag_vouches_for_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(NAME);
        let with_crc = |body: &str| format!("{body}\ncrc {}\n", crc32fast::hash(body.as_bytes()));
        write_cache(dir.path(), &entries(2));
        let (read, tagged) = read_cache(dir.path());
        assert!(tagged);
        assert_eq!(read.len(), 1);
        let text = std::fs::read_to_string(&path).unwrap();
        let (body, _) = text.trim_end().rsplit_once('\n').unwrap();
        let (entries_text, tag_line) = body.rsplit_once('\n').unwrap();
        assert!(tag_line.starts_with("tag "));
        // Tagged with another secret (another clone's file, or made up):
        // read, but not vouched for (looked up in the log).
        let other = super::super::verdicts::tag(
            &[7; 32],
            TAG_DOMAIN,
            format!("{entries_text}\n").as_bytes(),
        );
        let forged = format!(
            "{entries_text}\ntag {} 0 - 0",
            &crate::digest::hex(&other)[..40]
        );
        std::fs::write(&path, with_crc(&forged)).unwrap();
        let (read, tagged) = read_cache(dir.path());
        assert!(!tagged);
        assert_eq!(read.len(), 1);
        // The right tag over other bytes: not vouched for either.
        let grown = body.replacen(" 0 ", " 1 ", 1);
        assert_ne!(grown, body);
        std::fs::write(&path, with_crc(&grown)).unwrap();
        assert!(!read_cache(dir.path()).1);
        // An older kapi's cache (no tag line; or the tag line it kept and
        // wrote back after an entry it changed): read, not vouched for.
        std::fs::write(&path, with_crc(entries_text)).unwrap();
        let (read, tagged) = read_cache(dir.path());
        assert!(!tagged);
        assert_eq!(read.len(), 1);
        let rewritten = format!(
            "{entries_text}\nrefs/kapi/local {}\n{tag_line}",
            &entries_text[entries_text.find("refs/kapi/ops ").unwrap() + 14..]
        );
        std::fs::write(&path, with_crc(&rewritten)).unwrap();
        let (read, tagged) = read_cache(dir.path());
        assert!(!tagged);
        assert_eq!(read.len(), 2);
        assert!(!read.contains_key(TAG_NAME));
    }
}
