//! The plain directory walk, for folders git does not list: named folders
//! outside a repository (the checker) and context files found by glob (the
//! import). Symbolic links are never followed; only regular files are
//! visited, each directory's entries in name order.

use std::path::Path;

/// What a walk leaves out.
#[derive(Debug, Clone, Copy)]
pub struct Walk<'a> {
    /// Leave out every entry whose name starts with `.`.
    pub skip_hidden: bool,
    /// Folders left out by name, wherever they are.
    pub skip_dirs: &'a [&'a str],
    /// Folders deeper than this below the start are not read.
    pub max_depth: usize,
}

impl Walk<'_> {
    /// Visit the regular files under `dir` with their path relative to
    /// `dir`, `/`-separated. Unreadable folders and names that are not
    /// UTF-8 are passed over.
    pub fn files(&self, dir: &Path, visit: &mut dyn FnMut(&str, &Path)) {
        self.walk(dir, "", 0, visit);
    }

    fn walk(&self, dir: &Path, rel: &str, depth: usize, visit: &mut dyn FnMut(&str, &Path)) {
        if depth > self.max_depth {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if self.skip_hidden && name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let child = if rel.is_empty() {
                name.to_owned()
            } else {
                format!("{rel}/{name}")
            };
            if kind.is_dir() {
                if !self.skip_dirs.contains(&name) {
                    self.walk(&entry.path(), &child, depth + 1, visit);
                }
            } else if kind.is_file() {
                visit(&child, &entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_regular_files_in_name_order_within_bounds() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for f in [
            "b.md",
            "a/x.md",
            ".hidden/h.md",
            ".h.md",
            "skip/s.md",
            "a/1/2/deep.md",
        ] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), "x").unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("a"), d.join("link")).unwrap();
        let list = |w: Walk| {
            let mut out = Vec::new();
            w.files(d, &mut |rel, abs| {
                assert_eq!(abs, d.join(rel));
                out.push(rel.to_owned());
            });
            out
        };
        let all = Walk {
            skip_hidden: false,
            skip_dirs: &["skip"],
            max_depth: usize::MAX,
        };
        assert_eq!(
            list(all),
            [".h.md", ".hidden/h.md", "a/1/2/deep.md", "a/x.md", "b.md"]
        );
        let shallow = Walk {
            skip_hidden: true,
            skip_dirs: &[],
            max_depth: 1,
        };
        assert_eq!(list(shallow), ["a/x.md", "b.md", "skip/s.md"]);
    }
}
