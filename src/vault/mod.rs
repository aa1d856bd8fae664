//! The vault: Markdown notes with front matter, an evidence register, a
//! review log and a decision log (format: `docs/vault.md`).
//!
//! [`load`] reads the permitted view only. Each file's front matter is
//! classified through a bounded prefix first; a denied file's body is never
//! read, and nothing of it (bytes, title, path) leaves this module.

pub mod date;
pub mod evidence;
pub mod frontmatter;
pub mod madr;
pub mod note;
pub mod read;
pub mod review;
pub mod scan;
pub mod sensitivity;
pub mod table;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::Path;

use crate::compile::digest::sha256_hex;

pub use evidence::EvidenceRow;
pub use note::{Kind, Meta, Status};
pub use sensitivity::{Grant, Sensitivity};

use frontmatter::FRONT_MATTER_LIMIT;
use read::ReadError;

/// Why the vault cannot be read. Codes are fixed and redacted: they never
/// name a file, which might be one the caller may not see.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("vault_not_found: the vault root is not a directory")]
    NotFound,
    #[error("vault_unreadable: a vault folder or file could not be read")]
    Unreadable,
    #[error("read_cap_exceeded: a permitted vault file exceeds the 16 MiB read cap")]
    TooLarge,
}

impl VaultError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "vault_not_found",
            Self::Unreadable => "vault_unreadable",
            Self::TooLarge => "read_cap_exceeded",
        }
    }
}

/// One permitted note outside the raw logs.
#[derive(Debug, Clone)]
pub struct Note {
    /// Relative `/`-separated path under the vault root.
    pub path: String,
    pub meta: Meta,
    /// The raw bytes of the file.
    pub bytes: Vec<u8>,
    /// Where the body starts (after the front matter).
    pub body_offset: usize,
    /// SHA-256 of the raw bytes, hex.
    pub sha256: String,
}

impl Note {
    pub fn body(&self) -> &[u8] {
        &self.bytes[self.body_offset..]
    }

    pub fn body_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.body())
    }

    /// The declared title, a MADR record's first heading, else the id or path.
    pub fn title(&self) -> String {
        if let Some(t) = &self.meta.title {
            return t.clone();
        }
        if self.meta.madr
            && let Some(h) = madr::first_heading(&self.body_text())
        {
            return h.to_string();
        }
        self.meta.id.clone().unwrap_or_else(|| self.path.clone())
    }
}

/// Whether logs of one kind exist in the permitted view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogState {
    /// At least one permitted log of this kind.
    pub present: bool,
    /// At least one log of this kind is outside the permitted view.
    pub unavailable: bool,
}

/// The permitted view of a vault.
#[derive(Debug, Default)]
pub struct Vault {
    /// Permitted notes outside the raw logs, sorted by path.
    pub notes: Vec<Note>,
    /// Paths of permitted logs and registers: never bodies, never hashed.
    pub log_paths: Vec<String>,
    /// The permitted evidence rows, register by register in path order.
    pub evidence: Vec<EvidenceRow>,
    pub reviews: Vec<review::Row>,
    pub decision_events: Vec<review::Row>,
    pub register: LogState,
    pub review_log: LogState,
    pub decision_log: LogState,
}

/// A caller's narrower grant inside the label grant. It only ever narrows:
/// `paths` limits the candidate notes (each still re-read and re-classified
/// from its current bytes, so a label change inside the set counts and a
/// new path never joins); `evidence` limits the evidence row ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub paths: Option<BTreeSet<String>>,
    pub evidence: Option<BTreeSet<String>>,
}

/// Read the permitted view of the vault at `root`.
pub fn load(root: &Path, grant: &Grant, scope: &Scope) -> Result<Vault, VaultError> {
    let files = scan::markdown_files(root).map_err(|e| match e {
        scan::ScanError::NotADirectory(_) => VaultError::NotFound,
        _ => VaultError::Unreadable,
    })?;
    let mut vault = Vault::default();
    let mut logs: Vec<(Kind, Sensitivity, String, Vec<u8>, usize)> = Vec::new();
    for path in files {
        if scope.paths.as_ref().is_some_and(|s| !s.contains(&path)) {
            continue;
        }
        let mut file = match read::open_regular(&root.join(&path)) {
            Ok(f) => f,
            Err(ReadError::NotRegular) => continue,
            Err(_) => return Err(VaultError::Unreadable),
        };
        // Sized to the file (most notes are far below the prefix limit), so
        // a kept note holds no slack.
        let size = file.metadata().map_or(0, |m| m.len()) as usize;
        let mut bytes = Vec::with_capacity(size.min(FRONT_MATTER_LIMIT) + 1);
        read::read_prefix(&mut file, &mut bytes, FRONT_MATTER_LIMIT)
            .map_err(|_| VaultError::Unreadable)?;
        let file_name = path.rsplit('/').next().unwrap_or(&path);
        let (meta, body_offset) = match frontmatter::parse(&bytes) {
            Ok(fm) => (Meta::from_front_matter(&fm, file_name), fm.body_offset),
            Err(_) => (Meta::unreadable(), 0),
        };
        if meta.kind.is_log() && !grant.permits(meta.sensitivity) {
            log_state(&mut vault, meta.kind).unavailable = true;
        }
        if !grant.permits(meta.sensitivity) {
            continue;
        }
        read::read_rest(&mut file, &mut bytes).map_err(|e| match e {
            ReadError::TooLarge => VaultError::TooLarge,
            _ => VaultError::Unreadable,
        })?;
        if meta.kind.is_log() {
            log_state(&mut vault, meta.kind).present = true;
            logs.push((
                meta.kind,
                meta.sensitivity,
                path.clone(),
                bytes,
                body_offset,
            ));
            vault.log_paths.push(path);
            continue;
        }
        let sha256 = sha256_hex(&bytes);
        vault.notes.push(Note {
            path,
            meta,
            bytes,
            body_offset,
            sha256,
        });
    }
    let note_paths: BTreeSet<String> = vault.notes.iter().map(|n| n.path.clone()).collect();
    let (mut reviews, mut events) = (Vec::new(), Vec::new());
    for (kind, floor, path, bytes, offset) in &logs {
        let body = String::from_utf8_lossy(&bytes[*offset..]);
        let t = table::parse(&body);
        match kind {
            Kind::EvidenceRegister => vault.evidence.extend(evidence::project(
                &t,
                *floor,
                path,
                grant,
                scope.evidence.as_ref(),
            )),
            Kind::ReviewLog => reviews.extend(review::select(
                &t,
                *floor,
                grant,
                "outcome",
                &review::OUTCOMES,
                &note_paths,
            )),
            Kind::DecisionLog => events.extend(review::select(
                &t,
                *floor,
                grant,
                "event",
                &review::EVENTS,
                &note_paths,
            )),
            _ => {}
        }
    }
    vault.reviews = review::finish(reviews);
    vault.decision_events = review::finish(events);
    Ok(vault)
}

fn log_state(vault: &mut Vault, kind: Kind) -> &mut LogState {
    match kind {
        Kind::EvidenceRegister => &mut vault.register,
        Kind::ReviewLog => &mut vault.review_log,
        _ => &mut vault.decision_log,
    }
}
