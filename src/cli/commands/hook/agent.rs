//! `kapi hook claude-session-start`, `claude-pre-bash`, `claude-post-edit`,
//! `claude-stop` and `codex-stop`: the agent hosts' hooks, answered in
//! each host's terms.

use std::sync::Arc;

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{stderr_line, stderr_text};
use crate::context::hook::guard::Verdict;
use crate::context::hook::run::{self, AgentEvent};
use crate::context::hook::{ArtifactState, CheckRunOutcome, Host};

/// SessionStart: whatever happens, say it on stderr and exit 0 (a failing
/// SessionStart hook can block the session).
pub(super) fn session_start(ctx: &Ctx) -> Exit {
    let done = run::session_start(Arc::clone(&ctx.env), &ctx.cwd, std::io::stdin().lock());
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

/// PreToolUse for Bash: exit 2 refuses the command, with the reason on
/// stderr for the agent. Claude Code lets a call through on any other
/// code, so every failure of the guard (its input unreadable, a bug) is
/// a refusal too: it fails closed. Only a command that is not shell words
/// kapi can read goes through unchecked, said on stderr.
pub(crate) fn pre_bash() -> Exit {
    let judged = std::panic::catch_unwind(|| run::pre_bash(std::io::stdin().lock()));
    match judged {
        Ok(Ok(Verdict::Allow)) => Exit::Ok,
        Ok(Ok(Verdict::Unparsed(why))) => {
            stderr_line(format!(
                "kapi: the Bash command is not shell words kapi can read ({why}); let through unchecked"
            ));
            Exit::Ok
        }
        Ok(Ok(Verdict::Refuse(refusal))) => {
            stderr_line(format!(
                "kapi: refused `{}`: {}.",
                refusal.command, refusal.rule
            ));
            stderr_line("An agent may not run this: if it is needed, ask the user to run it.");
            Exit::Usage
        }
        Ok(Err(e)) => {
            stderr_line(format!(
                "kapi: the Bash guard refuses the command: {}",
                CliError::from(e).message
            ));
            Exit::Usage
        }
        Err(_) => {
            stderr_line("kapi: the Bash guard failed, so it refuses the command");
            Exit::Usage
        }
    }
}

/// Stop and PostToolUse: a failing rule blocks in the host's terms; an
/// error is never 2, so it never blocks the agent.
pub(super) fn run(ctx: &Ctx, host: Host, event: AgentEvent) -> Exit {
    let ran = run::agent(
        Arc::clone(&ctx.env),
        &ctx.cwd,
        host,
        event,
        std::io::stdin().lock(),
    );
    match ran {
        // Outside a work tree there is nothing to check.
        Ok(None) => Exit::Ok,
        Ok(Some(outcome)) => answer(host, &outcome),
        Err(e) => {
            stderr_text(format!("kapi: {}", CliError::from(e).message));
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
