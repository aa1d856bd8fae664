//! `kapi context atlas`

use std::path::PathBuf;

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::atlas::{AtlasRequest, atlas_with};
use crate::context::atlas_page::{page_data, render};
use crate::wording::count;

/// The whole context at once: every rule, note and pair with its history,
/// coordinates and derived axes, every operation as an event, window
/// boundaries, and the gazetteer places its geo values name. With --json,
/// one document (docs/atlas.md); with --html, one web page to look at;
/// without, a summary.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the atlas document (docs/atlas.md).
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Cover every repository the workspace registry lists (`kapi
    /// workspace list`), each record naming its project (the document and
    /// the summary; the page draws this project).
    #[arg(long, conflicts_with = "html")]
    pub workspace: bool,
    /// Add content cells: the project's prose files counted by folder,
    /// language and state (checked clean, with findings, not checked).
    #[arg(long, conflicts_with = "html")]
    pub content: bool,
    /// Write the atlas as one self-contained web page (rules in force,
    /// history, where, what awaits a person) to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Read the log as it stood at this instant (RFC 3339) or at the end of
    /// this date (UTC).
    #[arg(long, value_name = "WHEN", value_parser = crate::cli::commands::parse_as_of)]
    pub as_of: Option<u64>,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    if let Some(file) = &args.html {
        let html = page(&session, args.as_of)?;
        let mut out = Out::new();
        if file.as_os_str() == "-" {
            out.raw(html.as_bytes())?;
            out.flush()?;
        } else {
            write_page(file, &html)?;
            out.line(format!("wrote the atlas page to {}", file.display()))?;
        }
        return Ok(Exit::Ok);
    }
    let doc = atlas_with(
        &session,
        AtlasRequest {
            workspace: args.workspace,
            content: args.content,
            as_of: args.as_of,
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

/// The atlas page of the session's log as of `as_of`.
pub(crate) fn page(
    session: &crate::context::Session,
    as_of: Option<u64>,
) -> Result<String, CliError> {
    let data = page_data(session, as_of)?;
    render(&data)
        .map_err(|e| CliError::new(Exit::Internal, format!("cannot write the atlas page: {e}")))
}

/// Write the page to `file`, whole or not at all (an existing file is
/// replaced only once the new one is written).
pub(crate) fn write_page(file: &std::path::Path, html: &str) -> Result<(), CliError> {
    if file.is_dir() {
        return Err(CliError::usage(format!(
            "{} is a folder: name the page's file (atlas.html)",
            file.display()
        )));
    }
    crate::atomic::replace(file, html.as_bytes(), None).map_err(|e| {
        CliError::io(
            format!("cannot write the atlas page to {}", file.display()),
            &e,
        )
    })
}
