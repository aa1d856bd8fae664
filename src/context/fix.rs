//! `kapi check --fix` and `--diff` as a use case: check, rewrite each
//! avoided form an established rule names a replacement for
//! ([`crate::check::fix`]), and either hand back the texts (a diff, or
//! standard input fixed) or write the files through the one writer of
//! edits ([`super::apply::rewrite`], as the MCP tool `apply_edits`:
//! all or none, never outside the work tree, through a symbolic link or
//! under `.git`, never over a file changed since it was checked, and an
//! `applied` signal for each suggestion whose preferred form the fixes
//! write). Then the check again, of what was written: what remains.

use super::apply::{Applied, Rewrite, rewrite};
use super::check::{CheckError, CheckReport, CheckRequest, Stdin, check};
use super::{ContextError, Session};
use crate::check::files::MAX_FILE_BYTES;
use crate::check::fix::{self, Fixed};

/// What to do with the fixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixMode {
    /// Write them: the files (or, for standard input, the fixed text).
    Write,
    /// Only say what they would be.
    Diff,
}

/// One file with a finding to fix: what was fixed, and its text as
/// checked and as fixed.
#[derive(Debug, Clone)]
pub struct FixedFile {
    pub fixed: Fixed,
    pub before: String,
    pub after: String,
}

/// What a fix did.
#[derive(Debug)]
pub struct FixReport {
    /// The files with a fixable finding, in the order they were checked.
    pub files: Vec<FixedFile>,
    /// The files written, and the `applied` signals (with
    /// [`FixMode::Write`] on files, when there was something to write).
    pub applied: Option<Applied>,
    /// With [`FixMode::Write`] on standard input: the text fixed, which
    /// is the input as it came when nothing was fixed.
    pub input: Option<Vec<u8>>,
    /// The check after the fix, of the texts written (with
    /// [`FixMode::Write`]): what remains. With [`FixMode::Diff`], the check
    /// the diff was made from.
    pub report: CheckReport,
}

impl FixReport {
    /// Findings fixed (or that would be), over every file.
    pub fn fixes(&self) -> usize {
        self.files.iter().map(|f| f.fixed.fixes).sum()
    }

    /// What was fixed in each file (the JSON document's `fixed`).
    pub fn fixed(&self) -> Vec<Fixed> {
        self.files.iter().map(|f| f.fixed.clone()).collect()
    }
}

/// Check as `req` asks, and fix what an established rule names a
/// replacement for. `session` is `None` outside a work tree: then only a
/// diff, or standard input, can be fixed.
pub fn fix(
    session: Option<&Session>,
    req: &CheckRequest,
    mode: FixMode,
) -> Result<FixReport, CheckError> {
    if req.staged {
        return Err(CheckError::Usage(
            "--staged checks the index, and a fix rewrites the work tree: fix the files (kapi check --fix PATHS), then stage them"
                .into(),
        ));
    }
    if req.as_of.is_some() {
        return Err(CheckError::Usage(
            "--as-of checks by the rules of the past, and a fix writes by the rules in force now: drop --as-of to fix"
                .into(),
        ));
    }
    if let Some(stdin) = &req.stdin
        && mode == FixMode::Write
        && stdin.bytes.len() as u64 > MAX_FILE_BYTES
    {
        return Err(CheckError::Usage(format!(
            "standard input is larger than {} MiB, which kapi does not fix; nothing was written",
            MAX_FILE_BYTES >> 20
        )));
    }
    let writes_files = mode == FixMode::Write && req.stdin.is_none();
    if writes_files && session.is_none() {
        return Err(CheckError::Usage(
            "--fix writes files of a git work tree, and this is not inside one: preview with --diff, or fix standard input (kapi check --fix - < FILE)"
                .into(),
        ));
    }
    let checked = check(
        session,
        &CheckRequest {
            to_fix: true,
            record_usage: false,
            ..req.clone()
        },
    )?;
    // The findings by file, grouped once (not a scan of every finding for
    // every file checked).
    let mut by_path: std::collections::HashMap<&str, Vec<&crate::check::Finding>> =
        std::collections::HashMap::new();
    for finding in &checked.outcome.findings {
        by_path
            .entry(finding.path.as_str())
            .or_default()
            .push(finding);
    }
    let mut files = Vec::new();
    let mut disks = Vec::new();
    for text in &checked.outcome.texts {
        let plan = fix::plan(
            by_path
                .get(text.path.as_str())
                .into_iter()
                .flatten()
                .copied(),
        );
        files.push(FixedFile {
            fixed: Fixed {
                path: text.path.clone(),
                fixes: plan.fixes.len(),
                left: plan.left,
            },
            after: fix::apply(&text.text, &plan.fixes),
            before: text.text.clone(),
        });
        disks.push(text.disk.clone());
    }
    if mode == FixMode::Diff {
        return Ok(FixReport {
            files,
            applied: None,
            input: None,
            report: checked,
        });
    }
    if let Some(stdin) = &req.stdin {
        // Standard input is fixed to standard output: nothing is written,
        // and what remains is the check of the fixed text.
        let after = files
            .first()
            .map_or_else(|| stdin.bytes.clone(), |f| f.after.clone().into_bytes());
        let report = check(
            session,
            &CheckRequest {
                stdin: Some(Stdin {
                    name: stdin.name.clone(),
                    bytes: after.clone(),
                }),
                to_fix: false,
                ..req.clone()
            },
        )?;
        return Ok(FixReport {
            files,
            applied: None,
            input: Some(after),
            report,
        });
    }
    let Some(session) = session else {
        return Err(CheckError::Usage("--fix needs a git work tree".into()));
    };
    let mut rewrites = Vec::new();
    for (file, disk) in files.iter().zip(&disks) {
        if file.fixed.fixes == 0 {
            continue;
        }
        same_file(session, &file.fixed.path, disk.as_deref())?;
        rewrites.push(Rewrite {
            path: file.fixed.path.clone(),
            before: file.before.clone(),
            after: file.after.clone(),
            edits: file.fixed.fixes,
        });
    }
    let applied = if rewrites.is_empty() {
        None
    } else {
        Some(rewrite(session, rewrites)?)
    };
    let report = check(
        Some(session),
        &CheckRequest {
            to_fix: false,
            ..req.clone()
        },
    )?;
    Ok(FixReport {
        files,
        applied,
        input: None,
        report,
    })
}

/// Refuse to write `path` (as a finding names it) unless it is the very
/// file the check read at `disk`: a file outside the work tree is named
/// as it was given, which may name another file of the work tree.
fn same_file(
    session: &Session,
    path: &str,
    disk: Option<&std::path::Path>,
) -> Result<(), ContextError> {
    let refuse = || {
        ContextError::Usage(format!(
            "{path}: not a file of the work tree {} (kapi writes only there, never through a symbolic link); nothing was written",
            session.root.display()
        ))
    };
    let Some(disk) = disk else {
        return Err(refuse());
    };
    let (Ok(read), Ok(named)) = (disk.canonicalize(), session.root.join(path).canonicalize())
    else {
        return Err(refuse());
    };
    if read != named {
        return Err(refuse());
    }
    Ok(())
}
