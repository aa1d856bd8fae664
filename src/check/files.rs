//! Which files a check reads, and reading them: the project's prose files
//! (tracked and untracked-not-ignored, filtered by the `[check]` globs),
//! named files and folders, or the index's blobs (`--staged`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::markdown::TextKind;
use crate::config::CheckConfig;

/// Files larger than this are skipped with a warning.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("invalid glob {glob:?} in [check] of kapi.toml: {message}")]
    Glob { glob: String, message: String },
    #[error("{0}: no such file or directory")]
    Missing(PathBuf),
    #[error("cannot run git {args}: {message}")]
    Git { args: String, message: String },
}

/// Where a file's bytes are.
#[derive(Debug, Clone)]
pub enum Source {
    Disk(PathBuf),
    Blob(Vec<u8>),
    /// Known to be unreadable when listed (too large a blob).
    Skipped(Skip),
}

/// One file to check: the path findings carry, and its bytes.
#[derive(Debug, Clone)]
pub struct FileRef {
    pub path: String,
    pub kind: TextKind,
    pub source: Source,
}

/// Why a file was not checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    #[error("skipped: larger than 16 MiB ({0} bytes)")]
    TooLarge(u64),
    #[error("skipped: binary")]
    Binary,
    #[error("skipped: not valid UTF-8")]
    NotUtf8,
    #[error("skipped: not a regular file")]
    NotRegular,
    #[error("skipped: cannot read: {0}")]
    Unreadable(String),
}

/// The `[check]` globs: which files are prose. Rule sources are never
/// prose: Vale vocabularies (`accept.txt` and `reject.txt` under a
/// `vocabularies/` or `Vocab/` folder) and, with
/// [`ProseFilter::with_vale_styles`], the folder `.vale.ini` names as its
/// `StylesPath`.
#[derive(Debug, Clone)]
pub struct ProseFilter {
    prose: GlobSet,
    exclude: GlobSet,
    /// Repository-relative folders holding rule sources (Vale's styles).
    rule_dirs: Vec<String>,
}

fn globset(globs: &[String]) -> Result<GlobSet, FilesError> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g).map_err(|e| FilesError::Glob {
            glob: g.clone(),
            message: e.kind().to_string(),
        })?;
        b.add(glob);
    }
    b.build().map_err(|e| FilesError::Glob {
        glob: globs.join(", "),
        message: e.to_string(),
    })
}

impl ProseFilter {
    pub fn new(cfg: &CheckConfig) -> Result<Self, FilesError> {
        Ok(ProseFilter {
            prose: globset(&cfg.prose_globs())?,
            exclude: globset(&cfg.exclude)?,
            rule_dirs: Vec::new(),
        })
    }

    /// Also leave out the folder named by `StylesPath` in the `.vale.ini`
    /// at the repository root `root`, if there is one.
    pub fn with_vale_styles(mut self, root: Option<&Path>) -> Self {
        if let Some(dir) = root
            .and_then(|r| std::fs::read_to_string(r.join(".vale.ini")).ok())
            .and_then(|ini| crate::formats::vale::styles_path(&ini))
        {
            self.rule_dirs.push(dir);
        }
        self
    }

    /// Whether a relative path (forward slashes) is prose.
    pub fn is_prose(&self, rel: &str) -> bool {
        self.prose.is_match(rel) && !self.exclude.is_match(rel) && !self.is_rule_source(rel)
    }

    /// Whether a relative path is one of kapi's rule sources: a Vale
    /// vocabulary file, or a file under Vale's styles folder.
    pub fn is_rule_source(&self, rel: &str) -> bool {
        let mut parts: Vec<&str> = rel.split('/').collect();
        let name = parts.pop().unwrap_or("");
        if matches!(name, "accept.txt" | "reject.txt")
            && parts.iter().any(|d| matches!(*d, "vocabularies" | "Vocab"))
        {
            return true;
        }
        self.rule_dirs.iter().any(|d| {
            rel.strip_prefix(d.as_str())
                .is_some_and(|r| r.starts_with('/'))
        })
    }

    pub fn is_excluded(&self, rel: &str) -> bool {
        self.exclude.is_match(rel)
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, FilesError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| FilesError::Git {
            args: args.join(" "),
            message: e.to_string(),
        })?;
    if !out.status.success() {
        let message = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(FilesError::Git {
            args: args.join(" "),
            message,
        });
    }
    Ok(out.stdout)
}

fn split_z(bytes: &[u8]) -> impl Iterator<Item = &str> {
    bytes
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .filter_map(|s| std::str::from_utf8(s).ok())
}

