//! `kapi trust add` and `kapi trust list`: the allowed-signers file of
//! `[trust]` (docs/security.md, "Signed decisions"). Adding a key is a
//! person's act, refused to an agent or a tool; it writes the work tree's
//! file, which grants nothing until it is committed on the default branch.

use std::path::Path;

use serde::Serialize;

use super::{ContextError, Session};
use crate::config::DEFAULT_ALLOWED_SIGNERS;
use crate::formats::allowed_signers::{self, AllowedSigner};
use crate::ops::policy::PolicyError;
use crate::ops::record::ActorKind;
use crate::ops::trust::NAMESPACE;

/// What `kapi trust add` did.
#[derive(Debug, Serialize)]
pub struct TrustAdded {
    /// The allowed-signers file (relative to the work tree).
    pub file: String,
    pub principal: String,
    /// The key's SHA-256 fingerprint, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// The file listed that key for that principal already.
    pub already: bool,
    /// kapi.toml gained a `[trust]` table naming the file.
    pub configured: bool,
}

/// One key of `kapi trust list`.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub line: usize,
    pub principals: String,
    pub fingerprint: String,
    pub algorithm: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_before: Option<String>,
    /// Whether it lets the key sign kapi's decisions (the namespace, not a
    /// certificate authority).
    pub signs_kapi: bool,
}

/// What `kapi trust list` shows.
#[derive(Debug, Serialize)]
pub struct TrustListing {
    pub file: String,
    /// `[trust] decisions`: `shown` or `signed`; `None` without `[trust]`.
    pub decisions: Option<crate::ops::trust::Mode>,
    /// The keys as the default branch holds the file: what counts.
    pub committed: Vec<Listed>,
    /// Whether the default branch holds the file at all.
    pub on_default_branch: bool,
    /// Lines of the committed file that were not read, and why.
    pub bad_lines: Vec<String>,
    /// The work tree's file differs from the committed one: its changes
    /// grant nothing until they are committed there.
    pub uncommitted_changes: bool,
}

fn file_of(session: &Session) -> String {
    session
        .config
        .trust
        .as_ref()
        .map(|t| t.allowed_signers().to_owned())
        .unwrap_or_else(|| DEFAULT_ALLOWED_SIGNERS.to_owned())
}

