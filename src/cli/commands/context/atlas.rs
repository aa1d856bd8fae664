//! `kapi context atlas`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::atlas::atlas;
use crate::wording::count;

/// The whole context at once: every rule, note and pair with its history,
/// coordinates and derived axes, every operation as an event, window
/// boundaries, and the gazetteer places its geo values name. With --json,
/// one document (docs/atlas.md); without, a summary.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the atlas document (docs/atlas.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let doc = atlas(&session)?;
    let mut out = Out::new();
    if args.json {
        out.json(&doc)?;
        return Ok(Exit::Ok);
    }
    let of = |family: &str| doc.subjects.iter().filter(|s| s.family == family).count();
    out.line(format!(
        "atlas {} of {}: {}, {}, {}, {}; {}, {}, {}",
        doc.atlas,
        doc.project,
        count(of("rule"), "rule", "rules"),
        count(of("note"), "note", "notes"),
        count(of("pair"), "pair", "pairs"),
        count(of("correction"), "correction", "corrections"),
        count(doc.events.len(), "operation", "operations"),
        count(doc.windows.len(), "window boundary", "window boundaries"),
        count(doc.places.len(), "place", "places"),
    ))?;
    out.line("the document: kapi context atlas --json (docs/atlas.md)")?;
    Ok(Exit::Ok)
}
