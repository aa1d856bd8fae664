//! A hook event run whole, as its host calls it: the repository opened
//! where the host runs (the git hooks: the work tree; the agent hooks: the
//! `cwd` their JSON names), the host's input read under a cap, the event's
//! use case ([`super`]) called, and what the host is to be told
//! decided here: whether a commit is refused and why, what a hook that
//! could not open the repository says. The command line only renders the
//! outcome in the host's terms (exit codes, stderr, JSON on stdout;
//! docs/hooks.md).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::guard::{self, Verdict};
use super::input::read_input;
use crate::context::hook::{
    self, ArtifactState, CheckRunOutcome, HookError, Host, PostMerge, PreCommit, SessionStarted,
};
use crate::context::{ContextError, Env, Session};

// ---------------------------------------------------------------------------
// git

/// Why a commit is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An established rule fails (artifacts may not be current either): a
    /// rule that is wrong is a person's to drop.
    Rules,
    /// Only declared artifacts that are stale, refused or broken.
    Artifacts,
}

/// What the pre-commit hook found, and its verdict.
#[derive(Debug)]
pub struct PreCommitRun {
    pub done: PreCommit,
    /// `None`: the commit goes ahead.
    pub refusal: Option<Refusal>,
    /// A declared artifact is stale and was left so: regenerating it (or
    /// `[hooks] compile = "regenerate"`) is the fix.
    pub stale: bool,
}

/// `kapi hook pre-commit` in the work tree at `cwd`.
pub fn pre_commit(env: Arc<dyn Env>, cwd: &Path) -> Result<PreCommitRun, HookError> {
    let session = Session::open(env, cwd)?;
    let done = hook::pre_commit(&session)?;
    let refusal = if done.check.failed() {
        Some(Refusal::Rules)
    } else if done.refused() {
        Some(Refusal::Artifacts)
    } else {
        None
    };
    let stale = done
        .artifacts
        .iter()
        .any(|a| matches!(a, ArtifactState::Stale(..)));
    Ok(PreCommitRun {
        done,
        refusal,
        stale,
    })
}

/// `kapi hook post-merge` in the work tree at `cwd` (`squash`: git said
/// the merge was a squash). `Err` only when the repository cannot be
/// opened: the hook was skipped, and the merge stands either way.
pub fn post_merge(env: Arc<dyn Env>, cwd: &Path, squash: bool) -> Result<PostMerge, ContextError> {
    let session = Session::open(env, cwd)?;
    Ok(hook::post_merge(&session, squash))
}

// ---------------------------------------------------------------------------
// agent hosts

/// `kapi hook claude-session-start`: `input` is the host's JSON. Never
/// fails (a failing SessionStart hook could block the session): what went
/// wrong is among the problems, in the order it happened.
pub fn session_start(env: Arc<dyn Env>, cwd: &Path, input: impl Read) -> SessionStarted {
    let input = match read_input(input) {
        Ok(input) => input,
        Err(e) => {
            return SessionStarted {
                problems: vec![e.to_string()],
                ..SessionStarted::default()
            };
        }
    };
    let mut problems = Vec::new();
    let session =
        Session::open_in_work_tree(Arc::clone(&env), &input.dir(cwd)).unwrap_or_else(|e| {
            problems.push(e.to_string());
            None
        });
    let env_file = env.var_os("CLAUDE_ENV_FILE").map(PathBuf::from);
    let mut done = hook::session_start(session.as_ref(), &input, env_file.as_deref());
    problems.append(&mut done.problems);
    done.problems = problems;
    done
}

/// The agent hooks that check and record a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentEvent {
    /// A turn ended (Claude Code's and Codex's Stop).
    Stop,
    /// An edit wrote a file (Claude Code's PostToolUse).
    PostEdit,
}

/// `kapi hook claude-stop`, `codex-stop` and `claude-post-edit`: `input`
/// is the host's JSON. `Ok(None)` outside a work tree, where there is
/// nothing to check.
pub fn agent(
    env: Arc<dyn Env>,
    cwd: &Path,
    host: Host,
    event: AgentEvent,
    input: impl Read,
) -> Result<Option<CheckRunOutcome>, HookError> {
    let input = read_input(input)?;
    let Some(session) = Session::open_in_work_tree(env, &input.dir(cwd))? else {
        return Ok(None);
    };
    let outcome = match event {
        AgentEvent::Stop => hook::agent_stop(&session, host, &input),
        AgentEvent::PostEdit => hook::agent_post_edit(&session, host, &input),
    };
    outcome.map(Some)
}

/// `kapi hook claude-pre-bash`: what Claude Code's PreToolUse hook for
/// `Bash` decides about the command about to run (`input` is the host's
/// JSON). `Err` when the input cannot be read, or names no command: the
/// caller refuses then, since a guard that fails must fail closed. A call
/// of another tool is not the guard's: it is allowed.
pub fn pre_bash(input: impl Read) -> Result<Verdict, HookError> {
    let input = read_input(input)?;
    if input.tool_name.as_deref().is_some_and(|t| t != "Bash") {
        return Ok(Verdict::Allow);
    }
    let command = input
        .tool_input
        .as_ref()
        .and_then(|args| args.get("command"))
        .and_then(|c| c.as_str())
        .ok_or_else(|| HookError::Input("`tool_input.command` is not a string".into()))?;
    Ok(guard::judge(command))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_work_tree_an_agent_hook_has_nothing_to_check() {
        let dir = tempfile::tempdir().unwrap();
        let env: Arc<dyn Env> = Arc::new(crate::context::FixedEnv::new(1_772_366_400_000, 7));
        let json = format!(
            r#"{{"session_id":"s1","cwd":{}}}"#,
            serde_json::to_string(dir.path()).unwrap()
        );
        let ran = agent(
            env,
            dir.path(),
            Host::ClaudeCode,
            AgentEvent::Stop,
            json.as_bytes(),
        );
        assert!(matches!(ran, Ok(None)));
    }

    #[test]
    fn the_bash_guard_reads_the_command_and_fails_on_input_without_one() {
        let bash = |command: &str| {
            format!(
                r#"{{"session_id":"s1","tool_name":"Bash","tool_input":{{"command":{}}}}}"#,
                serde_json::to_string(command).unwrap()
            )
        };
        let verdict = |json: &str| pre_bash(json.as_bytes());
        assert!(matches!(
            verdict(&bash("kapi context sync")),
            Ok(Verdict::Refuse(_))
        ));
        assert!(matches!(verdict(&bash("cargo test")), Ok(Verdict::Allow)));
        assert!(matches!(
            verdict(r#"{"session_id":"s1","tool_name":"Read","tool_input":{}}"#),
            Ok(Verdict::Allow)
        ));
        for bad in [
            "not json",
            r#"{"session_id":"s1","tool_name":"Bash","tool_input":{}}"#,
            r#"{"session_id":"s1","tool_name":"Bash","tool_input":{"command":7}}"#,
            r#"{"session_id":"","tool_name":"Bash","tool_input":{"command":"ls"}}"#,
        ] {
            assert!(matches!(verdict(bad), Err(HookError::Input(_))), "{bad}");
        }
    }
}
