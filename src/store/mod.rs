//! The operation log on git: one ref, `refs/kapi/ops`, whose tip commit's
//! tree is the whole log, sharded by the random tail of each id into
//! segments (`<c8>/<c9>`, JSON Lines sorted by id). `refs/kapi/local`
//! holds the kinds that stay on this machine (`check`).
//!
//! The store is split by concern: `append` (group commit through the
//! journal), `merge` (union with logs from elsewhere), `read` (parallel
//! parsing, conflicts between copies), `newest` (the id to mint past),
//! `reflock` (moving a ref, recovering an abandoned ref lock), `lock` (the
//! bounded advisory locks), `sweep` (temporary files killed writers left),
//! `fault` (fault points for crash tests). Everything read from a ref is
//! untrusted: bad operations are reported by name and skipped, never hiding
//! the rest, and nothing pushed can stop this machine from writing.

mod append;
pub(crate) mod arrivals;
mod cache;
pub(crate) mod checkpoint;
pub(crate) mod content;
mod derived;
pub mod fault;
mod intake;
mod journal;
pub(crate) mod lock;
mod merge;
pub(crate) mod newest;
mod pack;
mod project;
mod read;
mod reflock;
pub mod segment;
pub(crate) mod sweep;
mod sync;
mod tree;
pub mod verdicts;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gix::ObjectId;

use crate::ops::id::OpId;
use crate::ops::record::Record;
pub(crate) use append::SetAside;
pub use append::Sign;
pub(crate) use derived::Removed;
pub use journal::{holds_any as journal_holds_any, parse as parse_journal};
pub(crate) use reflock::RefLock;
pub(crate) use segment::{EntryError, Problem};
pub(crate) use sync::{Joined, RemoteError};

/// Where an operation is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogRef {
    /// `refs/kapi/ops`: shared with every machine.
    Shared,
    /// `refs/kapi/local`: never pushed (`check` runs).
    Local,
}

impl LogRef {
    pub(crate) fn name(self) -> &'static str {
        match self {
            LogRef::Shared => "refs/kapi/ops",
            LogRef::Local => "refs/kapi/local",
        }
    }

    pub(crate) fn for_record(record: &Record) -> Self {
        if record.kind.is_local() {
            LogRef::Local
        } else {
            LogRef::Shared
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} is not inside a git repository; run `git init` first, or pass -C <repo>")]
    NotARepository(PathBuf),
    #[error("git: {context}: {source}")]
    Git {
        context: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot take the store lock {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "gave up after {} s waiting for {}{}; nothing was recorded. Try again; if that process is stuck, end it, or set KAPI_LOCK_TIMEOUT_MS to wait longer",
        waited.as_secs_f32(), path.display(), holder_text(*holder)
    )]
    LockTimeout {
        path: PathBuf,
        holder: Option<u32>,
        waited: Duration,
    },
    #[error(
        "{} is in the journal (.git/kapi/journal, synced to disk) but not yet on refs/kapi/ops: {}. It is not lost and must not be recorded again: the next kapi command that can write the ref moves it there",
        ids.iter().map(|i| format!("#{}", &i[..i.len().min(10)])).collect::<Vec<_>>().join(", "),
        crate::wording::unstopped(reason)
    )]
    Journaled { ids: Vec<String>, reason: String },
    #[error(
        "{} exists: another program (git itself?) is moving that ref, or died while moving it; kapi waited {} s and does not remove another program's lock. If no git command is running in this repository, remove that file",
        path.display(), waited.as_secs_f32()
    )]
    RefLocked { path: PathBuf, waited: Duration },
    #[error(
        "not recorded: {} left the journal without reaching refs/kapi/ops ({reason}); `kapi store doctor` names it. Record it again",
        ids.iter().map(|i| format!("#{}", &i[..i.len().min(10)])).collect::<Vec<_>>().join(", ")
    )]
    NotRecorded { ids: Vec<String>, reason: String },
    #[error(
        "no segment of the log can take another operation: every shard tried is over the {} MiB limit kapi reads. `kapi store doctor` names the oversized segments",
        segment::MAX_SEGMENT_BYTES / (1024 * 1024)
    )]
    NoRoom,
    #[error(
        "the fetched log is another project's: its new operations name {}, and this log's project is \"{ours}\". Nothing was merged. If you meant to sync with that repository, check the remote; to merge it anyway, run `kapi context sync --allow-other-project`",
        theirs.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(", ")
    )]
    OtherProject { ours: String, theirs: Vec<String> },
    #[error("this machine's clock is outside the range an id can hold (2026 to 2060)")]
    ClockOutOfRange,
    #[error(
        "refused: the operation would be dated {}, more than 10 minutes past this machine's clock ({}); no id is minted ahead of the clock. KAPI_NOW is a test facility: unset it",
        rfc3339_ms(*at), rfc3339_ms(*clock)
    )]
    AheadOfClock { at: u64, clock: u64 },
    #[error(
        "{0} moved under us {1} times in a row ({2}); another program is writing it. Try again."
    )]
    Contended(&'static str, usize, String),
    #[error("not recorded: {0}")]
    Unsigned(String),
    #[error("the operation is not valid: {0}")]
    Invalid(#[from] crate::ops::record::RecordError),
    #[error(transparent)]
    Id(#[from] crate::ops::id::IdError),
}

fn holder_text(holder: Option<u32>) -> String {
    match holder {
        Some(pid) => format!(", held by process {pid}"),
        None => String::new(),
    }
}

/// Keep a git error as the source of the store's, with what was being done.
pub(crate) fn git<E: std::error::Error + Send + Sync + 'static>(
    context: &'static str,
) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError::Git {
        context,
        source: Box::new(e),
    }
}

