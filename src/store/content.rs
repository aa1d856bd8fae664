//! Large parsed content kept beside its record: the term rules of an
//! import whose record would be large are written to a git blob the record
//! names (`subject.blob`: the blob's id, SHA-256 and size), so the record
//! itself stays small (docs/operations.md, "The record").
//!
//! - A writer moves the content out when the record would pass
//!   [`INLINE_MAX`] bytes, and the commit that lands the record takes a
//!   **content commit** as its second parent: a commit with no parent
//!   whose tree holds the blob under its own id. The blob is then
//!   reachable from `refs/kapi/ops`, so every push and fetch of the log
//!   carries it, while the log's tree stays a pure function of the
//!   operations it holds.
//! - A reader reads it back into `terms`: the blob must be present, a
//!   blob, of the size the record states (read from its header, within
//!   [`MAX_CONTENT_BYTES`], before anything is inflated) and of its
//!   SHA-256, and parse as term rules within every limit. A record whose
//!   content fails is set aside and named, never folded half-read.
//! - The sync door, a file import and the committer carry a record naming
//!   a blob only when this repository holds that blob.

use std::collections::BTreeSet;

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::segment::{ContentError, EntryError, Problem};
use super::{Store, StoreError, tree};
use crate::ops::record::{ContentBlob, MAX_CONTENT_BYTES, Record, RecordError, Subject, TermEntry};

/// A record whose canonical bytes would pass this keeps its term rules in
/// a content blob: segments hold small lines, and a read of a segment never
/// inflates a large import it does not need.
pub const INLINE_MAX: usize = 64 * 1024;

/// Move `record`'s term rules into a content blob when the record would
/// pass [`INLINE_MAX`] bytes (a writer's side; the rules stay in memory).
pub(super) fn externalize(repo: &gix::Repository, record: &mut Record) -> Result<(), StoreError> {
    let Some(Subject::Terms { blob: None, .. }) = record.subject.as_deref() else {
        return Ok(());
    };
    if record.to_canonical_json().len() <= INLINE_MAX {
        return Ok(());
    }
    let Some(Subject::Terms { terms, blob }) = record.subject.as_deref_mut() else {
        unreachable!("matched above");
    };
    let bytes = canonical_terms(terms);
    if bytes.len() as u64 > MAX_CONTENT_BYTES {
        return Err(StoreError::Invalid(RecordError::TooLong {
            what: "an import's term rules, as a content blob",
            bytes: bytes.len(),
            limit: MAX_CONTENT_BYTES as usize,
        }));
    }
    let id = tree::write_blob(repo, &bytes)?;
    *blob = Some(ContentBlob {
        id: id.to_hex().to_string(),
        sha256: crate::digest::sha256_hex(&bytes),
        bytes: bytes.len() as u64,
    });
    Ok(())
}

/// The canonical JSON of term rules (keys sorted, compact): a content
/// blob's bytes.
fn canonical_terms(terms: &[TermEntry]) -> Vec<u8> {
    let value = serde_json::to_value(terms).expect("term rules serialize");
    serde_json::to_vec(&value).expect("a value serializes")
}

/// The blob `content` names, when this repository holds it as the record
/// states it (from its header: nothing is inflated).
pub(super) fn present(
    repo: &gix::Repository,
    content: &ContentBlob,
) -> Result<ObjectId, ContentError> {
    let id = ObjectId::from_hex(content.id.as_bytes()).map_err(|_| ContentError::Missing)?;
    let header = repo.find_header(id).map_err(|_| ContentError::Missing)?;
    if header.kind() != gix::object::Kind::Blob {
        return Err(ContentError::NotABlob);
    }
    if header.size() != content.bytes {
        return Err(ContentError::Size {
            stated: content.bytes,
            found: header.size(),
        });
    }
    Ok(id)
}

/// The term rules a content blob holds, checked as the record states it.
fn read(repo: &gix::Repository, content: &ContentBlob) -> Result<Vec<TermEntry>, ContentError> {
    // `present` checked the size against the record's, which its own
    // validation bounds: nothing over the limit is inflated.
    let id = present(repo, content)?;
    let bytes = tree::read_blob(repo, id).map_err(|_| ContentError::Missing)?;
    if crate::digest::sha256_hex(&bytes) != content.sha256 {
        return Err(ContentError::Digest);
    }
    serde_json::from_slice(&bytes).map_err(|e| ContentError::Unparsable(e.to_string()))
}

/// Why the record on a stored or fetched line cannot be carried for its
/// content: it names a blob this repository does not hold as stated. Only
/// lines that name a blob are parsed.
pub(super) fn problem_of_line(repo: &gix::Repository, line: &[u8]) -> Option<EntryError> {
    static BLOB_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"blob\":{"));
    BLOB_KEY.find(line)?;
    let record = Record::from_untrusted(line).ok()?;
    let content = record.content_blob()?;
    present(repo, content)
        .err()
        .map(|error| EntryError::Content {
            id: record.id.to_string(),
            blob: content.id.clone(),
            error,
        })
}

impl Store {
    /// Read back the content blobs `records` name into their `terms`. A
    /// record whose content cannot be read is taken out and named in
    /// `problems`.
    pub(super) fn read_content(&self, records: &mut Vec<Record>, problems: &mut Vec<Problem>) {
        if !records.iter().any(Record::content_unread) {
            return;
        }
        let repo = self.repo.gix();
        records.retain_mut(|record| {
            if !record.content_unread() {
                return true;
            }
            let content = record
                .content_blob()
                .expect("unread content is named")
                .clone();
            let error = match read(repo, &content) {
                Ok(read) => {
                    if let Some(Subject::Terms { terms, .. }) = record.subject.as_deref_mut() {
                        *terms = read;
                    }
                    // The rules read back pass every limit inline ones do.
                    match record.validate() {
                        Ok(()) => return true,
                        Err(e) => ContentError::Unparsable(e.to_string()),
                    }
                }
                Err(error) => error,
            };
            problems.push(Problem {
                location: format!("operation {}", record.id),
                error: EntryError::Content {
                    id: record.id.to_string(),
                    blob: content.id,
                    error,
                },
            });
            false
        });
    }

    /// A commit that holds `blobs` under their own ids and has no parent,
    /// dated `seconds`: a commit of the log takes it as a second parent,
    /// so the blobs travel wherever the log does.
    pub(super) fn content_commit(
        &self,
        blobs: &BTreeSet<ObjectId>,
        seconds: i64,
    ) -> Result<ObjectId, StoreError> {
        let entries = blobs
            .iter()
            .map(|id| Entry {
                mode: EntryKind::Blob.into(),
                filename: id.to_hex().to_string().into(),
                oid: *id,
            })
            .collect();
        let root = tree::write_entries(self.repo.gix(), entries)?;
        let message = format!("kapi: content of {} operations\n", blobs.len());
        self.commit(root, Vec::new(), seconds, &message)
    }

    /// The parents of a commit of the log: its tip, then a content commit
    /// for `blobs` (when any).
    pub(super) fn parents(
        &self,
        tip: Option<ObjectId>,
        blobs: &BTreeSet<ObjectId>,
        seconds: i64,
    ) -> Result<Vec<ObjectId>, StoreError> {
        let mut parents: Vec<ObjectId> = tip.into_iter().collect();
        if !blobs.is_empty() {
            parents.push(self.content_commit(blobs, seconds)?);
        }
        Ok(parents)
    }
}
