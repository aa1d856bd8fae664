//! Commit ranges (`A..B`) and what each commit changed, line by line: the
//! raw material of merge signals.
//!
//! Each commit is compared with its first parent (a root commit with the
//! empty tree), so a merge commit shows what the merge brought onto the
//! first-parent line. Trees are compared by hand (equal subtrees are
//! skipped by id) and lines by `similar`, which kapi already builds: gix's
//! `blob-diff` feature would add a second diff engine for the same answer.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use similar::{ChangeTag, TextDiff};

use super::{Blob, GitError, ObjectId, Repo, git};

/// Blobs larger than this are listed without their lines.
pub const MAX_DIFF_BYTES: u64 = 16 << 20;

/// One commit of a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitDiff {
    pub id: ObjectId,
    pub parents: Vec<ObjectId>,
    /// The first line of the message.
    pub subject: String,
    /// The author's name (the person who merged, for a merge or squash
    /// commit made by a forge).
    pub author: String,
    /// Files whose content changed against the first parent, by path.
    pub files: Vec<FileDiff>,
}

/// One file's change in one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Repository-relative, `/`-separated.
    pub path: String,
    /// Lines only the new side has, without their line ends.
    pub added: Vec<String>,
    /// Lines only the old side has.
    pub removed: Vec<String>,
    /// Binary or too large: no lines are given.
    pub opaque: bool,
}

/// A merged range `A..B`, both ends resolved to commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergedRange {
    /// `A`: what the branch held before.
    pub from: ObjectId,
    /// `B`: what it holds after the merge.
    pub to: ObjectId,
}

/// What a valid merged range looks like, for every refusal.
const VALID_RANGE: &str =
    "a merged range is A..B (e.g. ORIG_HEAD..HEAD), both ends a commit this repository holds";

/// Why a merged range cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RangeError {
    #[error("`{spec}` is not a merged range: {why}; {VALID_RANGE}")]
    NotARange { spec: String, why: &'static str },
    #[error("`{spec}`: `{rev}` names no commit here ({source}); {VALID_RANGE}")]
    Unresolvable {
        spec: String,
        rev: String,
        #[source]
        source: GitError,
    },
}

/// What a push moved a branch over (`BEFORE` and `AFTER`, as CI gives
/// them), as the CI step counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// `BEFORE` is all zeros: a new branch, nothing merged to count.
    NewBranch,
    /// `BEFORE` names no commit this clone holds (a shallow checkout).
    BeforeMissing,
    /// `BEFORE` and `AFTER` share no history (a forced push of another one).
    Unrelated,
    /// The range to count: from `BEFORE`, or from the merge base when the
    /// push was forced (`forced`).
    Range { range: MergedRange, forced: bool },
}

type Entries = BTreeMap<Vec<u8>, (bool, ObjectId)>;

/// Trees decoded while walking a range: a commit's tree is its child's
/// parent tree, so each is decoded once.
#[derive(Default)]
struct Trees {
    entries: RefCell<HashMap<ObjectId, Rc<Entries>>>,
    /// Each commit's tree, by commit.
    of_commit: RefCell<HashMap<ObjectId, ObjectId>>,
}

impl Trees {
    /// Keep the cache bounded on long walks: a walk revisits only
    /// neighbours, so dropping everything now and then costs little.
    fn trim(&self) {
        if self.entries.borrow().len() > 4096 {
            self.entries.borrow_mut().clear();
            self.of_commit.borrow_mut().clear();
        }
    }
}

/// A blob's text as the diff reads it: `None` when binary or too large.
type Text = Rc<Option<String>>;

/// Blobs read while walking a range: the new side of one commit's change
/// is the old side of the next change to that file, so each version is
/// inflated (and checked for UTF-8) once per walk, not once per commit
/// that shows it. Only the side the walk meets again is kept (the new side
/// when it reads oldest first, the old side when newest first), and it is
/// let go when met: the cache holds about one version per file the walk
/// has open, within [`Blobs::MAX_BYTES`].
struct Blobs {
    text: RefCell<HashMap<ObjectId, Text>>,
    bytes: std::cell::Cell<usize>,
    /// Whether the walk reads oldest first (it keeps new sides).
    oldest_first: bool,
}

impl Blobs {
    /// What the cache may hold before it is dropped (a miss only reads a
    /// blob again).
    const MAX_BYTES: usize = 32 << 20;

    fn new(oldest_first: bool) -> Self {
        Blobs {
            text: RefCell::default(),
            bytes: std::cell::Cell::new(0),
            oldest_first,
        }
    }

    fn size(text: &Text) -> usize {
        text.as_ref().as_ref().map_or(0, String::len)
    }