/// What a log's ref holds (see [`Store::ref_state`]).
#[derive(Debug, Clone)]
pub(crate) struct RefState {
    pub target: gix::refs::Target,
    pub commit: Option<ObjectId>,
}

/// What a merge did.
#[derive(Debug, Default)]
pub struct Merged {
    /// Operations the log did not hold before.
    pub added: usize,
    /// Operations the log already held, byte for byte.
    pub held: usize,
    /// Operations refused: another copy of a held id, or dated in the future.
    pub refused: Vec<Problem>,
}

/// What reading a log found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Valid records, in id order, without duplicates.
    pub records: Vec<Record>,
    /// Every operation that could not be read, by name.
    pub problems: Vec<Problem>,
}

/// The operation store of one repository.
pub struct Store {
    repo: crate::git::Repo,
    /// How long a writer waits for a lock before it gives up.
    lock_timeout: Duration,
}

/// The fixed identity of kapi's own commits on its refs.
fn signature(seconds: i64) -> gix::actor::Signature {
    gix::actor::Signature {
        name: "kapi".into(),
        email: "kapi@localhost".into(),
        time: gix::date::Time { seconds, offset: 0 },
    }
}

impl Store {
    /// Find the repository containing `dir` through the git adapter (a
    /// bare repository holds a log too).
    pub fn discover(dir: &Path) -> Result<Self, StoreError> {
        let mut repo = crate::git::Repo::discover(dir)
            .map_err(|_| StoreError::NotARepository(dir.to_owned()))?;
        // Packed segments are deltas of each other: without a cache of delta
        // bases, reading a log re-inflates every base of every chain.
        read::with_delta_cache(repo.gix_mut());
        Ok(Self {
            repo,
            lock_timeout: lock::DEFAULT_TIMEOUT,
        })
    }

    /// Wait at most `timeout` for a lock (`KAPI_LOCK_TIMEOUT_MS`).
    pub(crate) fn set_lock_timeout(&mut self, timeout: Duration) {
        self.lock_timeout = timeout;
    }

    pub(crate) fn repo(&self) -> &gix::Repository {
        self.repo.gix()
    }

    /// The repository through the git adapter.
    pub(crate) fn git(&self) -> &crate::git::Repo {
        &self.repo
    }

    /// The top of the work tree, if the repository has one.
    pub(crate) fn work_tree(&self) -> Option<&Path> {
        self.repo.work_tree()
    }

    /// `.git/kapi/`, for the lock and derived caches (shared by worktrees).
    pub(crate) fn kapi_dir(&self) -> PathBuf {
        self.repo.kapi_dir()
    }

