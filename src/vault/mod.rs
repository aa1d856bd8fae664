//! The vault: Markdown notes with front matter, an evidence register, a
//! review log and a decision log (format: `docs/vault.md`).
//!
//! [`load`] reads the permitted view only. Each file's front matter is
//! classified through a bounded prefix first; a denied file's body is never
//! read, and nothing of it (bytes, title, path) leaves this module.

pub mod claim;
pub mod date;
pub mod evidence;
pub mod frontmatter;
pub(crate) mod madr;
pub(crate) mod meta;
pub mod note;
pub mod review;
pub(crate) mod scan;
pub(crate) mod sensitivity;
pub mod table;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use crate::digest::sha256_hex;

pub(crate) use evidence::EvidenceRow;
pub(crate) use meta::{Kind, Meta, Status};
pub use sensitivity::{Grant, Sensitivity};

use crate::fsutil::{self, FileError, Links};
use frontmatter::FRONT_MATTER_LIMIT;

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
    /// A permitted claim or one of its released sources is malformed: it
    /// fails closed, naming the file (one the caller may see).
    #[error("{0}")]
    Claim(#[from] claim::ClaimError),
}

/// One permitted note outside the raw logs.
#[derive(Debug, Clone)]
pub(crate) struct Note {
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
    pub(crate) fn body(&self) -> &[u8] {
        &self.bytes[self.body_offset..]
    }

    pub(crate) fn body_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.body())
    }

    /// The declared title, a MADR record's first heading, else the id or path.
    pub(crate) fn title(&self) -> String {
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
pub(crate) struct LogState {
    /// At least one permitted log of this kind.
    pub present: bool,
    /// At least one log of this kind is outside the permitted view.
    pub unavailable: bool,
}

/// The permitted view of a vault.
#[derive(Debug, Default)]
pub(crate) struct Vault {
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
    /// The released claims, by their index in `notes`.
    pub claims: BTreeMap<usize, claim::Claim>,
    /// Permitted claims whose payload stays withheld (an E-ID outside the
    /// caller's evidence view): not notes, never read further or hashed.
    pub withheld_claims: Vec<claim::Withheld>,
    /// The grant, scope and layout this view was loaded with.
    pub(crate) loaded_with: (Grant, Narrowing, Layout),
}

/// A caller's narrower grant inside the label grant. It only ever narrows:
/// `paths` limits the candidate notes (each still re-read and re-classified
/// from its current bytes, so a label change inside the set counts and a
/// new path never joins); `evidence` limits the evidence row ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowing {
    pub paths: Option<BTreeSet<String>>,
    pub evidence: Option<BTreeSet<String>>,
}

/// Where the logs and registers live: fixed relative paths, not a file's
/// own declared `type`. Whether a file is a log therefore never depends on
/// bytes the caller may not see, and a denied note declaring a log type
/// elsewhere is just a denied note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Paths relative to the vault root, `/`-separated.
    pub decision_logs: Vec<String>,
    pub review_logs: Vec<String>,
    pub registers: Vec<String>,
}

impl Layout {
    /// The layout `[vault]` in `kapi.toml` sets, defaults where it is silent.
    pub fn from_config(v: &crate::config::VaultConfig) -> Self {
        let d = Self::default();
        Self {
            registers: v.evidence_registers.clone().unwrap_or(d.registers),
            review_logs: v.review_logs.clone().unwrap_or(d.review_logs),
            decision_logs: v.decision_logs.clone().unwrap_or(d.decision_logs),
        }
    }
}

impl Default for Layout {
    /// `decision-log.md`, `review-log.md` and `evidence.md` at the vault root.
    fn default() -> Self {
        Self {
            decision_logs: vec!["decision-log.md".into()],
            review_logs: vec!["review-log.md".into()],
            registers: vec!["evidence.md".into()],
        }
    }
}

impl Layout {
    /// The log kind of `path`, if it is a log or register path.
    pub(crate) fn kind_of(&self, path: &str) -> Option<Kind> {
        let has = |list: &[String]| list.iter().any(|p| p == path);
        if has(&self.registers) {
            Some(Kind::EvidenceRegister)
        } else if has(&self.review_logs) {
            Some(Kind::ReviewLog)
        } else if has(&self.decision_logs) {
            Some(Kind::DecisionLog)
        } else {
            None
        }
    }
}

/// One vault file after classification.
#[derive(Debug)]
enum Entry {
    /// Not a regular file: never part of the vault.
    Skip,
    /// Outside the grant (or unreadable metadata, which is restricted).
    Denied,
    Permitted {
        meta: Box<Meta>,
        bytes: Vec<u8>,
        body_offset: usize,
    },
}

