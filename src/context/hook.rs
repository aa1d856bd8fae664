//! The hook events as use cases: what `kapi hook <event>` does for git
//! (pre-commit, post-merge) and for a coding agent's host (Claude Code's
//! SessionStart, PostToolUse and Stop; Codex's Stop). Each calls the same
//! check, compile and verify the command line calls, never `kapi` as a
//! child process, and returns what happened; the CLI renders it and picks
//! the exit code the host reads. docs/hooks.md is the user's account.

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::check::{CheckError, CheckReport, CheckRequest, check};
use super::{ContextError, Session};
use crate::check::files::ProseFilter;
use crate::compile::VerifyStatus;
use crate::compile::artifacts::{
    ArtifactCompiled, ArtifactError, ArtifactVerified, compile_entry, verify_entry,
};
use crate::config::CompileMode;
use crate::fsutil::{FileError, Links};
use crate::ops::record::{Actor, ActorKind, CheckFailure, CheckRun, Record};
use crate::ops::{Draft, Drafted};
use crate::store::LogRef;

/// The longest reason a Stop hook hands back (Claude Code caps a hook's
/// output at 10,000 characters).
pub const MAX_REASON_CHARS: usize = 9_000;
/// The most `additionalContext` SessionStart returns.
pub const MAX_CONTEXT_CHARS: usize = 8_000;
/// How much of a transcript's end is read to find its last entry.
const TRANSCRIPT_TAIL: u64 = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(transparent)]
    Context(#[from] ContextError),
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error("git: {0}")]
    Git(#[from] crate::git::GitError),
    /// The JSON the host sent on stdin is not what the hook expects.
    #[error("the hook input is not valid: {0}")]
    Input(String),
}

/// The agent hosts whose hooks kapi answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    ClaudeCode,
    Codex,
}

impl Host {
    /// The agent name its operations are recorded under (unless
    /// `KAPI_AGENT` names another).
    pub fn agent(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
        }
    }
}

/// The JSON an agent host sends a hook on stdin (the fields kapi reads;
/// the rest are ignored, since hosts add fields over time).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AgentInput {
    pub session_id: String,
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// Stop: the agent is already continuing because a Stop hook blocked.
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<serde_json::Value>,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// Codex names each turn.
    #[serde(default)]
    pub turn_id: Option<String>,
}

impl AgentInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, HookError> {
        let input: AgentInput =
            serde_json::from_slice(bytes).map_err(|e| HookError::Input(e.to_string()))?;
        if input.session_id.trim().is_empty() || input.session_id.len() > 256 {
            return Err(HookError::Input(
                "`session_id` is empty or longer than 256 bytes".into(),
            ));
        }
        Ok(input)
    }

    /// The directory the host runs in (its `cwd`, else `fallback`).
    pub fn dir(&self, fallback: &Path) -> PathBuf {
        self.cwd.clone().unwrap_or_else(|| fallback.to_path_buf())
    }
}

// ---------------------------------------------------------------------------
// Declared artifacts