    fn take(&self, id: &ObjectId) -> Option<Text> {
        let text = self.text.borrow_mut().remove(id)?;
        self.bytes.set(self.bytes.get() - Self::size(&text));
        Some(text)
    }

    fn put(&self, id: ObjectId, text: Text) {
        let size = Self::size(&text);
        if self.bytes.get() + size > Self::MAX_BYTES {
            self.text.borrow_mut().clear();
            self.bytes.set(0);
        }
        if let Some(old) = self.text.borrow_mut().insert(id, text) {
            self.bytes.set(self.bytes.get() - Self::size(&old));
        }
        self.bytes.set(self.bytes.get() + size);
    }
}

impl Repo {
    /// The commits reachable from `B` but not from `A`, for `spec` =
    /// `A..B` (an empty side means `HEAD`; a lone revision means every
    /// commit reachable from it), newest first as `git log` lists them,
    /// each with its parents and its line changes.
    #[cfg(test)]
    pub fn commit_range(&self, spec: &str) -> Result<Vec<CommitDiff>, GitError> {
        self.commit_range_where(spec, false, &|_| true)
    }

    /// Whether a walk of `spec` (`A..B`, first parents) reads its commits
    /// oldest first (see [`Repo::bases_are_older`]).
    #[cfg(test)]
    pub fn reads_oldest_first(&self, spec: &str) -> Result<bool, GitError> {
        let (from, to) = spec.split_once("..").unwrap_or(("", spec));
        let ids: Vec<ObjectId> = self
            .repo
            .rev_walk([self.commit_of(to)?])
            .with_hidden(Some(self.commit_of(from)?))
            .first_parent_only()
            .all()
            .map_err(git("walking a commit range"))?
            .map(|info| info.map(|i| i.id))
            .collect::<Result<_, _>>()
            .map_err(git("walking a commit range"))?;
        self.bases_are_older(&ids, &Trees::default())
    }

    /// Commits are diffed on up to this many threads, each a contiguous
    /// run of the walk (so neighbours share decoded trees).
    const MAX_THREADS: usize = 8;

