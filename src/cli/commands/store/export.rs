//! `kapi store export`

use std::io::Write;
use std::path::Path;

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::store::LogRef;

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
    // Lines a crashed writer left in the journal belong to the log too.
    session.store.flush()?;
    let loaded = session.store.load(LogRef::Shared)?;
    let mut bytes = Vec::new();
    for record in &loaded.records {
        bytes.extend_from_slice(record.to_canonical_json().as_bytes());
        bytes.push(b'\n');
    }
    if args.file == "-" {
        let mut out = Out::new();
        out.raw(&bytes)?;
        out.flush()?;
    } else {
        let path = ctx.cwd.join(&args.file);
        write_to(&path, &bytes)?;
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

/// Write `bytes` where `path` says, by what `path` is.
fn write_to(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let failed =
        |e: std::io::Error| CliError::store(format!("cannot write {}: {e}", path.display()));
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_atomically(path, bytes, None).map_err(failed)
        }
        Err(e) => Err(failed(e)),
        Ok(meta) if meta.file_type().is_symlink() => Err(CliError::usage(format!(
            "{} is a symbolic link; `kapi store export` neither follows nor replaces links: name the file it points to",
            path.display()
        ))),
        Ok(meta) if meta.is_dir() => Err(CliError::usage(format!(
            "{} is a directory; name a file to write",
            path.display()
        ))),
        Ok(meta) if meta.is_file() => {
            write_atomically(path, bytes, Some(meta.permissions())).map_err(failed)
        }
        // A FIFO, a device or a socket: write into it, never replace it.
        Ok(_) => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| {
                f.write_all(bytes)?;
                f.flush()
            })
            .map_err(failed),
    }
}

/// Write to a temporary file beside `path`, sync it, then rename it over
/// `path`; on any failure the temporary file is removed and `path` is
/// left as it was.
fn write_atomically(
    path: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.kapi-tmp.{}", std::process::id()));
    // A new file, never one planted at that name (a link is not followed).
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            if let Some(p) = permissions {
                f.set_permissions(p)?;
            }
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
