//! Listing the vault's Markdown files: regular `.md` files under the root,
//! sorted by relative path. Symlinks, hidden entries and anything that is
//! not a regular file or directory are excluded.

use std::path::{Path, PathBuf};

const MAX_DEPTH: usize = 32;
const MAX_FILES: usize = 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("the vault root {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("cannot list {path}: {source}")]
    List {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the vault holds more than {MAX_FILES} files")]
    TooMany,
}

/// Relative `/`-separated paths of the vault's Markdown files, sorted.
pub fn markdown_files(root: &Path) -> Result<Vec<String>, ScanError> {
    if !root.is_dir() {
        return Err(ScanError::NotADirectory(root.to_path_buf()));
    }
    let mut out = Vec::new();
    walk(root, "", 0, &mut out)?;
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) -> Result<(), ScanError> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let list = |source| ScanError::List {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(list)? {
        let entry = entry.map_err(list)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(list)?;
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if kind.is_dir() {
            walk(&entry.path(), &rel, depth + 1, out)?;
        } else if kind.is_file() && name.ends_with(".md") {
            if out.len() >= MAX_FILES {
                return Err(ScanError::TooMany);
            }
            out.push(rel);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_regular_markdown_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("b/.hidden")).unwrap();
        std::fs::write(root.join("b/x.md"), "").unwrap();
        std::fs::write(root.join("a.md"), "").unwrap();
        std::fs::write(root.join("a.txt"), "").unwrap();
        std::fs::write(root.join("b/.hidden/y.md"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("a.md"), root.join("link.md")).unwrap();
        assert_eq!(markdown_files(root).unwrap(), ["a.md", "b/x.md"]);
    }
}
