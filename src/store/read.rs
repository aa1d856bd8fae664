//! Reading a log: segments inflated and parsed on every core, sorted runs
//! merged once, and copies of one id with different bytes settled.

use gix::ObjectId;

use super::segment::EntryError;
use super::{Loaded, LogRef, Problem, Store, StoreError, cache, git, segment, tree};
use crate::ops::record::Record;

/// Packed segments are deltas of each other: without a cache of delta
/// bases, reading a log re-inflates every base of every chain.
pub(super) fn with_delta_cache(repo: &mut gix::Repository) {
    repo.objects.set_pack_cache(|| {
        Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
            64 * 1024 * 1024,
        ))
    });
}

/// Segments read from git rather than from the read cache, with their bytes.
type Fresh = Vec<(ObjectId, Vec<u8>)>;

/// Inflate and parse segments on every core: decoding is most of a read.
pub(super) fn parse_segments(
    repo: &gix::Repository,
    segments: &[tree::Segment],
    cache: &cache::SegmentCache,
) -> Result<(Loaded, Fresh), StoreError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    // Each segment is one run of records sorted by id.
    type Runs = (Vec<Vec<Record>>, Vec<Problem>, Vec<(ObjectId, Vec<u8>)>);
    let parse = |repo: &gix::Repository, part: &[tree::Segment]| -> Result<Runs, StoreError> {
        let (mut runs, mut problems, mut fresh) =
            (Vec::with_capacity(part.len()), Vec::new(), Vec::new());
        for s in part {
            problems.extend(s.problem.clone());
            let Some(blob) = s.blob else { continue };
            if let Some(bytes) = cache.get(&blob) {
                let mut run = Vec::with_capacity(segment::capacity_for(&bytes));
                segment::parse(&bytes, s.shard, &s.location, &mut run, &mut problems);
                if !run.is_sorted_by(|a: &Record, b: &Record| a.id <= b.id) {
                    run.sort_by(|a, b| a.id.cmp(&b.id));
                }
                runs.push(run);
                continue;
            }
            // A remote can push anything: look at the size before inflating.
            let size = tree::object_size(repo, blob)?;
            if size > segment::MAX_SEGMENT_BYTES as u64 {
                problems.push(Problem {
                    location: s.location.clone(),
                    error: EntryError::OversizedSegment {
                        bytes: size as usize,
                    },
                });
                continue;
            }
            let bytes = tree::read_blob(repo, blob)?;
            let mut run = Vec::with_capacity(segment::capacity_for(&bytes));
            segment::parse(&bytes, s.shard, &s.location, &mut run, &mut problems);
            if !run.is_sorted_by(|a: &Record, b: &Record| a.id <= b.id) {
                run.sort_by(|a, b| a.id.cmp(&b.id));
            }
            runs.push(run);
            fresh.push((blob, bytes));
        }
        Ok((runs, problems, fresh))
    };
    let (runs, problems, fresh) = if threads == 1 || segments.len() < 64 {
        parse(repo, segments)?
    } else {
        let chunk = segments.len().div_ceil(threads);
        // A repository handle is not shared between threads: each opens its own.
        let git_dir = repo.git_dir().to_path_buf();
        let parts: Vec<Result<Runs, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = segments
                .chunks(chunk)
                .map(|part| {
                    let git_dir = &git_dir;
                    scope.spawn(move || {
                        let mut repo = gix::open(git_dir).map_err(git("opening the repository"))?;
                        with_delta_cache(&mut repo);
                        parse(&repo, part)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a reader thread panicked"))
                .collect()
        });
        let (mut runs, mut problems, mut fresh) = (Vec::new(), Vec::new(), Vec::new());
        for part in parts {
            let (r, p, f) = part?;
            runs.extend(r);
            problems.extend(p);
            fresh.extend(f);
        }
        (runs, problems, fresh)
    };
    Ok((
        Loaded {
            records: merge_runs(runs),
            problems,
        },
        fresh,
    ))
}

/// Merge runs (each sorted by id) into one list sorted by id. The runs are
/// appended into one buffer (each freed as it is moved) and sorted in
/// place through a permutation of their keys: a log's records are never
/// held twice in memory (at a million operations that is most of a read's
/// peak).
fn merge_runs(runs: Vec<Vec<Record>>) -> Vec<Record> {
    let total = runs.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    for mut run in runs {
        out.append(&mut run);
    }
    sort_in_place(&mut out);
    out
}

/// Sort records by id without moving any more than once per cycle of the
/// permutation, and without a second buffer of records.
fn sort_in_place(records: &mut [Record]) {
    let mut order: Vec<(u128, usize)> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (crate::ops::id::key(&r.id), i))
        .collect();
    if order.is_sorted() {
        return;
    }
    order.sort_unstable();
    // `from[j]`: where the record that belongs at `j` is now.
    let mut from: Vec<usize> = order.into_iter().map(|(_, i)| i).collect();
    for start in 0..from.len() {
        let mut j = start;
        while from[j] != j {
            let src = from[j];
            from[j] = j;
            if src == start {
                break;
            }
            records.swap(j, src);
            j = src;
        }
    }
}

