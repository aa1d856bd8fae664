//! The agent hosts' events: Claude Code's SessionStart, PostToolUse and
//! Stop, and Codex's Stop. SessionStart hands the session the rules in
//! force; Stop and PostToolUse check what the session changed and record
//! the run on `refs/kapi/local`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::input::{AgentInput, edited_file, transcript_last_entry};
use super::{ArtifactState, HookError, artifacts};
use crate::check::files::ProseFilter;
use crate::context::check::{CheckError, CheckReport, CheckRequest, check};
use crate::context::{ContextError, Session};
use crate::fsutil::Links;
use crate::ops::record::{Actor, ActorKind, CheckFailure, CheckRun};
use crate::ops::{Draft, Drafted};
use crate::store::LogRef;

/// The longest reason a Stop hook hands back (Claude Code caps a hook's
/// output at 10,000 characters).
pub const MAX_REASON_CHARS: usize = 9_000;
/// The most `additionalContext` SessionStart returns.
pub const MAX_CONTEXT_CHARS: usize = 8_000;

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
            let body = crate::context::rulesfiles::render(&ledger, now);
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
    /// Declared artifacts (Stop only).
    pub artifacts: Vec<ArtifactState>,
    /// The reason handed back to the agent when it must fix something.
    pub block: Option<String>,
    /// What the hook could not use, said on stderr (a transcript that is
    /// not a regular file); the run is recorded either way.
    pub problems: Vec<String>,
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
/// run it says is held reads the local log, for a record that holds it.
fn record_run(
    session: &Session,
    actor: Actor,
    address: Option<String>,
    run: CheckRun,
) -> Result<(), HookError> {
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
        if local
            .records
            .into_iter()
            .chain(waiting)
            .any(|r| r.address.as_ref() == Some(address))
        {
            return Ok(());
        }
    }
    let mut draft = Draft::from(Drafted::Check { run });
    draft.address = address;
    session.record_as(&actor, vec![draft], view.as_ref())?;
    Ok(())
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
    record_run(session, actor, address, run)?;
    let block = match &report {
        Some(report) if !clean && !input.stop_hook_active => {
            Some(block_reason(report, "in the files this session changed"))
        }
        _ => None,
    };
    Ok(CheckRunOutcome {
        artifacts,
        block,
        problems,
    })
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
        artifacts: Vec::new(),
        block: None,
        problems: Vec::new(),
    };
    let Some(file) = edited_file(input) else {
        return Ok(nothing);
    };
    let absolute = input.dir(&session.root).join(file);
    let Ok(rel) = crate::context::work_tree_path(session, &absolute.to_string_lossy()) else {
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
    record_run(session, actor, address, run)?;
    let block = (!clean).then(|| block_reason(&report, "in the file you just wrote"));
    Ok(CheckRunOutcome {
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
    fn bounded_text_is_cut_at_a_line_and_says_so() {
        let text = "a\n".repeat(100);
        let cut = bounded(&text, 21, "…\n");
        assert!(cut.chars().count() <= 21, "{cut}");
        assert!(cut.ends_with("…\n"));
        assert_eq!(bounded("short\n", 100, "…"), "short\n");
    }
}
