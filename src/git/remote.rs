//! Talking to other repositories through the `git` program, and the one
//! function that spawns it (`run`, and `run_bounded` with a time limit):
//! the hooks' questions (`git/hooks.rs`: the hooks folder, a diff against a
//! commit, staging) are asked through `run` too. gix cannot push
//! (gitoxide issue 306); fetching through gix needs its
//! `blocking-network-client` feature (the protocol and transport clients,
//! credentials, negotiation), a heavy build for one call, so fetch goes
//! through the same child process for now.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Run `git <args>` in `dir` like [`run`], but give up after `timeout`: a
/// remote that accepts a connection and never answers must not hang sync
/// (or the hook or CI job running it). The child runs in a process group
/// of its own, so its helpers (ssh, `git-remote-https`, `upload-pack`) end
/// with it.
fn run_bounded(
    dir: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<std::process::Output, GitError> {
    let failed = |message: String| GitError::Command {
        args: args.join(" "),
        message,
    };
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("GIT_TERMINAL_PROMPT", "0");
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| failed(e.to_string()))?;
    // Each pipe's reader says when git closed it (as it exits): the wait
    // below wakes then, not at its next pause (up to 100 ms late, on
    // every fetch and push).
    let (closed_tx, closed) = std::sync::mpsc::channel::<()>();
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let closed_tx = closed_tx.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                // At most 1 MiB of what git says is kept.
                let _ = pipe.by_ref().take(1 << 20).read_to_end(&mut bytes);
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
            let _ = closed_tx.send(());
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    drop(closed_tx);
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    let mut open_pipes = 2;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| failed(e.to_string()))? {
            break status;
        }
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            kill_group(&mut child);
            let _ = child.wait();
            return Err(GitError::TimedOut {
                args: args.join(" "),
                after: timeout,
            });
        }
        if open_pipes == 0 {
            // Both pipes closed: git is exiting; its status comes at once.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        // A helper git left running may hold the pipes open: then the
        // pauses grow as before.
        match closed.recv_timeout(pause.min(timeout - elapsed)) {
            Ok(()) => open_pipes -= 1,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => open_pipes = 0,
        }
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// End a child and every process of its group.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let group = format!("-{}", child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
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

    /// Whether the repository's configuration names the remote `name`.
    pub fn has_remote(&self, name: &str) -> bool {
        self.gix()
            .remote_names()
            .iter()
            .any(|r| r.as_ref() as &[u8] == name.as_bytes())
    }

    /// `git fetch <remote> <refspec>`, given up after `timeout`.
    pub fn fetch(&self, remote: &str, refspec: &str, timeout: Duration) -> Result<(), GitError> {
        refuse_option(remote, refspec)?;
        let args = ["fetch", "--quiet", "--no-write-fetch-head", remote, refspec];
        let out = run_bounded(self.run_dir(), &args, timeout)?;
        if !out.status.success() {
            return Err(GitError::Command {
                args: args.join(" "),
                message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(())
    }

    /// `git push --porcelain <remote> <refspec>`, fast-forward only (a
    /// refspec with `+` would force; kapi never passes one), given up after
    /// `timeout`.
    pub fn push(&self, remote: &str, refspec: &str, timeout: Duration) -> Result<Pushed, GitError> {
        refuse_option(remote, refspec)?;
        let args = ["push", "--porcelain", remote, refspec];
        let out = run_bounded(self.run_dir(), &args, timeout)?;
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
