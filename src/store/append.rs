//! Appending by group commit (see `journal`): a writer mints its ids and
//! journals its lines under the short journal lock, then either commits
//! every journaled line itself (when the commit lock is free) or waits for
//! the holder to commit them. It reports its operations recorded only once
//! it has found them on the ref; a writer that gives up waiting has its
//! lines synced to disk in the journal and says so.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use gix::ObjectId;

use super::content;
use super::newest::{self, AHEAD_BOUND_MS};
use super::reflock::Moved;
use super::segment::ContentError;
use super::{
    LogRef, Store, StoreError, fault, journal, lock, pack, segment, sweep, tree, write_commit,
};
use crate::ops::id::OpId;
use crate::ops::record::{MAX_RECORD_BYTES, Record, RecordError};

/// What a commit of the journal did for the caller's lines.
pub(super) enum Committed {
    /// Every line the journal held is on its ref now.
    All,
    /// Nothing to do, or some lines were set aside: confirm on the ref.
    Other,
}

/// A ref a commit moved: its tree before and after, and the ids it added.
struct RefMove {
    old: Option<ObjectId>,
    new: ObjectId,
    ids: Vec<OpId>,
}

/// What signs a record as it is minted ([`Store::append_signed`]): its
/// signature, if it carries one, or why none could be made.
pub type Sign<'a> = &'a dyn Fn(&Record) -> Result<Option<String>, String>;

/// How often a writer tries to move a ref another program keeps moving.
const ATTEMPTS: usize = 8;

/// From how many lines of its own an append writes its objects as one
/// pack: the batches of merge signals, the establishments they settle and
/// a sync (hundreds of lines).
const PACK_LINES: usize = 8;
/// From how many lines a commit writes a pack whoever appended them. A
/// group commit of notes (one line per writer, a few dozen at most with
/// many writers at once) stays loose: each pack is one more index every
/// later process opens, in turn, before it finds an object the big packs
/// do not hold (the tip's commit, its trees), and sixteen writers made a
/// pack every twenty notes.
const GROUP_PACK_LINES: usize = 64;
/// How many tails a writer tries before it gives up on finding a segment
/// with room (only a log full of oversized segments runs out).
const TAILS: u32 = 64;

impl Store {
    /// Append one operation. Its id and instant are minted under the lock,
    /// past the newest id the log holds; the template's own are ignored.
    pub fn append(
        &self,
        now_ms: u64,
        random: u128,
        template: Record,
    ) -> Result<Record, StoreError> {
        let mut records = self.append_all(now_ms, random, vec![template])?;
        Ok(records.pop().expect("one record in, one out"))
    }

    /// Append several operations as one commit per log. Each template's id
    /// and instant are minted here, in order, so they sort in the order
    /// given.
    pub fn append_all(
        &self,
        now_ms: u64,
        random: u128,
        templates: Vec<Record>,
    ) -> Result<Vec<Record>, StoreError> {
        self.append_signed(now_ms, random, templates, &|_| Ok(None))
    }

    /// [`Store::append_all`], each record signed as it is minted: `sign`
    /// is handed the record with its id and instant (what a signature
    /// binds) and answers its signature, if it carries one. It runs under
    /// the journal lock (a person confirming a signature holds other
    /// writers back meanwhile, within their lock timeout).
    pub fn append_signed(
        &self,
        now_ms: u64,
        random: u128,
        templates: Vec<Record>,
        sign: Sign<'_>,
    ) -> Result<Vec<Record>, StoreError> {
        if templates.is_empty() {
            return Ok(Vec::new());
        }
        let dir = self.kapi_dir();
        let records = {
            let _journal = lock::Lock::journal(&dir, self.lock_timeout)?;
            let pending = journal::read(&dir)?;
            let (records, lines, computed) =
                self.mint(now_ms, random, &pending, templates, sign)?;
            journal::append(&dir, &pending, &lines)?;
            for (which, root, newest) in computed {
                newest::remember(&dir, which, root, &newest);
            }
            records
        };
        fault::point("journaled");
        self.wait_for_commit(records)
    }

