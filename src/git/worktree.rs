//! The work tree and the index: the files `git ls-files --cached --others
//! --exclude-standard` lists, and the blobs staged in the index.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

use gix::dir::EntryRef;
use gix::dir::entry::{Kind, Status};
use gix::dir::walk::{Action, Delegate, EmissionMode};

use super::{GitError, ObjectId, Repo, git};

/// A staged blob as read under a size cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blob {
    Bytes(Vec<u8>),
    /// Larger than the cap: its size, read from the object header; the
    /// content was never loaded.
    TooLarge(u64),
}

/// Untracked files and symlinks the directory walk emits (ignored ones are
/// never emitted).
#[derive(Default)]
struct Untracked(Vec<String>);

impl Delegate for Untracked {
    fn emit(&mut self, entry: EntryRef<'_>, _collapsed: Option<Status>) -> Action {
        if entry.status == Status::Untracked
            && matches!(entry.disk_kind, Some(Kind::File | Kind::Symlink))
            && let Ok(path) = std::str::from_utf8(&entry.rela_path)
        {
            self.0.push(path.to_owned());
        }
        Action::Continue(())
    }
}

impl Repo {
    /// Every path in the index (any stage) and every untracked file that
    /// `.gitignore`, `.git/info/exclude` and `core.excludesFile` do not
    /// ignore: what `git ls-files --cached --others --exclude-standard`
    /// lists. Repository-relative, `/`-separated, sorted, without
    /// duplicates; paths that are not UTF-8 are left out. Refuses a bare
    /// repository.
    pub fn files(&self) -> Result<Vec<String>, GitError> {
        self.require_work_tree()?;
        let index = self
            .repo
            .index_or_empty()
            .map_err(git("reading the index"))?;
        let mut out: BTreeSet<String> = index
            .entries()
            .iter()
            .filter_map(|e| std::str::from_utf8(e.path(&index)).ok().map(str::to_owned))
            .collect();
        let options = self
            .repo
            .dirwalk_options()
            .map_err(git("listing the work tree"))?
            .emit_untracked(EmissionMode::Matching)
            .emit_ignored(None)
            .emit_tracked(false)
            .recurse_repositories(false);
        let mut untracked = Untracked::default();
        let interrupt = AtomicBool::new(false);
        self.repo
            .dirwalk(&index, None::<&str>, &interrupt, options, &mut untracked)
            .map_err(git("listing the work tree"))?;
        out.extend(untracked.0);
        Ok(out.into_iter().collect())
    }

    /// The index's stage-0 regular files (mode 100644 or 100755): path and
    /// blob id, in index order.
    pub fn staged_files(&self) -> Result<Vec<(String, ObjectId)>, GitError> {
        self.require_work_tree()?;
        let index = self
            .repo
            .index_or_empty()
            .map_err(git("reading the index"))?;
        Ok(index
            .entries()
            .iter()
            .filter(|e| {
                e.stage() == gix::index::entry::Stage::Unconflicted
                    && (e.mode == gix::index::entry::Mode::FILE
                        || e.mode == gix::index::entry::Mode::FILE_EXECUTABLE)
                    // Outside a sparse checkout: not changed here, and in a
                    // partial clone its blob may not even be local.
                    && !e.flags.contains(gix::index::entry::Flags::SKIP_WORKTREE)
            })
            .filter_map(|e| {
                let path = std::str::from_utf8(e.path(&index)).ok()?;
                Some((path.to_owned(), e.id))
            })
            .collect())
    }

    /// A blob's bytes, unless its header says it is larger than `max`
    /// bytes: then only its size, and nothing is allocated for it.
    pub fn read_blob(&self, id: ObjectId, max: u64) -> Result<Blob, GitError> {
        let header = self
            .repo
            .find_header(id)
            .map_err(git("reading a staged blob"))?;
        let size = header.size();
        if size > max {
            return Ok(Blob::TooLarge(size));
        }
        let object = self
            .repo
            .find_object(id)
            .map_err(git("reading a staged blob"))?;
        Ok(Blob::Bytes(object.detach().data))
    }
}