fn disk_file(path: String, abs: PathBuf) -> FileRef {
    let kind = TextKind::of_path(Path::new(&path));
    FileRef {
        path,
        kind,
        source: Source::Disk(abs),
    }
}

/// Tracked and untracked-not-ignored prose files of the work tree at `root`.
pub fn project_files(root: &Path, filter: &ProseFilter) -> Result<Vec<FileRef>, FilesError> {
    listed(root, root, filter)
}

/// `git ls-files` under `dir`, with repository-relative names.
fn listed(root: &Path, dir: &Path, filter: &ProseFilter) -> Result<Vec<FileRef>, FilesError> {
    let out = git(
        dir,
        &[
            "ls-files",
            "-co",
            "--exclude-standard",
            "--full-name",
            "-z",
            "--",
            ".",
        ],
    )?;
    let mut files: Vec<FileRef> = split_z(&out)
        .filter(|rel| filter.is_prose(rel))
        .map(|rel| disk_file(rel.to_string(), root.join(rel)))
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    Ok(files)
}

fn slashes(p: &Path) -> String {
    let s = p.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        s.into_owned()
    } else {
        s.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

/// The path a finding carries for `abs`: repository-relative inside `root`,
/// otherwise `named` as given.
fn report_path(root: Option<&Path>, abs: &Path, named: &Path) -> String {
    if let Some(root) = root
        && let (Ok(r), Ok(a)) = (root.canonicalize(), abs.canonicalize())
        && let Ok(rel) = a.strip_prefix(&r)
    {
        return slashes(rel);
    }
    let s = slashes(named);
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// Named files and folders (relative to `cwd`). A named file is checked
/// whatever its name; a folder expands to its prose files (respecting
/// `.gitignore` inside a repository; outside one, hidden entries are skipped).
pub fn named(
    root: Option<&Path>,
    cwd: &Path,
    paths: &[PathBuf],
    filter: &ProseFilter,
) -> Result<Vec<FileRef>, FilesError> {
    let mut out = Vec::new();
    for p in paths {
        let abs = cwd.join(p);
        let meta = std::fs::symlink_metadata(&abs).map_err(|_| FilesError::Missing(p.clone()))?;
        if meta.is_dir() {
            match root {
                Some(root)
                    if abs
                        .canonicalize()
                        .is_ok_and(|a| root.canonicalize().is_ok_and(|r| a.starts_with(r))) =>
                {
                    out.extend(listed(root, &abs, filter)?);
                }
                _ => walk(&abs, p, filter, &mut out),
            }
        } else {
            let path = report_path(root, &abs, p);
            let mut f = disk_file(path, abs);
            if !meta.is_file() {
                f.source = Source::Skipped(Skip::NotRegular);
            }
            out.push(f);
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(f.path.clone()));
    Ok(out)
}

fn walk(abs: &Path, named: &Path, filter: &ProseFilter, out: &mut Vec<FileRef>) {
    let mut stack = vec![(abs.to_path_buf(), PathBuf::new())];
    let mut found = Vec::new();
    while let Some((dir, rel)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let name = entry.file_name();
            let Some(name_s) = name.to_str() else {
                continue;
            };
            if name_s.starts_with('.') {
                continue;
            }
            let Ok(ft) = entry.file_type() else { continue };
            let child_rel = rel.join(name_s);
            if ft.is_dir() {
                stack.push((entry.path(), child_rel));
            } else if ft.is_file() && filter.is_prose(&slashes(&child_rel)) {
                let shown = named.join(&child_rel);
                let s = slashes(&shown);
                found.push(disk_file(
                    s.strip_prefix("./").map(str::to_string).unwrap_or(s),
                    entry.path(),
                ));
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    out.extend(found);
}

/// The staged prose files: index blobs at stage 0, not the working tree.
/// `only` restricts to named paths (files or folder prefixes, relative to
/// the repository root).
pub fn staged(
    root: &Path,
    filter: &ProseFilter,
    only: &[String],
) -> Result<Vec<FileRef>, FilesError> {
    let out = git(root, &["ls-files", "-s", "-z"])?;
    let mut wanted: Vec<(String, String)> = Vec::new(); // path, oid
    for rec in split_z(&out) {
        let Some((meta, path)) = rec.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split(' ');
        let (Some(mode), Some(oid), Some(stage)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if stage != "0" || !(mode == "100644" || mode == "100755") {
            continue;
        }
        let named = only.is_empty()
            || only.iter().any(|o| {
                let o = o.trim_end_matches('/');
                o.is_empty() || o == "." || path == o || path.starts_with(&format!("{o}/"))
            });
        let explicit = only.iter().any(|o| o == path);
        if named && (explicit || filter.is_prose(path)) {
            wanted.push((path.to_string(), oid.to_string()));
        }
    }
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| FilesError::Git {
            args: "cat-file --batch".into(),
            message: e.to_string(),
        })?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let oids: Vec<String> = wanted.iter().map(|w| w.1.clone()).collect();
    let read = std::thread::scope(|s| {
        s.spawn(move || {
            for oid in oids {
                if writeln!(stdin, "{oid}").is_err() {
                    break;
                }
            }
        });
        let mut r = BufReader::new(stdout);
        let mut files = Vec::with_capacity(wanted.len());
        for (path, _) in &wanted {
            let mut header = String::new();
            r.read_line(&mut header).map_err(|e| e.to_string())?;
            let size: u64 = header
                .split(' ')
                .nth(2)
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| format!("unexpected cat-file output {header:?}"))?;
            let mut buf = vec![0u8; size as usize];
            r.read_exact(&mut buf).map_err(|e| e.to_string())?;
            let mut nl = [0u8; 1];
            r.read_exact(&mut nl).map_err(|e| e.to_string())?;
            let source = if size > MAX_FILE_BYTES {
                Source::Skipped(Skip::TooLarge(size))
            } else {
                Source::Blob(buf)
            };
            files.push(FileRef {
                path: path.clone(),
                kind: TextKind::of_path(Path::new(path)),
                source,
            });
        }
        Ok::<_, String>(files)
    });
    let _ = child.wait();
    read.map_err(|message| FilesError::Git {
        args: "cat-file --batch".into(),
        message,
    })
}

/// The text of a file, or why it is skipped.
pub fn read(file: &FileRef) -> Result<String, Skip> {
    let bytes = match &file.source {
        Source::Skipped(s) => return Err(s.clone()),
        Source::Blob(b) => b.clone(),
        Source::Disk(p) => {
            let meta = std::fs::symlink_metadata(p).map_err(|e| Skip::Unreadable(e.to_string()))?;
            if !meta.is_file() {
                return Err(Skip::NotRegular);
            }
            if meta.len() > MAX_FILE_BYTES {
                return Err(Skip::TooLarge(meta.len()));
            }
            std::fs::read(p).map_err(|e| Skip::Unreadable(e.to_string()))?
        }
    };
    text(bytes)
}

/// Bytes as text: a NUL in the first 8 KiB means binary.
pub fn text(bytes: Vec<u8>) -> Result<String, Skip> {
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(Skip::Binary);
    }
    String::from_utf8(bytes).map_err(|_| Skip::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_globs_and_excludes() {
        let cfg = CheckConfig {
            exclude: vec!["vendor/**".into()],
            ..Default::default()
        };
        let f = ProseFilter::new(&cfg).unwrap();
        assert!(f.is_prose("README.md"));
        assert!(f.is_prose("docs/a/b.mdx"));
        assert!(f.is_prose("notes.txt"));
        assert!(!f.is_prose("src/main.rs"));
        assert!(!f.is_prose("vendor/x/README.md"));
    }

    #[test]
    fn vale_vocabularies_and_styles_are_not_prose() {
        let f = ProseFilter::new(&CheckConfig::default()).unwrap();
        assert!(!f.is_prose("styles/config/vocabularies/Docs/accept.txt"));
        assert!(!f.is_prose(".github/styles/Vocab/Base/reject.txt"));
        assert!(f.is_prose("vocabularies.txt"));
        assert!(f.is_prose("docs/accept.txt"));
        assert!(f.is_prose("vocabularies/notes.txt"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".vale.ini"),
            "MinAlertLevel = suggestion\nStylesPath = ./.github/styles/\n\n[*.md]\nStylesPath = other\n",
        )
        .unwrap();
        let f = f.with_vale_styles(Some(dir.path()));
        assert!(!f.is_prose(".github/styles/Custom/README.md"));
        assert!(f.is_prose(".github/stylesheet.md"));
        assert!(f.is_prose("other/a.md"));
    }

    #[test]
    fn text_skips_binary_and_invalid_utf8() {
        assert_eq!(text(b"a\0b".to_vec()), Err(Skip::Binary));
        assert_eq!(text(vec![0xff, 0xfe, b'a']), Err(Skip::NotUtf8));
        assert_eq!(text(b"ok".to_vec()).unwrap(), "ok");
    }
}
