//! `kapi context atlas`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::atlas::{AtlasRequest, atlas_with};
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
    /// Cover every repository the workspace registry lists (`kapi
    /// workspace list`), each record naming its project.
    #[arg(long)]
    pub workspace: bool,
    /// Add content cells: the project's prose files counted by folder,
    /// language and state (checked clean, with findings, not checked).
    #[arg(long)]
    pub content: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let doc = atlas_with(
        &session,
        AtlasRequest {
            workspace: args.workspace,
            content: args.content,
        },
    )?;
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
    if let Some(projects) = &doc.projects {
        let read = projects.iter().filter(|p| p.skipped.is_none()).count();
        out.line(format!(
            "across the workspace: {} read of {} registered",
            count(read, "project", "projects"),
            projects.len()
        ))?;
        for p in projects.iter().filter(|p| p.skipped.is_some()) {
            out.line(format!(
                "  not read: {} at {} ({})",
                p.project,
                p.repository.display(),
                p.skipped.as_deref().unwrap_or_default()
            ))?;
        }
    }
    if let Some(cells) = &doc.cells {
        let of = |state: &str| -> usize {
            cells
                .iter()
                .filter(|c| c.state == state)
                .map(|c| c.files)
                .sum()
        };
        out.line(format!(
            "content: {} clean, {} with findings, {} not checked, in {}",
            count(of("clean"), "prose file", "prose files"),
            of("findings"),
            of("unchecked"),
            count(cells.len(), "cell", "cells"),
        ))?;
    }
    out.line("the document: kapi context atlas --json (docs/atlas.md)")?;
    Ok(Exit::Ok)
}
