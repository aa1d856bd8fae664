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
//! hash of their text ([`crate::check::table::TermList`]), each with the
//! lines its rules were found on: a list named by an entry that checks out
//! was read whole without error when the plan was derived, so a check by
//! the same text takes its lines from there and reads its rules only as it
//! needs them ([`RulesCache::known_lines`]).
//!
//! What checking costs is reading what it vouches for: at 5,000 rules a
//! one-page check hashed 1.3 MB (the list's text, the plan's entry), a
//! third of its instructions. So a check records, in `rules.seen` (tagged
//! with the secret as the newest-id and project caches are), the file
//! system's identity of what it checked (device, inode, size, modification
//! and change times, as git's index records a file's): the `rules.cache` whose
//! entries it found to check out, and each term list with the hash of its
//! text. A later check by files with those very identities takes the
//! entries and hashes as checked. A file cannot be changed, replaced or
//! copied back without a new change time (only the clock's owner sets
//! it), and a file changed less than [`SETTLED`] before it is recorded is
//! not recorded (two writes within one tick of the file system's clock can
//! leave the same size and times: git's "racy clean"), so an identity
//! recorded stands for the bytes that were checked.
//!
//! Format: the magic line, then entries (key, 32 bytes; the lists' count,
//! 4 bytes little-endian, and per list its hash, 32 bytes, and its lines,
//! [`Lines::as_bytes`] after their count of `u32`s, 4 bytes little-endian;
//! the plan's length, 8 bytes little-endian; the plan, [`Plan::to_bytes`];
//! the tag, 32 bytes). A plan and a list's lines taken from the file are
//! read where they lie in the bytes read, not copied.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::check::matcher::{Plan, PlanKey, Plans};
use crate::check::table::{Lines, TermList};
use crate::store::verdicts;

pub(crate) const NAME: &str = "rules.cache";
const MAGIC: &[u8] = b"kapi rules cache 4\n";
/// The largest file read (a plan for 100,000 rules is some 20 MiB).
const MAX_BYTES: u64 = 128 * 1024 * 1024;
/// Plans kept: one check builds one or two (the prose's and the raw
/// text's, or a counting matcher's), and files of other scopes a few more.
const MAX_ENTRIES: usize = 8;
/// The most term lists one entry names.
const MAX_LISTS: usize = 1024;

/// What earlier checks found the files they read to be.
pub(crate) const SEEN: &str = "rules.seen";
const SEEN_MAGIC: &str = "kapi rules seen 1";
/// What `rules.seen`'s tag says the file is ([`crate::store::verdicts::tag`],
/// as the newest-id and project caches are tagged).
const SEEN_DOMAIN: &str = "kapi rules.seen tag";
/// The most term lists `rules.seen` remembers.
const SEEN_LISTS: usize = 64;
/// How long before it is recorded a file must have last changed.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);

/// A file as the file system describes it: a file changed, replaced or
/// copied back has another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file last changed at least [`SETTLED`] before `now`.
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let limit = now.saturating_sub(SETTLED);
        let before = |(s, ns): (i64, i64)| {
            u64::try_from(s).is_ok_and(|s| {
                Duration::new(s, u32::try_from(ns).unwrap_or(u32::MAX).min(999_999_999)) <= limit
            })
        };
        before(self.mtime) && before(self.ctime)
    }

    fn text(&self) -> String {
        format!(
            "{} {} {} {}.{} {}.{}",
            self.dev, self.ino, self.size, self.mtime.0, self.mtime.1, self.ctime.0, self.ctime.1
        )
    }

    /// The identity written by [`Identity::text`], from the fields of a line.
    fn parse<'a>(fields: &mut impl Iterator<Item = &'a str>) -> Option<Self> {
        let mut number = || fields.next()?.parse::<u64>().ok();
        let (dev, ino, size) = (number()?, number()?, number()?);
        let mut time = || -> Option<(i64, i64)> {
            let (s, ns) = fields.next()?.split_once('.')?;
            Some((s.parse().ok()?, ns.parse().ok()?))
        };
        let (mtime, ctime) = (time()?, time()?);
        Some(Identity {
            dev,
            ino,
            size,
            mtime,
            ctime,
        })
    }
}

