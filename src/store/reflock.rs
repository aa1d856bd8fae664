//! Moving a log's ref, and recovering a ref lock a killed writer left.
//!
//! git moves a ref by writing `refs/kapi/ops.lock` and renaming it over the
//! ref. A writer killed between the two leaves the lock file behind, and
//! every later move would fail on it. kapi moves its refs only while it
//! holds its commit lock, and before locking the ref it writes its intent
//! (`.git/kapi/ref-intent.<log>`, one per ref: process, ref, new commit).
//! So a writer that holds the commit lock and finds a ref lock whose
//! content is exactly the commit the last intent for that ref named knows
//! that lock is kapi's own and abandoned (its writer no longer holds the
//! commit lock, so it is dead) and removes it. The intent is written only
//! when no ref lock is present, so a writer killed between writing it and
//! locking never leaves an intent that disowns an earlier lock. Any other
//! ref lock belongs to another program (git itself): kapi waits for it up
//! to the lock timeout and never removes it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use gix::ObjectId;
use gix::refs::transaction::PreviousValue;

use super::{LogRef, Store, StoreError, fault, git};

fn intent_path(kapi_dir: &Path, which: LogRef) -> PathBuf {
    let log = match which {
        LogRef::Shared => "ops",
        LogRef::Local => "local",
    };
    kapi_dir.join(format!("ref-intent.{log}"))
}

/// How old a half-written ref lock must be before kapi takes it for one a
/// killed writer of its own left.
const HALF_WRITTEN_AGE: std::time::Duration = std::time::Duration::from_secs(1);

impl Intent {
    /// Whether a ref lock with `content` is the one this intent's writer
    /// took and abandoned.
    ///
    /// A writer killed while git was writing the lock leaves it empty or
    /// holding the start of the commit id: that counts too once the lock is
    /// older than [`HALF_WRITTEN_AGE`] (a live program writes its lock in
    /// microseconds).
    fn abandoned(&self, which: LogRef, content: &str, lock: &Path) -> bool {
        let content = content.trim();
        if self.name != which.name() {
            return false;
        }
        if self.new == content {
            return true;
        }
        let old_enough = std::fs::metadata(lock)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= HALF_WRITTEN_AGE);
        self.new.starts_with(content) && old_enough
    }
}

/// What a compare-and-swap of a ref did.
pub(super) enum Moved {
    Done,
    /// The ref was not where the writer read it (another writer moved it).
    Raced(String),
}

/// The intent a writer recorded before locking a ref.
#[derive(Debug, PartialEq, Eq)]
struct Intent {
    name: String,
    new: String,
}

fn read_intent(kapi_dir: &Path, which: LogRef) -> Option<Intent> {
    let text = std::fs::read_to_string(intent_path(kapi_dir, which)).ok()?;
    let mut fields = text.split_whitespace();
    // The process id comes first, for a person reading the file.
    fields.next()?;
    Some(Intent {
        name: fields.next()?.to_owned(),
        new: fields.next()?.to_owned(),
    })
}

/// Written over the last intent in place ([`crate::fsutil::overwrite`]):
/// the process id padded to ten places keeps the file's length for a ref,
/// so moving a ref neither frees nor allocates a block for it.
fn write_intent(kapi_dir: &Path, which: LogRef, new: ObjectId) -> Result<(), StoreError> {
    use crate::fsutil::{FileError, Links, overwrite_regular};
    let path = intent_path(kapi_dir, which);
    let text = format!("{:<10} {} {}\n", std::process::id(), which.name(), new);
    overwrite_regular(&path, Links::Refuse, text.as_bytes()).map_err(|e| {
        let source = match e {
            FileError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        };
        StoreError::Io { path, source }
    })
}

/// A ref lock found while kapi holds its commit lock.
#[derive(Debug)]
pub enum RefLock {
    /// kapi's own, abandoned by a writer that died while moving the ref.
    Abandoned(PathBuf),
    /// Another program's: never removed by kapi.
    Foreign(PathBuf),
}

impl Store {
    /// Where git keeps the lock of a log's ref.
    pub(super) fn ref_lock_path(&self, which: LogRef) -> PathBuf {
        self.repo
            .common_dir()
            .join(format!("{}.lock", which.name()))
    }

    /// The ref locks present now, told apart (call under the commit lock).
    pub fn ref_locks(&self) -> Vec<RefLock> {
        [LogRef::Shared, LogRef::Local]
            .into_iter()
            .filter_map(|which| {
                let path = self.ref_lock_path(which);
                let content = std::fs::read_to_string(&path).ok()?;
                let ours = read_intent(&self.kapi_dir(), which)
                    .is_some_and(|i| i.abandoned(which, &content, &path));
                Some(if ours {
                    RefLock::Abandoned(path)
                } else {
                    RefLock::Foreign(path)
                })
            })
            .collect()
    }