    /// Mint ids past the newest the logs and the journal hold (within the
    /// clock bound), each in a segment with room for its line (call under
    /// the journal lock), with their lines. Also returns the newest ids
    /// computed afresh, for the cache.
    #[allow(clippy::type_complexity)]
    fn mint(
        &self,
        now_ms: u64,
        random: u128,
        pending: &[u8],
        templates: Vec<Record>,
        sign: Sign<'_>,
    ) -> Result<
        (
            Vec<Record>,
            Vec<String>,
            Vec<(LogRef, ObjectId, newest::Newest)>,
        ),
        StoreError,
    > {
        let dir = self.kapi_dir();
        // Whatever clock the caller brings (`KAPI_NOW` pins it in tests), no
        // id is minted more than the bound past this machine's own clock:
        // one operation dated 2045 would drag every later id here along.
        let clock = newest::system_now_ms();
        let ceiling = clock.saturating_add(AHEAD_BOUND_MS);
        if now_ms > ceiling {
            return Err(StoreError::AheadOfClock { at: now_ms, clock });
        }
        // Ids the log holds are judged ahead by the machine's clock, not by
        // the caller's: a clock pinned earlier than the log (`KAPI_NOW`)
        // still mints past every id the log holds.
        let judged_at = now_ms.max(clock);
        let bound = judged_at.saturating_add(AHEAD_BOUND_MS);
        let mut newest = segment::newest_id(pending, bound);
        let mut roots = [None, None];
        let mut computed = Vec::new();
        for (slot, which) in [LogRef::Shared, LogRef::Local].into_iter().enumerate() {
            let root = self.tip(which)?.map(|t| self.tree_of(t)).transpose()?;
            let (found, fresh) = newest::of_tree(self.repo.gix(), &dir, which, root, judged_at)?;
            newest = newest.max(found.for_minting().cloned());
            if let (true, Some(root)) = (fresh, root) {
                computed.push((which, root, found));
            }
            roots[slot] = root;
        }
        let mut records = Vec::with_capacity(templates.len());
        let mut lines = Vec::with_capacity(templates.len());
        let mut rooms = Rooms::default();
        for (n, mut template) in templates.into_iter().enumerate() {
            let root = roots[usize::from(LogRef::for_record(&template) == LogRef::Local)];
            let mut tries = 0;
            let mut externalized = false;
            let (record, line) = loop {
                let tail = random.rotate_left(17 * n as u32 + 29 * tries)
                    ^ (n as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    ^ u128::from(tries).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
                let id = OpId::mint(now_ms, tail, newest.as_ref())
                    .map_err(|_| StoreError::ClockOutOfRange)?;
                if id.unix_ms() > ceiling {
                    return Err(StoreError::AheadOfClock {
                        at: id.unix_ms(),
                        clock,
                    });
                }
                let mut record = template.stamped(id);
                record.validate()?;
                // Large content goes to a blob the record names, once; then
                // the record itself must be within the limit a reader
                // takes, or nothing is journaled.
                if !externalized {
                    content::externalize(self.repo.gix(), &mut record)?;
                    template.subject = record.subject.clone();
                    externalized = true;
                }
                record.sig = sign(&record).map_err(StoreError::Unsigned)?;
                let line = record.to_checked_line()?;
                // Past the first tails, a full segment is read to see what
                // room leaving its junk behind would make (a remote can
                // fill every segment near the limit).
                if self.has_room(root, &record, line.len(), tries + 4 >= TAILS, &mut rooms)? {
                    break (record, line);
                }
                tries += 1;
                if tries == TAILS {
                    return Err(StoreError::NoRoom);
                }
            };
            newest = Some(record.op_id());
            records.push(record);
            lines.push(line);
        }
        Ok((records, lines, computed))
    }

    /// Whether the segment `record` belongs in can take its line of
    /// `line_len` bytes (a
    /// segment over the limit is replaced by the write, so it has room);
    /// with `read`, a full segment counts only what a reader can use.
    /// `rooms` keeps what the batch read of the trees.
    fn has_room(
        &self,
        root: Option<ObjectId>,
        record: &Record,
        line_len: usize,
        read: bool,
        rooms: &mut Rooms,
    ) -> Result<bool, StoreError> {
        let Some(root) = root else { return Ok(true) };
        let shard = segment::shard(&record.id);
        let line = line_len + 1;
        let taken = rooms.taken(self.repo.gix(), root, shard)?;
        if taken + line <= segment::MAX_SEGMENT_BYTES {
            return Ok(true);
        }
        if !read {
            return Ok(false);
        }
        let Some(bytes) = tree::read_segment(self.repo.gix(), root, shard)? else {
            return Ok(true);
        };
        Ok(tree::keepable_lines(&bytes, shard).len() + line <= segment::MAX_SEGMENT_BYTES)
    }

    /// Commit the journal when the commit lock is free, or wait until its
    /// holder has committed our lines; then confirm them on the ref.
    fn wait_for_commit(&self, records: Vec<Record>) -> Result<Vec<Record>, StoreError> {
        let dir = self.kapi_dir();
        let start = Instant::now();
        // Waiting for the lock itself would queue behind flushes that do not
        // concern us (the lock is not fair), so poll: take the lock if it is
        // free, else see whether the holder already committed our lines.
        // A timer, not a watch on the journal's folder: woken by every
        // rename there, sixteen waiting writers all ran at once on two
        // cores (p99 under 16 writers 59 -> 72 ms).
        let mut pause = Duration::from_micros(200);
        loop {
            if let Some(_commit) = lock::Lock::try_commit(&dir)? {
                return match self.commit_journal(Some(&records)) {
                    // Committed by this call with nothing set aside: on the ref.
                    Ok(Committed::All) => Ok(records),
                    Ok(Committed::Other) => self.confirm(records),
                    // Our lines are journaled: say so rather than invite a
                    // second recording.
                    Err(e) => match journal::sync(&dir) {
                        Ok(()) => Err(StoreError::Journaled {
                            ids: records.iter().map(|r| r.id.to_string()).collect(),
                            reason: e.to_string(),
                        }),
                        Err(_) => Err(e),
                    },
                };
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
            // No lock needed: compaction replaces the journal by a rename,
            // and a line being appended is either whole or not ours yet.
            if !journal::holds_any(&journal::read(&dir)?, &records) {
                return self.confirm(records);
            }
            if start.elapsed() >= self.lock_timeout {
                journal::sync(&dir)?;
                let path = dir.join(lock::COMMIT);
                let holder = match lock::holder(&path) {
                    Some(pid) => format!(" by process {pid}"),
                    None => String::new(),
                };
                return Err(StoreError::Journaled {
                    ids: records.iter().map(|r| r.id.to_string()).collect(),
                    reason: format!(
                        "{} has been held{holder} for {} s (if that process is stuck, end it)",
                        path.display(),
                        self.lock_timeout.as_secs_f32()
                    ),
                });
            }
        }
    }

    /// Our operations, once each is found on its ref.
    fn confirm(&self, records: Vec<Record>) -> Result<Vec<Record>, StoreError> {
        let mut missing = Vec::new();
        for r in &records {
            if self.find(&r.op_id())?.as_ref() != Some(r) {
                missing.push(r.id.to_string());
            }
        }
        if missing.is_empty() {
            return Ok(records);
        }
        // Say why, from the lines set aside.
        let mut reasons: Vec<String> = Vec::new();
        for line in self.rejected_journal_lines() {
            if segment::line_id(&line).is_some_and(|id| missing.iter().any(|m| m == id)) {
                let reason = self.why_set_aside(&line).to_string();
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
            }
        }
        if reasons.is_empty() {
            reasons.push("torn by a crash or without room in its segment".to_owned());
        }
        Err(StoreError::NotRecorded {
            ids: missing,
            reason: format!(
                "set aside in .git/kapi/journal.rejected: {}",
                reasons.join("; ")
            ),
        })
    }

    /// Why a line was set aside from the journal (`kapi store doctor` and
    /// a writer's "not recorded" say it).
    pub fn why_set_aside(&self, line: &[u8]) -> SetAside {
        let whole = line.first() == Some(&b'{') && line.last() == Some(&b'}');
        let id = segment::line_id(line).filter(|_| whole).map(str::to_owned);
        match (Record::from_untrusted(line), id) {
            (Ok(record), _) => match record.content_blob() {
                Some(c) => match content::present(self.repo.gix(), c) {
                    Err(error) => SetAside::Content {
                        id: record.id.to_string(),
                        blob: c.id.clone(),
                        error,
                    },
                    Ok(_) => SetAside::NoRoom {
                        id: record.id.to_string(),
                    },
                },
                None => SetAside::NoRoom {
                    id: record.id.to_string(),
                },
            },
            (Err(RecordError::Oversized { bytes }), Some(id)) => SetAside::Oversized { id, bytes },
            (Err(error), Some(id)) => SetAside::Invalid { id, error },
            (Err(_), None) => SetAside::Torn,
        }
    }

    /// Move every line the journal holds onto the refs, in one commit per
    /// ref, then compact the journal (call under the commit lock). With
    /// `mine`, does nothing when none of those records is still in the
    /// journal.
    pub(super) fn commit_journal(&self, mine: Option<&[Record]>) -> Result<Committed, StoreError> {
        let dir = self.kapi_dir();
        if sweep::due(&dir) {
            sweep::sweep(&self.objects_dir(), &dir);
        }
        let pending = {
            let _journal = lock::Lock::journal(&dir, self.lock_timeout)?;
            journal::read(&dir)?
        };
        if pending.is_empty() {
            return Ok(Committed::Other);
        }
        if let Some(mine) = mine
            && !journal::holds_any(&pending, mine)
        {
            return Ok(Committed::Other);
        }
        let journal::Parsed { records, torn } = journal::parse(&pending);
        if !torn.is_empty() {
            journal::set_aside(&dir, &torn)?;
        }
        let mut unlanded: Vec<Vec<u8>> = Vec::new();
        let mut advanced = Vec::new();
        // The lines this writer appended itself (a batch), beside the ones
        // other writers journaled meanwhile.
        let own = mine.map_or(0, <[Record]>::len);
        for which in [LogRef::Shared, LogRef::Local] {
            // The content blobs the lines name travel with them; a line
            // whose blob is gone (lost in a crash) cannot land.
            let (mut lines, mut blobs) = (Vec::new(), BTreeSet::new());
            for r in records.iter().filter(|r| LogRef::for_record(r) == which) {
                let line = r.to_canonical_json();
                match r
                    .content_blob()
                    .map(|c| content::present(self.repo.gix(), c))
                {
                    Some(Err(_)) => {
                        unlanded.push(line.into_bytes());
                        continue;
                    }
                    Some(Ok(blob)) => {
                        blobs.insert(blob);
                    }
                    None => {}
                }
                lines.push(line);
            }
            if lines.is_empty() {
                continue;
            }
            let pack = own >= PACK_LINES || lines.len() >= GROUP_PACK_LINES;
            let (moved, refused) = self.commit_lines(which, &lines, &blobs, pack)?;
            unlanded.extend(refused);
            advanced.extend(moved.map(|m| (which, m)));
        }
        fault::point("ref-moved");
        let landed: std::collections::HashSet<OpId> = advanced
            .iter()
            .flat_map(|(_, m): &(LogRef, RefMove)| m.ids.iter().cloned())
            .collect();
        let outcome = match mine {
            Some(mine) if mine.iter().all(|r| landed.contains(&r.op_id())) => Committed::All,
            _ => Committed::Other,
        };
        let unlanded: Vec<&[u8]> = unlanded.iter().map(Vec::as_slice).collect();
        journal::set_aside(&dir, &unlanded)?;
        let _journal = lock::Lock::journal(&dir, self.lock_timeout)?;
        for (which, m) in &advanced {
            let now = m.ids.last().map_or(0, OpId::unix_ms);
            newest::advance(&dir, *which, m.old, m.new, &m.ids, now);
        }
        journal::compact(&dir, &pending)?;
        Ok(outcome)
    }

    /// Commit canonical lines onto one ref, with the content blobs they
    /// name (under a content commit, the second parent), its objects as
    /// one pack with `pack`, else loose; returns how the ref moved (if any
    /// line landed) and the lines no segment had room for.
    fn commit_lines(
        &self,
        which: LogRef,
        lines: &[String],
        blobs: &BTreeSet<gix::ObjectId>,
        pack: bool,
    ) -> Result<(Option<RefMove>, Vec<Vec<u8>>), StoreError> {
        let bytes: Vec<&[u8]> = lines.iter().map(String::as_bytes).collect();
        let mut why = String::new();
        let mut content: Option<ObjectId> = None;
        for _ in 0..ATTEMPTS {
            let state = self.ref_state(which)?;
            let tip = state.as_ref().and_then(|s| s.commit);
            let root = tip.map(|t| self.tree_of(t)).transpose()?;
            // The objects are kept in memory and written before the ref
            // moves: a large batch (merge signals and the establishments
            // they settle, an import's part) rewrites many segments and
            // the trees above them, written as one pack ([`pack`]), not as
            // a loose file each; a note's few objects are written loose,
            // by one deflate stream ([`pack::write_loose`]).
            let mut batch = self.repo.gix().clone().with_object_memory();
            let (new_root, refused) = tree::insert_lines(&batch, root, &bytes)?;
            let refused: Vec<Vec<u8>> = refused.into_iter().map(<[u8]>::to_vec).collect();
            let landed: Vec<&str> = lines
                .iter()
                .filter(|l| !refused.iter().any(|r| r == l.as_bytes()))
                .map(String::as_str)
                .collect();
            let ids: Vec<OpId> = landed
                .iter()
                .filter_map(|l| segment::line_id(l.as_bytes()))
                .filter_map(|id| OpId::parse(id).ok())
                .collect();
            let Some(last) = ids.iter().max().cloned() else {
                return Ok((None, refused));
            };
            let message = if landed.len() == 1 {
                let kind = Record::from_untrusted(landed[0].as_bytes())
                    .map(|r| r.kind.as_str().to_owned())
                    .unwrap_or_default();
                format!("kapi: {kind} {}\n", last.short())
            } else {
                format!("kapi: {} operations, last {}\n", landed.len(), last.short())
            };
            let seconds = (last.unix_ms() / 1000) as i64;
            let mut parents: Vec<ObjectId> = tip.into_iter().collect();
            if !blobs.is_empty() {
                // Written once, whatever the attempt.
                let id = match content {
                    Some(id) => id,
                    None => self.content_commit(blobs, seconds)?,
                };
                content = Some(id);
                parents.push(id);
            }
            let commit = write_commit(&batch, new_root, parents, seconds, &message)?;
            if let Some(objects) = batch.objects.take_object_memory() {
                if pack {
                    pack::write(self.repo.gix(), objects)?;
                } else {
                    pack::write_loose(self.repo.gix(), objects)?;
                }
            }
            fault::point("objects-written");
            match self.move_ref(which, state.as_ref(), commit)? {
                Moved::Done => {
                    let moved = RefMove {
                        old: root,
                        new: new_root,
                        ids,
                    };
                    return Ok((Some(moved), refused));
                }
                Moved::Raced(e) => why = e,
            }
        }
        Err(StoreError::Contended(which.name(), ATTEMPTS, why))
    }

    /// Commit whatever a crashed writer left in the journal, waiting for
    /// the commit lock up to the lock timeout.
    pub fn flush(&self) -> Result<(), StoreError> {
        let dir = self.kapi_dir();
        if journal::read(&dir)?.is_empty() {
            return Ok(());
        }
        let _commit = lock::Lock::commit(&dir, self.lock_timeout)?;
        self.commit_journal(None).map(drop)
    }

    /// Commit what the journal holds if the commit lock is free now (a
    /// reader does not wait: it reads pending lines from the journal).
    pub(super) fn flush_if_free(&self) -> Result<(), StoreError> {
        let dir = self.kapi_dir();
        if journal::read(&dir)?.is_empty() {
            return Ok(());
        }
        match lock::Lock::try_commit(&dir)? {
            Some(_commit) => self.commit_journal(None).map(drop),
            None => Ok(()),
        }
    }

    /// The complete lines the journal holds now, parsed (what a reader adds
    /// to the refs when a writer has not committed them yet).
    pub(super) fn pending(&self) -> Result<Vec<Record>, StoreError> {
        let bytes = journal::read(&self.kapi_dir())?;
        let complete = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(end) => &bytes[..=end],
            None => return Ok(Vec::new()),
        };
        let mut records: Vec<Record> = segment::lines(complete)
            .filter_map(|l| Record::from_untrusted(l).ok())
            .collect();
        // A line whose content cannot be read back is not a record a
        // reader can use; the committer sets it aside, named.
        self.read_content(&mut records, &mut Vec::new());
        Ok(records)
    }

    /// Lines set aside from the journal: torn by a crash, or with no room
    /// on the ref (for `kapi store doctor`).
    pub fn rejected_journal_lines(&self) -> Vec<Vec<u8>> {
        std::fs::read(self.kapi_dir().join("journal.rejected"))
            .map(|bytes| segment::lines(&bytes).map(<[u8]>::to_vec).collect())
            .unwrap_or_default()
    }
}

/// Why a line left the journal without reaching a ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetAside {
    /// Not a whole line: a crash tore it while it was written.
    Torn,
    /// A whole operation over the limit one record may have (a kapi that
    /// did not check sizes before journaling wrote it).
    Oversized { id: String, bytes: usize },
    /// A whole line that is not a valid operation.
    Invalid { id: String, error: RecordError },
    /// A valid operation whose segment had no room for it.
    NoRoom { id: String },
    /// A valid operation whose content blob this repository does not hold.
    Content {
        id: String,
        blob: String,
        error: ContentError,
    },
}

