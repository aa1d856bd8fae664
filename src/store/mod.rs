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

mod lock;
pub mod segment;
mod tree;

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
            let lines = segment::lines(&tree::read_blob(&self.repo, blob)?);
            let ids = lines
                .iter()
                .filter_map(|l| segment::line_id(l).and_then(|id| OpId::parse(id).ok()));
            newest = newest.max(ids.max());
        }
        Ok(newest)
    }

    /// Read every operation of one log.
    pub fn load(&self, which: LogRef) -> Result<Loaded, StoreError> {
        self.load_refs(&[which])
    }

    /// Read both logs: what the fold reads.
    pub fn load_all(&self) -> Result<Loaded, StoreError> {
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
        let mut loaded = parse_segments(&self.repo, segments)?;
        finish(&mut loaded);
        Ok(loaded)
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

    /// Append one operation. `build` receives the minted id and the instant
    /// (RFC 3339) and returns the record; it runs under the lock, so ids
    /// never sort before one the log holds.
    pub fn append<E: From<StoreError>>(
        &self,
        now_ms: u64,
        random: u128,
        build: impl FnOnce(OpId, String) -> Result<Record, E>,
    ) -> Result<Record, E> {
        let _lock = lock::Lock::acquire(&self.kapi_dir()).map_err(E::from)?;
        let shared = self.tip(LogRef::Shared)?;
        let local = self.tip(LogRef::Local)?;
        let newest = self.newest(shared)?.max(self.newest(local)?);
        let id = OpId::mint(now_ms, random, newest.as_ref()).map_err(StoreError::from)?;
        let at = rfc3339_ms(id.unix_ms());
        let record = build(id.clone(), at)?;
        record.validate().map_err(StoreError::from)?;
        let which = LogRef::for_record(&record);
        let line = record.to_canonical_json();
        let newest_after = newest.map_or(id.clone(), |n| n.max(id.clone()));
        let mut tip = if which == LogRef::Shared {
            shared
        } else {
            local
        };
        for attempt in 0..8 {
            let base_tree = tip.map(|t| self.tree_of(t)).transpose()?;
            let tree = tree::insert_line(&self.repo, base_tree, segment::shard(&record.id), &line)?;
            let message = format!(
                "kapi: {} {}\n\nnewest: {newest_after}\n",
                record.kind.as_str(),
                record.short()
            );
            let commit = self.commit(
                tree,
                tip.into_iter().collect(),
                (id.unix_ms() / 1000) as i64,
                &message,
            )?;
            match self.move_ref(which, tip, commit) {
                Ok(()) => return Ok(record),
                Err(_) if attempt < 7 => tip = self.tip(which)?,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Contended(which.name(), 8).into())
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
        let _lock = lock::Lock::acquire(&self.kapi_dir())?;
        let shared = self.tip(LogRef::Shared)?;
        let local = self.tip(LogRef::Local)?;
        let mut newest = self.newest(shared)?.max(self.newest(local)?);
        let mut records = Vec::with_capacity(templates.len());
        for (n, template) in templates.into_iter().enumerate() {
            let tail =
                random.rotate_left(17 * n as u32) ^ (n as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let id = OpId::mint(now_ms, tail, newest.as_ref())?;
            let record = Record {
                id: id.to_string(),
                at: rfc3339_ms(id.unix_ms()),
                ..template
            };
            record.validate()?;
            newest = Some(id);
            records.push(record);
        }
        let newest = newest.expect("at least one record");
        for (which, mut tip) in [(LogRef::Shared, shared), (LogRef::Local, local)] {
            let mine: Vec<&Record> = records
                .iter()
                .filter(|r| LogRef::for_record(r) == which)
                .collect();
            let Some(last) = mine.last() else { continue };
            let message = format!(
                "kapi: {} operations, last {}\n\nnewest: {newest}\n",
                mine.len(),
                last.short()
            );
            let seconds = (last.op_id().unix_ms() / 1000) as i64;
            let mut moved = false;
            for _ in 0..8 {
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
                tip = self.tip(which)?;
            }
            if !moved {
                return Err(StoreError::Contended(which.name(), 8));
            }
        }
        Ok(records)
    }

    /// Merge records from elsewhere (an exported file) by union. Returns how
    /// many the log did not hold before.
    pub fn merge_records(&self, records: &[Record], now_ms: u64) -> Result<usize, StoreError> {
        let _lock = lock::Lock::acquire(&self.kapi_dir())?;
        let mut added = 0;
        for which in [LogRef::Shared, LogRef::Local] {
            let mine: Vec<&Record> = records
                .iter()
                .filter(|r| LogRef::for_record(r) == which)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let tip = self.tip(which)?;
            let base = tip.map(|t| self.tree_of(t)).transpose()?;
            let incoming = tree::build(&self.repo, mine.iter().map(|r| r.to_canonical_json()))?;
            let merged = match base {
                Some(base) => tree::union(&self.repo, base, incoming)?,
                None => incoming,
            };
            if Some(merged) == base {
                continue;
            }
            let before = match tip {
                Some(_) => self.load(which)?.records.len(),
                None => 0,
            };
            let newest = mine.iter().map(|r| r.id.as_str()).max().map(str::to_owned);
            let newest = match (self.newest(tip)?, newest) {
                (Some(a), Some(b)) => a.as_str().max(b.as_str()).to_owned(),
                (a, b) => a.map(|a| a.to_string()).or(b).unwrap_or_default(),
            };
            let message = format!(
                "kapi: merge {} operations\n\nnewest: {newest}\n",
                mine.len()
            );
            let commit = self.commit(
                merged,
                tip.into_iter().collect(),
                (now_ms / 1000) as i64,
                &message,
            )?;
            self.move_ref(which, tip, commit)?;
            let after = self.load(which)?.records.len();
            added += after.saturating_sub(before);
        }
        Ok(added)
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

/// Inflate and parse segments on every core: decoding is most of a read.
fn parse_segments(
    repo: &gix::Repository,
    segments: Vec<tree::Segment>,
) -> Result<Loaded, StoreError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let parse = |repo: &gix::Repository, part: &[tree::Segment]| -> Result<Loaded, StoreError> {
        let mut loaded = Loaded::default();
        for s in part {
            loaded.problems.extend(s.problem.clone());
            if let Some(blob) = s.blob {
                let bytes = tree::read_blob(repo, blob)?;
                segment::parse(
                    &bytes,
                    s.shard,
                    &s.location,
                    &mut loaded.records,
                    &mut loaded.problems,
                );
            }
        }
        Ok(loaded)
    };
    if threads == 1 || segments.len() < 64 {
        return parse(repo, &segments);
    }
    let chunk = segments.len().div_ceil(threads);
    // A repository handle is not shared between threads: each opens its own.
    let git_dir = repo.git_dir().to_path_buf();
    let parts: Vec<Result<Loaded, StoreError>> = std::thread::scope(|scope| {
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
    let mut loaded = Loaded::default();
    for part in parts {
        let part = part?;
        loaded.records.extend(part.records);
        loaded.problems.extend(part.problems);
    }
    Ok(loaded)
}

/// Sort by id (through a permutation: records are large to move), drop
/// exact repeats, and report a second copy of an id with different bytes.
fn finish(loaded: &mut Loaded) {
    if !loaded.records.is_sorted_by(|a, b| a.id <= b.id) {
        let mut order: Vec<usize> = (0..loaded.records.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            loaded.records[a]
                .id
                .cmp(&loaded.records[b].id)
                .then(a.cmp(&b))
        });
        let mut slots: Vec<Option<Record>> = loaded.records.drain(..).map(Some).collect();
        loaded.records = order
            .into_iter()
            .map(|i| slots[i].take().expect("a permutation"))
            .collect();
    }
    let mut out: Vec<Record> = Vec::with_capacity(loaded.records.len());
    for r in loaded.records.drain(..) {
        match out.last() {
            Some(last) if last.id == r.id => {
                if *last != r {
                    loaded.problems.push(Problem {
                        location: format!("operation {}", r.id),
                        error: EntryError::DuplicateId { id: r.id.clone() },
                    });
                }
            }
            _ => out.push(r),
        }
    }
    loaded.records = out;
}

/// Unix milliseconds as `2026-11-30T05:07:39.123Z`.
pub fn rfc3339_ms(unix_ms: u64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let f = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(f).unwrap_or_default()
}
