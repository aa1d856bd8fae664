//! Which files a check reads, and reading them: the project's prose files
//! (tracked and untracked-not-ignored, filtered by the `[check]` globs),
//! named files and folders, or the index's blobs (`--staged`).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::markdown::TextKind;
use crate::config::CheckConfig;
use crate::git::walk::Walk;
use crate::git::{Blob, GitError, ObjectId, Repo};

/// Files larger than this are skipped with a warning.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("invalid glob {glob:?} in [check] of kapi.toml: {message}")]
    Glob { glob: String, message: String },
    #[error("{0}: no such file or directory")]
    Missing(PathBuf),
    #[error(transparent)]
    Git(#[from] GitError),
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
    /// The `TokenIgnores` and `BlockIgnores` of the `.vale.ini` sections
    /// naming the file: their matches are not prose.
    pub ignores: Option<Ignores>,
}

/// Regular expressions whose matches in a file are not prose.
pub type Ignores = std::sync::Arc<[std::sync::Arc<fancy_regex::Regex>]>;

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
    formats: Formats,
}

/// Which format a file is: the first `[[check.formats]]` entry whose globs
/// match its path names it; otherwise its extension decides
/// ([`TextKind::of_path`]). The one answer to "which format is this path"
/// for the check, usage and merge signals alike.
#[derive(Debug, Clone, Default)]
pub struct Formats {
    named: Vec<(GlobSet, TextKind)>,
}

impl Formats {
    pub fn new(cfg: &CheckConfig) -> Result<Self, FilesError> {
        let named = cfg
            .formats
            .iter()
            .map(|f| Ok((globset(&f.files)?, f.format)))
            .collect::<Result<_, FilesError>>()?;
        Ok(Formats { named })
    }

    /// The format of a repository-relative path (forward slashes).
    pub fn of(&self, rel: &str) -> TextKind {
        self.named
            .iter()
            .find(|(g, _)| g.is_match(rel))
            .map_or_else(|| TextKind::of_path(Path::new(rel)), |(_, k)| *k)
    }
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
            formats: Formats::new(cfg)?,
        })
    }

    /// The format of a relative path ([`Formats::of`]).
    pub fn format_of(&self, rel: &str) -> TextKind {
        self.formats.of(rel)
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
}

/// What the checker needs from a repository: its work tree's files and its
/// index. [`crate::git::Repo`] is the real one; tests can hold files in
/// memory.
pub trait Worktree {
    /// The top of the work tree.
    fn root(&self) -> &Path;
    /// Tracked and untracked-not-ignored files (`git ls-files --cached
    /// --others --exclude-standard`), repository-relative with forward
    /// slashes.
    fn files(&self) -> Result<Vec<String>, FilesError>;
    /// The index's stage-0 regular files: path and blob id.
    fn staged(&self) -> Result<Vec<(String, ObjectId)>, FilesError>;
    /// A staged blob's bytes, or only its size when it is over `max` bytes
    /// (nothing is allocated for it).
    fn read_staged(&self, id: ObjectId, max: u64) -> Result<Blob, FilesError>;
}

impl Worktree for Repo {
    fn root(&self) -> &Path {
        self.work_tree().unwrap_or_else(|| self.git_dir())
    }

    fn files(&self) -> Result<Vec<String>, FilesError> {
        Ok(Repo::files(self)?)
    }

    fn staged(&self) -> Result<Vec<(String, ObjectId)>, FilesError> {
        Ok(self.staged_files()?)
    }

    fn read_staged(&self, id: ObjectId, max: u64) -> Result<Blob, FilesError> {
        Ok(self.read_blob(id, max)?)
    }
}

fn disk_file(path: String, abs: PathBuf, formats: &Formats) -> FileRef {
    let kind = formats.of(&path);
    FileRef {
        path,
        kind,
        source: Source::Disk(abs),
        ignores: None,
    }
}

/// Tracked and untracked-not-ignored prose files of the work tree.
pub fn project_files(wt: &dyn Worktree, filter: &ProseFilter) -> Result<Vec<FileRef>, FilesError> {
    listed(wt, "", filter)
}

