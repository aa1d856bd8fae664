//! The operation log on git: one ref, `refs/kapi/ops`, whose tip commit's
//! tree is the whole log, sharded by the random tail of each id into
//! segments (`<c8>/<c9>`, JSON Lines sorted by id). `refs/kapi/local`
//! holds the kinds that stay on this machine (`check`).
//!
//! Appends take a short advisory lock (`.git/kapi/lock`), write the segment
//! blob and the two touched trees, a commit with a fixed signature and an
//! explicit time, and move the ref with compare-and-swap. Merging two logs
//! is the union of their trees. Everything read from a ref is untrusted:
//! bad operations are reported by name and skipped, never hiding the rest.

mod cache;
mod journal;
mod lock;
pub mod segment;
mod tree;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::refs::transaction::PreviousValue;

use crate::ops::id::OpId;
use crate::ops::record::Record;
pub use segment::{EntryError, Problem};

/// Where an operation is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogRef {
    /// `refs/kapi/ops`: shared with every machine.
    Shared,
    /// `refs/kapi/local`: never pushed (`check` runs).
    Local,
}

impl LogRef {
    pub fn name(self) -> &'static str {
        match self {
            LogRef::Shared => "refs/kapi/ops",
            LogRef::Local => "refs/kapi/local",
        }
    }

    pub fn for_record(record: &Record) -> Self {
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
    #[error("git: {context}: {message}")]
    Git {
        context: &'static str,
        message: String,
    },
    #[error("cannot take the store lock {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the log holds #{0}, dated {1}, later than this machine's clock allows ids to reach; `kapi store doctor` lists it"
    )]
    FutureId(String, String),
    #[error("{0} moved under us {1} times in a row; another program is writing it. Try again.")]
    Contended(&'static str, usize),
    #[error("the operation is not valid: {0}")]
    Invalid(#[from] crate::ops::record::RecordError),
    #[error(transparent)]
    Id(#[from] crate::ops::id::IdError),
}

pub(crate) fn git<E: std::fmt::Display>(context: &'static str) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError::Git {
        context,
        message: e.to_string(),
    }
}

/// How far past this machine's clock an imported operation may be dated.
const FUTURE_SLACK_MS: u64 = 24 * 60 * 60 * 1000;

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
    repo: gix::Repository,
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
    /// Find the repository containing `dir`.
    pub fn discover(dir: &Path) -> Result<Self, StoreError> {
        let mut repo =
            gix::discover(dir).map_err(|_| StoreError::NotARepository(dir.to_owned()))?;
        // Packed segments are deltas of each other: without a cache of delta
        // bases, reading a log re-inflates every base of every chain.
        repo.objects.set_pack_cache(|| {
            Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
                64 * 1024 * 1024,
            ))
        });
        Ok(Self { repo })
    }

    pub fn repo(&self) -> &gix::Repository {
        &self.repo
    }

    /// The top of the work tree, if the repository has one.
    pub fn work_tree(&self) -> Option<&Path> {
        self.repo.workdir()
    }

    /// `.git/kapi/`, for the lock and derived caches (shared by worktrees).
    pub fn kapi_dir(&self) -> PathBuf {
        self.repo.common_dir().join("kapi")
    }

    /// The commit a ref points at, if the ref exists.
    pub fn tip(&self, which: LogRef) -> Result<Option<ObjectId>, StoreError> {
        let reference = self
            .repo
            .try_find_reference(which.name())
            .map_err(git("reading the ref"))?;
        match reference {
            None => Ok(None),
            Some(mut r) => Ok(Some(
                r.peel_to_id().map_err(git("peeling the ref"))?.detach(),
            )),
        }
    }

    fn tree_of(&self, commit: ObjectId) -> Result<ObjectId, StoreError> {
        let commit = self
            .repo
            .find_commit(commit)
            .map_err(git("reading the log's commit"))?;
        Ok(commit
            .tree_id()
            .map_err(git("reading the log's commit"))?
            .detach())
    }

    /// The newest id a log holds, from its tip commit's message.
    fn newest(&self, tip: Option<ObjectId>) -> Result<Option<OpId>, StoreError> {
        let Some(tip) = tip else { return Ok(None) };
        let commit = self
            .repo
            .find_commit(tip)
            .map_err(git("reading the log's commit"))?;
        let message = commit.message_raw_sloppy().to_string();
        let noted = message
            .lines()
            .find_map(|l| l.strip_prefix("newest: "))
            .and_then(|id| OpId::parse(id.trim()).ok());
        if noted.is_some() {
            return Ok(noted);
        }
        // A tip kapi did not write (a tool, a hand edit): read the log.
        let root = self.tree_of(tip)?;
        let mut segments = Vec::new();
        tree::read_segments(&self.repo, root, "", &mut segments)?;
        let mut newest = None;
        for blob in segments.iter().filter_map(|s| s.blob) {
            newest = newest.max(segment::newest_id(&tree::read_blob(&self.repo, blob)?));
        }
        Ok(newest)
    }

    /// Read every operation of one log.
    pub fn load(&self, which: LogRef) -> Result<Loaded, StoreError> {
        self.load_refs(&[which])
    }

    /// Read both logs: what the fold reads. Lines a crashed writer left in
    /// the journal are committed first (when the repository is writable).
    pub fn load_all(&self) -> Result<Loaded, StoreError> {
        let _ = self.flush();
        self.load_refs(&[LogRef::Shared, LogRef::Local])
    }

    fn load_refs(&self, refs: &[LogRef]) -> Result<Loaded, StoreError> {
        let mut segments = Vec::new();
        for &which in refs {
            if let Some(tip) = self.tip(which)? {
                let tree = self.tree_of(tip)?;
                tree::read_segments(&self.repo, tree, which.name(), &mut segments)?;
            }
        }
        let cache = cache::SegmentCache::read(&self.kapi_dir());
        let (mut loaded, fresh) = parse_segments(&self.repo, &segments, &cache)?;
        finish(&mut loaded);
        self.refresh_cache(&segments, &cache, fresh);
        Ok(loaded)
    }

    /// Rewrite the read cache when segments changed since it was written
    /// (best effort: a read never fails because the cache could not be kept).
    fn refresh_cache(
        &self,
        segments: &[tree::Segment],
        old: &cache::SegmentCache,
        fresh: Vec<(ObjectId, Vec<u8>)>,
    ) {
        let current: Vec<ObjectId> = segments.iter().filter_map(|s| s.blob).collect();
        if fresh.is_empty() && old.len() == current.len() {
            return;
        }
        let fresh: HashMap<ObjectId, Vec<u8>> = fresh.into_iter().collect();
        let mut entries = Vec::with_capacity(current.len());
        for id in current {
            match fresh.get(&id).map(Vec::as_slice).or_else(|| old.get(&id)) {
                Some(bytes) => entries.push((id, bytes)),
                None => return,
            }
        }
        if entries.iter().map(|(_, b)| b.len()).sum::<usize>() >= cache::MIN_BYTES {
            let _ = cache::write(&self.kapi_dir(), &entries);
        }
    }

    /// Find one operation by its full id, reading only its segment.
    pub fn find(&self, id: &OpId) -> Result<Option<Record>, StoreError> {
        for which in [LogRef::Shared, LogRef::Local] {
            let Some(tip) = self.tip(which)? else {
                continue;
            };
            let root = self.tree_of(tip)?;
            if let Some(bytes) = tree::read_segment(&self.repo, root, segment::shard(id.as_str()))?
            {
                let (mut records, mut problems) = (Vec::new(), Vec::new());
                segment::parse(&bytes, None, "", &mut records, &mut problems);
                if let Some(r) = records.into_iter().find(|r| r.id == id.as_str()) {
                    return Ok(Some(r));
                }
            }
        }
        Ok(None)
    }

    /// Append one operation. Its id and instant are minted under the lock,
    /// past the newest id the log holds; the template's own are ignored.
    pub fn append(
        &self,
        now_ms: u64,
        random: u128,
        template: Record,
    ) -> Result<Record, StoreError> {
        let mut records = self.append_all(now_ms, random, vec![template])?;
        Ok(records.pop().expect("one record in, one out"))
    }

    /// Append several operations as one commit per log, under one lock.
    /// Each template's id and instant are minted here, in order, so they
    /// sort in the order given.
    pub fn append_all(
        &self,
        now_ms: u64,
        random: u128,
        templates: Vec<Record>,
    ) -> Result<Vec<Record>, StoreError> {
        if templates.is_empty() {
            return Ok(Vec::new());
        }
        let dir = self.kapi_dir();
        // 1. Mint past every id the log and the journal hold, and journal
        //    the lines: a short critical section that writes no git object.
        let records = {
            let _journal = lock::Lock::journal(&dir)?;
            let pending = journal::read(&dir)?;
            let journaled = segment::newest_id(&pending);
            let shared = self.tip(LogRef::Shared)?;
            let local = self.tip(LogRef::Local)?;
            let mut newest = self.newest(shared)?.max(self.newest(local)?).max(journaled);
            let mut records = Vec::with_capacity(templates.len());
            for (n, template) in templates.into_iter().enumerate() {
                let tail = random.rotate_left(17 * n as u32)
                    ^ (n as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let id =
                    OpId::mint(now_ms, tail, newest.as_ref()).map_err(|e| match (&e, &newest) {
                        (crate::ops::id::IdError::ClockOutOfRange, Some(n))
                            if n.unix_ms() > now_ms =>
                        {
                            StoreError::FutureId(n.to_string(), rfc3339_ms(n.unix_ms()))
                        }
                        _ => e.into(),
                    })?;
                let record = Record {
                    id: id.to_string(),
                    at: rfc3339_ms(id.unix_ms()),
                    ..template
                };
                record.validate()?;
                newest = Some(id);
                records.push(record);
            }
            let lines: Vec<String> = records.iter().map(Record::to_canonical_json).collect();
            journal::append(&dir, &lines)?;
            records
        };
        // 2. Commit: whoever holds the commit lock commits every journaled
        //    line; a writer whose lines an earlier holder committed is done.
        //    Waiting for the lock itself would queue behind flushes that do not
        //    concern us (the lock is not fair), so poll: take the lock if it
        //    is free, else see whether the holder already committed our lines.
        let mut pause = std::time::Duration::from_micros(200);
        loop {
            if let Some(_commit) = lock::Lock::try_acquire(&dir)? {
                self.commit_journal(Some(&records))?;
                return Ok(records);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(2));
            let pending = {
                let _journal = lock::Lock::journal(&dir)?;
                journal::read(&dir)?
            };
            if !journal::holds_any(&pending, &records) {
                return Ok(records);
            }
        }
    }

    /// Move every line the journal holds onto the refs, in one commit per
    /// ref (call under the commit lock). With `mine`, does nothing when none
    /// of those records is still in the journal.
    fn commit_journal(&self, mine: Option<&[Record]>) -> Result<(), StoreError> {
        let dir = self.kapi_dir();
        let pending = {
            let _journal = lock::Lock::journal(&dir)?;
            journal::read(&dir)?
        };
        if pending.is_empty() {
            return Ok(());
        }
        if let Some(mine) = mine
            && !journal::holds_any(&pending, mine)
        {
            return Ok(());
        }
        let (mut records, mut problems) = (Vec::new(), Vec::new());
        segment::parse_file(&pending, "journal", &mut records, &mut problems);
        if !problems.is_empty() {
            let torn: Vec<&[u8]> = pending
                .split(|&b| b == b'\n')
                .filter(|l| {
                    !l.iter().all(u8::is_ascii_whitespace) && Record::from_untrusted(l).is_err()
                })
                .collect();
            journal::set_aside(&dir, &torn)?;
        }
        records.sort_by(|a, b| a.id.cmp(&b.id));
        records.dedup_by(|a, b| a.id == b.id);
        let newest = records
            .iter()
            .map(|r| r.id.as_str())
            .max()
            .and_then(|id| OpId::parse(id).ok());
        const ATTEMPTS: usize = 8;
        for which in [LogRef::Shared, LogRef::Local] {
            let mine: Vec<&Record> = records
                .iter()
                .filter(|r| LogRef::for_record(r) == which)
                .collect();
            let Some(last) = mine.last() else { continue };
            let mut moved = false;
            for _ in 0..ATTEMPTS {
                let tip = self.tip(which)?;
                let newest = self
                    .newest(tip)?
                    .max(newest.clone())
                    .expect("records have ids");
                let message = if mine.len() == 1 {
                    format!(
                        "kapi: {} {}\n\nnewest: {newest}\n",
                        last.kind.as_str(),
                        last.short()
                    )
                } else {
                    format!(
                        "kapi: {} operations, last {}\n\nnewest: {newest}\n",
                        mine.len(),
                        last.short()
                    )
                };
                let seconds = (last.op_id().unix_ms() / 1000) as i64;
                let mut root = tip.map(|t| self.tree_of(t)).transpose()?;
                for r in &mine {
                    root = Some(tree::insert_line(
                        &self.repo,
                        root,
                        segment::shard(&r.id),
                        &r.to_canonical_json(),
                    )?);
                }
                let commit = self.commit(
                    root.expect("records were written"),
                    tip.into_iter().collect(),
                    seconds,
                    &message,
                )?;
                if self.move_ref(which, tip, commit).is_ok() {
                    moved = true;
                    break;
                }
            }
            if !moved {
                return Err(StoreError::Contended(which.name(), ATTEMPTS));
            }
        }
        let _journal = lock::Lock::journal(&dir)?;
        journal::drop_prefix(&dir, pending.len())
    }

    /// Lines a crash tore, set aside from the journal (for `kapi store doctor`).
    pub fn torn_journal_lines(&self) -> Vec<String> {
        std::fs::read(self.kapi_dir().join("journal.rejected"))
            .map(|bytes| segment::lines(&bytes))
            .unwrap_or_default()
    }

    /// Commit whatever a crashed writer left in the journal.
    pub fn flush(&self) -> Result<(), StoreError> {
        if journal::read(&self.kapi_dir())?.is_empty() {
            return Ok(());
        }
        let _commit = lock::Lock::acquire(&self.kapi_dir())?;
        self.commit_journal(None)
    }

    /// Merge records from elsewhere (an exported file) by union. An id the
    /// log holds changes nothing; a record that would change one (the same
    /// id with other bytes) or that is dated more than a day past this
    /// machine's clock is refused and reported, never merged.
    pub fn merge_records(&self, records: &[Record], now_ms: u64) -> Result<Merged, StoreError> {
        let _lock = lock::Lock::acquire(&self.kapi_dir())?;
        let mut merged_report = Merged::default();
        for which in [LogRef::Shared, LogRef::Local] {
            let held: std::collections::HashMap<String, String> = self
                .load(which)?
                .records
                .into_iter()
                .map(|r| (r.id.clone(), r.to_canonical_json()))
                .collect();
            let mut lines = Vec::new();
            for r in records.iter().filter(|r| LogRef::for_record(r) == which) {
                let line = r.to_canonical_json();
                match held.get(&r.id) {
                    Some(existing) if *existing == line => merged_report.held += 1,
                    Some(_) => merged_report.refused.push(Problem {
                        location: format!("operation {}", r.id),
                        error: EntryError::Conflict { id: r.id.clone() },
                    }),
                    None if r.op_id().unix_ms() > now_ms + FUTURE_SLACK_MS => {
                        merged_report.refused.push(Problem {
                            location: format!("operation {}", r.id),
                            error: EntryError::Future {
                                id: r.id.clone(),
                                at: r.at.clone(),
                            },
                        })
                    }
                    None => lines.push(line),
                }
            }
            lines.sort();
            lines.dedup();
            if lines.is_empty() {
                continue;
            }
            let tip = self.tip(which)?;
            let base = tip.map(|t| self.tree_of(t)).transpose()?;
            let newest = lines
                .iter()
                .filter_map(|l| segment::line_id(l))
                .max()
                .map(str::to_owned);
            let count = lines.len();
            let incoming = tree::build(&self.repo, lines.into_iter())?;
            let merged = match base {
                Some(base) => tree::union(&self.repo, base, incoming)?,
                None => incoming,
            };
            let newest = match (self.newest(tip)?, newest) {
                (Some(a), Some(b)) => a.as_str().max(b.as_str()).to_owned(),
                (a, b) => a.map(|a| a.to_string()).or(b).unwrap_or_default(),
            };
            let message = format!("kapi: merge {count} operations\n\nnewest: {newest}\n");
            let commit = self.commit(
                merged,
                tip.into_iter().collect(),
                (now_ms / 1000) as i64,
                &message,
            )?;
            self.move_ref(which, tip, commit)?;
            merged_report.added += count;
        }
        Ok(merged_report)
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
        let commit = gix::objs::Commit {
            tree,
            parents: parents.into_iter().collect(),
            author: signature(seconds),
            committer: signature(seconds),
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        Ok(self
            .repo
            .write_object(&commit)
            .map_err(git("writing the log's commit"))?
            .detach())
    }

    /// Compare-and-swap the ref from `old` to `new`.
    fn move_ref(
        &self,
        which: LogRef,
        old: Option<ObjectId>,
        new: ObjectId,
    ) -> Result<(), StoreError> {
        use gix::refs::Target;
        use gix::refs::transaction::{Change, LogChange, RefEdit, RefLog};
        let expected = match old {
            Some(old) => PreviousValue::MustExistAndMatch(Target::Object(old)),
            None => PreviousValue::MustNotExist,
        };
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: "kapi".into(),
                },
                expected,
                new: Target::Object(new),
            },
            name: which.name().try_into().map_err(git("naming the ref"))?,
            deref: false,
        };
        let committer = signature(0);
        let mut time = gix::date::parse::TimeBuf::default();
        self.repo
            .edit_references_as(Some(edit), Some(committer.to_ref(&mut time)))
            .map_err(git("moving the ref"))?;
        Ok(())
    }
}

