//! `kapi context session <id>`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::outcomes::outcomes;

/// What a session recorded, what became of it, and what its checks caught.
///
/// Derived from the log: the operations the session recorded with their
/// status now, and its check runs (the Stop and edit hooks): a failing
/// finding one run reported and the session's next run covering that file
/// did not is counted as caught. Ends with the command that reviews what
/// the session suggested.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id (`this`: KAPI_SESSION).
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// One JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let id = if args.session == "this" {
        session
            .env()
            .var("KAPI_SESSION")
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                CliError::usage("`this` reads KAPI_SESSION, which is not set")
                    .with_hint("name the session: `kapi context session <id>`")
            })?
    } else {
        args.session
    };
    let ledger = session.ledger()?;
    let out_of = outcomes(&ledger, &id);
    session.release(ledger);
    let mut out = Out::new();
    if args.json {
        out.json(&out_of)?;
        out.flush()?;
        return Ok(Exit::Ok);
    }
    if out_of.actors.is_empty() {
        out.line(format!("session {id}: nothing recorded"))?;
    } else {
        out.line(format!("session {id} · {}", out_of.actors.join(", ")))?;
    }
    out.line(format!("recorded {}:", out_of.recorded.len()))?;
    for r in &out_of.recorded {
        let status = r
            .status
            .map(|s| format!(" {}", s.as_str()))
            .unwrap_or_default();
        out.line(format!("  {} {:<9}{status} {}", r.short, r.kind, r.what))?;
    }
    out.line(format!(
        "check runs: {} ({} clean); caught {}, still failing {}",
        out_of.runs,
        out_of.clean_runs,
        out_of.caught.len(),
        out_of.open.len()
    ))?;
    for c in &out_of.caught {
        out.line(format!(
            "  caught   {}: \"{}\" (rule #{})",
            c.path,
            c.quote,
            crate::ops::id::short(&c.rule)
        ))?;
    }
    for o in &out_of.open {
        out.line(format!(
            "  failing  {}: \"{}\" (rule #{})",
            o.path,
            o.quote,
            crate::ops::id::short(&o.rule)
        ))?;
    }
    out.line(format!(
        "{} awaiting a decision: {}",
        out_of.pending, out_of.review
    ))?;
    out.flush()?;
    Ok(Exit::Ok)
}
