//! Signing as git signs a commit with an SSH key, and reading a file as
//! the default branch holds it (the allowed-signers file of `[trust]`).
//!
//! git's settings choose the key: `gpg.format = ssh`, `user.signingkey`
//! (a private key file, a public key file whose private half the ssh-agent
//! holds, or `key::<public key>` for a key only the agent holds) and
//! `gpg.ssh.program` (default `ssh-keygen`). kapi runs `ssh-keygen -Y sign
//! -n kapi` as git does (`-U` for a literal key), so a passphrase, an
//! agent's confirmation (`ssh-add -c`) and a FIDO key's touch work as
//! they do for a commit. kapi never reads a private key.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::worktree::Blob;
use super::{GitError, Repo, git};

/// The key git's settings name for SSH signing.
#[derive(Debug, Clone)]
pub struct Signer {
    program: String,
    key: Key,
}

#[derive(Debug, Clone)]
enum Key {
    /// A key file (private, or public with the private half in the agent).
    File(PathBuf),
    /// `key::ssh-ed25519 AAAA…`: a public key only the agent holds.
    Literal(String),
}

/// Why a signature could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot sign with {key}: {message}")]
pub struct SignError {
    pub key: String,
    pub message: String,
}

impl Repo {
    /// The SSH signing key git's settings name (`gpg.format = ssh` and
    /// `user.signingkey`), if they name one.
    pub fn ssh_signer(&self, home: Option<&Path>) -> Option<Signer> {
        let config = self.repo.config_snapshot();
        let format = config.string("gpg.format")?;
        if !format.to_string().eq_ignore_ascii_case("ssh") {
            return None;
        }
        let key = config.string("user.signingkey")?.to_string();
        let key = key.trim();
        if key.is_empty() {
            return None;
        }
        let program = config
            .string("gpg.ssh.program")
            .map(|p| p.to_string())
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| "ssh-keygen".to_owned());
        let key = if let Some(literal) = key.strip_prefix("key::") {
            Key::Literal(literal.trim().to_owned())
        } else if key.starts_with("ssh-") || key.starts_with("ecdsa-") || key.starts_with("sk-") {
            // git still takes a literal key without `key::` (deprecated).
            Key::Literal(key.to_owned())
        } else if let (Some(rest), Some(home)) = (key.strip_prefix("~/"), home) {
            Key::File(home.join(rest))
        } else {
            Key::File(PathBuf::from(key))
        };
        Some(Signer { program, key })
    }

    /// The file at `path` (repository-relative, `/`-separated) as the
    /// default branch holds it: the remote's (`refs/remotes/origin/<default>`,
    /// what the shared, protected branch said when last fetched) when
    /// there is one, else the local branch. `None` when no such branch or
    /// file; a file over `max` bytes reads as [`Blob::TooLarge`].
    pub fn default_branch_file(&self, path: &str, max: u64) -> Result<Option<Blob>, GitError> {
        let branch = self.default_branch();
        for name in [
            format!("refs/remotes/origin/{branch}"),
            format!("refs/heads/{branch}"),
        ] {
            let Some(mut reference) = self
                .repo
                .try_find_reference(name.as_str())
                .map_err(git("finding the default branch"))?
            else {
                continue;
            };
            let commit = reference
                .peel_to_commit()
                .map_err(git("reading the default branch"))?;
            let tree = commit.tree().map_err(git("reading the default branch"))?;
            let entry = tree
                .lookup_entry_by_path(path)
                .map_err(git("reading the default branch"))?;
            return match entry.filter(|e| e.mode().is_blob()) {
                Some(e) => Ok(Some(self.read_blob(e.object_id(), max)?)),
                None => Ok(None),
            };
        }
        Ok(None)
    }
}

impl Signer {
    /// The public half of the key, without kapi reading a private key: a
    /// literal key, a `.pub` file, the `.pub` file beside a private key
    /// file (as `ssh-keygen` writes it), or, when there is none (git signs
    /// with such a key all the same), what `ssh-keygen -y` derives from the
    /// private key file; for a key with a passphrase, which `ssh-keygen -y`
    /// would ask for, the public half the OpenSSH key file keeps in the
    /// clear. `None` when none of these shows it.
    pub fn public_key(&self) -> Option<ssh_key::PublicKey> {
        match &self.key {
            Key::Literal(key) => ssh_key::PublicKey::from_openssh(key.trim()).ok(),
            Key::File(path) => match self.public_file() {
                Some(public) => {
                    let text = read_text(&public)?;
                    ssh_key::PublicKey::from_openssh(text.trim()).ok()
                }
                None => derived_public_key(path),
            },
        }
    }

