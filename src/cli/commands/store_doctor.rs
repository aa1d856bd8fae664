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
    let torn = session.store.torn_journal_lines();
    let problems = loaded.problems.len() + torn.len();
    let total = loaded.records.len();
    let ledger = fold(loaded.records);
    let mut out = Out::new();
    for p in &loaded.problems {
        out.line(format!("unreadable: {}: {}", p.location, p.error))?;
    }
    for (n, line) in torn.iter().enumerate() {
        let shown: String = line.chars().take(80).collect();
        out.line(format!(
            "unreadable: .git/kapi/journal.rejected line {}: a line a crash tore, set aside from the journal: {shown}",
            n + 1
        ))?;
    }
    for i in &ledger.ignored {
        out.line(format!("ignored: {}: {}", i.id, i.reason))?;
    }
    out.line(format!(
        "{total} operations read, {problems} unreadable, {} ignored by the fold",
        ledger.ignored.len()
    ))?;
    let exit = if problems + ledger.ignored.len() == 0 {
        Exit::Ok
    } else {
        Exit::Failed
    };
    // The process ends now: freeing a large log costs more than it returns.
    std::mem::forget(ledger);
    Ok(exit)
}