/// What became of one `[[compile]]` artifact in a hook.
#[derive(Debug, Clone)]
pub enum ArtifactState {
    Current(PathBuf),
    /// Stale, and left so: the reasons verify gave.
    Stale(PathBuf, Vec<&'static str>),
    /// Refused by verify (or the budget refused a regeneration).
    Refused(PathBuf, Vec<&'static str>),
    /// Was stale, recompiled into the work tree (and staged, in pre-commit).
    Regenerated(PathBuf),
    /// Could not be verified or recompiled.
    Failed(PathBuf, String),
}

impl ArtifactState {
    /// Whether the artifact stops a commit.
    pub fn blocks(&self) -> bool {
        matches!(self, Self::Stale(..) | Self::Refused(..) | Self::Failed(..))
    }
}

fn state_of(verified: ArtifactVerified) -> ArtifactState {
    let ArtifactVerified {
        output,
        verification,
    } = verified;
    match verification.status {
        VerifyStatus::Current => ArtifactState::Current(output),
        VerifyStatus::Stale => ArtifactState::Stale(output, verification.reasons),
        VerifyStatus::Refused => ArtifactState::Refused(output, verification.reasons),
    }
}

/// The evaluation day for unpinned artifacts: today in UTC by the clock
/// the session reads (`KAPI_NOW` pins it in tests).
pub fn today(session: &Session) -> Result<time::Date, ContextError> {
    crate::compile::day_of(session.now_ms()?).map_err(|e| ContextError::Usage(e.to_string()))
}

/// Verify every declared artifact; with `regenerate`, recompile the stale
/// ones (and stage them when `stage`).
fn artifacts(
    session: &Session,
    regenerate: bool,
    stage: bool,
) -> Result<Vec<ArtifactState>, HookError> {
    let today = today(session)?;
    let mut states = Vec::new();
    for entry in &session.config.compile {
        let verified = match verify_entry(&session.root, &session.config, entry, today) {
            Ok(v) => state_of(v),
            // A broken entry, a missing vault: the artifact's own failure,
            // named beside the others.
            Err(e) => {
                states.push(ArtifactState::Failed(entry.output.clone(), e.to_string()));
                continue;
            }
        };
        let state = match verified {
            ArtifactState::Stale(output, _) if regenerate => {
                match compile_entry(&session.root, &session.config, entry, today) {
                    Ok(ArtifactCompiled::Compiled { .. }) => {
                        if stage {
                            session
                                .store
                                .git()
                                .stage(&output.to_string_lossy().replace('\\', "/"))?;
                        }
                        ArtifactState::Regenerated(output)
                    }
                    Ok(ArtifactCompiled::Refused { .. }) => {
                        ArtifactState::Refused(output, vec!["budget_exceeded"])
                    }
                    Err(e) => ArtifactState::Failed(output, e.to_string()),
                }
            }
            other => other,
        };
        states.push(state);
    }
    Ok(states)
}

// ---------------------------------------------------------------------------
// pre-commit

/// What the pre-commit hook found.
#[derive(Debug)]
pub struct PreCommit {
    /// The staged content checked.
    pub check: CheckReport,
    pub artifacts: Vec<ArtifactState>,
}

impl PreCommit {
    /// Whether the commit is refused: an established rule fails, or a
    /// declared artifact is stale, refused or broken.
    pub fn refused(&self) -> bool {
        self.check.failed() || self.artifacts.iter().any(ArtifactState::blocks)
    }
}

/// `kapi hook pre-commit`: check what is staged (established rules fail,
/// suggestions advise) and verify every `[[compile]]` artifact; with
/// `[hooks] compile = "regenerate"` a stale one is recompiled and staged.
pub fn pre_commit(session: &Session) -> Result<PreCommit, HookError> {
    let request = CheckRequest {
        cwd: session.root.clone(),
        staged: true,
        ..CheckRequest::default()
    };
    let report = check(Some(session), &request)?;
    let regenerate = session.config.hooks.compile == CompileMode::Regenerate;
    let artifacts = artifacts(session, regenerate, true)?;
    Ok(PreCommit {
        check: report,
        artifacts,
    })
}

// ---------------------------------------------------------------------------
// post-merge

/// What the post-merge hook did; it never fails the merge.
#[derive(Debug, Default)]
pub struct PostMerge {
    /// Merge signals recorded for `ORIG_HEAD..HEAD` (`None`: not read).
    pub signals: Option<usize>,
    /// Suggestions settling established.
    pub established: usize,
    /// Rules files refreshed after an establishment.
    pub refreshed: Vec<PathBuf>,
    /// Why merge signals were not recorded, when they were not.
    pub skipped: Option<String>,
    /// Values of the range's commits over a signal's limits, left out of
    /// the signals recorded.
    pub left_out: Vec<super::settle::SkippedValue>,
    /// Artifacts the merge made stale, recompiled into the work tree.
    pub regenerated: Vec<PathBuf>,
    /// Every artifact that is not current after the hook, and why.
    pub artifacts: Vec<ArtifactState>,
    /// What went wrong, in words; the merge stands either way.
    pub problems: Vec<String>,
}

/// The range a merge brought in.
pub const MERGED: &str = "ORIG_HEAD..HEAD";

/// `kapi hook post-merge`: after a merge, record the merge signals of
/// `ORIG_HEAD..HEAD` and settle (without pushing), then regenerate the
/// declared artifacts the merge made stale. A squash merge (`squash`)
/// committed nothing yet, and an agent's merge is not a person's signal:
/// neither records signals. Never fails: every error becomes a problem to
/// report.
pub fn post_merge(session: &Session, squash: bool) -> PostMerge {
    let mut done = PostMerge::default();
    if squash {
        done.skipped = Some("a squash merge commits nothing yet".into());
    } else if crate::ops::policy::may_share(
        session.actor(),
        crate::ops::policy::Sharing::MergeSignals,
    )
    .is_err()
    {
        done.skipped = Some(
            "an agent's merge is not a person's signal (a person or the CI step runs `kapi context sync --merged`)"
                .into(),
        );
    } else if let Some(branch) = session
        .store
        .git()
        .current_branch()
        .filter(|b| *b != session.store.git().default_branch())
    {
        done.skipped = Some(format!(
            "{branch} is not the default branch: a merge signal says a change reached the default branch"
        ));
    } else {
        // One fold serves the merge signals and settling, as in sync.
        let settled = session.ledger().and_then(|mut ledger| {
            match super::settle::merge_signals_in(session, &mut ledger, MERGED, None) {
                Ok(found) => {
                    done.signals = Some(found.signals.iter().filter(|s| s.recorded).count());
                    done.left_out = found.skipped;
                }
                Err(e) => done.problems.push(format!("merge signals: {e}")),
            }
            // Settling may change what is in force: before the artifacts.
            super::settle::settle_in(session, ledger)
        });
        match settled {
            Ok(established) => {
                done.established = established.len();
                if !established.is_empty() {
                    let (refreshed, failed) = super::rulesfiles::refresh_after_change(session);
                    done.refreshed = refreshed;
                    done.problems.extend(failed.map(|e| e.to_string()));
                }
            }
            Err(e) => done.problems.push(format!("settling: {e}")),
        }
    }
    match artifacts(session, true, false) {
        Ok(states) => {
            for state in states {
                match state {
                    ArtifactState::Regenerated(output) => done.regenerated.push(output),
                    ArtifactState::Current(_) => {}
                    other => done.artifacts.push(other),
                }
            }
        }
        Err(e) => done.problems.push(e.to_string()),
    }
    done
}

// ---------------------------------------------------------------------------
// SessionStart

/// What SessionStart did.
#[derive(Debug, Default)]
pub struct SessionStarted {
    /// The file `export KAPI_SESSION=…` was appended to.
    pub env_file: Option<PathBuf>,
    /// The rules and notes in force, for `additionalContext` (bounded).
    pub context: String,
    /// What went wrong; the session starts either way.
    pub problems: Vec<String>,
}

/// Where a session's starting point is kept: the base its Stop hook
/// compares the work tree with.
fn session_base_file(session: &Session, id: &str) -> PathBuf {
    let name = crate::digest::sha256_hex(id.as_bytes());
    session.store.kapi_dir().join("sessions").join(&name[..32])
}

/// How the work tree stood when a session began: the commit checked out,
/// and the untracked prose files with the SHA-256 of their bytes (an
/// untracked file the session did not touch is not the session's).
#[derive(Debug, Default, serde::Serialize, Deserialize)]
struct SessionBase {
    commit: Option<String>,
    #[serde(default)]
    untracked: std::collections::BTreeMap<String, String>,
}

/// The SHA-256 of a regular file's bytes (read without blocking, under the
/// read cap); `None` for anything else, which then counts as changed.
fn file_digest(path: &Path) -> Option<String> {
    crate::fsutil::read_capped(path, Links::Follow)
        .ok()
        .map(|bytes| crate::digest::sha256_hex(&bytes))
}

impl SessionBase {
    fn now(session: &Session) -> Result<Self, HookError> {
        let git = session.store.git();
        let untracked = prose_files(session, git.untracked()?)?
            .into_iter()
            .filter_map(|p| file_digest(&session.root.join(&p)).map(|d| (p, d)))
            .collect();
        Ok(SessionBase {
            commit: git.head_commit(),
            untracked,
        })
    }

    fn read(session: &Session, id: &str) -> Option<Self> {
        let text = std::fs::read_to_string(session_base_file(session, id)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// `export KAPI_SESSION='<id>'`: the session id quoted for a POSIX shell.
pub fn export_line(id: &str) -> String {
    format!("export KAPI_SESSION='{}'\n", id.replace('\'', "'\\''"))
}

/// `kapi hook claude-session-start`: append `export KAPI_SESSION=<id>` to
/// the file `CLAUDE_ENV_FILE` names, remember the commit the session
/// starts from, and return the rules and notes in force (bounded). Never
/// fails: every error becomes a problem to report.
pub fn session_start(
    session: Option<&Session>,
    input: &AgentInput,
    env_file: Option<&Path>,
) -> SessionStarted {
    let mut done = SessionStarted::default();
    if let Some(path) = env_file {
        // Appended to a regular file only: a FIFO or a device there would
        // hold the session's start, and a link is not the host's file.
        let appended = crate::fsutil::append_regular(path, Links::Refuse).and_then(|mut f| {
            std::io::Write::write_all(&mut f, export_line(&input.session_id).as_bytes())
                .map_err(Into::into)
        });
        match appended {
            Ok(()) => done.env_file = Some(path.to_path_buf()),
            Err(e) => done.problems.push(format!(
                "cannot append to CLAUDE_ENV_FILE {}: {e}; later kapi commands of this session are not attributed to it",
                path.display()
            )),
        }
    } else {
        done.problems.push(
            "CLAUDE_ENV_FILE is not set: later kapi commands of this session are not attributed to it"
                .into(),
        );
    }
    let Some(session) = session else {
        return done;
    };
    // A resumed session keeps the base it began with.
    let base = session_base_file(session, &input.session_id);
    if !base.exists() {
        match SessionBase::now(session) {
            Ok(now) => {
                let text = serde_json::to_string(&now).expect("a base always serializes");
                let written = base
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::write(&base, text));
                if let Err(e) = written {
                    done.problems
                        .push(format!("cannot write {}: {e}", base.display()));
                }
            }
            Err(e) => done.problems.push(e.to_string()),
        }
    }
    match session.rules_ledger() {
        Ok(ledger) => {
            let now = session.now_ms().ok().map(|ms| ms as i64);
            let body = super::rulesfiles::render(&ledger, now);
            done.context = bounded(
                &format!("The rules and notes in force in this project (kapi):\n\n{body}"),
                MAX_CONTEXT_CHARS,
                "\n… more in `kapi context log --status established`\n",
            );
            session.release(ledger);
        }
        Err(e) => done.problems.push(e.to_string()),
    }
    done
}

/// `text` cut at a line boundary to at most `max` characters, `tail`
/// appended when cut.
fn bounded(text: &str, max: usize, tail: &str) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let budget = max.saturating_sub(tail.chars().count());
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        if out.chars().count() + line.chars().count() > budget {
            break;
        }
        out.push_str(line);
    }
    out.push_str(tail);
    out
}

// ---------------------------------------------------------------------------
// Check runs: Stop and PostToolUse

/// Which hook a check run answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunHook {
    /// A turn ended: every file the session changed.
    Stop,
    /// An edit wrote one file.
    Edit,
}

impl RunHook {
    pub fn as_str(self) -> &'static str {
        match self {
            RunHook::Stop => "stop",
            RunHook::Edit => "edit",
        }
    }
}

