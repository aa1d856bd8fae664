//! Reading a log: segments inflated and parsed on every core, sorted runs
//! merged once, and copies of one id with different bytes settled.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

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

/// One segment's records (sorted by id), with its place among the segments.
type Run = (usize, Vec<Record>);

/// How many records a reader thread hands over at once (a batch of runs).
const BATCH_RECORDS: usize = 4096;

/// From how many segments a log is read on every core (and its read cache
/// rebuilt on every core, [`refill_cache`]).
pub(super) const PARALLEL_SEGMENTS: usize = 64;

/// How many reader threads: one a core, at most eight.
fn reader_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
}

/// Whether the read cache must be written anew for these segments: it
/// lacks one, or holds one the log no longer has.
pub(super) fn cache_is_stale(cache: &cache::SegmentCache, blobs: &[ObjectId]) -> bool {
    let unique: HashSet<&ObjectId> = blobs.iter().collect();
    unique.len() != cache.len() || !unique.iter().all(|b| cache.has(b))
}

/// A segment's bytes from git, unless it is over the limit kapi reads (a
/// remote can push anything: its size is looked at before inflating) or
/// cannot be read (the read that follows reports it).
fn inflate_capped(repo: &gix::Repository, blob: ObjectId) -> Option<Vec<u8>> {
    let size = tree::object_size(repo, blob).ok()?;
    if size > segment::MAX_SEGMENT_BYTES as u64 {
        return None;
    }
    tree::read_blob(repo, blob).ok()
}

/// Write the read cache anew for `blobs`, streamed: the entries the old
/// cache holds intact are copied one at a time, and the segments it lacks
/// are inflated on every core and handed to this thread, which writes each
/// and lets it go (a few segments in flight at most). A fresh clone's first
/// read inflates every segment; held until the cache was written at the end
/// of the read, beside the records parsed from them, its bytes took the
/// read of a million operations from 575 MB to 1.4 GB. Best effort: a
/// segment that cannot be read here (oversized, missing) is left out, for
/// the read that follows to report; `false` when the file was not written.
pub(super) fn refill_cache(
    repo: &gix::Repository,
    kapi_dir: &Path,
    blobs: &[ObjectId],
    old: &cache::SegmentCache,
) -> bool {
    let mut seen = HashSet::new();
    let (kept, missing): (Vec<ObjectId>, Vec<ObjectId>) = blobs
        .iter()
        .copied()
        .filter(|b| seen.insert(*b))
        .partition(|b| old.has(b));
    let threads = reader_threads().min(missing.len());
    // Segments are taken one at a time by whichever thread is free.
    let next = std::sync::atomic::AtomicUsize::new(0);
    // A repository handle is not shared between threads: each opens its own.
    let git_dir = repo.git_dir().to_path_buf();
    std::thread::scope(|scope| {
        let (send, inflated) = std::sync::mpsc::sync_channel::<(ObjectId, Vec<u8>)>(threads);
        for _ in 0..threads {
            let (git_dir, next, missing, send) = (&git_dir, &next, &missing, send.clone());
            scope.spawn(move || {
                let Ok(mut repo) = gix::open(git_dir) else {
                    return;
                };
                with_delta_cache(&mut repo);
                while let Some(&blob) = missing.get(next.fetch_add(1, Relaxed)) {
                    if let Some(bytes) = inflate_capped(&repo, blob)
                        && send.send((blob, bytes)).is_err()
                    {
                        return;
                    }
                }
            });
        }
        drop(send);
        let written = cache::write_each(kapi_dir, |put| {
            // Entries whose tag does not check out are read from git last.
            let mut damaged = Vec::new();
            for &blob in &kept {
                match old.get_tagged(&blob) {
                    Some((bytes, tag)) => put(blob, &bytes, Some(tag))?,
                    None => damaged.push(blob),
                }
            }
            for (blob, bytes) in &inflated {
                put(blob, &bytes, None)?;
            }
            for blob in damaged {
                if let Some(bytes) = inflate_capped(repo, blob) {
                    put(blob, &bytes, None)?;
                }
            }
            Ok(())
        });
        // A write that stopped early leaves threads waiting to hand over:
        // closing the channel ends them.
        drop(inflated);
        written.is_ok()
    })
}

