//! `kapi store export`

use std::io::Write;

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::store::LogRef;

/// Write the shared log (`refs/kapi/ops`) as JSON Lines, one canonical
/// operation a line, in id order. Check runs stay on this machine.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to write (`-` for stdout). Written whole or not at all.
    #[arg(value_name = "FILE")]
    pub file: String,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    // Lines a crashed writer left in the journal belong to the log too.
    session.store.flush()?;
    let loaded = session.store.load(LogRef::Shared)?;
    let mut bytes = Vec::new();
    for record in &loaded.records {
        bytes.extend_from_slice(record.to_canonical_json().as_bytes());
        bytes.push(b'\n');
    }
    if args.file == "-" {
        Out::new().raw(&bytes)?;
    } else {
        let path = ctx.cwd.join(&args.file);
        write_atomically(&path, &bytes).map_err(|e| {
            CliError::new(Exit::Store, format!("cannot write {}: {e}", path.display()))
        })?;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "exported {} operations to {}",
            loaded.records.len(),
            args.file
        );
    }
    if !loaded.problems.is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "warning: {} stored operations could not be read and were left out; `kapi store doctor` lists them",
            loaded.problems.len()
        );
    }
    Ok(Exit::Ok)
}

/// Write to a temporary file beside `path`, then rename over it.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let result = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match result.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
