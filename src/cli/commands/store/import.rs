//! `kapi store import`

use std::io::{Read, Write};

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::store::segment::{self, Problem};

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
    let args = FileArgs { file };
    let mut bytes = Vec::new();
    let read = if args.file == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_IMPORT_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(ctx.cwd.join(&args.file))
            .and_then(|f| f.take(MAX_IMPORT_BYTES + 1).read_to_end(&mut bytes))
    };
    read.map_err(|e| CliError::usage(format!("cannot read {}: {e}", args.file)))?;
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(CliError::usage(format!(
            "{} is larger than 1 GiB; split it",
            args.file
        )));
    }
    let (mut records, mut problems): (Vec<_>, Vec<Problem>) = (Vec::new(), Vec::new());
    segment::parse_file(&bytes, &args.file, &mut records, &mut problems);
    let total = records.len();
    let merged = session.store.merge_records(&records, session.now_ms)?;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "read {total} operations from {}: {} new, {} already held, {} refused",
        args.file,
        merged.added,
        merged.held,
        merged.refused.len()
    );
    for p in problems.iter().chain(&merged.refused) {
        let _ = writeln!(err, "error: {}: {}", p.location, p.error);
    }
    if merged.added > 0 {
        let mut out = crate::cli::output::Out::new();
        crate::cli::commands::refresh_rules_files(&session, &mut out)?;
    }
    let rejected = problems.len() + merged.refused.len();
    if rejected == 0 {
        Ok(Exit::Ok)
    } else {
        let _ = writeln!(
            err,
            "{rejected} operations were rejected and skipped; {} valid new operations were merged",
            merged.added
        );
        Ok(Exit::Store)
    }
}

struct FileArgs {
    file: String,
}

fn import_context_files(session: &crate::context::Session, force: bool) -> Result<Exit, CliError> {
    use crate::context::ImportOutcome;
    let outcomes = crate::context::import_context_files(session, force)?;
    let mut out = crate::cli::output::Out::new();
    if outcomes.is_empty() {
        out.line(
            "no context files found: name term lists in kapi.toml ([context] terms = [\"terms.tsv\"]) or keep a .vale.ini with StylesPath",
        )?;
        return Ok(Exit::Ok);
    }
    let mut failed = 0;
    let mut imported = 0;
    for (file, outcome) in &outcomes {
        match outcome {
            ImportOutcome::Imported { id, rules, skipped } => {
                imported += 1;
                out.line(format!(
                    "imported {} as #{}: {rules} term rules",
                    file.path,
                    &id[..10]
                ))?;
                for (line, reason) in skipped {
                    out.line(format!("  skipped {}:{line}: {reason}", file.path))?;
                }
            }
            ImportOutcome::Unchanged => {
                out.line(format!("unchanged since the last import: {}", file.path))?
            }
            ImportOutcome::Failed(message) => {
                failed += 1;
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "error: {message}");
            }
        }
    }
    if imported > 0 {
        crate::cli::commands::refresh_rules_files(session, &mut out)?;
    }
    Ok(if failed > 0 { Exit::Usage } else { Exit::Ok })
}