/// One check run a hook recorded (or found already recorded).
#[derive(Debug)]
pub struct CheckRunOutcome {
    /// The `check` operation on `refs/kapi/local`, `None` when nothing was
    /// checked (an edit of a file that is not prose).
    pub record: Option<Record>,
    /// The hook ran before for this event: the operation was already there.
    pub repeated: bool,
    /// The check itself.
    pub report: Option<CheckReport>,
    /// Declared artifacts (Stop only).
    pub artifacts: Vec<ArtifactState>,
    /// The reason handed back to the agent when it must fix something.
    pub block: Option<String>,
    /// What the hook could not use, said on stderr (a transcript that is
    /// not a regular file); the run is recorded either way.
    pub problems: Vec<String>,
}

/// The last entry of a transcript (JSON Lines): its `uuid`, else a digest
/// of the line. `Ok(None)` when there is no transcript, or nothing in it.
/// Only a regular file is read, without blocking, and only its last
/// [`TRANSCRIPT_TAIL`] bytes (a FIFO or `/dev/zero` is refused, not read).
pub fn transcript_last_entry(path: &Path) -> Result<Option<String>, FileError> {
    let mut file = match crate::fsutil::open_regular(path, Links::Follow) {
        Ok(file) => file,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TRANSCRIPT_TAIL)))?;
    let mut tail = Vec::new();
    // Bounded even when the host writes on while this reads.
    file.take(TRANSCRIPT_TAIL).read_to_end(&mut tail)?;
    let Some(line) = tail
        .split(|b| *b == b'\n')
        .rev()
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
    else {
        return Ok(None);
    };
    let uuid = serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("uuid").and_then(|u| u.as_str()).map(str::to_owned));
    Ok(Some(uuid.unwrap_or_else(|| {
        format!("sha256:{}", crate::digest::sha256_hex(line))
    })))
}

