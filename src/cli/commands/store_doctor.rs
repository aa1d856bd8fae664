//! `kapi store doctor`

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::ops::fold;

/// Read both logs whole and list, by name, every stored operation that
/// cannot be read (malformed, oversized, unknown version, misplaced,
/// duplicated) and every operation the fold ignores (refused by the policy,
/// acting on nothing). Exits 1 when it finds any.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let loaded = session.store.load_all()?;
    let problems = loaded.problems.len();
    let total = loaded.records.len();
    let ledger = fold(loaded.records);
    let mut out = Out::new();
    for p in &loaded.problems {
        out.line(format!("unreadable: {}: {}", p.location, p.error))?;
    }
    for i in &ledger.ignored {
        out.line(format!("ignored: {}: {}", i.id, i.reason))?;
    }
    out.line(format!(
        "{total} operations read, {problems} unreadable, {} ignored by the fold",
        ledger.ignored.len()
    ))?;
    Ok(if problems + ledger.ignored.len() == 0 {
        Exit::Ok
    } else {
        Exit::Failed
    })
}