/// `rules.seen` as read, when its tag checks out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Seen {
    /// The `rules.cache` whose entries `entries` checked out.
    cache: Option<Identity>,
    entries: Vec<PlanKey>,
    /// Term lists and the hashes of their texts.
    lists: Vec<(Identity, [u8; 32])>,
}

impl Seen {
    /// The record's lines before its tag.
    fn body(&self) -> String {
        let mut out = format!("{SEEN_MAGIC}\n");
        if let Some(cache) = &self.cache {
            out.push_str(&format!("cache {}\n", cache.text()));
            for key in &self.entries {
                out.push_str(&format!("entry {}\n", crate::digest::hex(key)));
            }
        }
        for (identity, hash) in &self.lists {
            out.push_str(&format!(
                "list {} {}\n",
                identity.text(),
                crate::digest::hex(hash)
            ));
        }
        out
    }

    /// The record in `text`, when it is in shape and its tag checks out.
    fn parse(secret: &[u8; 32], text: &str) -> Option<Seen> {
        let (body, tag_line) = text.strip_suffix('\n')?.rsplit_once('\n')?;
        let body = format!("{body}\n");
        let given = tag_line.strip_prefix("tag ")?;
        if crate::digest::hex(&verdicts::tag(secret, SEEN_DOMAIN, body.as_bytes())) != given {
            return None;
        }
        let mut lines = body.lines();
        if lines.next() != Some(SEEN_MAGIC) {
            return None;
        }
        let mut seen = Seen::default();
        for line in lines {
            let mut fields = line.split(' ');
            match fields.next()? {
                "cache" => seen.cache = Some(Identity::parse(&mut fields)?),
                "entry" => seen
                    .entries
                    .push(crate::digest::unhex32(fields.next()?.as_bytes())?),
                "list" => {
                    let identity = Identity::parse(&mut fields)?;
                    seen.lists
                        .push((identity, crate::digest::unhex32(fields.next()?.as_bytes())?));
                }
                _ => return None,
            }
        }
        Some(seen)
    }
}

/// One entry of the file as read: where its parts lie, and whether its tag
/// has been found to check out.
struct Held {
    key: PlanKey,
    /// Each list's hash, and where its lines lie in the file.
    lists: Vec<([u8; 32], Range<usize>)>,
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
    /// The file's bytes, as read: a plan taken from it reads its arrays
    /// where they lie ([`Plan::read`]).
    bytes: Arc<Vec<u8>>,
    held: Vec<Held>,
    /// Plans built by this process, not yet written: each entry's bytes,
    /// tag included.
    fresh: Vec<(PlanKey, Arc<Vec<u8>>)>,
    /// The file's identity when it was read (none once rewritten).
    identity: Option<Identity>,
    /// What `rules.seen` says (as read, or last written), what this
    /// process knows, and whether it learnt more.
    recorded: Seen,
    seen: Seen,
    learnt: bool,
}