    /// The commit a ref points at, if the ref exists.
    pub(crate) fn tip(&self, which: LogRef) -> Result<Option<ObjectId>, StoreError> {
        Ok(self.ref_state(which)?.and_then(|t| t.commit))
    }

    /// What a log's ref holds: its raw target (what a compare-and-swap
    /// must expect) and the commit it peels to. A ref someone pointed at a
    /// tag peels through it; one pointing at a blob, a tree or another ref
    /// holds no log (`commit` is `None`, and doctor names it), so the next
    /// append starts the log afresh on top of nothing rather than failing.
    pub(crate) fn ref_state(&self, which: LogRef) -> Result<Option<RefState>, StoreError> {
        let Some(reference) = self
            .repo
            .gix()
            .try_find_reference(which.name())
            .map_err(git("reading the ref"))?
        else {
            return Ok(None);
        };
        let target = reference.target().into_owned();
        let commit = match &target {
            gix::refs::Target::Object(oid) => {
                // The whole object, not its header: a commit is small, and
                // kept in the object cache it serves every later read of
                // the tip in this process (a note reads it four times).
                let kind = self
                    .repo
                    .gix()
                    .find_object(*oid)
                    .map_err(git("reading the ref's object"))?
                    .kind;
                match kind {
                    gix::object::Kind::Commit => Some(*oid),
                    gix::object::Kind::Tag => self
                        .repo
                        .gix()
                        .find_object(*oid)
                        .ok()
                        .and_then(|o| o.peel_to_kind(gix::object::Kind::Commit).ok())
                        .map(|c| c.id),
                    _ => None,
                }
            }
            gix::refs::Target::Symbolic(_) => None,
        };
        Ok(Some(RefState { target, commit }))
    }

    fn tree_of(&self, commit: ObjectId) -> Result<ObjectId, StoreError> {
        let commit = self
            .repo
            .gix()
            .find_commit(commit)
            .map_err(git("reading the log's commit"))?;
        Ok(commit
            .tree_id()
            .map_err(git("reading the log's commit"))?
            .detach())
    }

    /// Read every operation of one log.
    pub(crate) fn load(&self, which: LogRef) -> Result<Loaded, StoreError> {
        self.load_refs(&[which], Vec::new())
    }

    /// Read both logs: what the fold reads. Lines a crashed writer left in
    /// the journal are committed first (when the repository is writable).
    pub fn load_all(&self) -> Result<Loaded, StoreError> {
        let _ = self.flush_if_free();
        // Lines still in the journal (its committer is slow, stopped or
        // dead) are part of the log: a line on the ref and in the journal
        // reads once. The journal is read first: a line leaves it only
        // after it reached the ref, so read in this order none is missed.
        let pending = self.pending()?;
        self.load_refs(&[LogRef::Shared, LogRef::Local], pending)
    }

    /// Read `refs`, with `pending` records (from the journal) among them:
    /// sorted, repeats dropped, second copies settled, once.
    fn load_refs(&self, refs: &[LogRef], pending: Vec<Record>) -> Result<Loaded, StoreError> {
        let mut segments = Vec::new();
        for &which in refs {
            if let Some(tip) = self.tip(which)? {
                let tree = self.tree_of(tip)?;
                tree::read_segments(self.repo.gix(), tree, which.name(), &mut segments)?;
            }
        }
        let dir = self.kapi_dir();
        let mut cache = cache::SegmentCache::read(&dir);
        // A long log whose cache is missing or behind (a fresh clone, a
        // fetch): the cache is written anew first, streamed, and the read
        // takes every segment from it, so no segment's bytes are held
        // through the read for the cache.
        // The cache holds both logs' segments, whichever this read wants: a
        // read of one log (an import reads each in turn) kept only its own,
        // and the next read of the other wrote the cache again.
        let mut blobs: Vec<ObjectId> = segments.iter().filter_map(|s| s.blob).collect();
        for which in [LogRef::Shared, LogRef::Local] {
            if !refs.contains(&which)
                && let Some(tip) = self.tip(which)?
            {
                let mut others = Vec::new();
                let tree = self.tree_of(tip)?;
                tree::read_segments(self.repo.gix(), tree, which.name(), &mut others)?;
                blobs.extend(others.iter().filter_map(|s| s.blob));
            }
        }
        if blobs.len() >= read::PARALLEL_SEGMENTS
            && read::cache_is_stale(&cache, &blobs)
            && read::refill_cache(self.repo.gix(), &dir, &blobs, &cache)
        {
            cache = cache::SegmentCache::read(&dir);
        }
        let (mut loaded, fresh, unique) = read::parse_segments(self.repo.gix(), &segments, &cache)?;
        // In order and every id once (most logs, read as merged): there is
        // nothing to sort or settle.
        let conflicts = if unique && pending.is_empty() {
            Vec::new()
        } else {
            loaded.records.extend(pending);
            read::finish(&mut loaded)
        };
        if !conflicts.is_empty() {
            self.settle_conflicts(refs, conflicts, &mut loaded)?;
        }
        self.read_content(&mut loaded.records, &mut loaded.problems);
        self.refresh_cache(&blobs, &cache, fresh);
        Ok(loaded)
    }

