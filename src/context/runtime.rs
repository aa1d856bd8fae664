//! What a verb runs in: a [`Project`] (one repository opened, long-lived)
//! and a [`Call`] (one request), paired as a [`Session`].

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use super::env::Env;
use super::error::ContextError;
use super::points::PointMap;
use super::{checkpointed, workspace};
use crate::config::Config;
use crate::ops::Ledger;
use crate::ops::axes::{Axes, Space};
use crate::ops::history::Histories;
use crate::ops::record::{Actor, Basis, Record};
use crate::ops::settle::Settling;
use crate::ops::trust::Trust;
use crate::store::{Store, StoreError};

/// The long-lived part of a session: one project's repository, its
/// `kapi.toml`, the top of the work tree and the project key. A
/// long-running process keeps it across calls.
pub struct Project {
    pub store: Store,
    pub config: Config,
    pub root: PathBuf,
    pub project: String,
    /// The project's typed axes (`[axes]` in kapi.toml, with the
    /// gazetteers it names): every reader compares scopes on them.
    pub space: Arc<Space>,
    /// What folds this project's log, for the fold checkpoint: made on
    /// the first read ([`checkpointed`]).
    pub(super) fold_fingerprint: OnceLock<String>,
    /// The trust signatures are verified by (`[trust]`), read on first use.
    trust: OnceLock<Option<Arc<Trust>>>,
    /// The files the project was opened from (`kapi.toml`, the gazetteers
    /// its axes name), as they stood then: a long-running process opens
    /// the project again once one of them changed ([`Project::is_current`]).
    sources: Vec<(Option<Stamp>, PathBuf)>,
    /// The last folds read, kept by a long-running process between calls
    /// ([`checkpointed`]): served again while the logs' tips are the same.
    pub(super) memo: RefCell<checkpointed::Memo>,
    /// Where the last read of the whole ledger stood, in a process that
    /// ends with this call ([`checkpointed::after_write`]).
    pub(super) full_read: std::cell::Cell<Option<checkpointed::FullRead>>,
    /// The rule book the last check read by, with the matchers it built,
    /// kept by a long-running process for a check by the same rules.
    pub(super) rule_book: RefCell<Option<super::check::RuleBook>>,
}

/// What a file's metadata says of its content: its length and when it was
/// last written (`None`: absent or unreadable).
type Stamp = (u64, Option<SystemTime>);

fn stamp(path: &Path) -> Option<Stamp> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), m.modified().ok()))
}

impl Project {
    /// Open the repository at or above `dir`, read `kapi.toml`, and wait
    /// for locks as long as `env` says (`KAPI_LOCK_TIMEOUT_MS`).
    pub fn open(env: &dyn Env, dir: &Path) -> Result<Self, ContextError> {
        let mut store = Store::discover(dir)?;
        let root = store
            .work_tree()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| dir.to_path_buf());
        // Each file is stamped before it is read: one written meanwhile
        // reads as changed on the next call, never as current.
        let config_path = root.join(crate::config::FILE_NAME);
        let mut sources = vec![(stamp(&config_path), config_path)];
        let config = Config::load(&root)?;
        let project = project_key(&config, &store, &root)?;
        if let Some(timeout) = env.lock_timeout()? {
            store.set_lock_timeout(timeout);
        }
        let space = Arc::new(space_of(&config, &root, &mut sources)?);
        Ok(Self {
            store,
            config,
            root,
            project,
            space,
            fold_fingerprint: OnceLock::new(),
            trust: OnceLock::new(),
            sources,
            memo: RefCell::default(),
            full_read: std::cell::Cell::default(),
            rule_book: RefCell::default(),
        })
    }

    /// Whether the files the project was opened from still stand as they
    /// did (by length and time written): a long-running process keeps an
    /// opened project only while they do.
    pub fn is_current(&self) -> bool {
        self.sources.iter().all(|(was, path)| stamp(path) == *was)
    }

    /// The typed axes the fold compares this project's scopes on.
    pub fn axes(&self) -> Axes {
        Axes::of(&self.project, Arc::clone(&self.space))
    }

    /// How the fold settles this project's suggestions (`[context]
    /// settle` in kapi.toml).
    pub fn settling(&self) -> Settling {
        self.config.context.settle
    }

    /// A ledger over `records` that folds as this project says: its typed
    /// axes and how it settles suggestions.
    pub fn unfolded(&self, records: Vec<Record>) -> Ledger {
        Ledger::new(records)
            .with_axes(self.axes())
            .with_settling(self.settling())
            .with_trust(self.trust())
    }

    /// The trust signatures are verified by: `[trust]` of kapi.toml, with
    /// the allowed-signers file it names as the default branch holds it
    /// (none there: no key is listed). `None` without `[trust]`.
    pub fn trust(&self) -> Option<Arc<Trust>> {
        self.trust
            .get_or_init(|| {
                let config = self.config.trust.as_ref()?;
                let bytes = self.allowed_signers_committed().unwrap_or_default();
                Some(Trust::remembering(
                    config.decisions,
                    &self.project,
                    &bytes,
                    &self.store.kapi_dir(),
                ))
            })
            .clone()
    }

    /// The allowed-signers file `[trust]` names, as the default branch
    /// holds it (`None`: not there, or unreadable, or over the limit).
    pub fn allowed_signers_committed(&self) -> Option<Vec<u8>> {
        let config = self.config.trust.as_ref()?;
        self.allowed_signers_committed_at(config.allowed_signers())
    }

    /// The file at `path` as the default branch holds it (`None`: not
    /// there, unreadable, or over the allowed-signers file's limit).
    pub fn allowed_signers_committed_at(&self, path: &str) -> Option<Vec<u8>> {
        let max = crate::formats::allowed_signers::MAX_FILE_BYTES as u64;
        match self.store.git().default_branch_file(path, max) {
            Ok(Some(crate::git::Blob::Bytes(bytes))) => Some(bytes),
            _ => None,
        }
    }
}

