//! `kapi store doctor`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::doctor::doctor;
use crate::wording::count;

/// Read both logs whole and list, by name, every stored operation that
/// cannot be read (malformed, oversized, unknown version, misplaced, a
/// later copy of a held id), every operation dated more than 10 minutes
/// past this machine's clock, every operation the fold ignores (refused by
/// the policy, acting on nothing), ref locks and temporary files killed
/// writers left. Exits 1 when it finds any. A younger operation repeating
/// an older one's content address (one merge counted on two machines) is
/// listed as a `repeat` and needs nothing done.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// First remove what killed kapi writers left behind: their ref locks
    /// (never another program's) and temporary files older than 10 minutes.
    #[arg(long)]
    pub repair: bool,
    /// Print the diagnosis as one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let diagnosis = doctor(&session, args.repair)?;
    let mut out = Out::new();
    if args.json {
        out.json(&diagnosis)?;
    } else {
        for path in &diagnosis.repaired {
            out.line(format!("repaired: removed {}", path.display()))?;
        }
        for f in &diagnosis.findings {
            out.line(format!("{}: {}: {}", f.class, f.location, f.message))?;
        }
        let repeats = match diagnosis.repeats {
            0 => String::new(),
            n => format!(", {n} repeating an older operation (nothing to do)"),
        };
        out.line(format!(
            "{} read, {} unreadable, {} ignored by the fold{repeats}",
            count(diagnosis.operations, "operation", "operations"),
            diagnosis.unreadable,
            diagnosis.ignored
        ))?;
    }
    Ok(Exit::failed_if(!diagnosis.clean()))
}