    /// Rewrite the read cache when segments changed since it was written
    /// (best effort: a read never fails because the cache could not be
    /// kept). The entries kept from the old cache are copied one at a time.
    fn refresh_cache(
        &self,
        blobs: &[ObjectId],
        old: &cache::SegmentCache,
        fresh: Vec<(ObjectId, Vec<u8>)>,
    ) {
        if fresh.is_empty() && !read::cache_is_stale(old, blobs) {
            return;
        }
        let fresh: HashMap<ObjectId, Vec<u8>> = fresh.into_iter().collect();
        let mut seen = std::collections::HashSet::new();
        let current: Vec<ObjectId> = blobs.iter().copied().filter(|b| seen.insert(*b)).collect();
        let mut total = 0;
        for id in &current {
            match fresh.get(id).map(Vec::len).or_else(|| old.size(id)) {
                Some(len) => total += len,
                None => return,
            }
        }
        if total < cache::MIN_BYTES {
            return;
        }
        let _ = cache::write_each(&self.kapi_dir(), |put| {
            for &id in &current {
                match fresh.get(&id) {
                    Some(bytes) => put(id, bytes, None)?,
                    // An entry whose tag does not check out now: no cache.
                    None => {
                        let (bytes, tag) =
                            old.get_tagged(&id).ok_or(std::io::ErrorKind::InvalidData)?;
                        put(id, &bytes, Some(tag))?
                    }
                }
            }
            Ok(())
        });
    }

    /// Find one operation by its full id, reading only its segment.
    pub(crate) fn find(&self, id: &OpId) -> Result<Option<Record>, StoreError> {
        self.find_with(id, true)
    }

    /// [`Store::find`] of the record alone: content kept in its own blob
    /// (an import's rules) is not read back. A reader of the record's own
    /// fields (its project) does not pay for 5,000 imported rules.
    pub(crate) fn find_record(&self, id: &OpId) -> Result<Option<Record>, StoreError> {
        self.find_with(id, false)
    }

    fn find_with(&self, id: &OpId, content: bool) -> Result<Option<Record>, StoreError> {
        for which in [LogRef::Shared, LogRef::Local] {
            let Some(tip) = self.tip(which)? else {
                continue;
            };
            let root = self.tree_of(tip)?;
            if let Some(bytes) =
                tree::read_segment(self.repo.gix(), root, segment::shard(id.as_str()))?
            {
                // Parse only the lines that carry the id.
                let mut copies = segment::lines(&bytes)
                    .filter(|l| segment::line_id(l) == Some(id.as_str()))
                    .filter_map(|l| Record::from_untrusted(l).ok())
                    .filter(|r| segment::shard(&r.id) == segment::shard(id.as_str()));
                if let Some(first) = copies.next() {
                    if copies.any(|other| other != first) {
                        // Two copies: the full read decides which stands.
                        let loaded = self.load(which)?;
                        return Ok(loaded.records.into_iter().find(|r| r.id == id.as_str()));
                    }
                    // With its content read back (none when it cannot be).
                    let mut found = vec![first];
                    if content {
                        self.read_content(&mut found, &mut Vec::new());
                    }
                    return Ok(found.pop());
                }
            }
        }
        Ok(None)
    }

