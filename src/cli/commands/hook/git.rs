//! `kapi hook pre-commit` and `post-merge`: git's hooks, rendered on
//! stderr; the exit code is git's (pre-commit: 1 refuses the commit;
//! post-merge: always 0).

use std::path::Path;
use std::sync::Arc;

use crate::check::format::human;
use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{stderr_line, stderr_text};
use crate::context::hook::run::Refusal;
use crate::context::hook::{self, ArtifactState};

pub(super) fn pre_commit(ctx: &Ctx) -> Result<Exit, CliError> {
    let run = hook::run::pre_commit(Arc::clone(&ctx.env), &ctx.cwd)?;
    let outcome = &run.done.check.outcome;
    if !outcome.findings.is_empty() {
        let style = human::Style {
            styled: crate::cli::global::Settings::get().stderr_styled,
            failing_only: false,
        };
        eprint!("{}", human::render_with(outcome, style));
    }
    for state in &run.done.artifacts {
        match state {
            ArtifactState::Current => {}
            ArtifactState::Regenerated(p) => stderr_line(format!(
                "kapi: {} was stale: regenerated and staged",
                p.display()
            )),
            ArtifactState::Stale(p, reasons) => stderr_line(format!(
                "kapi: {} is stale ({})",
                p.display(),
                reasons.join(", ")
            )),
            ArtifactState::Refused(p, reasons) => stderr_line(format!(
                "kapi: {} is refused ({})",
                p.display(),
                reasons.join(", ")
            )),
            ArtifactState::Failed(p, why) => stderr_line(format!("kapi: {}", failed(p, why))),
        }
    }
    if run.stale {
        stderr_line(
            "kapi: regenerate with `kapi compile-context --all` and stage the result \
             (or set `[hooks] compile = \"regenerate\"` in kapi.toml to do it here)",
        );
    }
    match run.refusal {
        None => Ok(Exit::Ok),
        Some(refusal) => {
            // The advice about rules only when a rule refused the commit.
            stderr_line(match refusal {
                Refusal::Rules => {
                    "kapi: commit refused; fix the above (a rule that is wrong is a person's to drop: \
                     `kapi context review`)"
                }
                Refusal::Artifacts => "kapi: commit refused; the artifacts above are not current",
            });
            Ok(Exit::Failed)
        }
    }
}

pub(super) fn post_merge(ctx: &Ctx, squash: bool) -> Exit {
    let done = match hook::run::post_merge(Arc::clone(&ctx.env), &ctx.cwd, squash) {
        Ok(done) => done,
        Err(e) => {
            stderr_text(format!(
                "kapi: post-merge skipped: {}",
                CliError::from(e).message
            ));
            return Exit::Ok;
        }
    };
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
            ArtifactState::Current | ArtifactState::Regenerated(_) => {}
        }
    }
    for problem in &done.problems {
        stderr_text(format!("kapi: post-merge: {problem}"));
    }
    Exit::Ok
}

/// Why an artifact failed, naming it once.
fn failed(path: &Path, why: &str) -> String {
    let name = path.display().to_string();
    if why.contains(&name) {
        why.to_owned()
    } else {
        format!("{name}: {why}")
    }
}
