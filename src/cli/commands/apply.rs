//! `kapi apply`

use std::io::Read;

use crate::cli::commands::{Ctx, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::Session;
use crate::context::changeset::{ChangeApplied, ChangeSet, MAX_CHANGESET_BYTES, apply_change_set};
use crate::wording::count;

/// Apply a change set (JSON): edits of rules in force, each recorded as one
/// `edit` operation naming the rule, established from the start and
/// attributed to you; and content edits of files of the work tree, each an
/// `applied` signal for the suggestions whose preferred form it writes.
/// All or nothing: every entry is checked before anything is written. Only
/// a person edits rules (an agent records a note instead).
///
/// The format is in docs/operations.md ("Change sets"):
///
///   {"edits": [{"rule": "0tt2jb", "use": "Quickcast", "avoid": ["Quick cast"],
///               "point": {"product": "quickcast"}, "valid_to": "2027-01-01",
///               "advisory": false, "note": "the product's name"}],
///    "content": [{"path": "docs/intro.md", "old": "Quick cast", "new": "Quickcast"}]}
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The change set (`-` for stdin).
    #[arg(value_name = "CHANGESET")]
    pub changeset: String,
    /// Print what was recorded and written as one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let file = &args.changeset;
    let limit = MAX_CHANGESET_BYTES as u64 + 1;
    let mut bytes = Vec::new();
    let read = if file == "-" {
        std::io::stdin().lock().take(limit).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(ctx.cwd.join(file)).and_then(|f| f.take(limit).read_to_end(&mut bytes))
    };
    read.map_err(|e| CliError::io(format!("cannot read {file}"), &e))?;
    let set = ChangeSet::parse(&bytes)?;
    let session = ctx.session()?;
    let applied = apply_change_set(&session, set)?;
    report(&session, applied, args.json)
}

/// What a change set (or one edit) recorded and wrote.
pub(crate) fn report(
    session: &Session,
    mut applied: ChangeApplied,
    json: bool,
) -> Result<Exit, CliError> {
    let mut out = Out::new();
    if json {
        out.json(&applied)?;
        report_rules_files(session, &[], applied.refresh_error.take(), &mut out)?;
        return Ok(Exit::Ok);
    }
    for record in &applied.recorded {
        let target = crate::ops::id::short(record.target.as_deref().unwrap_or_default());
        let line = match record.subject.as_deref() {
            Some(subject) => format!(
                "recorded #{} edit of #{target}: {}{}",
                record.short(),
                subject.describe(),
                if record.advisory { " (advisory)" } else { "" }
            ),
            None => format!(
                "recorded #{} {} #{target}{}",
                record.short(),
                record.kind.as_str(),
                record
                    .note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
        };
        out.line(line)?;
    }
    if let Some(content) = &applied.content {
        let edits: usize = content.files.iter().map(|f| f.edits).sum();
        let mut line = format!(
            "applied {} to {}; {}",
            count(edits, "content edit", "content edits"),
            count(content.files.len(), "file", "files"),
            count(content.signals.len(), "applied signal", "applied signals")
        );
        if let Some(e) = &content.unrecorded {
            line.push_str(&format!(" (not recorded: {e})"));
        }
        out.line(line)?;
    }
    report_rules_files(
        session,
        &applied.refreshed,
        applied.refresh_error.take(),
        &mut out,
    )?;
    Ok(Exit::Ok)
}