    /// [`Repo::commit_range`], following only first parents when
    /// `first_parent` (what landed on a branch, commit by commit: a merge
    /// shows the whole change it brought, its side branch's commits are not
    /// walked again), and reading the lines of only the files `wanted`
    /// accepts (others are not listed).
    #[cfg(test)]
    pub fn commit_range_where(
        &self,
        spec: &str,
        first_parent: bool,
        wanted: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<CommitDiff>, GitError> {
        if spec.contains("...") {
            return Err(GitError::Git {
                context: "reading a commit range",
                source: format!("{spec:?}: symmetric ranges (A...B) are not supported; use A..B")
                    .into(),
            });
        }
        let resolve = |rev: &str| {
            let rev = if rev.is_empty() { "HEAD" } else { rev };
            self.commit_of(rev)
        };
        let (hidden, tip) = match spec.split_once("..") {
            Some((from, to)) => (Some(resolve(from)?), resolve(to)?),
            None => (None, resolve(spec)?),
        };
        self.walk_where(hidden, tip, first_parent, wanted)
    }

    /// The merged range `spec` names, both ends resolved: it must be
    /// `A..B` with both ends a commit this repository holds. A lone
    /// revision (`HEAD`), an empty end (`..HEAD`, `A..`, `''`) or a
    /// symmetric range would read history nobody merged, so each is
    /// refused by name.
    pub fn merged_range(&self, spec: &str) -> Result<MergedRange, RangeError> {
        let refuse = |why| RangeError::NotARange {
            spec: spec.to_owned(),
            why,
        };
        if spec.contains("...") {
            return Err(refuse("a symmetric range (A...B) reads both sides"));
        }
        let Some((from, to)) = spec.split_once("..") else {
            return Err(refuse(if spec.trim().is_empty() {
                "it is empty"
            } else {
                "it is a single revision, which would read all of its history"
            }));
        };
        if to.contains("..") {
            return Err(refuse("it has more than two ends"));
        }
        if from.trim().is_empty() || to.trim().is_empty() {
            return Err(refuse("an end is empty"));
        }
        let resolve = |rev: &str| {
            self.commit_of(rev).map_err(|e| RangeError::Unresolvable {
                spec: spec.to_owned(),
                rev: rev.to_owned(),
                source: e,
            })
        };
        Ok(MergedRange {
            from: resolve(from)?,
            to: resolve(to)?,
        })
    }

    /// What a push from `before` to `after` moved the branch over. `after`
    /// must be a commit this clone holds.
    pub fn pushed(&self, before: &str, after: &str) -> Result<Pushed, GitError> {
        let to = self.commit_of(after)?;
        if !before.is_empty() && before.bytes().all(|b| b == b'0') {
            return Ok(Pushed::NewBranch);
        }
        let Ok(from) = self.commit_of(before) else {
            return Ok(Pushed::BeforeMissing);
        };
        let base = self
            .repo
            .merge_base(from, to)
            .map_err(git("finding the merge base"))?
            .map(|id| id.detach());
        Ok(match base {
            None => Pushed::Unrelated,
            Some(base) => Pushed::Range {
                range: MergedRange { from: base, to },
                forced: base != from,
            },
        })
    }

    /// The commits of a resolved merged range, as `commit_range_where`
    /// reads a range (first parents only when `first_parent`; the lines of
    /// only the files `wanted` accepts).
    pub fn merged_commits_where(
        &self,
        range: &MergedRange,
        first_parent: bool,
        wanted: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<CommitDiff>, GitError> {
        self.walk_where(Some(range.from), range.to, first_parent, wanted)
    }

    /// The commit a revision names (a tag peeled to its commit).
    fn commit_of(&self, rev: &str) -> Result<ObjectId, GitError> {
        Ok(self
            .repo
            .rev_parse_single(rev)
            .map_err(git("resolving a revision"))?
            .object()
            .map_err(git("resolving a revision"))?
            .peel_to_commit()
            .map_err(git("resolving a revision"))?
            .id)
    }

    /// The commits reachable from `tip` and not from `hidden`, newest
    /// first, each diffed against its first parent.
    fn walk_where(
        &self,
        hidden: Option<ObjectId>,
        tip: ObjectId,
        first_parent: bool,
        wanted: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<CommitDiff>, GitError> {
        let mut walk = self.repo.rev_walk([tip]).with_hidden(hidden);
        if first_parent {
            walk = walk.first_parent_only();
        }
        let walk = walk.all().map_err(git("walking a commit range"))?;
        let ids: Vec<ObjectId> = walk
            .map(|info| info.map(|i| i.id))
            .collect::<Result<_, _>>()
            .map_err(git("walking a commit range"))?;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(Self::MAX_THREADS)
            .min(ids.len().div_ceil(64))
            .max(1);
        if threads == 1 {
            return self.diff_run(&ids, wanted);
        }
        // gix is built without its `parallel` feature: each thread opens
        // the repository itself (objects only; the walk already ran here).
        let git_dir = self.repo.git_dir().to_path_buf();
        let per = ids.len().div_ceil(threads);
        let runs: Vec<Result<Vec<CommitDiff>, GitError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = ids
                .chunks(per)
                .map(|run| {
                    let git_dir = &git_dir;
                    scope.spawn(move || {
                        let mut repo = gix::open(git_dir).map_err(git("opening the repository"))?;
                        repo.objects.set_pack_cache(|| {
                            Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
                                32 * 1024 * 1024,
                            ))
                        });
                        Repo { repo }.diff_run(run, wanted)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut out = Vec::with_capacity(ids.len());
        for run in runs {
            out.extend(run?);
        }
        Ok(out)
    }

    /// Diff each commit of `ids` (newest first) against its first parent;
    /// the diffs come in the order of `ids`, whichever order they are read
    /// in (see [`Repo::bases_are_older`]).
    fn diff_run(
        &self,
        ids: &[ObjectId],
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<CommitDiff>, GitError> {
        let trees = Trees::default();
        let oldest_first = self.bases_are_older(ids, &trees)?;
        let blobs = Blobs::new(oldest_first);
        let mut out = Vec::with_capacity(ids.len());
        let mut read = |id: ObjectId| -> Result<(), GitError> {
            out.push(self.commit_diff_where(id, wanted, &trees, &blobs)?);
            trees.trim();
            Ok(())
        };
        if oldest_first {
            ids.iter().rev().try_for_each(|&id| read(id))?;
            out.reverse();
        } else {
            ids.iter().try_for_each(|&id| read(id))?;
        }
        Ok(out)
    }

    /// Whether the packs store this walk's objects as deltas on their older
    /// versions (as `git fast-import` and some pushes write them) rather
    /// than on their newer ones (as `git repack` does). gix keeps only the
    /// objects asked for in its delta cache, never the bases it resolves on
    /// the way, so reading a version before its base re-inflates the whole
    /// chain: read from the side the chains start on and each version is
    /// one delta away from one already read. Judged on a few neighbouring
    /// commits, by the delta depths (from the pack's headers, nothing
    /// inflated whole) of the versions of each tree and file on the path to
    /// the first change between them; when the headers do not tell, newest
    /// first, as `git log` reads.
    fn bases_are_older(&self, ids: &[ObjectId], trees: &Trees) -> Result<bool, GitError> {
        use gix::odb::Header as _;
        if ids.len() < 2 {
            return Ok(false);
        }
        let depth = |id: ObjectId| -> Result<i64, GitError> {
            let header = self
                .repo
                .objects
                .try_header(&id)
                .map_err(git("reading an object header"))?;
            Ok(header.and_then(|h| h.num_deltas()).map_or(0, i64::from))
        };
        let step = ((ids.len() - 1) / Self::ORDER_SAMPLES).max(1);
        let mut votes = 0i64;
        for pair in ids.windows(2).step_by(step).take(Self::ORDER_SAMPLES) {
            // Newest first: pair[0] is the child, pair[1] its parent.
            let (mut new, mut old) = (
                self.tree_of_commit(pair[0], trees)?,
                self.tree_of_commit(pair[1], trees)?,
            );
            // Down the first changed entry while both sides are trees.
            for _ in 0..Self::ORDER_DEPTH {
                if new == old {
                    break;
                }
                votes += (depth(new)? - depth(old)?).signum();
                let (n, o) = (
                    self.entries(Some(new), trees)?,
                    self.entries(Some(old), trees)?,
                );
                let changed = n.iter().find_map(|(name, &(is_tree, id))| {
                    o.get(name).and_then(|&(was_tree, was)| {
                        (id != was && is_tree == was_tree).then_some((is_tree, id, was))
                    })
                });
                match changed {
                    Some((true, id, was)) => (new, old) = (id, was),
                    Some((false, id, was)) => {
                        votes += (depth(id)? - depth(was)?).signum();
                        break;
                    }
                    None => break,
                }
            }
        }
        Ok(votes > 0)
    }

    /// How many commit pairs [`Repo::bases_are_older`] looks at.
    const ORDER_SAMPLES: usize = 8;
    /// How deep into the trees it follows a change.
    const ORDER_DEPTH: usize = 8;

    fn tree_of_commit(&self, commit: ObjectId, trees: &Trees) -> Result<ObjectId, GitError> {
        if let Some(&tree) = trees.of_commit.borrow().get(&commit) {
            return Ok(tree);
        }
        let tree = self
            .repo
            .find_commit(commit)
            .map_err(git("reading a commit"))?
            .tree_id()
            .map_err(git("reading a commit"))?
            .detach();
        trees.of_commit.borrow_mut().insert(commit, tree);
        Ok(tree)
    }

    fn commit_diff_where(
        &self,
        id: ObjectId,
        wanted: &dyn Fn(&str) -> bool,
        trees: &Trees,
        blobs: &Blobs,
    ) -> Result<CommitDiff, GitError> {
        let commit = self.repo.find_commit(id).map_err(git("reading a commit"))?;
        let (subject, author) = {
            let decoded = commit.decode().map_err(git("reading a commit"))?;
            let subject = decoded
                .message
                .split(|&b| b == b'\n')
                .next()
                .map(|l| String::from_utf8_lossy(l).trim().to_owned())
                .unwrap_or_default();
            (
                subject,
                decoded
                    .author()
                    .map(|a| a.name.to_string())
                    .unwrap_or_default(),
            )
        };
        let parents: Vec<ObjectId> = commit.parent_ids().map(|p| p.detach()).collect();
        let tree = commit.tree_id().map_err(git("reading a commit"))?.detach();
        trees.of_commit.borrow_mut().insert(id, tree);
        // A parent a shallow clone does not hold: the commit is a root here.
        let old = match parents.first().filter(|p| self.repo.has_object(**p)) {
            Some(p) => Some(self.tree_of_commit(*p, trees)?),
            None => None,
        };
        let mut changed = Vec::new();
        self.diff_trees(old, Some(tree), "", &mut changed, trees)?;
        let files = changed
            .into_iter()
            .filter(|(path, _, _)| wanted(path))
            .map(|(path, old, new)| self.file_diff(path, old, new, blobs))
            .collect::<Result<_, _>>()?;
        Ok(CommitDiff {
            id,
            parents,
            subject,
            author,
            files,
        })
    }

    fn entries(&self, tree: Option<ObjectId>, trees: &Trees) -> Result<Rc<Entries>, GitError> {
        let Some(id) = tree else {
            return Ok(Rc::default());
        };
        if let Some(found) = trees.entries.borrow().get(&id) {
            return Ok(Rc::clone(found));
        }
        let tree = self.repo.find_tree(id).map_err(git("reading a tree"))?;
        let decoded = tree.decode().map_err(git("reading a tree"))?;
        let entries: Rc<Entries> = Rc::new(
            decoded
                .entries
                .iter()
                .filter(|e| e.mode.is_tree() || e.mode.is_blob())
                .map(|e| (e.filename.to_vec(), (e.mode.is_tree(), e.oid.to_owned())))
                .collect(),
        );
        trees.entries.borrow_mut().insert(id, Rc::clone(&entries));
        Ok(entries)
    }

    /// The blobs (regular files) that differ between two trees, by path.
    fn diff_trees(
        &self,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        prefix: &str,
        out: &mut Vec<(String, Option<ObjectId>, Option<ObjectId>)>,
        trees: &Trees,
    ) -> Result<(), GitError> {
        if old == new {
            return Ok(());
        }
        let (old, new) = (self.entries(old, trees)?, self.entries(new, trees)?);
        // Both sides are sorted by name: walk them together, and leave
        // alone every entry both hold alike (no path is built for it).
        let (mut olds, mut news) = (old.iter().peekable(), new.iter().peekable());
        loop {
            use std::cmp::Ordering;
            let side = match (olds.peek(), news.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((a, _)), Some((b, _))) => a.cmp(b),
            };
            let (name, o, n) = match side {
                Ordering::Less => match olds.next() {
                    Some((name, o)) => (name, Some(o), None),
                    None => break,
                },
                Ordering::Greater => match news.next() {
                    Some((name, n)) => (name, None, Some(n)),
                    None => break,
                },
                Ordering::Equal => match (olds.next(), news.next()) {
                    (Some((name, o)), Some((_, n))) => (name, Some(o), Some(n)),
                    _ => break,
                },
            };
            if o == n {
                continue;
            }
            let Ok(name_s) = std::str::from_utf8(name) else {
                continue;
            };
            let path = if prefix.is_empty() {
                name_s.to_owned()
            } else {
                format!("{prefix}/{name_s}")
            };
            let subtree = |e: Option<&(bool, ObjectId)>| e.filter(|e| e.0).map(|e| e.1);
            let blob = |e: Option<&(bool, ObjectId)>| e.filter(|e| !e.0).map(|e| e.1);
            let (ot, nt) = (subtree(o), subtree(n));
            if ot.is_some() || nt.is_some() {
                self.diff_trees(ot, nt, &path, out, trees)?;
            }
            let (ob, nb) = (blob(o), blob(n));
            if ob != nb {
                out.push((path, ob, nb));
            }
        }
        Ok(())
    }

    /// A blob's text for diffing (`None`: binary or too large), read once
    /// per walk: kept when `again` (the walk meets this version again).
    fn blob_text(&self, id: ObjectId, blobs: &Blobs, again: bool) -> Result<Text, GitError> {
        if let Some(text) = blobs.take(&id) {
            return Ok(text);
        }
        let text = Rc::new(match self.read_blob(id, MAX_DIFF_BYTES)? {
            Blob::Bytes(b) if !b[..b.len().min(8192)].contains(&0) => Some(
                String::from_utf8(b)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
            _ => None,
        });
        if again {
            blobs.put(id, Rc::clone(&text));
        }
        Ok(text)
    }

    fn file_diff(
        &self,
        path: String,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        blobs: &Blobs,
    ) -> Result<FileDiff, GitError> {
        let none: Text = Rc::new(Some(String::new()));
        let read = |id: Option<ObjectId>, again: bool| match id {
            None => Ok(Rc::clone(&none)),
            Some(id) => self.blob_text(id, blobs, again),
        };
        let (old, new) = (
            read(old, !blobs.oldest_first)?,
            read(new, blobs.oldest_first)?,
        );
        let (Some(old), Some(new)) = (old.as_ref(), new.as_ref()) else {
            return Ok(FileDiff {
                path,
                added: Vec::new(),
                removed: Vec::new(),
                opaque: true,
            });
        };
        // A bound on the diff's time: on pathological files it settles for a
        // larger (still correct) set of changed lines.
        let diff = TextDiff::configure()
            .timeout(std::time::Duration::from_secs(2))
            .diff_lines(old.as_str(), new.as_str());
        let (mut added, mut removed) = (Vec::new(), Vec::new());
        for change in diff.iter_all_changes() {
            let line = change.value().trim_end_matches(['\n', '\r']).to_owned();
            match change.tag() {
                ChangeTag::Insert => added.push(line),
                ChangeTag::Delete => removed.push(line),
                ChangeTag::Equal => {}
            }
        }
        Ok(FileDiff {
            path,
            added,
            removed,
            opaque: false,
        })
    }
}
