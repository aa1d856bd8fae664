//! The short advisory lock writers take around an append. The kernel
//! releases it when a process dies, so a crash never leaves it stale.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::StoreError;

pub struct Lock {
    _file: File,
}

impl Lock {
    pub fn acquire(kapi_dir: &Path) -> Result<Self, StoreError> {
        let path = kapi_dir.join("lock");
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
        file.lock()
            .map_err(|source| StoreError::Lock { path, source })?;
        Ok(Self { _file: file })
    }
}