/// Classify and, when permitted, read one file. Front matter is read
/// through a bounded prefix first; a denied file's body is never read. A
/// file that cannot be opened or whose prefix cannot be read has unreadable
/// metadata, which is `restricted`: it fails closed for that file only, and
/// is a hard error only when the grant would permit it.
fn read_entry(root: &Path, path: &str, grant: &Grant) -> Result<Entry, VaultError> {
    let unreadable = || {
        if grant.permits(Meta::unreadable().sensitivity) {
            Err(VaultError::Unreadable)
        } else {
            Ok(Entry::Denied)
        }
    };
    let mut file = match fsutil::open_regular(&root.join(path), Links::Refuse) {
        Ok(f) => f,
        Err(FileError::NotRegular(_)) => return Ok(Entry::Skip),
        Err(_) => return unreadable(),
    };
    // Sized to the file (most notes are far below the prefix limit), so
    // a kept note holds no slack.
    let size = file.metadata().map_or(0, |m| m.len()) as usize;
    let mut bytes = Vec::with_capacity(size.min(FRONT_MATTER_LIMIT) + 1);
    if fsutil::read_prefix(&mut file, &mut bytes, FRONT_MATTER_LIMIT).is_err() {
        return unreadable();
    }
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let (meta, body_offset) = match frontmatter::parse(&bytes) {
        Ok(fm) => (Meta::from_front_matter(&fm, file_name), fm.body_offset),
        // No front matter at all: not a note (a README beside the notes),
        // restricted and of no type, so never a context by id.
        Err(frontmatter::FrontMatterError::Missing) => (Meta::unreadable(), 0),
        // Front matter that opens and cannot be read (it does not close
        // within the limit, is not UTF-8, breaks the subset): a note the
        // vault cannot read. It must not vanish from what a grant that
        // would permit it compiles.
        Err(_) => return unreadable(),
    };
    if !grant.permits(meta.sensitivity) {
        return Ok(Entry::Denied);
    }
    fsutil::read_rest(&mut file, &mut bytes).map_err(|e| match e {
        FileError::TooLarge => VaultError::TooLarge,
        _ => VaultError::Unreadable,
    })?;
    Ok(Entry::Permitted {
        meta: Box::new(meta),
        bytes,
        body_offset,
    })
}

/// Read the permitted view of the vault at `root`, with the default
/// [`Layout`].
#[cfg(test)]
pub(crate) fn load(root: &Path, grant: &Grant, scope: &Narrowing) -> Result<Vault, VaultError> {
    load_with_layout(root, grant, scope, &Layout::default())
}