    /// The public key file to list (`kapi trust add`): the key file when
    /// it ends in `.pub`, else the `.pub` beside it, when there.
    pub fn public_file(&self) -> Option<PathBuf> {
        let Key::File(path) = &self.key else {
            return None;
        };
        if path.extension().is_some_and(|e| e == "pub") {
            return Some(path.clone());
        }
        let mut public = path.clone().into_os_string();
        public.push(".pub");
        let public = PathBuf::from(public);
        public.is_file().then_some(public)
    }

    /// The key file git's settings name (`None` for a literal key).
    pub fn key_file(&self) -> Option<&Path> {
        match &self.key {
            Key::File(path) => Some(path),
            Key::Literal(_) => None,
        }
    }

    /// What the key is, as a message names it.
    pub fn describe(&self) -> String {
        match &self.key {
            Key::File(path) => path.display().to_string(),
            Key::Literal(key) => {
                let short: String = key.chars().take(40).collect();
                format!("the agent's key {short}…")
            }
        }
    }

    /// The armored SSHSIG of `message` in `namespace`, made by
    /// `ssh-keygen -Y sign` (which asks for a passphrase, an agent's
    /// confirmation or a touch as it would for a commit).
    pub fn sign(&self, namespace: &str, message: &[u8]) -> Result<String, SignError> {
        let failed = |message: String| SignError {
            key: self.describe(),
            message,
        };
        // A literal key is handed over in a file, as git does.
        let literal;
        let (file, agent) = match &self.key {
            Key::File(path) => (path.as_path(), false),
            Key::Literal(key) => {
                literal = tempfile_with(key).map_err(|e| failed(e.to_string()))?;
                (literal.path(), true)
            }
        };
        let mut command = Command::new(&self.program);
        command
            .args(["-Y", "sign", "-n", namespace, "-f"])
            .arg(file);
        if agent {
            command.arg("-U");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("cannot run {}: {e}", self.program)))?;
        let mut stdin = child.stdin.take().expect("piped");
        // ssh-keygen reads all of the message before it signs; a message is
        // at most one record (1 MiB).
        let written = stdin.write_all(message);
        drop(stdin);
        let output = child
            .wait_with_output()
            .map_err(|e| failed(format!("{} did not finish: {e}", self.program)))?;
        if !output.status.success() || written.is_err() {
            let said = String::from_utf8_lossy(&output.stderr);
            let said = said.trim();
            return Err(failed(if said.is_empty() {
                format!("{} -Y sign failed ({})", self.program, output.status)
            } else {
                format!("{} -Y sign: {said}", self.program)
            }));
        }
        String::from_utf8(output.stdout).map_err(|_| failed("not a signature".into()))
    }
}

/// The first 64 KiB of a key file, as text (a key file is far smaller).
fn read_text(path: &Path) -> Option<String> {
    let mut text = String::new();
    let file = std::fs::File::open(path).ok()?;
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 64 * 1024), &mut text).ok()?;
    Some(text)
}

/// The public half of the private key file `path` whose `.pub` is not
/// beside it: `ssh-keygen -y` prints it (with an empty passphrase given,
/// so it never waits at a prompt), else, for a key with a passphrase, the
/// OpenSSH key file's public part, read without decrypting anything.
fn derived_public_key(path: &Path) -> Option<ssh_key::PublicKey> {
    let output = Command::new("ssh-keygen")
        .args(["-y", "-P", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    if let Ok(output) = output
        && output.status.success()
        && output.stdout.len() <= 64 * 1024
        && let Ok(text) = std::str::from_utf8(&output.stdout)
        && let Ok(key) = ssh_key::PublicKey::from_openssh(text.trim())
    {
        return Some(key);
    }
    let private = ssh_key::PrivateKey::from_openssh(read_text(path)?.trim()).ok()?;
    private.is_encrypted().then(|| private.public_key().clone())
}

/// A temporary file holding `text` (removed when dropped).
fn tempfile_with(text: &str) -> std::io::Result<TempFile> {
    let dir = std::env::temp_dir();
    let mut n = std::process::id() as u64;
    loop {
        let path = dir.join(format!(".kapi-signingkey-{n}.pub"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(text.as_bytes())?;
                f.write_all(b"\n")?;
                return Ok(TempFile(path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(e),
        }
    }
}

struct TempFile(PathBuf);

impl TempFile {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