    /// The tree id of a log (for comparing two logs).
    pub fn tree_id(&self, which: LogRef) -> Result<Option<ObjectId>, StoreError> {
        self.tip(which)?.map(|t| self.tree_of(t)).transpose()
    }

    fn commit(
        &self,
        tree: ObjectId,
        parents: Vec<ObjectId>,
        seconds: i64,
        message: &str,
    ) -> Result<ObjectId, StoreError> {
        write_commit(self.repo.gix(), tree, parents, seconds, message)
    }
}

/// Write a log's commit into `repo` (kapi's own signature at `seconds`).
fn write_commit(
    repo: &gix::Repository,
    tree: ObjectId,
    parents: Vec<ObjectId>,
    seconds: i64,
    message: &str,
) -> Result<ObjectId, StoreError> {
    let commit = gix::objs::Commit {
        tree,
        parents: parents.into_iter().collect(),
        author: signature(seconds),
        committer: signature(seconds),
        encoding: None,
        message: message.into(),
        extra_headers: Vec::new(),
    };
    Ok(repo
        .write_object(&commit)
        .map_err(git("writing the log's commit"))?
        .detach())
}

pub(crate) use crate::ops::id::rfc3339_ms;

/// What `kapi store doctor` finds about the store itself, besides the
/// operations it cannot read.
#[derive(Debug, Default)]
pub struct Health {
    /// Ref lock files present now, told apart (only when kapi's commit lock
    /// is free: otherwise a live writer may be moving the ref).
    pub ref_locks: Vec<RefLock>,
    /// Temporary files killed writers left, old enough to remove.
    pub leftovers: Vec<PathBuf>,
    /// `newest:` lines of the refs' tip commits (informational only: kapi
    /// never mints from them), with the ref.
    pub claims: Vec<(LogRef, String)>,
    /// Refs that point at something other than a commit (or a tag of one).
    pub odd_tips: Vec<(LogRef, String)>,
}

impl Store {
    fn objects_dir(&self) -> PathBuf {
        self.repo.gix().objects.store_ref().path().to_path_buf()
    }

    /// Look at the locks, leftovers and tip claims.
    pub(crate) fn health(&self) -> Result<Health, StoreError> {
        let dir = self.kapi_dir();
        let mut health = Health {
            leftovers: sweep::leftovers(&self.objects_dir(), &dir),
            ..Health::default()
        };
        if let Some(_commit) = lock::Lock::try_commit(&dir)? {
            health.ref_locks = self.ref_locks();
        }
        for which in [LogRef::Shared, LogRef::Local] {
            let Some(state) = self.ref_state(which)? else {
                continue;
            };
            let Some(tip) = state.commit else {
                health.odd_tips.push((which, state.target.to_string()));
                continue;
            };
            let commit = self
                .repo
                .gix()
                .find_commit(tip)
                .map_err(git("reading the log's commit"))?;
            let message = commit.message_raw_sloppy().to_string();
            if let Some(claim) = message.lines().find_map(|l| l.strip_prefix("newest: ")) {
                health.claims.push((which, claim.trim().to_owned()));
            }
        }
        Ok(health)
    }

    /// Remove kapi's own abandoned ref locks and the leftovers (waiting for
    /// the commit lock up to the lock timeout); returns what was removed.
    pub(crate) fn repair(&self) -> Result<Vec<PathBuf>, StoreError> {
        let dir = self.kapi_dir();
        let _commit = lock::Lock::commit(&dir, self.lock_timeout)?;
        let mut removed = Vec::new();
        for found in self.ref_locks() {
            if let RefLock::Abandoned(path) = found
                && std::fs::remove_file(&path).is_ok()
            {
                removed.push(path);
            }
        }
        let leftovers = sweep::leftovers(&self.objects_dir(), &dir);
        sweep::sweep(&self.objects_dir(), &dir);
        removed.extend(leftovers.into_iter().filter(|p| !p.exists()));
        Ok(removed)
    }
}