/// The work tree's files under the repository-relative folder `prefix`
/// (`""`: all of them).
fn listed(
    wt: &dyn Worktree,
    prefix: &str,
    filter: &ProseFilter,
) -> Result<Vec<FileRef>, FilesError> {
    Ok(select(&wt.files()?, wt.root(), prefix, filter))
}

/// The prose files of a work tree's listing under `prefix`.
fn select(all: &[String], root: &Path, prefix: &str, filter: &ProseFilter) -> Vec<FileRef> {
    let mut files: Vec<FileRef> = all
        .iter()
        .filter(|rel| {
            prefix.is_empty() || rel.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'))
        })
        .filter(|rel| filter.is_prose(rel))
        .map(|rel| disk_file(rel.clone(), root.join(rel), &filter.formats))
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    files
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
    // A file that is not there (standard input's name) is placed by its
    // folder.
    let placed = abs.canonicalize().ok().or_else(|| {
        let dir = abs.parent()?.canonicalize().ok()?;
        Some(dir.join(abs.file_name()?))
    });
    if let Some(root) = root
        && let (Ok(r), Some(a)) = (root.canonicalize(), placed)
        && let Ok(rel) = a.strip_prefix(&r)
    {
        return slashes(rel);
    }
    let s = slashes(named);
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// Standard input, checked as the file `name` (relative to `cwd`; it need
/// not exist): its kind by its extension, its path as a named file's.
/// Without a name it is `-`, read as Markdown. `bytes` holds at most
/// [`MAX_FILE_BYTES`] + 1 bytes: one more says it was larger.
pub fn stdin_file(
    root: Option<&Path>,
    cwd: &Path,
    name: Option<&Path>,
    bytes: Vec<u8>,
    filter: &ProseFilter,
) -> FileRef {
    let source = if bytes.len() as u64 > MAX_FILE_BYTES {
        Source::Skipped(Skip::TooLarge(bytes.len() as u64))
    } else {
        Source::Blob(bytes)
    };
    let Some(name) = name else {
        return FileRef {
            path: "-".into(),
            kind: TextKind::Markdown,
            source,
            ignores: None,
        };
    };
    let path = report_path(root, &cwd.join(name), name);
    FileRef {
        kind: filter.format_of(&path),
        path,
        source,
        ignores: None,
    }
}

/// Named files and folders (relative to `cwd`). A named file is checked
/// whatever its name; a folder expands to its prose files (respecting
/// `.gitignore` inside a repository; outside one, hidden entries are skipped).
pub fn named(
    wt: Option<&dyn Worktree>,
    cwd: &Path,
    paths: &[PathBuf],
    filter: &ProseFilter,
) -> Result<Vec<FileRef>, FilesError> {
    let root = wt.map(|w| w.root());
    let mut out = Vec::new();
    // The work tree is listed once, however many folders are named.
    let mut listing: Option<Vec<String>> = None;
    for p in paths {
        let abs = cwd.join(p);
        let meta = std::fs::symlink_metadata(&abs).map_err(|_| FilesError::Missing(p.clone()))?;
        if meta.is_dir() {
            let inside = wt.and_then(|wt| {
                let (a, r) = (abs.canonicalize().ok()?, wt.root().canonicalize().ok()?);
                let rel = a.strip_prefix(&r).ok()?;
                Some((wt, slashes(rel)))
            });
            match inside {
                Some((wt, prefix)) => {
                    if listing.is_none() {
                        listing = Some(wt.files()?);
                    }
                    let all = listing.as_deref().unwrap_or_default();
                    out.extend(select(all, wt.root(), &prefix, filter));
                }
                None => walk(&abs, p, filter, &mut out),
            }
        } else {
            let path = report_path(root, &abs, p);
            let mut f = disk_file(path, abs, &filter.formats);
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

/// A folder outside the work tree: every prose file under it, hidden
/// entries left out, named as `named` joined with its path below it.
fn walk(abs: &Path, named: &Path, filter: &ProseFilter, out: &mut Vec<FileRef>) {
    let mut found = Vec::new();
    let plain = Walk {
        skip_hidden: true,
        skip_dirs: &[],
        max_depth: usize::MAX,
    };
    plain.files(abs, &mut |rel, file| {
        if filter.is_prose(rel) {
            let s = slashes(&named.join(rel));
            found.push(disk_file(
                s.strip_prefix("./").map(str::to_string).unwrap_or(s),
                file.to_path_buf(),
                &filter.formats,
            ));
        }
    });
    found.sort_by(|a, b| a.path.cmp(&b.path));
    out.extend(found);
}

/// The staged prose files: index blobs at stage 0, not the working tree.
/// `only` restricts to named paths (files or folder prefixes, relative to
/// the repository root).
pub fn staged(
    wt: &dyn Worktree,
    filter: &ProseFilter,
    only: &[String],
) -> Result<Vec<FileRef>, FilesError> {
    let mut files = Vec::new();
    for (path, id) in wt.staged()? {
        let path = path.as_str();
        let named = only.is_empty()
            || only.iter().any(|o| {
                let o = o.trim_end_matches('/');
                o.is_empty() || o == "." || path == o || path.starts_with(&format!("{o}/"))
            });
        let explicit = only.iter().any(|o| o == path);
        if !(named && (explicit || filter.is_prose(path))) {
            continue;
        }
        let source = match wt.read_staged(id, MAX_FILE_BYTES)? {
            Blob::Bytes(bytes) => Source::Blob(bytes),
            Blob::TooLarge(size) => Source::Skipped(Skip::TooLarge(size)),
        };
        files.push(FileRef {
            path: path.to_owned(),
            kind: filter.format_of(path),
            source,
            ignores: None,
        });
    }
    Ok(files)
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

    /// A work tree held in memory: the checker needs no repository.
    struct Memory {
        root: PathBuf,
        files: Vec<&'static str>,
        staged: Vec<(&'static str, u8, u64)>,
    }

    impl Worktree for Memory {
        fn root(&self) -> &Path {
            &self.root
        }
        fn files(&self) -> Result<Vec<String>, FilesError> {
            Ok(self.files.iter().map(|f| f.to_string()).collect())
        }
        fn staged(&self) -> Result<Vec<(String, ObjectId)>, FilesError> {
            Ok(self
                .staged
                .iter()
                .map(|(p, n, _)| (p.to_string(), ObjectId::from_bytes_or_panic(&[*n; 20])))
                .collect())
        }
        fn read_staged(&self, id: ObjectId, max: u64) -> Result<Blob, FilesError> {
            let (_, _, size) = self
                .staged
                .iter()
                .find(|s| s.1 == id.as_bytes()[0])
                .unwrap();
            Ok(if *size > max {
                Blob::TooLarge(*size)
            } else {
                Blob::Bytes(vec![b'a'; *size as usize])
            })
        }
    }

    #[test]
    fn listing_and_staged_blobs_through_a_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        let wt = Memory {
            root: root.clone(),
            files: vec![
                "src/main.rs",
                "docs/b.md",
                "README.md",
                "docs/a.md",
                "docsx.md",
            ],
            staged: vec![
                ("big.md", 1, MAX_FILE_BYTES + 1),
                ("a.md", 2, 3),
                ("c.rs", 3, 1),
            ],
        };
        let filter = ProseFilter::new(&CheckConfig::default()).unwrap();
        let paths = |files: Vec<FileRef>| files.into_iter().map(|f| f.path).collect::<Vec<_>>();
        assert_eq!(
            paths(project_files(&wt, &filter).unwrap()),
            ["README.md", "docs/a.md", "docs/b.md", "docsx.md"]
        );
        let named_dir = named(Some(&wt), &root, &[PathBuf::from("docs")], &filter).unwrap();
        assert_eq!(paths(named_dir), ["docs/a.md", "docs/b.md"]);
        let staged_files = staged(&wt, &filter, &[]).unwrap();
        assert_eq!(paths(staged_files.clone()), ["big.md", "a.md"]);
        assert!(matches!(
            staged_files[0].source,
            Source::Skipped(Skip::TooLarge(n)) if n == MAX_FILE_BYTES + 1
        ));
        assert_eq!(read(&staged_files[1]).unwrap(), "aaa");
        let only = staged(&wt, &filter, &["c.rs".into()]).unwrap();
        assert_eq!(paths(only), ["c.rs"]);
    }
}