/// The content address of the run answering `event` in `session`: a
/// hook run twice for one event records one operation.
fn run_address(host: Host, session: &str, hook: RunHook, event: &str) -> String {
    let key = format!("{}\0{session}\0{}\0{event}", host.agent(), hook.as_str());
    format!("check:{}", &crate::digest::sha256_hex(key.as_bytes())[..40])
}

/// The agent a hook records as: `KAPI_AGENT` when set, else the host's own
/// name; always in the session the host named.
fn hook_actor(session: &Session, host: Host, id: &str) -> Actor {
    let name = match &session.actor().kind {
        ActorKind::Agent => session.actor().name.clone(),
        _ => host.agent().into(),
    };
    Actor {
        kind: ActorKind::Agent,
        name,
        session: Some(id.to_owned().into()),
    }
}

/// The failing findings of a check, one per file, rule and quote.
fn failures(report: &CheckReport) -> Vec<CheckFailure> {
    let mut seen = BTreeSet::new();
    report
        .outcome
        .findings
        .iter()
        .filter(|f| f.fails)
        .filter(|f| seen.insert((f.path.clone(), f.rule.clone(), f.matched.clone())))
        .map(|f| CheckFailure {
            path: f.path.clone(),
            rule: f.rule.clone(),
            quote: f.matched.clone(),
        })
        .collect()
}

