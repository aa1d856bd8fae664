//! The matcher's plans kept across processes (`.git/kapi/rules.cache`): a
//! check of one page by 5,000 rules spent most of its time deriving, from
//! every form of every rule, what its automaton is built from
//! ([`crate::check::matcher::Plan`]); the next check by the same rules reads
//! it here instead.
//!
//! The file is derived (safe to delete, never a source of truth) and
//! hostile input like every derived file, and a plan it holds is obeyed:
//! it says which forms the automaton looks for, so a forged one could make
//! a check pass that should fail. So each plan is keyed by the SHA-256 of
//! the code that derived it and of everything in the rules it is derived
//! from ([`crate::check::matcher::Plan::key`]: a plan for other rules, or
//! by other code, is never found), and each entry is tagged with the
//! repository's secret (`.git/kapi/trust.secret`, as `trust.verdicts`
//! is): the tag is BLAKE3 in keyed mode, a MAC, over the magic line and
//! the entry's every byte, under a key derived from the secret for this
//! file (SHA-256 over a 5,000-rule plan took most of a millisecond of a
//! one-page check). An entry is checked when it is
//! first used, so a check pays for the plan it reads, not for every plan
//! the file keeps. An entry that does not check out (forged, copied from
//! another clone, a plan that does not fit its rules) is not used, and its
//! plan is derived again; a file cut short, grown or out of shape is not
//! read at all.
//!
//! An entry also names the term lists its rules came from, by the BLAKE3
//! hash of their text ([`crate::check::table::TermList`]): a list named by an
//! entry that checks out was read whole without error when the plan was
//! derived, so a check by the same text reads its rules only as it needs
//! them ([`RulesCache::knows_list`]).
//!
//! Format: the magic line, then entries (key, 32 bytes; the lists' count,
//! 4 bytes little-endian, and their hashes, 32 bytes each; the plan's
//! length, 8 bytes little-endian; the plan, [`Plan::to_bytes`]; the tag,
//! 32 bytes).

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::check::matcher::{Plan, PlanKey, Plans};

pub(crate) const NAME: &str = "rules.cache";
const MAGIC: &[u8] = b"kapi rules cache 3\n";
/// The largest file read (a plan for 100,000 rules is some 20 MiB).
const MAX_BYTES: u64 = 128 * 1024 * 1024;
/// Plans kept: one check builds one or two (the prose's and the raw
/// text's, or a counting matcher's), and files of other scopes a few more.
const MAX_ENTRIES: usize = 8;
/// The most term lists one entry names.
const MAX_LISTS: usize = 1024;

/// One entry of the file as read: where its parts lie, and whether its tag
/// has been found to check out.
struct Held {
    key: PlanKey,
    lists: Vec<[u8; 32]>,
    /// The plan's bytes in the file.
    plan: Range<usize>,
    /// The whole entry, tag included, in the file.
    whole: Range<usize>,
    checked: Option<bool>,
}

/// The plans read from the file, and those built since.
pub struct RulesCache {
    dir: PathBuf,
    secret: [u8; 32],
    /// The file's bytes, as read.
    bytes: Vec<u8>,
    held: Vec<Held>,
    /// Plans built by this process, not yet written: each entry's bytes,
    /// tag included.
    fresh: Vec<(PlanKey, Vec<u8>)>,
}

impl RulesCache {
    /// The cache of the repository whose kapi directory is `kapi_dir`;
    /// `None` when there is no secret to tag it with (a read-only
    /// repository): every plan is derived then.
    pub fn open(kapi_dir: &Path) -> Option<Self> {
        let secret = crate::store::verdicts::secret(kapi_dir)?;
        let bytes = read(&kapi_dir.join(NAME)).unwrap_or_default();
        let held = parse(&bytes).unwrap_or_default();
        Some(Self {
            dir: kapi_dir.to_path_buf(),
            secret,
            bytes,
            held,
            fresh: Vec::new(),
        })
    }

    /// Whether entry `i` checks out (worked out once).
    fn checks_out(&mut self, i: usize) -> bool {
        let h = &mut self.held[i];
        *h.checked.get_or_insert_with(|| {
            let whole = &self.bytes[h.whole.clone()];
            let (body, given) = whole.split_at(whole.len() - 32);
            tag(&self.secret, body) == given
        })
    }