impl RulesCache {
    /// The cache of the repository whose kapi directory is `kapi_dir`;
    /// `None` when there is no secret to tag it with (a read-only
    /// repository): every plan is derived then.
    pub fn open(kapi_dir: &Path) -> Option<Self> {
        let secret = verdicts::secret(kapi_dir)?;
        let (bytes, identity) = read(&kapi_dir.join(NAME)).unwrap_or_default();
        let seen = crate::fsutil::read_capped(&kapi_dir.join(SEEN), crate::fsutil::Links::Refuse)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|text| Seen::parse(&secret, &text))
            .unwrap_or_default();
        Some(Self::of(
            kapi_dir.to_path_buf(),
            secret,
            bytes,
            identity,
            seen,
        ))
    }

    /// The cache of `bytes`, whose entries `seen` vouches for when the
    /// file they were read from is the one it names.
    fn of(
        dir: PathBuf,
        secret: [u8; 32],
        bytes: Vec<u8>,
        identity: Option<Identity>,
        mut seen: Seen,
    ) -> Self {
        let mut held = parse(&bytes).unwrap_or_default();
        let recorded = seen.clone();
        if identity.is_some() && seen.cache == identity {
            for h in &mut held {
                if seen.entries.contains(&h.key) {
                    h.checked = Some(true);
                }
            }
        } else {
            seen.cache = None;
            seen.entries.clear();
        }
        Self {
            dir,
            secret,
            bytes: Arc::new(bytes),
            held,
            fresh: Vec::new(),
            identity,
            recorded,
            seen,
            learnt: false,
        }
    }

    /// Whether entry `i` checks out (worked out once).
    fn checks_out(&mut self, i: usize) -> bool {
        let h = &mut self.held[i];
        if let Some(checked) = h.checked {
            return checked;
        }
        let whole = &self.bytes[h.whole.clone()];
        let (body, given) = whole.split_at(whole.len() - 32);
        let checked = tag(&self.secret, body) == given;
        h.checked = Some(checked);
        self.learnt |= checked;
        checked
    }

    /// The hash of a term list's `text`, read from the file that was
    /// `identity` before the text was read: as recorded for that very
    /// file, else computed and remembered for the next check.
    pub fn list_hash(&mut self, identity: Option<Identity>, text: &[u8]) -> [u8; 32] {
        let Some(identity) = identity else {
            return TermList::hash_of(text);
        };
        if let Some(hash) = self.recorded_list(&identity) {
            return hash;
        }
        let hash = TermList::hash_of(text);
        self.saw_list(identity, hash);
        hash
    }

    /// The hash recorded for the term list whose file is `identity`.
    fn recorded_list(&self, identity: &Identity) -> Option<[u8; 32]> {
        self.seen
            .lists
            .iter()
            .find(|(i, _)| i == identity)
            .map(|(_, hash)| *hash)
    }

    /// Remember that the term list whose file is `identity` holds a text of
    /// this hash (the file's earlier record forgotten).
    fn saw_list(&mut self, identity: Identity, hash: [u8; 32]) {
        self.seen
            .lists
            .retain(|(i, _)| (i.dev, i.ino) != (identity.dev, identity.ino));
        self.seen.lists.insert(0, (identity, hash));
        self.seen.lists.truncate(SEEN_LISTS);
        self.learnt = true;
    }

    /// What `rules.seen` should say at `now`, when it says something new:
    /// the file as read and the entries found to check out, if it has
    /// settled and was not rewritten since, and the lists that have.
    fn seen_now(&self, now: SystemTime) -> Option<Seen> {
        if !self.learnt {
            return None;
        }
        let cache = self.identity.filter(|i| i.settled(now));
        let seen = Seen {
            cache,
            entries: match cache {
                Some(_) => self
                    .held
                    .iter()
                    .filter(|h| h.checked == Some(true))
                    .map(|h| h.key)
                    .collect(),
                None => Vec::new(),
            },
            lists: self
                .seen
                .lists
                .iter()
                .filter(|(i, _)| i.settled(now))
                .copied()
                .collect(),
        };
        (seen != self.recorded).then_some(seen)
    }

    /// The lines of the term list whose text hashes to `hash`, when a plan
    /// that checks out was derived from rules that include it: then that
    /// text was read whole without error, and its rules found on these
    /// lines.
    pub fn known_lines(&mut self, hash: &[u8; 32]) -> Option<Lines> {
        for i in 0..self.held.len() {
            let Some((_, at)) = self.held[i].lists.iter().find(|(h, _)| h == hash) else {
                continue;
            };
            let at = at.clone();
            if self.checks_out(i) {
                return Lines::read(&self.bytes, at);
            }
        }
        None
    }

    /// Write the plans built since the file was read (or last written),
    /// newest first, beside those read (but those found not to check
    /// out), up to [`MAX_ENTRIES`]. The file is derived: a failure to
    /// write loses nothing but time.
    /// Then record in `rules.seen` what this process learnt of the files
    /// it read, when it learnt something.
    pub fn save(&mut self) {
        if let Some(seen) = self.seen_now(SystemTime::now()) {
            let body = seen.body();
            let tag =
                crate::digest::hex(&verdicts::tag(&self.secret, SEEN_DOMAIN, body.as_bytes()));
            let _ = std::fs::create_dir_all(&self.dir);
            let _ = crate::atomic::replace_derived(&self.dir.join(SEEN), |w| {
                w.write_all(format!("{body}tag {tag}\n").as_bytes())
            });
            self.recorded = seen;
            self.learnt = false;
        }
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
                entries.push((h.key, Arc::new(self.bytes[h.whole.clone()].to_vec())));
            }
        }
        entries.truncate(MAX_ENTRIES);
        let mut out = MAGIC.to_vec();
        for (_, entry) in &entries {
            out.extend_from_slice(entry);
        }
        self.held = parse(&out).unwrap_or_default();
        self.bytes = Arc::new(out.clone());
        self.identity = None;
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
            return Plan::read(entry, held.plan);
        }
        let i = self.held.iter().position(|h| h.key == *key)?;
        if !self.checks_out(i) {
            return None;
        }
        Plan::read(&self.bytes, self.held[i].plan.clone())
    }

    fn keep(&mut self, key: PlanKey, lists: &[Arc<TermList>], plan: &Plan) {
        if lists.len() > MAX_LISTS {
            return;
        }
        let plan = plan.to_bytes();
        let lines: usize = lists.iter().map(|l| l.lines().as_bytes().len()).sum();
        let mut entry = Vec::with_capacity(plan.len() + 80 + 36 * lists.len() + lines);
        entry.extend_from_slice(&key);
        entry.extend_from_slice(&(lists.len() as u32).to_le_bytes());
        for l in lists {
            let lines = l.lines().as_bytes();
            entry.extend_from_slice(l.hash());
            entry.extend_from_slice(&((lines.len() / 4) as u32).to_le_bytes());
            entry.extend_from_slice(lines);
        }
        entry.extend_from_slice(&(plan.len() as u64).to_le_bytes());
        entry.extend_from_slice(&plan);
        let t = tag(&self.secret, &entry);
        entry.extend_from_slice(&t);
        self.fresh.retain(|(k, _)| *k != key);
        self.fresh.insert(0, (key, Arc::new(entry)));
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

/// The bytes of the file at `path` (at most [`MAX_BYTES`]), and its
/// identity before they were read.
fn read(path: &Path) -> Option<(Vec<u8>, Option<Identity>)> {
    let file = crate::fsutil::open_regular(path, crate::fsutil::Links::Refuse).ok()?;
    let meta = file.metadata().ok();
    let len = meta.as_ref().map_or(0, |m| m.len());
    let bytes = crate::fsutil::read_sized(file, len, MAX_BYTES).ok()??;
    Some((bytes, meta.as_ref().map(Identity::of)))
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
        let (count, rest) = rest.split_first_chunk::<4>()?;
        let len = (u32::from_le_bytes(*count) as usize).checked_mul(4)?;
        let start = offset + bytes.len() - rest.len();
        after = rest.get(len..)?;
        lists.push((*l, start..start + len));
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
        RulesCache::of(
            PathBuf::new(),
            secret,
            bytes.to_vec(),
            None,
            Seen::default(),
        )
    }

    #[test]
    fn an_entry_is_used_only_when_it_checks_out() {
        let secret = [3u8; 32];
        let plan = Plan::of_rules(&[TermRule::listed("t", 1, "GitHub", &["Github", "git hub"])]);
        let key = [9u8; 32];
        let text = "# id\tstatus\n\n1\testablished\tGitHub\tGithub|git hub\n";
        let terms = TermList::parse(
            "terms.tsv".into(),
            text.into(),
            TermList::hash_of(text.as_bytes()),
        )
        .unwrap();
        let (list, other) = (*terms.hash(), [6u8; 32]);
        let mut first = cache(secret, MAGIC);
        first.keep(key, &[Arc::new(terms)], &plan);
        // A plan kept is found before it is written, and after.
        assert_eq!(first.find(&key), Some(plan.clone()));
        let file = first.written().unwrap();
        assert_eq!(first.find(&key), Some(plan.clone()));
        let mut read = cache(secret, &file);
        assert_eq!(read.find(&key), Some(plan.clone()));
        // The list's lines come back with it, and only for its hash.
        let lines = read.known_lines(&list).unwrap();
        let known = TermList::known("terms.tsv".into(), text.as_bytes().to_vec(), list, lines);
        assert_eq!(known.rule(0).preferred_form(), "GitHub");
        assert_eq!(known.rule(0).id.to_string(), "terms.tsv:3");
        assert!(read.known_lines(&other).is_none());
        assert!(read.find(&[8u8; 32]).is_none());
        // Another repository's secret: nothing.
        let mut elsewhere = cache([4u8; 32], &file);
        assert!(elsewhere.find(&key).is_none() && elsewhere.known_lines(&list).is_none());
        // One byte changed anywhere, cut short, grown: nothing.
        for i in 0..file.len() {
            let mut forged = file.clone();
            forged[i] ^= 1;
            let mut c = cache(secret, &forged);
            assert!(
                c.find(&key).is_none() && c.known_lines(&list).is_none(),
                "byte {i}"
            );
        }
        for n in 0..file.len() {
            let mut c = cache(secret, &file[..n]);
            assert!(
                c.find(&key).is_none() && c.known_lines(&list).is_none(),
                "cut at {n}"
            );
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

    fn identity(ino: u64, changed: i64) -> Identity {
        Identity {
            dev: 1,
            ino,
            size: 10,
            mtime: (changed, 5),
            ctime: (changed, 5),
        }
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn what_a_check_saw_vouches_only_for_the_files_it_names() {
        let secret = [3u8; 32];
        let plan = Plan::of_rules(&[TermRule::listed("t", 1, "GitHub", &["Github"])]);
        let key = [9u8; 32];
        let mut first = cache(secret, MAGIC);
        first.keep(key, &[], &plan);
        let file = first.written().unwrap();
        let (file_id, list_id, list_hash) = (identity(7, 1_000), identity(8, 1_000), [5u8; 32]);
        let fresh = |seen: Seen, bytes: &[u8], id: Identity| {
            RulesCache::of(PathBuf::new(), secret, bytes.to_vec(), Some(id), seen)
        };
        // A check that verified the entry and hashed a list learns both;
        // nothing is recorded of a file changed under two seconds before.
        let mut c = fresh(Seen::default(), &file, file_id);
        assert!(c.seen_now(at(5_000)).is_none(), "nothing learnt yet");
        assert_eq!(c.find(&key), Some(plan.clone()));
        c.saw_list(list_id, list_hash);
        assert_eq!(c.recorded_list(&list_id), Some(list_hash));
        let seen = c.seen_now(at(5_000)).unwrap();
        assert_eq!(seen.cache, Some(file_id));
        assert_eq!(seen.entries, vec![key]);
        assert_eq!(seen.lists, vec![(list_id, list_hash)]);
        assert!(c.seen_now(at(1_001)).is_none(), "changed a second before");
        // Written and read back, under this secret only, and whole.
        let text = format!(
            "{}tag {}\n",
            seen.body(),
            crate::digest::hex(&verdicts::tag(&secret, SEEN_DOMAIN, seen.body().as_bytes()))
        );
        assert_eq!(Seen::parse(&secret, &text), Some(seen.clone()));
        assert_eq!(Seen::parse(&[4u8; 32], &text), None);
        for (i, _) in text.char_indices().filter(|(i, _)| *i < text.len() - 1) {
            let mut forged = text.clone().into_bytes();
            forged[i] = if forged[i] == b'1' { b'2' } else { b'1' };
            let forged = String::from_utf8(forged).unwrap();
            if forged != text {
                assert_eq!(Seen::parse(&secret, &forged), None, "byte {i}");
            }
        }
        // The very file: its entry is taken as checked (a forged byte is not
        // looked for: the file's identity is what changes when it is written).
        let mut forged = file.clone();
        let last = forged.len() - 1;
        forged[last] ^= 1;
        let mut same = fresh(seen.clone(), &forged, file_id);
        assert!(same.find(&key).is_some());
        // Another file (written again, copied back, replaced): checked
        // again, and a forged entry is refused.
        for other in [identity(7, 1_001), identity(9, 1_000)] {
            let mut c = fresh(seen.clone(), &forged, other);
            assert!(c.find(&key).is_none(), "{other:?}");
            assert_eq!(c.recorded_list(&other), None);
            assert_eq!(c.recorded_list(&list_id), Some(list_hash));
        }
        // A list seen anew under the same file: the old hash is forgotten.
        let mut c = fresh(seen, &file, file_id);
        let changed = identity(8, 2_000);
        c.saw_list(changed, [6u8; 32]);
        assert_eq!(c.recorded_list(&list_id), None);
        assert_eq!(
            c.seen_now(at(5_000)).unwrap().lists,
            vec![(changed, [6u8; 32])]
        );
    }
}