/// Record the run unless its address is already in the local log (on the
/// ref, or still in the journal when its committer gave up waiting for
/// the lock). The reader's view knows every address the log holds: only a
/// run it says is held reads the local log, for the record that holds it.
fn record_run(
    session: &Session,
    actor: Actor,
    address: Option<String>,
    run: CheckRun,
) -> Result<(Record, bool), HookError> {
    let view = session.rules_ledger().ok();
    if let Some(address) = &address
        && view.as_ref().is_none_or(|view| view.holds_address(address))
    {
        let local = session
            .store
            .load(LogRef::Local)
            .map_err(ContextError::from)?;
        let waiting = session
            .store
            .journal_records()
            .map_err(ContextError::from)?;
        if let Some(found) = local
            .records
            .into_iter()
            .chain(waiting)
            .find(|r| r.address.as_ref() == Some(address))
        {
            return Ok((found, true));
        }
    }
    let mut draft = Draft::from(Drafted::Check { run });
    draft.address = address;
    let mut recorded = session.record_as(&actor, vec![draft], view.as_ref())?;
    Ok((recorded.pop().expect("one draft, one record"), false))
}

/// The reason handed back to the agent: each failing finding, as `kapi
/// check` words it, bounded.
fn block_reason(report: &CheckReport, what: &str) -> String {
    let failing: Vec<&crate::check::Finding> =
        report.outcome.findings.iter().filter(|f| f.fails).collect();
    let one = failing.len() == 1;
    let mut text = format!(
        "kapi: {} finding{} of established rules {} {what}; fix {}, then finish:\n",
        failing.len(),
        if one { "" } else { "s" },
        if one { "fails" } else { "fail" },
        if one { "it" } else { "them" },
    );
    // A path or a form from the log never steers the terminal the host
    // shows the reason in, nor starts a line of its own.
    for f in &failing {
        text.push_str(&format!(
            "- {}:{}:{}: {}\n",
            crate::terminal::escape(&f.path),
            f.line,
            f.column,
            crate::terminal::escape(&f.message)
        ));
    }
    text.push_str(
        "A rule that is wrong is a person's to drop (kapi context review); do not reword around it.\n",
    );
    bounded(
        &text,
        MAX_REASON_CHARS,
        "… more: run `kapi check` on the files you changed\n",
    )
}