/// Packed segments are deltas of each other: without a cache of delta
/// bases, reading a log re-inflates every base of every chain.
fn with_delta_cache(repo: &mut gix::Repository) {
    repo.objects.set_pack_cache(|| {
        Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
            64 * 1024 * 1024,
        ))
    });
}

/// Segments read from git rather than from the read cache, with their bytes.
type Fresh = Vec<(ObjectId, Vec<u8>)>;

/// Inflate and parse segments on every core: decoding is most of a read.
fn parse_segments(
    repo: &gix::Repository,
    segments: &[tree::Segment],
    cache: &cache::SegmentCache,
) -> Result<(Loaded, Fresh), StoreError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    // Each segment is one run of records sorted by id.
    type Runs = (Vec<Vec<Record>>, Vec<Problem>, Vec<(ObjectId, Vec<u8>)>);
    let parse = |repo: &gix::Repository, part: &[tree::Segment]| -> Result<Runs, StoreError> {
        let (mut runs, mut problems, mut fresh) =
            (Vec::with_capacity(part.len()), Vec::new(), Vec::new());
        for s in part {
            problems.extend(s.problem.clone());
            let Some(blob) = s.blob else { continue };
            if let Some(bytes) = cache.get(&blob) {
                let mut run = Vec::with_capacity(memchr::memchr_iter(b'\n', bytes).count());
                segment::parse(bytes, s.shard, &s.location, &mut run, &mut problems);
                if !run.is_sorted_by(|a: &Record, b: &Record| a.id <= b.id) {
                    run.sort_by(|a, b| a.id.cmp(&b.id));
                }
                runs.push(run);
                continue;
            }
            // A remote can push anything: look at the size before inflating.
            let size = tree::object_size(repo, blob)?;
            if size > segment::MAX_SEGMENT_BYTES as u64 {
                problems.push(Problem {
                    location: s.location.clone(),
                    error: EntryError::OversizedSegment {
                        bytes: size as usize,
                    },
                });
                continue;
            }
            let bytes = tree::read_blob(repo, blob)?;
            let mut run = Vec::with_capacity(memchr::memchr_iter(b'\n', &bytes).count());
            segment::parse(&bytes, s.shard, &s.location, &mut run, &mut problems);
            if !run.is_sorted_by(|a: &Record, b: &Record| a.id <= b.id) {
                run.sort_by(|a, b| a.id.cmp(&b.id));
            }
            runs.push(run);
            fresh.push((blob, bytes));
        }
        Ok((runs, problems, fresh))
    };
    let (runs, problems, fresh) = if threads == 1 || segments.len() < 64 {
        parse(repo, segments)?
    } else {
        let chunk = segments.len().div_ceil(threads);
        // A repository handle is not shared between threads: each opens its own.
        let git_dir = repo.git_dir().to_path_buf();
        let parts: Vec<Result<Runs, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = segments
                .chunks(chunk)
                .map(|part| {
                    let git_dir = &git_dir;
                    scope.spawn(move || {
                        let mut repo = gix::open(git_dir).map_err(git("opening the repository"))?;
                        with_delta_cache(&mut repo);
                        parse(&repo, part)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a reader thread panicked"))
                .collect()
        });
        let (mut runs, mut problems, mut fresh) = (Vec::new(), Vec::new(), Vec::new());
        for part in parts {
            let (r, p, f) = part?;
            runs.extend(r);
            problems.extend(p);
            fresh.extend(f);
        }
        (runs, problems, fresh)
    };
    Ok((
        Loaded {
            records: merge_runs(runs),
            problems,
        },
        fresh,
    ))
}

/// Merge sorted runs into one sorted list, moving each record once.
fn merge_runs(runs: Vec<Vec<Record>>) -> Vec<Record> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let total = runs.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut iters: Vec<std::iter::Peekable<std::vec::IntoIter<Record>>> =
        runs.into_iter().map(|r| r.into_iter().peekable()).collect();
    let mut heap: BinaryHeap<Reverse<(u128, usize)>> = iters
        .iter_mut()
        .enumerate()
        .filter_map(|(i, it)| it.peek().map(|r| Reverse((crate::ops::id::key(&r.id), i))))
        .collect();
    while let Some(Reverse((_, i))) = heap.pop() {
        let record = iters[i].next().expect("a run with a head");
        out.push(record);
        if let Some(next) = iters[i].peek() {
            heap.push(Reverse((crate::ops::id::key(&next.id), i)));
        }
    }
    out
}