    /// Whether a plan that checks out was derived from rules that include
    /// a term list whose text hashes to `hash`: then that text was read
    /// whole without error.
    pub fn knows_list(&mut self, hash: &[u8; 32]) -> bool {
        (0..self.held.len()).any(|i| self.held[i].lists.contains(hash) && self.checks_out(i))
    }

    /// Write the plans built since the file was read (or last written),
    /// newest first, beside those read (but those found not to check
    /// out), up to [`MAX_ENTRIES`]. The file is derived: a failure to
    /// write loses nothing but time.
    pub fn save(&mut self) {
        let Some(out) = self.written() else {
            return;
        };
        if out.len() as u64 <= MAX_BYTES {
            let _ = std::fs::create_dir_all(&self.dir);
            let _ = crate::atomic::replace_derived(&self.dir.join(NAME), |w| {
                std::io::Write::write_all(w, &out)
            });
        }
    }

    /// The file's bytes with the plans built since it was read, now held
    /// as read; `None` when none was built.
    fn written(&mut self) -> Option<Vec<u8>> {
        if self.fresh.is_empty() {
            return None;
        }
        let mut entries = std::mem::take(&mut self.fresh);
        for h in &self.held {
            if h.checked != Some(false) && !entries.iter().any(|(k, _)| *k == h.key) {
                entries.push((h.key, self.bytes[h.whole.clone()].to_vec()));
            }
        }
        entries.truncate(MAX_ENTRIES);
        let mut out = MAGIC.to_vec();
        for (_, entry) in &entries {
            out.extend_from_slice(entry);
        }
        self.held = parse(&out).unwrap_or_default();
        self.bytes = out.clone();
        Some(out)
    }
}

impl Plans for RulesCache {
    fn active(&self) -> bool {
        true
    }

    fn find(&mut self, key: &PlanKey) -> Option<Plan> {
        if let Some((_, entry)) = self.fresh.iter().find(|(k, _)| k == key) {
            let held = parse_entry(entry, 0)?;
            return Plan::from_bytes(&entry[held.plan]);
        }
        let i = self.held.iter().position(|h| h.key == *key)?;
        if !self.checks_out(i) {
            return None;
        }
        Plan::from_bytes(&self.bytes[self.held[i].plan.clone()])
    }

    fn keep(&mut self, key: PlanKey, lists: &[[u8; 32]], plan: &Plan) {
        if lists.len() > MAX_LISTS {
            return;
        }
        let plan = plan.to_bytes();
        let mut entry = Vec::with_capacity(plan.len() + 80 + 32 * lists.len());
        entry.extend_from_slice(&key);
        entry.extend_from_slice(&(lists.len() as u32).to_le_bytes());
        for l in lists {
            entry.extend_from_slice(l);
        }
        entry.extend_from_slice(&(plan.len() as u64).to_le_bytes());
        entry.extend_from_slice(&plan);
        let t = tag(&self.secret, &entry);
        entry.extend_from_slice(&t);
        self.fresh.retain(|(k, _)| *k != key);
        self.fresh.insert(0, (key, entry));
    }
}

/// The tag of an entry whose bytes before the tag are `body`: BLAKE3 in
/// keyed mode (a MAC) under a key derived from the repository's secret
/// for this file alone, over the magic line and the entry.
fn tag(secret: &[u8; 32], body: &[u8]) -> [u8; 32] {
    let key = blake3::derive_key("kapi 2026 rules.cache entry tag", secret);
    let mut mac = blake3::Hasher::new_keyed(&key);
    mac.update(MAGIC);
    mac.update(body);
    mac.finalize().into()
}

/// The bytes of the file at `path` (at most [`MAX_BYTES`]).
fn read(path: &Path) -> Option<Vec<u8>> {
    let file = crate::fsutil::open_regular(path, crate::fsutil::Links::Refuse).ok()?;
    // Sized at once: grown by doubling, a 5,000-rule plan was copied and
    // its pages touched twice over.
    let size = file.metadata().map_or(0, |m| m.len().min(MAX_BYTES + 1));
    let mut bytes = Vec::with_capacity(size as usize + 1);
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_BYTES).then_some(bytes)
}