/// The prose files among `paths` (repository-relative) that exist.
fn prose_files(session: &Session, paths: Vec<String>) -> Result<Vec<String>, HookError> {
    let filter = ProseFilter::new(&session.config.check)
        .map_err(CheckError::from)?
        .with_vale_styles(Some(&session.root));
    Ok(paths
        .into_iter()
        .filter(|p| filter.is_prose(p) && session.root.join(p).is_file())
        .collect())
}

fn check_paths(session: &Session, files: &[String]) -> Result<Option<CheckReport>, HookError> {
    if files.is_empty() {
        return Ok(None);
    }
    let request = CheckRequest {
        cwd: session.root.clone(),
        paths: files.iter().map(PathBuf::from).collect(),
        ..CheckRequest::default()
    };
    Ok(Some(check(Some(session), &request)?))
}

/// `kapi hook claude-stop` (and `codex-stop`): check every prose file the
/// session changed (tracked changes since the commit it started from, and
/// untracked files), verify declared artifacts, and record the run as a
/// `check` operation on `refs/kapi/local` addressed by the session and the
/// transcript's last entry. When an established rule fails and the agent
/// is not already continuing from a Stop hook, `block` holds the reason.
pub fn agent_stop(
    session: &Session,
    host: Host,
    input: &AgentInput,
) -> Result<CheckRunOutcome, HookError> {
    let base = SessionBase::read(session, &input.session_id).unwrap_or_default();
    let git = session.store.git();
    let mut changed = match git.changed_since(base.commit.as_deref()) {
        Ok(files) => files,
        // The starting commit is gone (history rewritten): diff against HEAD.
        Err(_) if base.commit.is_some() => git.changed_since(None)?,
        Err(e) => return Err(e.into()),
    };
    // Untracked files, but not those that stand as they stood when the
    // session began.
    changed.extend(git.untracked()?.into_iter().filter(|p| {
        base.untracked
            .get(p)
            .is_none_or(|at_start| file_digest(&session.root.join(p)).as_ref() != Some(at_start))
    }));
    changed.sort();
    changed.dedup();
    let files = prose_files(session, changed)?;
    let report = check_paths(session, &files)?;
    let artifacts = artifacts(session, false, false)?;
    let failing = report.as_ref().map(failures).unwrap_or_default();
    let mut problems = Vec::new();
    let last_entry = match input.transcript_path.as_deref() {
        Some(path) => transcript_last_entry(path).unwrap_or_else(|e| {
            problems.push(format!(
                "the transcript {} is not read: {e}",
                path.display()
            ));
            None
        }),
        None => None,
    };
    let event = last_entry.or_else(|| input.turn_id.clone());
    let address = event.map(|e| run_address(host, &input.session_id, RunHook::Stop, &e));
    let run = CheckRun {
        hook: RunHook::Stop.as_str().into(),
        files: files.clone(),
        clean: failing.is_empty(),
        failing,
    };
    let clean = run.clean;
    let actor = hook_actor(session, host, &input.session_id);
    let (record, repeated) = record_run(session, actor, address, run)?;
    let block = match &report {
        Some(report) if !clean && !input.stop_hook_active => {
            Some(block_reason(report, "in the files this session changed"))
        }
        _ => None,
    };
    Ok(CheckRunOutcome {
        record: Some(record),
        repeated,
        report,
        artifacts,
        block,
        problems,
    })
}

