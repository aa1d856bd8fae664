//! `kapi context atlas`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::atlas::atlas;

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
        let text = serde_json::to_string(&doc)
            .map_err(|e| CliError::new(Exit::Internal, format!("cannot write the atlas: {e}")))?;
        out.exact(text)?;
        return Ok(Exit::Ok);
    }
    let count = |family: &str| doc.subjects.iter().filter(|s| s.family == family).count();
    out.line(format!(
        "atlas {} of {}: {} rules, {} notes, {} pairs, {} corrections; {} operations, {} window boundaries, {} places",
        doc.atlas,
        doc.project,
        count("rule"),
        count("note"),
        count("pair"),
        count("correction"),
        doc.events.len(),
        doc.windows.len(),
        doc.places.len()
    ))?;
    out.line("the document: kapi context atlas --json (docs/atlas.md)")?;
    Ok(Exit::Ok)
}