/// The per-call part of a session: where the call runs, who acts, and the
/// environment the clock and randomness are read from (afresh on every
/// read). A long-running process makes one per request.
pub struct Call {
    /// The directory the call runs in; relative paths are relative to it.
    pub cwd: PathBuf,
    pub actor: Actor,
    pub env: Arc<dyn Env>,
}

impl Call {
    /// A call in `cwd` by the actor `env` names (else the project's git
    /// identity).
    pub fn new(env: Arc<dyn Env>, project: &Project, cwd: &Path) -> Result<Self, ContextError> {
        let actor = env.actor(&project.store)?;
        Ok(Self {
            cwd: cwd.to_path_buf(),
            actor,
            env,
        })
    }
}

/// Everything a verb needs besides its request: a project and a call.
/// It reads as both: `session.store`, `session.actor`.
pub struct Session {
    /// The project opened (its key is `session.project`, through `Deref`).
    pub opened: Rc<Project>,
    pub call: Call,
}

impl std::ops::Deref for Session {
    type Target = Project;
    fn deref(&self) -> &Project {
        &self.opened
    }
}

impl Session {
    /// Pair a (possibly long-lived) project with one call. The
    /// repository handle is not shared across threads: a server keeps a
    /// project per thread.
    pub fn new(opened: Rc<Project>, call: Call) -> Self {
        Self { opened, call }
    }

    /// Open the repository at or above `dir`, read `kapi.toml` and name
    /// the actor the environment says is acting.
    pub fn open(env: Arc<dyn Env>, dir: &Path) -> Result<Self, ContextError> {
        // A clock kapi cannot read is refused before anything else.
        env.now_ms()?;
        let project = Project::open(&*env, dir)?;
        let call = Call::new(env, &project, dir)?;
        Ok(Self::new(Rc::new(project), call))
    }

    /// [`Session::open`] for an actor the caller names, not the
    /// environment: a server that knows who its client is (the MCP server
    /// names the agent from the client's `initialize`, whatever variables
    /// the process was started with).
    pub fn open_as(env: Arc<dyn Env>, dir: &Path, actor: Actor) -> Result<Self, ContextError> {
        env.now_ms()?;
        let project = Project::open(&*env, dir)?;
        let call = Call {
            cwd: dir.to_path_buf(),
            actor,
            env,
        };
        Ok(Self::new(Rc::new(project), call))
    }

