//! `kapi store import`

use std::io::Read;

use crate::cli::commands::{Ctx, disagreement, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{Out, note, stderr_line};
use crate::context::transfer::{FileImported, import_files, import_log};
use crate::context::{ImportOutcome, Session};
use crate::wording::{count, noun};

/// The largest file `kapi store import` reads.
const MAX_IMPORT_BYTES: u64 = 1 << 30;

/// Without FILE: read the checkout's context files into the log — the term
/// lists `[context] terms` in kapi.toml names, and Vale vocabularies
/// (`accept.txt`, `reject.txt`) and `substitution` styles under
/// `.vale.ini`'s StylesPath — one `import` operation per file, established
/// from the start. Only a person imports; unchanged files are skipped.
///
/// With FILE: merge operations from a JSON Lines file (as `kapi store
/// export` writes) by union: operations the log holds change nothing. Every
/// line is untrusted: a malformed, oversized or unknown-version line is
/// reported by number and skipped; the valid ones are still merged.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A JSON Lines file of operations to merge (`-` for stdin).
    #[arg(value_name = "FILE")]
    pub file: Option<String>,
    /// Read context files even when their bytes are unchanged since the last import.
    #[arg(long, conflicts_with = "file")]
    pub force: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let Some(file) = args.file else {
        return import_context_files(&session, args.force);
    };
    let mut bytes = Vec::new();
    let read = if file == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_IMPORT_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(ctx.cwd.join(&file))
            .and_then(|f| f.take(MAX_IMPORT_BYTES + 1).read_to_end(&mut bytes))
    };
    read.map_err(|e| CliError::io(format!("cannot read {file}"), &e))?;
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(CliError::usage(format!("{file} is larger than 1 GiB"))
            .with_hint("split it into files of at most 1 GiB and import each"));
    }
    let mut imported = import_log(&session, &bytes, &file)?;
    note(format!(
        "read {} from {file}: {} new, {} already held, {} refused",
        count(imported.read, "operation", "operations"),
        imported.added,
        imported.held,
        imported.refused
    ));
    for r in &imported.rejected {
        stderr_line(format!("error: {}: {}", r.location, r.error));
    }
    report_rules_files(
        &session,
        &imported.refreshed,
        imported.refresh_error.take(),
        &mut Out::new(),
    )?;
    if imported.rejected.is_empty() {
        Ok(Exit::Ok)
    } else {
        let (rejected, added) = (imported.rejected.len(), imported.added);
        stderr_line(format!(
            "{} {} rejected and skipped; {} {} merged",
            count(rejected, "operation", "operations"),
            noun(rejected, "was", "were"),
            count(added, "valid new operation", "valid new operations"),
            noun(added, "was", "were"),
        ));
        Ok(Exit::Store)
    }
}

fn import_context_files(session: &Session, force: bool) -> Result<Exit, CliError> {
    let mut imported = import_files(session, force)?;
    let mut out = Out::new();
    if imported.files.is_empty() {
        out.line(
            "no context files found: name term lists in kapi.toml ([context] terms = [\"terms.tsv\"]) or keep a .vale.ini with StylesPath",
        )?;
        return Ok(Exit::Ok);
    }
    let mut failed = 0;
    for FileImported { file, outcome } in &imported.files {
        match outcome {
            ImportOutcome::Imported { id, rules, skipped } => {
                let profile = file
                    .profile
                    .as_ref()
                    .map(|p| format!(", for the profile {p}"))
                    .unwrap_or_default();
                out.line(format!(
                    "imported {} as #{}: {}{profile}",
                    file.path,
                    crate::ops::id::short(id),
                    count(*rules, "term rule", "term rules")
                ))?;
                for (line, reason) in skipped {
                    out.line(format!("  skipped {}:{line}: {reason}", file.path))?;
                }
            }
            ImportOutcome::Unchanged => {
                out.line(format!("unchanged since the last import: {}", file.path))?
            }
            ImportOutcome::Refused { message } => {
                stderr_line(format!(
                    "warning: {message} (Vale refuses this style too: nothing of it was imported; fix it and import again)"
                ));
            }
            ImportOutcome::Failed { message } => {
                failed += 1;
                stderr_line(format!("error: {message}"));
            }
        }
    }
    for d in &imported.disagreements {
        stderr_line(format!(
            "warning: imported rules disagree: {}",
            disagreement(d)
        ));
    }
    if !imported.disagreements.is_empty() {
        stderr_line(
            "  both keep reporting; edit one file, or switch a rule off in .vale.ini (Style.Rule = NO), and import again",
        );
    }
    report_rules_files(
        session,
        &imported.refreshed,
        imported.refresh_error.take(),
        &mut out,
    )?;
    Ok(if failed > 0 { Exit::Usage } else { Exit::Ok })
}