/// Sort by id (through a permutation: records are large to move) and drop
/// exact repeats. Two copies of one id with different bytes are taken out
/// and returned, every copy, for the store to settle from history.
pub(super) fn finish(loaded: &mut Loaded) -> Vec<Vec<Record>> {
    // One pass: in order, and every id once (most logs, read as merged).
    let (mut sorted, mut repeats) = (true, false);
    for w in loaded.records.windows(2) {
        match w[0].id.cmp(&w[1].id) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => repeats = true,
            std::cmp::Ordering::Greater => sorted = false,
        }
    }
    if !sorted {
        // Sort numeric keys, not strings: a log has 100,000s of ids.
        let mut order: Vec<(u128, usize)> = loaded
            .records
            .iter()
            .enumerate()
            .map(|(i, r)| (crate::ops::id::key(&r.id), i))
            .collect();
        order.sort_unstable();
        let mut slots: Vec<Option<Record>> = loaded.records.drain(..).map(Some).collect();
        loaded.records = order
            .into_iter()
            .map(|(_, i)| slots[i].take().expect("a permutation"))
            .collect();
    }
    // Most logs hold every id once: then there is nothing to rebuild.
    if sorted && !repeats || !loaded.records.windows(2).any(|w| w[0].id == w[1].id) {
        return Vec::new();
    }
    let mut out: Vec<Record> = Vec::with_capacity(loaded.records.len());
    let mut conflicts: Vec<Vec<Record>> = Vec::new();
    let mut records = std::mem::take(&mut loaded.records).into_iter().peekable();
    while let Some(first) = records.next() {
        let mut copies = vec![first];
        while let Some(next) = records.next_if(|n| n.id == copies[0].id) {
            if !copies.contains(&next) {
                copies.push(next);
            }
        }
        if copies.len() == 1 {
            out.extend(copies);
        } else {
            conflicts.push(copies);
        }
    }
    loaded.records = out;
    conflicts
}

impl Store {
    /// Settle the ids stored with different bytes (unless a copy carries
    /// a signature: then every copy stands, for the fold to choose the one
    /// that verifies): the copy the log held first stands, found by walking the ref's first-parent history back
    /// to the oldest commit that holds any copy (kapi's own commits put the
    /// log this machine held first, so a copy pushed or merged in later
    /// cannot undo a decision). When that commit holds more than one copy,
    /// no copy can be trusted over the others and all are set aside. Every
    /// copy that does not stand is named.
    pub(super) fn settle_conflicts(
        &self,
        refs: &[LogRef],
        conflicts: Vec<Vec<Record>>,
        loaded: &mut Loaded,
    ) -> Result<(), StoreError> {
        let mut standing = Vec::new();
        for copies in conflicts {
            // Copies that differ in a signature all stand: the fold takes
            // the one whose signature verifies (an unsigned copy that
            // reached the log first must not shadow a signed decision).
            if copies.iter().any(|c| c.sig.is_some()) {
                standing.extend(copies);
                continue;
            }
            let id = copies[0].id.clone();
            let mut first = None;
            for &which in refs {
                if let Some(line) = self.first_held(which, &id)? {
                    first = copies
                        .iter()
                        .position(|c| c.to_canonical_json().as_bytes() == line);
                    break;
                }
            }
            for (n, copy) in copies.into_iter().enumerate() {
                if Some(n) == first {
                    standing.push(copy);
                } else {
                    loaded.problems.push(Problem {
                        location: format!("operation {id}"),
                        error: if first.is_some() {
                            EntryError::LaterCopy { id: id.to_string() }
                        } else {
                            EntryError::DuplicateId { id: id.to_string() }
                        },
                    });
                }
            }
        }
        if !standing.is_empty() {
            loaded.records.extend(standing);
            loaded.records.sort_by_key(|r| crate::ops::id::key(&r.id));
        }
        Ok(())
    }