/// The entries of a file, when it is in shape (their tags unchecked).
fn parse(bytes: &[u8]) -> Option<Vec<Held>> {
    let mut at = MAGIC.len();
    if !bytes.starts_with(MAGIC) {
        return None;
    }
    let mut entries = Vec::new();
    while at < bytes.len() {
        let held = parse_entry(&bytes[at..], at)?;
        at = held.whole.end;
        entries.push(held);
        if entries.len() > MAX_ENTRIES {
            return None;
        }
    }
    Some(entries)
}

/// The entry at the start of `bytes`, which lie at `offset` in the file.
fn parse_entry(bytes: &[u8], offset: usize) -> Option<Held> {
    let (key, after) = bytes.split_first_chunk::<32>()?;
    let (n, mut after) = after.split_first_chunk::<4>()?;
    let n = u32::from_le_bytes(*n) as usize;
    if n > MAX_LISTS {
        return None;
    }
    let mut lists = Vec::with_capacity(n);
    for _ in 0..n {
        let (l, rest) = after.split_first_chunk::<32>()?;
        lists.push(*l);
        after = rest;
    }
    let (len, after) = after.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    let start = bytes.len() - after.len();
    if after.len() < len.checked_add(32)? {
        return None;
    }
    Some(Held {
        key: *key,
        lists,
        plan: offset + start..offset + start + len,
        whole: offset..offset + start + len + 32,
        checked: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::TermRule;

    fn cache(secret: [u8; 32], bytes: &[u8]) -> RulesCache {
        RulesCache {
            dir: PathBuf::new(),
            secret,
            held: parse(bytes).unwrap_or_default(),
            bytes: bytes.to_vec(),
            fresh: Vec::new(),
        }
    }

    #[test]
    fn an_entry_is_used_only_when_it_checks_out() {
        let secret = [3u8; 32];
        let plan = Plan::of_rules(&[TermRule::listed("t", 1, "GitHub", &["Github", "git hub"])]);
        let (key, list, other) = ([9u8; 32], [5u8; 32], [6u8; 32]);
        let mut first = cache(secret, MAGIC);
        first.keep(key, &[list], &plan);
        // A plan kept is found before it is written, and after.
        assert_eq!(first.find(&key), Some(plan.clone()));
        let file = first.written().unwrap();
        assert_eq!(first.find(&key), Some(plan.clone()));
        let mut read = cache(secret, &file);
        assert_eq!(read.find(&key), Some(plan.clone()));
        assert!(read.knows_list(&list) && !read.knows_list(&other));
        assert!(read.find(&[8u8; 32]).is_none());
        // Another repository's secret: nothing.
        let mut elsewhere = cache([4u8; 32], &file);
        assert!(elsewhere.find(&key).is_none() && !elsewhere.knows_list(&list));
        // One byte changed anywhere, cut short, grown: nothing.
        for i in 0..file.len() {
            let mut forged = file.clone();
            forged[i] ^= 1;
            let mut c = cache(secret, &forged);
            assert!(c.find(&key).is_none() && !c.knows_list(&list), "byte {i}");
        }
        for n in 0..file.len() {
            let mut c = cache(secret, &file[..n]);
            assert!(c.find(&key).is_none() && !c.knows_list(&list), "cut at {n}");
        }
        let mut grown = file.clone();
        grown.push(0);
        assert!(parse(&grown).is_none());
        // A length past the end: nothing, no panic.
        let mut long = MAGIC.to_vec();
        long.extend_from_slice(&key);
        long.extend_from_slice(&0u32.to_le_bytes());
        long.extend_from_slice(&u64::MAX.to_le_bytes());
        long.extend_from_slice(&[0u8; 64]);
        assert!(parse(&long).is_none());
        // An entry found not to check out is not written again.
        let mut forged = file.clone();
        let last = forged.len() - 1;
        forged[last] ^= 1;
        let mut c = cache(secret, &forged);
        assert!(c.find(&key).is_none());
        c.keep([7u8; 32], &[], &plan);
        let rewritten = c.written().unwrap();
        let held = parse(&rewritten).unwrap();
        assert_eq!(
            held.iter().map(|h| h.key).collect::<Vec<_>>(),
            vec![[7u8; 32]]
        );
    }
}
