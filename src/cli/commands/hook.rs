//! `kapi hook <event>`: what the installed hooks run. The git hooks get
//! git's arguments; the agent hooks read their host's JSON on stdin and
//! answer in the host's terms (exit 2 and a reason on stderr for Claude
//! Code, a JSON decision on stdout for Codex). An agent hook that cannot
//! do its work says why and exits 1, which no host reads as a block.

use std::io::Read;
use std::sync::Arc;

use clap::Subcommand;

use super::Ctx;
use crate::check::format::human;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{stderr_line, stderr_text};
use crate::context::Session;
use crate::context::hook::{self, AgentInput, ArtifactState, CheckRunOutcome, HookError, Host};

/// The largest hook input read from stdin.
const MAX_INPUT: u64 = 4 * 1024 * 1024;

/// Run one hook event (what `kapi hooks install` wires up).
///
/// pre-commit: check the staged prose and verify the `[[compile]]`
/// artifacts; exit 1 refuses the commit. post-merge: record the merge
/// signals of ORIG_HEAD..HEAD, settle (without pushing) and regenerate the
/// artifacts the merge made stale; always exits 0. claude-session-start,
/// claude-post-edit, claude-stop and codex-stop read the host's hook JSON
/// on stdin. See docs/hooks.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub event: Event,
}

#[derive(Debug, Subcommand)]
pub enum Event {
    /// git pre-commit: check what is staged, verify declared artifacts.
    PreCommit,
    /// git post-merge: record merge signals, settle, regenerate stale artifacts.
    PostMerge {
        /// git's argument: 1 for a squash merge.
        #[arg(value_name = "SQUASH")]
        squash: Option<String>,
    },
    /// Claude Code SessionStart: attribute the session, return the rules in force.
    ClaudeSessionStart,
    /// Claude Code PostToolUse (Edit|Write|MultiEdit): check the file written.
    ClaudePostEdit,
    /// Claude Code Stop: check what the session changed, record the run.
    ClaudeStop,
    /// Codex Stop: as claude-stop, answering in Codex's terms.
    CodexStop,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.event {
        Event::PreCommit => pre_commit(ctx),
        Event::PostMerge { squash } => Ok(post_merge(ctx, squash.as_deref() == Some("1"))),
        Event::ClaudeSessionStart => Ok(session_start(ctx)),
        Event::ClaudePostEdit => Ok(agent(ctx, Host::ClaudeCode, Kind::PostEdit)),
        Event::ClaudeStop => Ok(agent(ctx, Host::ClaudeCode, Kind::Stop)),
        Event::CodexStop => Ok(agent(ctx, Host::Codex, Kind::Stop)),
    }
}

fn pre_commit(ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let done = hook::pre_commit(&session).map_err(hook_error)?;
    let outcome = &done.check.outcome;
    if !outcome.findings.is_empty() {
        eprint!("{}", human::render(outcome));
    }
    let mut stale = false;
    for state in &done.artifacts {
        match state {
            ArtifactState::Current(_) => {}
            ArtifactState::Regenerated(p) => stderr_line(format!(
                "kapi: {} was stale: regenerated and staged",
                p.display()
            )),
            ArtifactState::Stale(p, reasons) => {
                stale = true;
                stderr_line(format!(
                    "kapi: {} is stale ({})",
                    p.display(),
                    reasons.join(", ")
                ));
            }
            ArtifactState::Refused(p, reasons) => stderr_line(format!(
                "kapi: {} is refused ({})",
                p.display(),
                reasons.join(", ")
            )),
            ArtifactState::Failed(p, why) => stderr_line(format!("kapi: {}", failed(p, why))),
        }
    }
    if stale {
        stderr_line(
            "kapi: regenerate with `kapi compile-context --all` and stage the result \
             (or set `[hooks] compile = \"regenerate\"` in kapi.toml to do it here)",
        );
    }
    if done.refused() {
        // The advice about rules only when a rule refused the commit.
        stderr_line(if done.check.failed() {
            "kapi: commit refused; fix the above (a rule that is wrong is a person's to drop: \
             `kapi context review`)"
        } else {
            "kapi: commit refused; the artifacts above are not current"
        });
        return Ok(Exit::Failed);
    }
    Ok(Exit::Ok)
}

