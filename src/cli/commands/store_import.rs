//! `kapi store import`

use std::io::{Read, Write};

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::store::segment::{self, Problem};

/// The largest file `kapi store import` reads.
const MAX_IMPORT_BYTES: u64 = 1 << 30;

/// Merge operations from a JSON Lines file (as `kapi store export` writes)
/// into the log by union: operations the log holds change nothing. Every
/// line is untrusted: a malformed, oversized or unknown-version line is
/// reported by number and skipped; the valid ones are still merged.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to read (`-` for stdin).
    #[arg(value_name = "FILE")]
    pub file: String,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
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
    segment::parse(&bytes, None, &args.file, &mut records, &mut problems);
    let total = records.len();
    let added = session.store.merge_records(&records, session.now_ms)?;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "read {total} operations from {}: {added} new, {} already held",
        args.file,
        total - added.min(total)
    );
    for p in &problems {
        let _ = writeln!(err, "error: {}: {}", p.location, p.error);
    }
    if problems.is_empty() {
        Ok(Exit::Ok)
    } else {
        let _ = writeln!(
            err,
            "{} lines were rejected and skipped; the valid operations were merged",
            problems.len()
        );
        Ok(Exit::Store)
    }
}