    /// The copy of `id` that appears furthest back on `which`'s
    /// first-parent chain (read whole: a copy deleted and pushed back later
    /// still counts from where it first appeared), when exactly one copy
    /// appears that far back. Segments are compared by blob id and
    /// inflated only where they change.
    fn first_held(&self, which: LogRef, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let shard = segment::shard(id);
        let mut at = self.tip(which)?;
        let mut oldest: Vec<(Vec<u8>, usize)> = Vec::new();
        let mut last_blob: Option<Option<ObjectId>> = None;
        let mut last_copies: Vec<Vec<u8>> = Vec::new();
        let mut depth = 0usize;
        while let Some(commit_id) = at {
            let commit = self
                .repo
                .gix()
                .find_commit(commit_id)
                .map_err(git("reading the log's history"))?;
            let root = commit
                .tree_id()
                .map_err(git("reading the log's history"))?
                .detach();
            let blob = tree::segment_blob(self.repo.gix(), root, shard)?;
            if last_blob != Some(blob) {
                let bytes = match blob {
                    Some(blob) => tree::read_capped_segment(self.repo.gix(), blob)?,
                    None => None,
                };
                last_copies = segment::lines(bytes.as_deref().unwrap_or_default())
                    .filter(|l| segment::line_id(l) == Some(id))
                    .filter_map(|l| Record::from_untrusted(l).ok())
                    .map(|r| r.to_canonical_json().into_bytes())
                    .collect();
                last_blob = Some(blob);
            }
            for copy in &last_copies {
                match oldest.iter_mut().find(|(c, _)| c == copy) {
                    Some(seen) => seen.1 = depth,
                    None => oldest.push((copy.clone(), depth)),
                }
            }
            depth += 1;
            at = commit.parent_ids().next().map(|p| p.detach());
        }
        let Some(furthest) = oldest.iter().map(|(_, d)| *d).max() else {
            return Ok(None);
        };
        let mut first = oldest.into_iter().filter(|(_, d)| *d == furthest);
        Ok(match (first.next(), first.next()) {
            (Some((copy, _)), None) => Some(copy),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{Actor, Kind};

    #[test]
    fn runs_merge_into_id_order_in_place() {
        let record = |n: u64, tail: u128| {
            let id = OpId::mint(EPOCH_MS + 1000 * n, tail, None).unwrap();
            Record {
                id: id.to_string().into(),
                at: id.instant().into(),
                ..Record::new("p", Actor::tool("t"), Kind::Check)
            }
        };
        // Runs sorted within, interleaved across, of uneven lengths, with
        // cycles of every length in the permutation.
        let mut runs: Vec<Vec<Record>> = vec![Vec::new(); 7];
        for n in 0..300u64 {
            runs[((n * 31) % 7) as usize].push(record(n, u128::from(n)));
        }
        let mut expected: Vec<Record> = runs.iter().flatten().cloned().collect();
        expected.sort_by(|a, b| a.id.cmp(&b.id));
        runs.reverse();
        assert_eq!(merge_runs(runs), expected);
        let mut shuffled = expected.clone();
        shuffled.rotate_left(17);
        shuffled.swap(3, 250);
        sort_in_place(&mut shuffled);
        assert_eq!(shuffled, expected);
    }
}
