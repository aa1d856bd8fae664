//! The work tree and the index: the files `git ls-files --cached --others
//! --exclude-standard` lists (and the untracked ones alone), the blobs
//! staged in the index, and one file as HEAD, the index and the work tree
//! hold it.

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

/// One file as git holds it: its blob in HEAD's tree, its blob staged in
/// the index (stage 0), and its bytes in the work tree. Each is `None`
/// where there is no regular file at the path (a symbolic link, a folder,
/// a FIFO, nothing), and each is read under the cap it was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileVersions {
    pub head: Option<Blob>,
    pub index: Option<Blob>,
    pub work_tree: Option<Blob>,
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
        out.extend(self.untracked_beside(&index)?);
        Ok(out.into_iter().collect())
    }

    /// The untracked files git does not ignore: what `git ls-files
    /// --others --exclude-standard` lists, sorted (the one way kapi lists
    /// them: the hooks' "what the session changed" and the checker's files
    /// both come from this walk). Refuses a bare repository.
    pub fn untracked(&self) -> Result<Vec<String>, GitError> {
        self.require_work_tree()?;
        let index = self
            .repo
            .index_or_empty()
            .map_err(git("reading the index"))?;
        let mut out = self.untracked_beside(&index)?;
        out.sort();
        Ok(out)
    }

    /// The gix directory walk of the work tree against `index`: untracked
    /// files and symbolic links that are not ignored, in walk order.
    fn untracked_beside(&self, index: &gix::index::State) -> Result<Vec<String>, GitError> {
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
            .dirwalk(index, None::<&str>, &interrupt, options, &mut untracked)
            .map_err(git("listing the work tree"))?;
        Ok(untracked.0)
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

    /// The file at `path` (repository-relative, `/`-separated) as HEAD, the
    /// index and the work tree hold it, each read under `max` bytes: what
    /// git shows of a change to it. The work-tree file is opened without
    /// following a link at the path and without blocking. Refuses a bare
    /// repository.
    pub fn file_versions(&self, path: &str, max: u64) -> Result<FileVersions, GitError> {
        let root = self.require_work_tree()?.to_path_buf();
        let head = self.repo.head().map_err(git("reading HEAD"))?;
        let head = if head.is_unborn() {
            None
        } else {
            let tree = self.repo.head_tree().map_err(git("reading HEAD's tree"))?;
            let entry = tree
                .lookup_entry_by_path(path)
                .map_err(git("reading HEAD's tree"))?;
            match entry.filter(|e| e.mode().is_blob()) {
                Some(e) => Some(self.read_blob(e.object_id(), max)?),
                None => None,
            }
        };
        let index = self
            .repo
            .index_or_empty()
            .map_err(git("reading the index"))?;
        let staged = index
            .entry_by_path(path.into())
            .filter(|e| {
                e.stage() == gix::index::entry::Stage::Unconflicted
                    && (e.mode == gix::index::entry::Mode::FILE
                        || e.mode == gix::index::entry::Mode::FILE_EXECUTABLE)
            })
            .map(|e| e.id);
        let index = match staged {
            Some(id) => Some(self.read_blob(id, max)?),
            None => None,
        };
        let work_tree = read_work_tree_file(&root.join(path), max)?;
        Ok(FileVersions {
            head,
            index,
            work_tree,
        })
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

/// A work-tree file's bytes under `max`; `None` when no regular file is
/// there (nothing, a link, a FIFO or a device, never read).
fn read_work_tree_file(path: &std::path::Path, max: u64) -> Result<Option<Blob>, GitError> {
    use crate::fsutil::{FileError, Links, open_regular};
    use std::io::Read;
    let file = match open_regular(path, Links::Refuse) {
        Ok(file) => file,
        Err(FileError::NotRegular(_)) => return Ok(None),
        Err(e) if e.is_not_found() => return Ok(None),
        // A folder on the way that is a file, say: nothing there either.
        Err(FileError::Io(e)) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(None),
        Err(e) => return Err(git("reading the work tree")(e)),
    };
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(git("reading the work tree"))?;
    if bytes.len() as u64 > max {
        let size = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
        return Ok(Some(Blob::TooLarge(size)));
    }
    Ok(Some(Blob::Bytes(bytes)))
}