/// Parse one segment (the `n`th) into a run of records sorted by id, from
/// the read cache or from git; `None` when it is not read (not a shard,
/// or oversized: named in `problems`).
fn parse_one(
    repo: &gix::Repository,
    n: usize,
    s: &tree::Segment,
    cache: &cache::SegmentCache,
    problems: &mut Vec<Problem>,
    fresh: &mut Fresh,
    bytes: &mut Vec<u8>,
) -> Result<Option<Run>, StoreError> {
    problems.extend(s.problem.clone());
    let Some(blob) = s.blob else {
        return Ok(None);
    };
    // From the read cache into the reader's buffer, else from git.
    let from_git = !cache.get_into(&blob, bytes);
    if from_git {
        // A remote can push anything: look at the size before inflating.
        let size = tree::object_size(repo, blob)?;
        if size > segment::MAX_SEGMENT_BYTES as u64 {
            problems.push(Problem {
                location: s.location.clone(),
                error: EntryError::OversizedSegment {
                    bytes: size as usize,
                },
            });
            return Ok(None);
        }
        *bytes = tree::read_blob(repo, blob)?;
    }
    let mut run = Vec::with_capacity(segment::capacity_for(bytes));
    segment::parse(bytes, s.shard, &s.location, &mut run, problems);
    if !run.is_sorted_by(|a: &Record, b: &Record| a.id <= b.id) {
        run.sort_by(|a, b| a.id.cmp(&b.id));
    }
    if from_git {
        fresh.push((blob, std::mem::take(bytes)));
    }
    Ok(Some((n, run)))
}

/// Inflate and parse segments on every core: decoding is most of a read.
/// With the records, sorted by id, whether each id is held once.
/// Each segment's run of records is moved into the one list as soon as it
/// is parsed, and its buffer freed (and reused by the next run): a log's
/// records are held once, never once in runs and again in the list (at a
/// million operations that was half of a cold read's peak, since the
/// allocator keeps the runs' freed pages).
pub(super) fn parse_segments(
    repo: &gix::Repository,
    segments: &[tree::Segment],
    cache: &cache::SegmentCache,
) -> Result<(Loaded, Fresh, bool), StoreError> {
    let threads = reader_threads();
    let mut records: Vec<Record> = Vec::new();
    // Where each run starts in `records`, with its segment's place.
    let mut starts: Vec<(usize, usize)> = Vec::with_capacity(segments.len());
    let mut take = |(n, mut run): Run| {
        starts.push((records.len(), n));
        records.append(&mut run);
    };
    let (mut problems, mut fresh) = (Vec::new(), Vec::new());
    if threads == 1 || segments.len() < PARALLEL_SEGMENTS {
        let mut buffer = Vec::new();
        for (n, s) in segments.iter().enumerate() {
            if let Some(run) = parse_one(repo, n, s, cache, &mut problems, &mut fresh, &mut buffer)?
            {
                take(run);
            }
        }
    } else {
        // Segments are taken one at a time by whichever thread is free:
        // split in fixed halves, one thread had the shared log's segments
        // and the other the local log's, and at a million operations one
        // ran alone for half the read.
        let next = std::sync::atomic::AtomicUsize::new(0);
        // A repository handle is not shared between threads: each opens its own.
        let git_dir = repo.git_dir().to_path_buf();
        // What a thread found, each with its segment's place: the problems
        // are reported, and the first error returned, in the segments'
        // order, whichever thread read them.
        type Part = (Vec<(usize, Problem)>, Fresh, Option<(usize, StoreError)>);
        let parts: Vec<Part> = std::thread::scope(|scope| {
            // A few batches in flight at most, each taken as it comes. Runs
            // go in batches of some thousand records: a young log's
            // segments hold a few records each, and a hand-over per run
            // cost a futex wake-up each (7,000 at 14,000 operations).
            let (send, runs) = std::sync::mpsc::sync_channel::<Vec<Run>>(threads);
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (git_dir, next, send) = (&git_dir, &next, send.clone());
                    scope.spawn(move || -> Part {
                        let (mut problems, mut fresh) = (Vec::new(), Vec::new());
                        let mut repo = match gix::open(git_dir) {
                            Ok(repo) => repo,
                            Err(e) => {
                                return (
                                    problems,
                                    fresh,
                                    Some((0, git("opening the repository")(e))),
                                );
                            }
                        };
                        with_delta_cache(&mut repo);
                        let (mut batch, mut held) = (Vec::new(), 0);
                        let (mut found, mut buffer) = (Vec::new(), Vec::new());
                        loop {
                            let n = next.fetch_add(1, Relaxed);
                            let Some(s) = segments.get(n) else {
                                break;
                            };
                            let run =
                                parse_one(&repo, n, s, cache, &mut found, &mut fresh, &mut buffer);
                            problems.extend(found.drain(..).map(|p| (n, p)));
                            match run {
                                Ok(Some(run)) => {
                                    held += run.1.len();
                                    batch.push(run);
                                }
                                Ok(None) => {}
                                Err(e) => return (problems, fresh, Some((n, e))),
                            }
                            if held >= BATCH_RECORDS {
                                held = 0;
                                if send.send(std::mem::take(&mut batch)).is_err() {
                                    return (problems, fresh, None);
                                }
                            }
                        }
                        if !batch.is_empty() {
                            let _ = send.send(batch);
                        }
                        (problems, fresh, None)
                    })
                })
                .collect();
            drop(send);
            for batch in runs {
                batch.into_iter().for_each(&mut take);
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("a reader thread panicked"))
                .collect()
        });
        let mut found = Vec::new();
        let mut first_error: Option<(usize, StoreError)> = None;
        for (p, f, error) in parts {
            found.extend(p);
            fresh.extend(f);
            if let Some((n, e)) = error
                && first_error.as_ref().is_none_or(|(m, _)| n < *m)
            {
                first_error = Some((n, e));
            }
        }
        if let Some((_, e)) = first_error {
            return Err(e);
        }
        // Stable: a segment's problems stay in the order it found them.
        found.sort_by_key(|(n, _)| *n);
        problems.extend(found.into_iter().map(|(_, p)| p));
    }
    let unique = sort_runs(&mut records, &starts);
    Ok((Loaded { records, problems }, fresh, unique))
}