/// The file an Edit, Write or MultiEdit call wrote, from its input.
pub fn edited_file(input: &AgentInput) -> Option<PathBuf> {
    let tool = input.tool_name.as_deref()?;
    if !matches!(tool, "Edit" | "Write" | "MultiEdit") {
        return None;
    }
    let args = input.tool_input.as_ref()?;
    args.get("file_path")
        .or_else(|| args.get("filePath"))
        .and_then(|p| p.as_str())
        .map(PathBuf::from)
}

/// `kapi hook claude-post-edit`: check the one file an Edit, Write or
/// MultiEdit call wrote and record the run, addressed by the tool call id.
/// A file outside the work tree, or not prose, is neither checked nor
/// recorded. Failing findings go back to the agent (`block`).
pub fn agent_post_edit(
    session: &Session,
    host: Host,
    input: &AgentInput,
) -> Result<CheckRunOutcome, HookError> {
    let nothing = CheckRunOutcome {
        record: None,
        repeated: false,
        report: None,
        artifacts: Vec::new(),
        block: None,
        problems: Vec::new(),
    };
    let Some(file) = edited_file(input) else {
        return Ok(nothing);
    };
    let absolute = input.dir(&session.root).join(file);
    let Ok(rel) = super::work_tree_path(session, &absolute.to_string_lossy()) else {
        return Ok(nothing);
    };
    let files = prose_files(session, vec![rel])?;
    let Some(report) = check_paths(session, &files)? else {
        return Ok(nothing);
    };
    let failing = failures(&report);
    let address = input
        .tool_use_id
        .as_deref()
        .filter(|id| !id.is_empty())
        .map(|id| run_address(host, &input.session_id, RunHook::Edit, id));
    let run = CheckRun {
        hook: RunHook::Edit.as_str().into(),
        files,
        clean: failing.is_empty(),
        failing,
    };
    let clean = run.clean;
    let actor = hook_actor(session, host, &input.session_id);
    let (record, repeated) = record_run(session, actor, address, run)?;
    let block = (!clean).then(|| block_reason(&report, "in the file you just wrote"));
    Ok(CheckRunOutcome {
        record: Some(record),
        repeated,
        report: Some(report),
        artifacts: Vec::new(),
        block,
        problems: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_line_quotes_the_session_for_a_shell() {
        assert_eq!(export_line("abc-1"), "export KAPI_SESSION='abc-1'\n");
        assert_eq!(export_line("a'b"), "export KAPI_SESSION='a'\\''b'\n");
    }

    #[test]
    fn a_run_address_depends_on_the_session_the_hook_and_the_event() {
        let a = run_address(Host::ClaudeCode, "s1", RunHook::Stop, "u1");
        assert_eq!(a, run_address(Host::ClaudeCode, "s1", RunHook::Stop, "u1"));
        assert_ne!(a, run_address(Host::ClaudeCode, "s2", RunHook::Stop, "u1"));
        assert_ne!(a, run_address(Host::ClaudeCode, "s1", RunHook::Edit, "u1"));
        assert_ne!(a, run_address(Host::ClaudeCode, "s1", RunHook::Stop, "u2"));
        assert!(a.starts_with("check:"));
    }

    #[test]
    fn the_last_transcript_entry_is_its_uuid_or_a_digest_of_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"uuid\":\"a\"}\n{\"uuid\":\"b\",\"type\":\"system\"}\n\n",
        )
        .unwrap();
        let last = |p: &Path| transcript_last_entry(p).unwrap();
        assert_eq!(last(&path).as_deref(), Some("b"));
        std::fs::write(&path, "{\"uuid\":\"a\"}\nnot json\n").unwrap();
        assert!(last(&path).unwrap().starts_with("sha256:"));
        assert_eq!(last(&dir.path().join("none")), None);
        // A device is refused, never read.
        assert!(matches!(
            transcript_last_entry(Path::new("/dev/zero")),
            Err(FileError::NotRegular("a device"))
        ));
    }

    #[test]
    fn bounded_text_is_cut_at_a_line_and_says_so() {
        let text = "a\n".repeat(100);
        let cut = bounded(&text, 21, "…\n");
        assert!(cut.chars().count() <= 21, "{cut}");
        assert!(cut.ends_with("…\n"));
        assert_eq!(bounded("short\n", 100, "…"), "short\n");
    }
}
