//! The short advisory lock writers take around an append. The kernel
//! releases it when a process dies, so a crash never leaves it stale.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::StoreError;

pub struct Lock {
    _file: File,
}

impl Lock {
    /// The commit lock: held while a ref moves.
    pub fn acquire(kapi_dir: &Path) -> Result<Self, StoreError> {
        Self::acquire_named(kapi_dir, "lock")
    }

    /// The journal lock: held while ids are minted and journal lines written.
    pub fn journal(kapi_dir: &Path) -> Result<Self, StoreError> {
        Self::acquire_named(kapi_dir, "journal.lock")
    }

    /// The commit lock if no one holds it now.
    pub fn try_acquire(kapi_dir: &Path) -> Result<Option<Self>, StoreError> {
        let path = kapi_dir.join("lock");
        let file = Self::open(kapi_dir, &path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(source)) => Err(StoreError::Lock { path, source }),
        }
    }

    fn acquire_named(kapi_dir: &Path, name: &str) -> Result<Self, StoreError> {
        let path = kapi_dir.join(name);
        let file = Self::open(kapi_dir, &path)?;
        file.lock()
            .map_err(|source| StoreError::Lock { path, source })?;
        Ok(Self { _file: file })
    }

    fn open(kapi_dir: &Path, path: &Path) -> Result<File, StoreError> {
        let path = path.to_path_buf();
        let open = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
        };
        let file = match open() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(kapi_dir).map_err(|source| StoreError::Lock {
                    path: path.clone(),
                    source,
                })?;
                open().map_err(|source| StoreError::Lock {
                    path: path.clone(),
                    source,
                })?
            }
            Err(source) => return Err(StoreError::Lock { path, source }),
        };
        Ok(file)
    }
}