/// List `principal`'s key (an OpenSSH public key file) in the work tree's
/// allowed-signers file for the namespace `kapi`; add `[trust]` to
/// kapi.toml when it has none.
pub fn add(
    session: &Session,
    principal: &str,
    key_file: &Path,
) -> Result<TrustAdded, ContextError> {
    let actor = session.actor();
    if actor.kind != ActorKind::Person {
        return Err(PolicyError {
            actor: actor.label(),
            what: "add a key to the allowed-signers file".into(),
            why: "whose signature vouches for a person's decision is a person's to say; ask a person to run `kapi trust add`".into(),
        }
        .into());
    }
    let principal = principal.trim();
    if principal.is_empty()
        || principal.len() > crate::ops::record::MAX_NAME
        || principal
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == ',' || c.is_control())
    {
        return Err(ContextError::Usage(format!(
            "`{principal}` is not a principal: name one person (their git user.email, as their decisions name them) or `ci`, without spaces, quotes or commas"
        )));
    }
    let path = session.cwd().join(key_file);
    let bytes = crate::fsutil::read_capped(&path, crate::fsutil::Links::Follow)
        .map_err(|e| ContextError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let text = String::from_utf8_lossy(&bytes);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    let key = ssh_key::PublicKey::from_openssh(line).map_err(|e| {
        ContextError::Usage(format!(
            "{} holds no OpenSSH public key ({e}); name the .pub file (`ssh-keygen -y -f <key>` prints it)",
            path.display()
        ))
    })?;
    if let Err(why) = allowed_signers::supported(&key.algorithm()) {
        return Err(ContextError::Usage(format!(
            "{} is a {} key: {why}",
            path.display(),
            key.algorithm()
        )));
    }
    if let Err(why) = allowed_signers::usable(&key) {
        return Err(ContextError::Usage(format!("{}: {why}", path.display())));
    }
    let fingerprint = key.fingerprint(ssh_key::HashAlg::Sha256).to_string();
    let rel = file_of(session);
    let file = session.root.join(&rel);
    let existing = match crate::fsutil::read_optional(&file, crate::fsutil::Links::Refuse) {
        Ok(bytes) => bytes.unwrap_or_default(),
        Err(e) => {
            return Err(ContextError::Usage(format!(
                "cannot read {}: {e}",
                file.display()
            )));
        }
    };
    let read = allowed_signers::parse(&existing);
    let already = read.signers.iter().any(|s| {
        s.key.key_data() == key.key_data()
            && s.allows_principal(principal)
            && s.allows_namespace(NAMESPACE)
            && !s.cert_authority
    });
    if !already {
        let encoded = key
            .to_openssh()
            .map_err(|e| ContextError::Usage(e.to_string()))?;
        let mut text = existing.clone();
        if !text.is_empty() && !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        text.extend_from_slice(
            format!("{principal} namespaces=\"{NAMESPACE}\" {encoded}\n").as_bytes(),
        );
        write(&file, &text)?;
    }
    let configured = session.config.trust.is_none();
    if configured {
        let toml = session.root.join(crate::config::FILE_NAME);
        let mut text = crate::fsutil::read_optional(&toml, crate::fsutil::Links::Refuse)
            .map_err(|e| ContextError::Usage(format!("cannot read {}: {e}", toml.display())))?
            .unwrap_or_default();
        if !text.is_empty() && !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        text.extend_from_slice(
            format!(
                "\n# Signed decisions (docs/security.md). decisions = \"signed\" makes a\n# person's decision count only signed by a key listed there.\n[trust]\nallowed_signers = \"{rel}\"\n"
            )
            .as_bytes(),
        );
        write(&toml, &text)?;
    }
    Ok(TrustAdded {
        file: rel,
        principal: principal.to_owned(),
        fingerprint,
        already,
        configured,
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), ContextError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| ContextError::Usage(format!("cannot create {}: {e}", dir.display())))?;
    }
    crate::atomic::replace(path, bytes, None)
        .map_err(|e| ContextError::Usage(format!("cannot write {}: {e}", path.display())))
}

/// The keys the allowed-signers file lists as the default branch holds it.
pub fn list(session: &Session) -> Result<TrustListing, ContextError> {
    let rel = file_of(session);
    let committed = session.allowed_signers_committed_at(&rel);
    let work_tree =
        crate::fsutil::read_optional(&session.root.join(&rel), crate::fsutil::Links::Refuse)
            .ok()
            .flatten();
    let read = allowed_signers::parse(committed.as_deref().unwrap_or_default());
    Ok(TrustListing {
        decisions: session.config.trust.as_ref().map(|t| t.decisions),
        committed: read.signers.iter().map(listed).collect(),
        on_default_branch: committed.is_some(),
        bad_lines: read
            .bad
            .iter()
            .map(|b| format!("line {}: {}", b.line, b.why))
            .collect(),
        uncommitted_changes: work_tree != committed,
        file: rel,
    })
}

fn listed(s: &AllowedSigner) -> Listed {
    let time = |ms: Option<u64>| ms.map(crate::ops::id::rfc3339_ms);
    Listed {
        line: s.line,
        principals: s.principals.clone(),
        fingerprint: s.key.fingerprint(ssh_key::HashAlg::Sha256).to_string(),
        algorithm: s.key.algorithm().to_string(),
        namespaces: s.namespaces.clone(),
        valid_after: time(s.valid_after),
        valid_before: time(s.valid_before),
        signs_kapi: s.allows_namespace(NAMESPACE) && !s.cert_authority,
    }
}
