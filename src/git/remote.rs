//! Talking to other repositories through the `git` program, the one place
//! kapi spawns it. gix cannot push (gitoxide issue 306); fetching through
//! gix needs its `blocking-network-client` feature (the protocol and
//! transport clients, credentials, negotiation), a heavy build for one
//! call, so fetch goes through the same child process for now.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{GitError, Repo};

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// The remote ref now holds ours (or already did).
    Accepted,
    /// The remote refused (not a fast-forward, or a hook): git's words.
    Rejected(String),
}

/// Run `git <args>` in `dir` with no input; its stdout, or its stderr as
/// the error when it fails.
pub(super) fn run(dir: &Path, args: &[&str]) -> Result<std::process::Output, GitError> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        // Never wait on a prompt no one sees.
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| GitError::Command {
            args: args.join(" "),
            message: e.to_string(),
        })
}

/// A remote name or refspec starting with `-` would be read as an option
/// (`--upload-pack=<command>` runs a command): refuse it.
fn refuse_option(remote: &str, refspec: &str) -> Result<(), GitError> {
    match [remote, refspec].into_iter().find(|a| a.starts_with('-')) {
        Some(bad) => Err(GitError::Command {
            args: format!("{remote} {refspec}"),
            message: format!("`{bad}` is not a remote or a refspec"),
        }),
        None => Ok(()),
    }
}

impl Repo {
    /// The directory the `git` child runs in: the work tree, else the git
    /// directory of a bare repository.
    pub(super) fn run_dir(&self) -> &Path {
        self.work_tree().unwrap_or_else(|| self.git_dir())
    }

    /// `git fetch <remote> <refspec>`.
    pub fn fetch(&self, remote: &str, refspec: &str) -> Result<(), GitError> {
        refuse_option(remote, refspec)?;
        let args = ["fetch", "--quiet", "--no-write-fetch-head", remote, refspec];
        let out = run(self.run_dir(), &args)?;
        if !out.status.success() {
            return Err(GitError::Command {
                args: args.join(" "),
                message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(())
    }

    /// `git push --porcelain <remote> <refspec>`, fast-forward only (a
    /// refspec with `+` would force; kapi never passes one).
    pub fn push(&self, remote: &str, refspec: &str) -> Result<Pushed, GitError> {
        refuse_option(remote, refspec)?;
        let args = ["push", "--porcelain", remote, refspec];
        let out = run(self.run_dir(), &args)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        // Porcelain lines: `<flag>\t<from>:<to>\t<summary>`; `!` is rejected.
        let rejected: Vec<&str> = stdout.lines().filter(|l| l.starts_with('!')).collect();
        if !rejected.is_empty() {
            return Ok(Pushed::Rejected(rejected.join("\n")));
        }
        if !out.status.success() {
            return Err(GitError::Command {
                args: args.join(" "),
                message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(Pushed::Accepted)
    }
}