/// Read the permitted view of the vault at `root`; `layout` names the
/// log and register paths.
pub(crate) fn load_with_layout(
    root: &Path,
    grant: &Grant,
    scope: &Narrowing,
    layout: &Layout,
) -> Result<Vault, VaultError> {
    let files = scan::markdown_files(root).map_err(|e| match e {
        scan::ScanError::NotADirectory(_) => VaultError::NotFound,
        _ => VaultError::Unreadable,
    })?;
    let mut vault = Vault {
        loaded_with: (grant.clone(), scope.clone(), layout.clone()),
        ..Vault::default()
    };
    let mut logs: Vec<(Kind, Sensitivity, String, Vec<u8>, usize)> = Vec::new();
    for path in files {
        let log_kind = layout.kind_of(&path);
        if scope.paths.as_ref().is_some_and(|s| !s.contains(&path)) {
            // Outside the caller's scope: a log there cannot be established
            // in the granted view, exactly as if it were denied.
            if let Some(kind) = log_kind {
                log_state(&mut vault, kind).unavailable = true;
            }
            continue;
        }
        let (meta, bytes, body_offset) = match read_entry(root, &path, grant)? {
            Entry::Skip => continue,
            Entry::Denied => {
                if let Some(kind) = log_kind {
                    log_state(&mut vault, kind).unavailable = true;
                }
                continue;
            }
            Entry::Permitted {
                meta,
                bytes,
                body_offset,
            } => (*meta, bytes, body_offset),
        };
        if let Some(kind) = log_kind {
            log_state(&mut vault, kind).present = true;
            logs.push((kind, meta.sensitivity, path.clone(), bytes, body_offset));
            vault.log_paths.push(path);
            continue;
        }
        if meta.kind.is_log() {
            // A permitted file declaring a log type away from the log
            // paths: its raw mixed-label rows are withheld and not read as
            // a log, and since its events cannot be established, that log
            // kind is unavailable (fail closed, rather than silently
            // ignoring a review). Its type is visible to the caller, so
            // this leaks nothing.
            log_state(&mut vault, meta.kind).unavailable = true;
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
    let (mut reviews, mut events, mut evidence) = (Vec::new(), Vec::new(), Vec::new());
    let tables: Vec<(Kind, Sensitivity, &str, table::Table)> = logs
        .iter()
        .map(|(kind, floor, path, bytes, offset)| {
            let body = String::from_utf8_lossy(&bytes[*offset..]);
            // Hidden rows are dropped while parsing, so they never count
            // toward the table's row cap.
            let t = table::parse_kept(&body, |columns, row| {
                let label = columns.iter().position(|c| c == "sensitivity");
                grant.permits(Sensitivity::of_row(*floor, label.map(|c| row[c].as_str())))
            });
            (*kind, *floor, path.as_str(), t)
        })
        .collect();
    for (_, floor, path, t) in tables.iter().filter(|t| t.0 == Kind::EvidenceRegister) {
        evidence.extend(evidence::project(
            t,
            *floor,
            path,
            grant,
            scope.evidence.as_ref(),
        ));
    }
    vault.evidence = evidence::resolve_replacements(evidence);
    // Claims, once the caller's evidence view is known: released ones keep
    // their note and bind their sources; withheld ones leave the notes
    // before anything else (reviews, hashes, ranking) sees them.
    release_claims(root, &mut vault)?;
    let note_paths: BTreeSet<String> = vault.notes.iter().map(|n| n.path.clone()).collect();
    for (kind, floor, _, t) in &tables {
        match kind {
            Kind::EvidenceRegister => {}
            Kind::ReviewLog => reviews.extend(review::select(
                t,
                *floor,
                grant,
                "outcome",
                &review::OUTCOMES,
                &note_paths,
            )),
            _ => events.extend(review::select(
                t,
                *floor,
                grant,
                "event",
                &review::EVENTS,
                &note_paths,
            )),
        }
    }
    vault.reviews = review::finish(reviews);
    vault.decision_events = review::finish(events);
    Ok(vault)
}

/// Decide each permitted claim: malformed fails closed; released when
/// every E-ID it names is in the filtered evidence view (then, and only
/// then, its capture and ledger are opened); otherwise withheld.
fn release_claims(root: &Path, vault: &mut Vault) -> Result<(), VaultError> {
    if !vault.notes.iter().any(|n| n.meta.kind == Kind::Claim) {
        return Ok(());
    }
    let mut rows: HashMap<&str, Vec<&EvidenceRow>> = HashMap::new();
    for row in &vault.evidence {
        rows.entry(&row.id).or_default().push(row);
    }
    let mut decided = Vec::new();
    for note in &vault.notes {
        if note.meta.kind != Kind::Claim {
            decided.push(None);
            continue;
        }
        let payload = claim::parse(&note.path, &note.bytes, note.body_offset)?;
        decided.push(Some(claim::releasable(&payload, &rows).then_some(payload)));
    }
    let notes = std::mem::take(&mut vault.notes);
    for (note, decided) in notes.into_iter().zip(decided) {
        match decided {
            None => vault.notes.push(note),
            Some(None) => vault.withheld_claims.push(claim::Withheld {
                path: note.path,
                id: note.meta.id,
            }),
            Some(Some(payload)) => {
                let sources = claim::bind_sources(root, &payload)?;
                vault
                    .claims
                    .insert(vault.notes.len(), claim::Claim { payload, sources });
                vault.notes.push(note);
            }
        }
    }
    Ok(())
}

fn log_state(vault: &mut Vault, kind: Kind) -> &mut LogState {
    match kind {
        Kind::EvidenceRegister => &mut vault.register,
        Kind::ReviewLog => &mut vault.review_log,
        _ => &mut vault.decision_log,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }

    const REVIEWS: &str = "---\ntype: review_log\nsensitivity: public\n---\n| date | target | outcome |\n|-|-|-|\n| 2026-01-01 | a.md | rejected |\n";
    const NOTE: &str = "---\nid: S-001\ntype: source\nsensitivity: public\n---\ntext\n";

    #[test]
    fn logs_outside_the_path_scope_are_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("a.md", NOTE), ("review-log.md", REVIEWS)]);
        let full = load(dir.path(), &Grant::public(), &Narrowing::default()).unwrap();
        assert_eq!(full.reviews.len(), 1);
        assert!(full.review_log.present && !full.review_log.unavailable);
        let scope = Narrowing {
            paths: Some(["a.md".to_string()].into()),
            evidence: None,
        };
        let scoped = load(dir.path(), &Grant::public(), &scope).unwrap();
        assert!(scoped.reviews.is_empty());
        assert!(
            scoped.review_log.unavailable,
            "outside the scope is not absent"
        );
        assert!(!scoped.register.unavailable, "no register exists");
    }

    #[test]
    fn logs_are_found_by_path_not_by_declared_type() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("a.md", NOTE),
                // A denied stray note declaring a log type is just a denied note.
                (
                    "secret.md",
                    "---\ntype: review_log\nsensitivity: restricted\n---\n",
                ),
            ],
        );
        let v = load(dir.path(), &Grant::public(), &Narrowing::default()).unwrap();
        assert_eq!(v.review_log, LogState::default());
        assert_eq!(v.notes.len(), 1);
        // A permitted stray one is withheld, not read as a log, and makes
        // the review log unavailable rather than silently ignored.
        write(dir.path(), &[("notes/fake.md", REVIEWS)]);
        let v = load(dir.path(), &Grant::public(), &Narrowing::default()).unwrap();
        assert!(v.review_log.unavailable && !v.review_log.present);
        assert!(v.reviews.is_empty());
        assert_eq!(v.log_paths, ["notes/fake.md"]);
        assert_eq!(v.notes.len(), 1);
        // A denied file at the log path makes the log unavailable, whatever
        // it declares.
        write(dir.path(), &[("review-log.md", "---\ntype: note\n---\n")]);
        let v = load(dir.path(), &Grant::public(), &Narrowing::default()).unwrap();
        assert!(v.review_log.unavailable && !v.review_log.present);
    }

    #[test]
    fn front_matter_that_cannot_be_read_fails_closed_where_the_grant_would_permit_it() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!(
            "---\nid: D-009\nsensitivity: public\n# {}\n---\nbody\n",
            "x".repeat(FRONT_MATTER_LIMIT)
        );
        write(
            dir.path(),
            &[
                ("a.md", NOTE),
                ("long.md", &long),
                ("broken.md", "---\nid: [D-010\n---\nbody\n"),
                ("README.md", "No front matter: not a note.\n"),
            ],
        );
        let restricted = Grant::up_to(Sensitivity::Restricted);
        for path in ["long.md", "broken.md"] {
            assert!(matches!(
                read_entry(dir.path(), path, &Grant::public()),
                Ok(Entry::Denied)
            ));
            assert!(
                matches!(
                    read_entry(dir.path(), path, &restricted),
                    Err(VaultError::Unreadable)
                ),
                "{path}"
            );
        }
        assert!(matches!(
            read_entry(dir.path(), "README.md", &restricted),
            Ok(Entry::Permitted { .. })
        ));
        assert!(matches!(
            load(dir.path(), &restricted, &Narrowing::default()),
            Err(VaultError::Unreadable)
        ));
        assert_eq!(
            load(dir.path(), &Grant::public(), &Narrowing::default())
                .unwrap()
                .notes
                .len(),
            1
        );
    }

    #[test]
    fn unreadable_files_fail_closed_for_that_file_only() {
        let dir = tempfile::tempdir().unwrap();
        // The file vanished between listing and opening: an open error
        // other than "not a regular file".
        assert!(matches!(
            read_entry(dir.path(), "gone.md", &Grant::public()),
            Ok(Entry::Denied)
        ));
        assert!(matches!(
            read_entry(
                dir.path(),
                "gone.md",
                &Grant::up_to(Sensitivity::Restricted)
            ),
            Err(VaultError::Unreadable)
        ));
    }

    #[test]
    fn replacements_resolve_across_registers() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                (
                    "evidence.md",
                    "---\nsensitivity: public\n---\n| id | state | replaced_by |\n|-|-|-|\n| E-001 | replaced | E-002 |\n| E-003 | replaced | E-009 |\n",
                ),
                (
                    "evidence-2026.md",
                    "---\nsensitivity: public\n---\n| id | state |\n|-|-|\n| E-002 | active |\n",
                ),
            ],
        );
        let layout = Layout {
            registers: vec!["evidence.md".into(), "evidence-2026.md".into()],
            ..Layout::default()
        };
        let v =
            load_with_layout(dir.path(), &Grant::public(), &Narrowing::default(), &layout).unwrap();
        let e1 = v.evidence.iter().find(|r| r.id == "E-001").unwrap();
        assert_eq!(e1.replaced_by.as_deref(), Some("E-002"));
        assert!(!e1.replacement_unavailable);
        let e3 = v.evidence.iter().find(|r| r.id == "E-003").unwrap();
        assert!(e3.replacement_unavailable && e3.replaced_by.is_none());
    }
}
