//! `kapi workspace forget`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::workspace::{Forget, forget};

/// (for people) Remove repositories from the workspace registry: the
/// paths named, or with --gone every one whose folder no longer exists.
/// Their workspace rules stop holding elsewhere. The registry is rewritten
/// whole (compacted to one line per repository) under its lock. A checkout
/// that records again is registered again, not sharing. Only a person
/// forgets; an agent or a tool is refused (exit 4).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Registered repositories to forget (as `kapi workspace list` shows them).
    #[arg(
        value_name = "PATH",
        required_unless_present = "gone",
        conflicts_with = "gone"
    )]
    pub paths: Vec<String>,
    /// Forget every registered repository whose folder is gone.
    #[arg(long)]
    pub gone: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let what = if args.gone {
        Forget::Gone
    } else {
        Forget::Paths(args.paths.iter().map(|p| ctx.cwd.join(p)).collect())
    };
    let forgotten = forget(&*ctx.env, &what)?;
    let mut out = Out::new();
    if args.json {
        out.json(&forgotten)?;
        return Ok(Exit::Ok);
    }
    for r in &forgotten.forgotten {
        out.line(format!("forgot {}  {}", r.path.display(), r.project))?;
    }
    if forgotten.forgotten.is_empty() {
        out.line("nothing to forget")?;
    }
    Ok(Exit::Ok)
}
