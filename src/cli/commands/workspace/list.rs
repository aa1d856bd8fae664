//! `kapi workspace list`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::workspace::list;

/// List every repository registered with kapi on this machine
/// (`$XDG_DATA_HOME/kapi/repositories.jsonl`, else
/// `~/.local/share/kapi/repositories.jsonl`): its path, its project,
/// whether its folder still exists, and whether it shares the rules its
/// log widens to the workspace with the other repositories. Says why when
/// the registry cannot be read (it is then read as empty), and when lines
/// were skipped or older lines lie past the newest 1 MiB read.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let listing = list(&*ctx.env);
    let mut out = Out::new();
    if args.json {
        out.json(&listing)?;
        return Ok(Exit::Ok);
    }
    let Some(file) = &listing.registry else {
        out.line("no data directory (HOME or XDG_DATA_HOME) names a workspace registry")?;
        return Ok(Exit::Ok);
    };
    if let Some(why) = &listing.unread {
        out.line(format!("warning: the registry {} {why}", file.display()))?;
    }
    if listing.skipped_bytes > 0 {
        out.line(format!(
            "warning: the registry is larger than the 1 MiB read: its oldest {} bytes were not read (`kapi workspace forget --gone` rewrites it compacted)",
            listing.skipped_bytes
        ))?;
    }
    if listing.skipped_lines > 0 {
        out.line(format!(
            "warning: {} lines of the registry are not entries and were skipped",
            listing.skipped_lines
        ))?;
    }
    for r in &listing.repositories {
        let mut line = format!("{}  {}", r.path.display(), r.project);
        line.push_str(if r.shares {
            "  shares its workspace rules"
        } else {
            "  registered only"
        });
        if !r.exists {
            line.push_str("  (gone)");
        }
        out.line(line)?;
    }
    let shared = listing.repositories.iter().filter(|r| r.shares).count();
    out.line(format!(
        "{} repositories registered in {}, {shared} sharing their workspace rules",
        listing.repositories.len(),
        file.display()
    ))?;
    Ok(Exit::Ok)
}
