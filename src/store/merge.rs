//! Merging operations from elsewhere (an exported file; sync later) by
//! union. An id the log holds changes nothing; a copy of a held id with
//! other bytes (unless either copy carries a signature: both are kept, and
//! the fold prefers the one that verifies), an operation dated past the
//! clock bound, and a line whose segment has no room are refused and
//! named, never merged.

use std::collections::{BTreeMap, HashMap};

use super::content;
use super::newest;
use super::reflock::Moved;
use super::{EntryError, LogRef, Merged, Problem, Store, StoreError, lock, segment, tree};
use crate::ops::record::Record;
use compact_str::CompactString;

const ATTEMPTS: usize = 8;

/// What merging a JSON Lines file did.
#[derive(Debug, Default)]
pub struct JsonlImport {
    /// Valid operations the file held.
    pub read: usize,
    /// Lines of the file that could not be read, by number.
    pub unreadable: Vec<Problem>,
    pub merged: Merged,
}

impl Store {
    /// Merge the operations of a JSON Lines file (as export writes it;
    /// `origin` names it in problems) by union. Every line is untrusted: a
    /// bad one is reported and skipped, the valid ones are still merged.
    pub fn import_jsonl(
        &self,
        bytes: &[u8],
        origin: &str,
        now_ms: u64,
    ) -> Result<JsonlImport, StoreError> {
        let (mut records, mut unreadable) = (Vec::new(), Vec::new());
        segment::parse_file(bytes, origin, &mut records, &mut unreadable);
        let merged = self.merge_records(&records, now_ms)?;
        Ok(JsonlImport {
            read: records.len(),
            unreadable,
            merged,
        })
    }

    /// Merge `records` into the logs they belong to.
    pub fn merge_records(&self, records: &[Record], now_ms: u64) -> Result<Merged, StoreError> {
        // A clock pinned ahead (`KAPI_NOW`) admits nothing dated past the
        // system's own clock.
        let now_ms = now_ms.min(super::newest::system_now_ms());
        let _lock = lock::Lock::commit(&self.kapi_dir(), self.lock_timeout)?;
        let mut report = Merged::default();
        for which in [LogRef::Shared, LogRef::Local] {
            let held: HashMap<CompactString, String> = self
                .load(which)?
                .records
                .into_iter()
                .map(|r| (r.id.clone(), r.to_canonical_json()))
                .collect();
            let (mut lines, mut blobs) = (Vec::new(), std::collections::BTreeSet::new());
            for r in records.iter().filter(|r| LogRef::for_record(r) == which) {
                let line = r.to_canonical_json();
                let problem = |error| Problem {
                    location: format!("operation {}", r.id),
                    error,
                };
                match held.get(&r.id) {
                    Some(existing) if *existing == line => report.held += 1,
                    // Copies of one id that differ in a signature are both
                    // kept: the fold prefers one that verifies.
                    Some(existing)
                        if r.sig.is_some() || segment::carries_signature(existing.as_bytes()) =>
                    {
                        lines.push(line)
                    }
                    Some(_) => report.refused.push(problem(EntryError::Conflict {
                        id: r.id.to_string(),
                    })),
                    None if newest::is_ahead(&r.id, now_ms) => {
                        report.refused.push(problem(EntryError::Future {
                            id: r.id.to_string(),
                            at: r.at.to_string(),
                        }))
                    }
                    None => match r.content_blob() {
                        // Its content travels with it only when this
                        // repository holds the blob it names.
                        Some(c) => match content::present(self.repo.gix(), c) {
                            Ok(blob) => {
                                blobs.insert(blob);
                                lines.push(line);
                            }
                            Err(error) => report.refused.push(problem(EntryError::Content {
                                id: r.id.to_string(),
                                blob: c.id.clone(),
                                error,
                            })),
                        },
                        None => lines.push(line),
                    },
                }
            }
            lines.sort();
            lines.dedup();
            if lines.is_empty() {
                continue;
            }
            let mut why = String::new();
            let mut moved = false;
            for _ in 0..ATTEMPTS {
                let state = self.ref_state(which)?;
                let tip = state.as_ref().and_then(|s| s.commit);
                let base = tip.map(|t| self.tree_of(t)).transpose()?;
                let (fit, full) = self.fitting(base, &lines)?;
                if fit.is_empty() {
                    report.refused.extend(full);
                    moved = true;
                    break;
                }
                let incoming = tree::build(self.repo.gix(), fit.iter().map(|l| l.as_bytes()))?;
                let merged = match base {
                    Some(base) => tree::union(self.repo.gix(), base, incoming)?,
                    None => incoming,
                };
                let message = format!(
                    "kapi: merge {}\n",
                    crate::wording::count(fit.len(), "operation", "operations")
                );
                let seconds = (now_ms / 1000) as i64;
                let parents = self.parents(tip, &blobs, seconds)?;
                let commit = self.commit(merged, parents, seconds, &message)?;
                match self.move_ref(which, state.as_ref(), commit)? {
                    Moved::Done => {
                        self.forget_project();
                        report.added += fit.len();
                        report.refused.extend(full);
                        moved = true;
                        break;
                    }
                    Moved::Raced(e) => why = e,
                }
            }
            if !moved {
                return Err(StoreError::Contended(which.name(), ATTEMPTS, why));
            }
        }
        Ok(report)
    }

    /// Split lines into those whose segments have room for them and those
    /// refused because a segment would grow past the limit kapi reads.
    fn fitting<'l>(
        &self,
        base: Option<gix::ObjectId>,
        lines: &'l [String],
    ) -> Result<(Vec<&'l String>, Vec<Problem>), StoreError> {
        let mut by_shard: BTreeMap<(u8, u8), Vec<&String>> = BTreeMap::new();
        for line in lines {
            if let Some(id) = segment::line_id(line.as_bytes()) {
                by_shard.entry(segment::shard(id)).or_default().push(line);
            }
        }
        let (mut fit, mut full) = (Vec::new(), Vec::new());
        for (shard, group) in by_shard {
            let held = match base {
                Some(base) => tree::room_taken(self.repo.gix(), base, shard)?,
                None => 0,
            };
            let added: usize = group.iter().map(|l| l.len() + 1).sum();
            if held + added <= segment::MAX_SEGMENT_BYTES {
                fit.extend(group);
                continue;
            }
            for line in group {
                let id = segment::line_id(line.as_bytes()).unwrap_or_default();
                full.push(Problem {
                    location: format!("operation {id}"),
                    error: EntryError::SegmentFull {
                        id: id.to_owned(),
                        shard: format!("{}/{}", shard.0 as char, shard.1 as char),
                    },
                });
            }
        }
        Ok((fit, full))
    }
}