/// Sort records (runs each sorted by id, in the order they were parsed) by
/// id, in place; of two records with one id, the one from the earlier
/// segment first, as the segments are listed (the order does not depend on
/// which reader thread finished first).
/// Whether the records are then in strict id order (every id once), seen
/// from the keys at hand (`finish` need not compare a million ids again).
fn sort_runs(records: &mut [Record], starts: &[(usize, usize)]) -> bool {
    let mut bounds: Vec<(usize, usize)> = starts.to_vec();
    bounds.push((records.len(), usize::MAX));
    let mut order: Vec<(u128, usize, usize)> = Vec::with_capacity(records.len());
    for w in bounds.windows(2) {
        let ((start, n), (end, _)) = (w[0], w[1]);
        for (i, r) in records[start..end].iter().enumerate() {
            order.push((crate::ops::id::key(&r.id), n, start + i));
        }
    }
    let sorted = order.is_sorted();
    if !sorted {
        order.sort_unstable();
    }
    // Keys are the ids' order (every record read passed the id check).
    let unique = order.windows(2).all(|w| w[0].0 < w[1].0);
    if !sorted {
        permute(records, order.into_iter().map(|(_, _, i)| i).collect());
    }
    unique
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
    permute(records, order.into_iter().map(|(_, i)| i).collect());
}

/// Put the record at `from[j]` at `j`, for every `j`, following the
/// permutation's cycles.
fn permute(records: &mut [Record], mut from: Vec<usize>) {
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
        // In place: the records are never held twice.
        sort_in_place(&mut loaded.records);
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
    fn runs_sort_into_id_order_in_place() {
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
        // One id in two segments with other bytes: the earlier segment's
        // copy sorts first, whichever was taken first.
        let twin = |note: &str| Record {
            note: Some(note.into()),
            ..record(400, 4000)
        };
        runs[2].push(twin("second segment"));
        runs[5].push(twin("fifth segment"));
        // A stable sort of the runs as listed is the order wanted.
        let mut expected: Vec<Record> = runs.iter().flatten().cloned().collect();
        expected.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(expected[300].note.as_deref(), Some("second segment"));
        // Taken in any order, they sort as the segments are listed.
        let (mut taken, mut starts) = (Vec::new(), Vec::new());
        for (n, run) in runs.into_iter().enumerate().rev() {
            starts.push((taken.len(), n));
            taken.extend(run);
        }
        // The twin is seen: the read's `finish` settles it.
        assert!(!sort_runs(&mut taken, &starts));
        assert_eq!(taken, expected);
        // Without it every id is held once, whichever order runs came in.
        let (mut once, mut starts) = (Vec::new(), Vec::new());
        for (n, run) in expected[..300].chunks(7).enumerate().rev() {
            starts.push((once.len(), n));
            once.extend_from_slice(run);
        }
        assert!(sort_runs(&mut once, &starts));
        assert_eq!(once, expected[..300]);
        let mut shuffled = expected[..300].to_vec();
        let expected = shuffled.clone();
        shuffled.rotate_left(17);
        shuffled.swap(3, 250);
        sort_in_place(&mut shuffled);
        assert_eq!(shuffled, expected);
    }
}