impl std::fmt::Display for SetAside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetAside::Torn => f.write_str("a line a crash tore"),
            SetAside::Oversized { id, bytes } => write!(
                f,
                "{id} has {bytes} bytes, over the {MAX_RECORD_BYTES} one record may have (docs/operations.md, \"Limits\")"
            ),
            SetAside::Invalid { id, error } => write!(f, "{id} is not a valid operation: {error}"),
            SetAside::NoRoom { id } => write!(f, "{id} found no room in its segment"),
            SetAside::Content { id, blob, error } => {
                write!(f, "{id} names the content blob {blob}, {error}")
            }
        }
    }
}

/// What [`tree::room_taken`] gives, for the segments one batch mints into:
/// each root's top tree decoded once (a batch's lines land in about as
/// many segments as lines, under one or two roots), each segment's size
/// read once.
#[derive(Default)]
struct Rooms {
    tops: HashMap<ObjectId, tree::Entries>,
    taken: HashMap<(ObjectId, (u8, u8)), usize>,
}

impl Rooms {
    fn taken(
        &mut self,
        repo: &gix::Repository,
        root: ObjectId,
        (a, b): (u8, u8),
    ) -> Result<usize, StoreError> {
        if let Some(&taken) = self.taken.get(&(root, (a, b))) {
            return Ok(taken);
        }
        let top = match self.tops.entry(root) {
            Entry::Occupied(found) => found.into_mut(),
            Entry::Vacant(slot) => slot.insert(tree::read_entries(repo, root)?),
        };
        let folder = top
            .iter()
            .find(|e| e.filename.as_slice() == [a] && e.mode.is_tree())
            .map(|e| e.oid);
        let blob = match folder {
            Some(folder) => tree::read_entries(repo, folder)?
                .into_iter()
                .find(|e| e.filename.as_slice() == [b] && e.mode.is_blob())
                .map(|leaf| leaf.oid),
            None => None,
        };
        let taken = tree::room_of(blob.map(|blob| tree::object_size(repo, blob)).transpose()?);
        self.taken.insert((root, (a, b)), taken);
        Ok(taken)
    }
}