fn post_merge(ctx: &Ctx, squash: bool) -> Exit {
    let session = match ctx.session() {
        Ok(s) => s,
        Err(e) => {
            stderr_text(format!("kapi: post-merge skipped: {}", e.message));
            return Exit::Ok;
        }
    };
    let done = hook::post_merge(&session, squash);
    if let Some(why) = &done.skipped {
        stderr_line(format!("kapi: {why}"));
    }
    for value in &done.left_out {
        stderr_line(format!("kapi: warning: {}", value.describe()));
    }
    if let Some(n) = done.signals.filter(|n| *n > 0) {
        stderr_line(format!(
            "kapi: recorded {n} merge signal{} for {}",
            if n == 1 { "" } else { "s" },
            hook::MERGED
        ));
    }
    if done.established > 0 {
        stderr_line(format!(
            "kapi: settling established {} suggestion{} (not pushed: `kapi context sync` shares them)",
            done.established,
            if done.established == 1 { "" } else { "s" }
        ));
    }
    for p in &done.refreshed {
        stderr_line(format!(
            "kapi: updated the rules in force in {}",
            p.display()
        ));
    }
    for p in &done.regenerated {
        stderr_line(format!(
            "kapi: the merge made {} stale: regenerated (commit it)",
            p.display()
        ));
    }
    for state in &done.artifacts {
        match state {
            ArtifactState::Refused(p, r) | ArtifactState::Stale(p, r) => stderr_line(format!(
                "kapi: {} is not current ({})",
                p.display(),
                r.join(", ")
            )),
            ArtifactState::Failed(p, why) => stderr_line(format!("kapi: {}", failed(p, why))),
            ArtifactState::Current(_) | ArtifactState::Regenerated(_) => {}
        }
    }
    for problem in &done.problems {
        stderr_text(format!("kapi: post-merge: {problem}"));
    }
    Exit::Ok
}

/// Why an artifact failed, naming it once.
fn failed(path: &std::path::Path, why: &str) -> String {
    let name = path.display().to_string();
    if why.contains(&name) {
        why.to_owned()
    } else {
        format!("{name}: {why}")
    }
}

fn read_input() -> Result<AgentInput, HookError> {
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT)
        .read_to_end(&mut buf)
        .map_err(|e| HookError::Input(format!("cannot read stdin: {e}")))?;
    AgentInput::parse(&buf)
}

/// The session of the work tree the host runs in, or `None` outside one.
fn open(ctx: &Ctx, input: &AgentInput) -> Result<Option<Session>, CliError> {
    Ok(Session::open_in_work_tree(
        Arc::clone(&ctx.env),
        &input.dir(&ctx.cwd),
    )?)
}

fn session_start(ctx: &Ctx) -> Exit {
    // A failing SessionStart hook can block the session: whatever happens,
    // say it on stderr and exit 0.
    let input = match read_input() {
        Ok(i) => i,
        Err(e) => {
            stderr_text(format!("kapi: {e}"));
            return Exit::Ok;
        }
    };
    let session = match open(ctx, &input) {
        Ok(s) => s,
        Err(e) => {
            stderr_text(format!("kapi: {}", e.message));
            None
        }
    };
    let env_file = ctx
        .env
        .var_os("CLAUDE_ENV_FILE")
        .map(std::path::PathBuf::from);
    let done = hook::session_start(session.as_ref(), &input, env_file.as_deref());
    for problem in &done.problems {
        stderr_text(format!("kapi: {problem}"));
    }
    if !done.context.is_empty() {
        let answer = serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": done.context,
            }
        });
        println!("{answer}");
    }
    Exit::Ok
}

#[derive(Clone, Copy)]
enum Kind {
    Stop,
    PostEdit,
}

fn agent(ctx: &Ctx, host: Host, kind: Kind) -> Exit {
    let outcome = read_input().map_err(hook_error).and_then(|input| {
        let Some(session) = open(ctx, &input)? else {
            return Ok(None);
        };
        let outcome = match kind {
            Kind::Stop => hook::agent_stop(&session, host, &input),
            Kind::PostEdit => hook::agent_post_edit(&session, host, &input),
        };
        outcome.map(Some).map_err(hook_error)
    });
    match outcome {
        // Outside a work tree there is nothing to check.
        Ok(None) => Exit::Ok,
        Ok(Some(outcome)) => answer(host, &outcome),
        Err(e) => {
            stderr_text(format!("kapi: {}", e.message));
            // Never 2: an error is not the agent's to fix.
            Exit::Failed
        }
    }
}

fn answer(host: Host, outcome: &CheckRunOutcome) -> Exit {
    for problem in &outcome.problems {
        eprintln!("kapi: {problem}");
    }
    for state in &outcome.artifacts {
        if let ArtifactState::Stale(p, _) | ArtifactState::Refused(p, _) = state {
            stderr_line(format!(
                "kapi: {} is not current: `kapi compile-context --all` regenerates it",
                p.display()
            ));
        }
    }
    let Some(reason) = &outcome.block else {
        return Exit::Ok;
    };
    match host {
        Host::ClaudeCode => {
            // Built with every path and form escaped; kapi's own lines stay.
            eprint!("{}", crate::terminal::escape_lines(reason));
            // Claude Code reads exit 2 as "block, and show the agent stderr".
            Exit::Usage
        }
        Host::Codex => {
            println!(
                "{}",
                serde_json::json!({ "decision": "block", "reason": reason })
            );
            Exit::Ok
        }
    }
}

fn hook_error(e: HookError) -> CliError {
    match e {
        HookError::Context(e) => e.into(),
        HookError::Check(e) => e.into(),
        HookError::Artifact(e) => e.into(),
        HookError::Git(e) => CliError::store(e.to_string()),
        e @ HookError::Input(_) => CliError::usage(e.to_string()),
    }
}
