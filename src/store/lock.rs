//! The advisory locks writers take around an append: `.git/kapi/journal.lock`
//! while ids are minted and journal lines written (microseconds), and
//! `.git/kapi/lock` while a ref moves. They are `flock` locks: the kernel
//! releases them when a process dies, so a crash never leaves one stale.
//! A process that is stopped (SIGSTOP, a suspended job, a debugger) keeps
//! holding its lock, so no wait is without limit: a writer gives up after
//! the store's lock timeout (`KAPI_LOCK_TIMEOUT_MS`, 10 s by default) and
//! names the lock and the process that holds it. The holder writes its
//! process id into the lock file for that message.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::StoreError;

/// How long a writer waits for a lock by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Lock {
    _file: File,
}

/// The commit lock's file name under `.git/kapi/`.
pub const COMMIT: &str = "lock";
/// The journal lock's file name under `.git/kapi/`.
pub const JOURNAL: &str = "journal.lock";

impl Lock {
    /// The commit lock, waiting at most `timeout`.
    pub fn commit(kapi_dir: &Path, timeout: Duration) -> Result<Self, StoreError> {
        Self::wait(kapi_dir, COMMIT, timeout)
    }

    /// The journal lock, waiting at most `timeout`.
    pub fn journal(kapi_dir: &Path, timeout: Duration) -> Result<Self, StoreError> {
        Self::wait(kapi_dir, JOURNAL, timeout)
    }

    /// The lock `name` under `.git/kapi/` (one a single reader-writer of a
    /// derived file takes), waiting at most `timeout`.
    pub fn named(kapi_dir: &Path, name: &str, timeout: Duration) -> Result<Self, StoreError> {
        Self::wait(kapi_dir, name, timeout)
    }

    /// The commit lock if no one holds it now.
    pub fn try_commit(kapi_dir: &Path) -> Result<Option<Self>, StoreError> {
        Self::try_named(kapi_dir, COMMIT)
    }

    /// Wait for the lock at most `timeout`. The kernel queues waiters in
    /// `flock` far better than polling would, so a helper thread blocks in
    /// it while this one waits on a channel with the bound; a helper that
    /// gets the lock after its caller gave up releases it at once.
    fn wait(kapi_dir: &Path, name: &str, timeout: Duration) -> Result<Self, StoreError> {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        if let Some(lock) = Self::try_named(kapi_dir, name)? {
            return Ok(lock);
        }
        let path = kapi_dir.join(name);
        let file = open(kapi_dir, &path)?;
        let abandoned = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        {
            let abandoned = Arc::clone(&abandoned);
            std::thread::spawn(move || {
                let locked = file.lock();
                if !abandoned.load(Ordering::SeqCst) {
                    // A send to a caller that gave up returns the file,
                    // which is dropped here: the lock is released.
                    let _ = tx.send((locked, file));
                }
            });
        }
        match rx.recv_timeout(timeout) {
            Ok((Ok(()), file)) => Ok(Self::held_by_us(file)),
            Ok((Err(source), _)) => Err(StoreError::Lock { path, source }),
            Err(_) => {
                abandoned.store(true, Ordering::SeqCst);
                Err(StoreError::LockTimeout {
                    holder: holder(&path),
                    path,
                    waited: timeout,
                })
            }
        }
    }

    /// Name this process as the holder (best effort), for anyone who waits.
    fn held_by_us(file: File) -> Self {
        let _ = crate::fsutil::overwrite(&file, format!("{:<10}\n", std::process::id()).as_bytes());
        Self { _file: file }
    }

    fn try_named(kapi_dir: &Path, name: &str) -> Result<Option<Self>, StoreError> {
        let path = kapi_dir.join(name);
        let file = open(kapi_dir, &path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self::held_by_us(file))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(source)) => Err(StoreError::Lock { path, source }),
        }
    }
}

/// The process id a lock file names, if it names one (on its first line).
pub fn holder(path: &Path) -> Option<u32> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    text.lines().next()?.trim().parse().ok()
}

fn open(kapi_dir: &Path, path: &Path) -> Result<File, StoreError> {
    let path: PathBuf = path.to_path_buf();
    let open = || {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
    };
    match open() {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(kapi_dir).map_err(|source| StoreError::Lock {
                path: path.clone(),
                source,
            })?;
            open().map_err(|source| StoreError::Lock { path, source })
        }
        Err(source) => Err(StoreError::Lock { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_named_whatever_the_lock_file_held_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(COMMIT);
        let me = std::process::id();
        for before in [
            "",
            "7\n",
            "123456789012345678901234567890\nleft by another tool\n",
        ] {
            std::fs::write(&path, before).unwrap();
            let lock = Lock::try_commit(dir.path()).unwrap().expect("free");
            assert_eq!(holder(&path), Some(me));
            drop(lock);
        }
        // Held again: the file keeps its length, written over in place.
        let len = std::fs::metadata(&path).unwrap().len();
        let _lock = Lock::commit(dir.path(), DEFAULT_TIMEOUT).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        assert_eq!(holder(&path), Some(me));
    }
}