    /// Compare-and-swap the ref from `old` to `new` (call under the commit
    /// lock). An abandoned kapi ref lock is removed; a foreign one is waited
    /// for up to the lock timeout.
    pub(super) fn move_ref(
        &self,
        which: LogRef,
        old: Option<&super::RefState>,
        new: ObjectId,
    ) -> Result<Moved, StoreError> {
        let kapi_dir = self.kapi_dir();
        let lock_path = self.ref_lock_path(which);
        let previous = read_intent(&kapi_dir, which);
        let start = Instant::now();
        loop {
            // A ref lock present before we announce anything: kapi's own,
            // abandoned (it holds the commit the last intent named), is
            // removed; another program's is waited for. Our intent is
            // written only when no lock is there, so a writer killed between
            // the two never leaves an intent that disowns a lock.
            if let Ok(content) = std::fs::read_to_string(&lock_path) {
                if previous
                    .as_ref()
                    .is_some_and(|i| i.abandoned(which, &content, &lock_path))
                {
                    std::fs::remove_file(&lock_path).map_err(|source| StoreError::Io {
                        path: lock_path.clone(),
                        source,
                    })?;
                    continue;
                }
                if start.elapsed() >= self.lock_timeout {
                    return Err(StoreError::RefLocked {
                        path: lock_path,
                        waited: self.lock_timeout,
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            }
            write_intent(&kapi_dir, which, new)?;
            fault::point("intent-written");
            let swapped = if self.swaps_directly(which) {
                self.swap(which, old, new)?
            } else {
                self.swap_by_transaction(which, old, new)?
            };
            match swapped {
                Ok(moved) => return Ok(moved),
                // Another program took the lock just now: wait for it above.
                Err(_) if lock_path.exists() => continue,
                Err(e) => return Ok(Moved::Raced(e)),
            }
        }
    }

    /// Whether a log's ref moves by [`Store::swap`]: unless a reflog is
    /// to be written (`core.logAllRefUpdates = always`, or one exists for
    /// the ref) or refs live in a namespace, which gix's transaction
    /// handles.
    fn swaps_directly(&self, which: LogRef) -> bool {
        let refs = &self.repo.gix().refs;
        refs.namespace.is_none()
            && refs.write_reflog != gix::refs::store::WriteReflog::Always
            && refs.reflog_exists(which.name()).ok() == Some(false)
    }

    /// Move the ref from `old` to `new` as git updates a ref: take its
    /// lock, check under it that the ref is still `old` (loose, else
    /// packed), write `new` into the lock and rename it over the ref. gix's
    /// transaction also locks `packed-refs` for every update while that
    /// file exists (to look the old value up there), which git does only
    /// to delete: a file created and removed per commit, and a lock a
    /// `git gc` or `git fetch` holding it makes the commit fail. `Err`:
    /// the lock could not be taken.
    fn swap(
        &self,
        which: LogRef,
        old: Option<&super::RefState>,
        new: ObjectId,
    ) -> Result<Result<Moved, String>, StoreError> {
        use std::io::Write;
        let common = self.repo.common_dir();
        let path = common.join(which.name());
        let mut lock = match gix::lock::File::acquire_to_update_resource(
            &path,
            gix::lock::acquire::Fail::Immediately,
            Some(common.to_path_buf()),
            0,
        ) {
            Ok(lock) => lock,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let now = self.ref_state(which)?.map(|s| s.target);
        if now.as_ref() != old.map(|o| &o.target) {
            // Dropped, the lock is removed.
            return Ok(Ok(Moved::Raced(format!(
                "{} moved from {} to {}",
                which.name(),
                target_text(old.map(|o| &o.target)),
                target_text(now.as_ref())
            ))));
        }
        let lock_path = lock.lock_path().to_path_buf();
        let io = |source| StoreError::Io {
            path: lock_path.clone(),
            source,
        };
        lock.write_all(format!("{new}\n").as_bytes()).map_err(io)?;
        fault::point("ref-locked");
        lock.commit().map_err(|e| io(e.error))?;
        Ok(Ok(Moved::Done))
    }

    /// [`Store::swap`] by gix's transaction, which writes the reflog too.
    fn swap_by_transaction(
        &self,
        which: LogRef,
        old: Option<&super::RefState>,
        new: ObjectId,
    ) -> Result<Result<Moved, String>, StoreError> {
        use gix::refs::Target;
        use gix::refs::transaction::{Change, LogChange, RefEdit, RefLog};
        let expected = match old {
            Some(old) => PreviousValue::MustExistAndMatch(old.target.clone()),
            None => PreviousValue::MustNotExist,
        };
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: "kapi".into(),
                },
                expected,
                new: Target::Object(new),
            },
            name: which.name().try_into().map_err(git("naming the ref"))?,
            deref: false,
        };
        let prepared = self.repo.gix().refs.transaction().prepare(
            Some(edit),
            gix::lock::acquire::Fail::Immediately,
            gix::lock::acquire::Fail::Immediately,
        );
        match prepared {
            Ok(transaction) => {
                fault::point("ref-locked");
                // The reflog's entry is dated now: git skips an entry dated
                // 0 (`git reflog` called the log empty).
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_secs() as i64);
                let committer = super::signature(now);
                let mut time = gix::date::parse::TimeBuf::default();
                transaction
                    .commit(Some(committer.to_ref(&mut time)))
                    .map_err(git("moving the ref"))?;
                Ok(Ok(Moved::Done))
            }
            Err(e) => Ok(Err(e.to_string())),
        }
    }
}

/// A ref's value as a message names it.
fn target_text(target: Option<&gix::refs::Target>) -> String {
    match target {
        Some(gix::refs::Target::Object(id)) => id.to_string(),
        Some(gix::refs::Target::Symbolic(name)) => format!("ref: {name}"),
        None => "nothing".to_owned(),
    }
}
