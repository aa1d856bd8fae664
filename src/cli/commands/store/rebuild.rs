//! `kapi store rebuild`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::rebuild::rebuild;
use crate::wording::count;

/// Make every derived thing again from the log alone: the fold checkpoint,
/// the segment cache, the newest-id and project caches, the workspace's
/// cached answers, and the managed block of the rules files; and say what
/// changed. Each of them is checked whenever it is read, so nothing should:
/// a status the caches gave otherwise than the log, or a rules file edited
/// inside its managed block, is named. The log itself, the journal and
/// the arrival record are left alone.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print what was rebuilt as one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let rebuilt = rebuild(&session)?;
    let mut out = Out::new();
    if args.json {
        out.json(&rebuilt)?;
        return Ok(Exit::Ok);
    }
    out.line(format!(
        "rebuilt from the log alone: {} folded{}",
        count(rebuilt.operations, "operation", "operations"),
        match rebuilt.unreadable {
            0 => String::new(),
            n => format!(
                ", {} skipped (`kapi store doctor` names them)",
                count(n, "unreadable line", "unreadable lines")
            ),
        }
    ))?;
    if rebuilt.removed.is_empty() {
        out.line("removed: nothing (no derived file was there)")?;
    }
    for f in &rebuilt.removed {
        out.line(format!(
            "removed: {} ({}, {}), made again",
            f.name,
            f.keeps,
            count(f.bytes as usize, "byte", "bytes")
        ))?;
    }
    if rebuilt.changed.is_empty() {
        out.line("statuses: none changed (the caches agreed with the log)")?;
    } else {
        out.line(format!(
            "statuses: {} the caches gave otherwise than the log:",
            count(rebuilt.changed.len(), "subject", "subjects")
        ))?;
        for c in &rebuilt.changed {
            out.line(format!(
                "  #{} {}: {} → {}",
                c.id.short(),
                c.subject,
                c.was.unwrap_or("not held"),
                c.now.unwrap_or("not held")
            ))?;
        }
    }
    let root = &session.root;
    match rebuilt.rules_files.as_slice() {
        [] => out.line("rules files: none changed")?,
        files => {
            for f in files {
                out.line(format!(
                    "rules files: {} written again from the log",
                    f.strip_prefix(root).unwrap_or(f).display()
                ))?;
            }
        }
    }
    out.line(format!(
        "workspace: {} removed, {} read again",
        count(rebuilt.workspace_removed, "cached answer", "cached answers"),
        count(
            rebuilt.workspace_read,
            "sharing repository",
            "sharing repositories"
        )
    ))?;
    Ok(Exit::Ok)
}