/// Sort by id (through a permutation: records are large to move), drop
/// exact repeats, and report a second copy of an id with different bytes.
fn finish(loaded: &mut Loaded) {
    if !loaded.records.is_sorted_by(|a, b| a.id <= b.id) {
        // Sort numeric keys, not strings: a log has 100,000s of ids.
        let mut order: Vec<(u128, usize)> = loaded
            .records
            .iter()
            .enumerate()
            .map(|(i, r)| (crate::ops::id::key(&r.id), i))
            .collect();
        order.sort_unstable();
        let mut slots: Vec<Option<Record>> = loaded.records.drain(..).map(Some).collect();
        loaded.records = order
            .into_iter()
            .map(|(_, i)| slots[i].take().expect("a permutation"))
            .collect();
    }
    // Most logs hold every id once: then there is nothing to rebuild.
    if !loaded.records.windows(2).any(|w| w[0].id == w[1].id) {
        return;
    }
    // Two copies of one id with different bytes: no copy can be trusted
    // over the other, so every copy is set aside and named.
    let mut out: Vec<Record> = Vec::with_capacity(loaded.records.len());
    let mut conflicted: Option<String> = None;
    for r in loaded.records.drain(..) {
        match out.last() {
            Some(last) if last.id == r.id => {
                if *last != r {
                    loaded.problems.push(Problem {
                        location: format!("operation {}", r.id),
                        error: EntryError::DuplicateId { id: r.id.clone() },
                    });
                    conflicted = Some(r.id.clone());
                }
            }
            _ => {
                if conflicted.take().is_some() {
                    out.pop();
                }
                out.push(r);
            }
        }
    }
    if conflicted.is_some() {
        out.pop();
    }
    loaded.records = out;
}

pub use crate::ops::id::rfc3339_ms;