    /// The session of the work tree at or above `dir`, or `None` outside
    /// one (or in a repository without a work tree).
    pub fn open_in_work_tree(env: Arc<dyn Env>, dir: &Path) -> Result<Option<Self>, ContextError> {
        match Self::open(env, dir) {
            Ok(s) if s.store.work_tree().is_some() => Ok(Some(s)),
            Ok(_) | Err(ContextError::Store(StoreError::NotARepository(_))) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Who acts in this call.
    pub fn actor(&self) -> &Actor {
        &self.call.actor
    }

    /// The directory the call runs in.
    pub fn cwd(&self) -> &Path {
        &self.call.cwd
    }

    /// The environment this session reads.
    pub fn env(&self) -> &dyn Env {
        &*self.call.env
    }

    /// The clock now, in Unix milliseconds (pinned by `KAPI_NOW` in tests).
    pub fn now_ms(&self) -> Result<u64, ContextError> {
        Ok(self.call.env.now_ms()?)
    }

    /// Let go of a large value: dropped in a long-running process, left to
    /// the operating system when the process ends with this call (freeing
    /// a large log costs more than it returns).
    pub fn release<T>(&self, value: T) {
        if self.call.env.ends_with_call() {
            std::mem::forget(value);
        } else {
            drop(value);
        }
    }

    /// Read and fold the whole log: an operation dated more than ten
    /// minutes past this machine's clock (from a machine whose clock runs
    /// ahead, or forged) is held back, named in `Ledger::ignored`, until its
    /// time comes. The bound is the later of the call's clock (`KAPI_NOW`
    /// pins it in tests) and the machine's own.
    pub fn ledger(&self) -> Result<Ledger, ContextError> {
        Ok(self.ledger_and_unreadable()?.0)
    }

    /// [`Session::ledger`], with how many stored lines could not be read
    /// (malformed, over a limit, ...) and were skipped; `kapi store
    /// doctor` names them.
    pub fn ledger_and_unreadable(&self) -> Result<(Ledger, usize), ContextError> {
        let now = self.now_ms()?.max(self.call.env.wall_ms());
        checkpointed::read(self, now, checkpointed::Want::Full)
    }

    /// [`Session::ledger`] right after the logs gained an operation older
    /// than one they held (a merge of diverged logs): folded from the
    /// start, as no checkpoint can be advanced by it
    /// ([`checkpointed::read_refolding`]).
    pub fn refolded_ledger(&self) -> Result<Ledger, ContextError> {
        let now = self.now_ms()?.max(self.call.env.wall_ms());
        Ok(checkpointed::read_refolding(self, now, checkpointed::Want::Full)?.0)
    }

    /// What states a subject or imports a file, folded as
    /// [`Session::ledger`] folds it ([`Ledger::view`]): what `kapi check`
    /// and `kapi context <path>` read, without the usage signals and
    /// check runs that make up most of a long log.
    pub fn rules_ledger(&self) -> Result<Ledger, ContextError> {
        let now = self.now_ms()?.max(self.call.env.wall_ms());
        Ok(checkpointed::read(self, now, checkpointed::Want::View)?.0)
    }

    /// The reader's view with every decision beside it
    /// ([`Ledger::decisions`]: all but the usage signals and check runs),
    /// folded as [`Session::ledger`] folds it, with how many stored lines
    /// could not be read: what a listing of one kind other than those
    /// reads.
    pub fn decisions_ledger(&self) -> Result<(Ledger, usize), ContextError> {
        let now = self.now_ms()?.max(self.call.env.wall_ms());
        checkpointed::read(self, now, checkpointed::Want::Decisions)
    }

    /// [`Session::rules_ledger`] as the log stood at `as_of` (Unix ms;
    /// `None` for now), with how many stored lines could not be read (a
    /// rule one of them holds is not in it), shared: a long-running
    /// process hands out the view it keeps without a copy (a reader that
    /// needs its own ledger asks [`Session::rules_ledger`]).
    pub fn rules_view(
        &self,
        as_of: Option<u64>,
    ) -> Result<(Rc<checkpointed::SharedView>, usize), ContextError> {
        match as_of {
            None => {
                let now = self.now_ms()?.max(self.call.env.wall_ms());
                checkpointed::read_view(self, now)
            }
            Some(_) => {
                let (ledger, unreadable) = self.ledger_as_of(as_of)?;
                Ok((Rc::new(checkpointed::SharedView::new(ledger)), unreadable))
            }
        }
    }

    /// [`Session::ledger_and_unreadable`] as the log stood at `as_of`
    /// (Unix ms; `None` for now): only the operations it had accepted by
    /// then are folded (`--as-of`). A read of the past folds the log from
    /// the start: the checkpoint holds the log at its tips.
    pub fn ledger_as_of(&self, as_of: Option<u64>) -> Result<(Ledger, usize), ContextError> {
        match as_of {
            None => self.ledger_and_unreadable(),
            Some(at) => self.read_log(|ledger| ledger.as_of(at), |ledger| ledger),
        }
    }

    /// Every subject's history of status changes, from one pass of the
    /// reducer over the log (a checkpoint keeps no history), with the
    /// ledger folded to its end and how many stored lines could not be
    /// read.
    pub fn histories(&self) -> Result<(Histories, usize), ContextError> {
        self.histories_as_of(None)
    }

    /// [`Session::histories`] with the ledger shaped as `want` says (the
    /// reader's view, the view with every decision, or the whole ledger),
    /// through the histories kept beside the checkpoint when they are the
    /// log's as it stands ([`checkpointed::read_histories`]).
    pub fn histories_for(
        &self,
        want: checkpointed::Want,
    ) -> Result<(Histories, usize), ContextError> {
        let now = self.now_ms()?.max(self.call.env.wall_ms());
        checkpointed::read_histories(self, now, want)
    }

    /// [`Session::histories`] as the log stood at `as_of` (Unix ms; `None`
    /// for now): only the operations it had accepted by then (ids are
    /// time-ordered, so a prefix of the log) are folded, as
    /// [`Session::ledger_as_of`] folds them.
    pub fn histories_as_of(&self, as_of: Option<u64>) -> Result<(Histories, usize), ContextError> {
        self.read_log_until(as_of, crate::ops::history::histories, |h| &mut h.ledger)
    }

    /// Read the whole log, hold back what is dated ahead, and fold it with
    /// the project's axes by `fold`; `ledger` names the ledger in the
    /// result.
    fn read_log<T>(
        &self,
        fold: impl FnOnce(Ledger) -> T,
        ledger: impl FnOnce(&mut T) -> &mut Ledger,
    ) -> Result<(T, usize), ContextError> {
        self.read_log_until(None, fold, ledger)
    }

    /// [`Session::read_log`] of the operations the log had accepted by
    /// `cutoff` (Unix ms), when one is given.
    fn read_log_until<T>(
        &self,
        cutoff: Option<u64>,
        fold: impl FnOnce(Ledger) -> T,
        ledger: impl FnOnce(&mut T) -> &mut Ledger,
    ) -> Result<(T, usize), ContextError> {
        let now = self.now_ms()?.max(self.call.env.wall_ms());
        let loaded = self.store.load_all()?;
        let unreadable = crate::store::segment::unreadable(&loaded.problems);
        let (mut records, mut held) = checkpointed::hold_back(loaded.records, now);
        if let Some(cutoff) = cutoff {
            records.retain(|r| r.op_id().unix_ms() <= cutoff);
            held.retain(|r| r.op_id().unix_ms() <= cutoff);
        }
        let mut folded = fold(self.unfolded(records));
        checkpointed::name_held(ledger(&mut folded), &held);
        Ok((folded, unreadable))
    }

    /// The commit checked out, recorded as the basis of an operation.
    pub(super) fn basis(&self) -> Basis {
        let commit = self.store.repo().head_id().ok().map(|id| id.to_string());
        Basis { commit }
    }

    /// Recording from a checkout (or merging operations into its log, by
    /// sync or import) registers it with the workspace (the user's data
    /// directory), so `kapi workspace list` names it. It does not share
    /// the rules its log widens to the workspace until a person chooses
    /// that (`kapi workspace add`). Best effort: what was recorded stands
    /// whether or not the registry could be written.
    pub(crate) fn register(&self) {
        let _ = workspace::register(self);
    }
}

/// The instant a write by an actor of `kind` is dated at, given the call's
/// clock `pinned` (`KAPI_NOW` when set) and the machine's `wall` clock.
/// `KAPI_NOW` is a test facility: an agent could set it to date its
/// operation earlier than it was made (into a past a reader reads with
/// `--as-of`, or before a person's decision), so an agent's write is dated
/// by the machine's clock, except in the debug builds the test suite runs
/// (`test_build`). Whoever writes, the store never mints an id that sorts
/// before one the log holds, nor one past the machine's clock by more than
/// ten minutes.
pub fn write_clock(
    kind: crate::ops::record::ActorKind,
    pinned: u64,
    wall: u64,
    test_build: bool,
) -> u64 {
    match kind {
        crate::ops::record::ActorKind::Agent if !test_build => wall,
        _ => pinned,
    }
}

/// The project's typed axes: `[axes]` in kapi.toml, a geo axis's places
/// read from the gazetteer file it names (relative to the work tree).
/// A `[[points]]` value an axis cannot take is refused here, naming its
/// entry: a typo would otherwise put files at a point no rule reaches.
/// The project's typed axes; each gazetteer file read is added to
/// `sources`, stamped before it is read.
fn space_of(
    config: &Config,
    root: &Path,
    sources: &mut Vec<(Option<Stamp>, PathBuf)>,
) -> Result<Space, ContextError> {
    let space = Space::build(&config.axes, |file| {
        let path = root.join(file);
        sources.push((stamp(&path), path.clone()));
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read it: {e}"))
    })?;
    let points = PointMap::from_config(&config.points)?;
    for (entry, axis, value) in points.values() {
        // A profile's rules are imported from its folder: a name with no
        // folder is a typo that would leave its paths under no profile's rules.
        if axis == super::points::PROFILE_AXIS
            && !root.join(super::points::PROFILES_DIR).join(value).is_dir()
        {
            return Err(ContextError::Usage(format!(
                "kapi.toml: [[points]] entry {entry} names the profile {value}, which has no folder {}/{value}/; create it (with the profile's terms.tsv) or correct the name",
                super::points::PROFILES_DIR
            )));
        }
    }
    if !space.is_empty() {
        for (entry, axis, value) in points.values() {
            if let Some(typed) = space.axis(axis)
                && !typed.legal(value)
            {
                return Err(ContextError::Usage(format!(
                    "kapi.toml: [[points]] entry {entry} sets {axis} = \"{value}\", which is not a value of the {} axis {axis} (expected {})",
                    typed.kind(),
                    typed.expects()
                )));
            }
        }
    }
    Ok(space)
}

/// The project key: `project` in kapi.toml, else the project the log's
/// operations already name (a log holds one project: a clone under another
/// folder name, or a remote added later, must not split it in two), else
/// the name of the `origin` remote's repository, else the work tree's
/// folder name.
pub(crate) fn project_key(
    config: &Config,
    store: &Store,
    root: &Path,
) -> Result<String, ContextError> {
    if let Some(p) = config.project.as_ref().filter(|p| !p.trim().is_empty()) {
        return Ok(p.trim().to_owned());
    }
    if let Some(p) = store.log_project()? {
        return Ok(p);
    }
    let from_remote = store
        .repo()
        .config_snapshot()
        .string("remote.origin.url")
        .map(|url| url.to_string())
        .and_then(|url| {
            let last = url
                .trim_end_matches('/')
                .rsplit(['/', ':'])
                .next()?
                .trim_end_matches(".git")
                .to_owned();
            (!last.is_empty()).then_some(last)
        });
    Ok(from_remote
        .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "project".to_owned()))
}

/// A path as the log stores it: relative to the work tree (a relative path
/// is taken from where kapi runs), `.` and `..` resolved, forward slashes.
pub fn work_tree_path(session: &Session, path: &str) -> Result<String, ContextError> {
    if session.store.work_tree().is_none() {
        return Err(ContextError::Usage(format!(
            "{path}: this repository has no work tree (it is bare), so there is no file to name as evidence; quote the evidence with --quote instead"
        )));
    }
    let absolute = session.cwd().join(path);
    let rel = absolute.strip_prefix(&session.root).map_err(|_| {
        ContextError::Usage(format!(
            "{path} is outside the work tree {}",
            session.root.display()
        ))
    })?;
    let mut parts: Vec<String> = Vec::new();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if parts.pop().is_some() => {}
            _ => {
                return Err(ContextError::Usage(format!(
                    "{path} is outside the work tree {}",
                    session.root.display()
                )));
            }
        }
    }
    if parts.is_empty() {
        return Err(ContextError::Usage(format!(
            "{path} names the work tree itself; name a file or folder in it"
        )));
    }
    Ok(parts.join("/"))
}
