//! `kapi store export`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{Out, note, stderr_line};
use crate::context::transfer::{export, write_to};
use crate::wording::{count, noun};

/// Write the shared log (`refs/kapi/ops`) as JSON Lines, one canonical
/// operation a line, in id order. Check runs stay on this machine.
///
/// A regular file is replaced atomically (written beside it, synced, then
/// renamed over it: readers see the old file or the new one, never half);
/// `-` writes to stdout; a FIFO or a device is written in place; a
/// symbolic link is refused, never followed or replaced. A failed write
/// exits non-zero and says why.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to write (`-` for stdout).
    #[arg(value_name = "FILE")]
    pub file: String,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let exported = export(&session)?;
    if args.file == "-" {
        let mut out = Out::new();
        out.raw(exported.jsonl.as_bytes())?;
        out.flush()?;
    } else {
        write_to(&ctx.cwd.join(&args.file), exported.jsonl.as_bytes())?;
        note(format!(
            "exported {} to {}",
            count(exported.operations, "operation", "operations"),
            args.file
        ));
    }
    if exported.unreadable > 0 {
        let n = exported.unreadable;
        stderr_line(format!(
            "warning: {} could not be read and {} left out; `kapi store doctor` lists {}",
            count(n, "stored operation", "stored operations"),
            noun(n, "was", "were"),
            noun(n, "it", "them"),
        ));
    }
    Ok(Exit::Ok)
}
