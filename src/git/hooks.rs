//! What the hooks ask of git: where the hooks folder is (as `git rev-parse
//! --git-path hooks` says, so `core.hooksPath`, husky and linked worktrees
//! are respected), which tracked files changed since a commit, and staging
//! a regenerated artifact. All three through the `git` program
//! ([`super::remote`] spawns it): gix resolves neither `core.hooksPath`
//! nor a diff of the work tree against a commit without features kapi
//! does not build, and it does not stage. The untracked files come from
//! the gix directory walk ([`Repo::untracked`]), as the checker's do.

use std::path::PathBuf;

use super::remote::run;
use super::{GitError, Repo};

/// git's empty tree: the base of a repository with no commit yet.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

fn output(repo: &Repo, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let out = run(repo.run_dir(), args)?;
    if !out.status.success() {
        return Err(GitError::Command {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out.stdout)
}

/// NUL-separated paths, those that are UTF-8.
fn paths(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .filter_map(|p| std::str::from_utf8(p).ok().map(str::to_owned))
}

impl Repo {
    /// The folder git runs this repository's hooks from: `core.hooksPath`
    /// when set (relative to the work tree), else `<common dir>/hooks`.
    pub fn hooks_dir(&self) -> Result<PathBuf, GitError> {
        let out = output(self, &["rev-parse", "--git-path", "hooks"])?;
        let text = String::from_utf8_lossy(&out)
            .trim_end_matches('\n')
            .to_owned();
        Ok(self.run_dir().join(text))
    }

    /// The commit HEAD names, if any.
    pub fn head_commit(&self) -> Option<String> {
        self.gix().head_id().ok().map(|id| id.to_string())
    }

    /// The tracked files whose work-tree content differs from `base` (a
    /// commit id; HEAD when `None`): repository-relative, sorted. Deleted
    /// files are listed too; a caller that reads them checks they exist.
    pub fn changed_since(&self, base: Option<&str>) -> Result<Vec<String>, GitError> {
        self.require_work_tree()?;
        let base = match base {
            Some(b) if b.len() >= 7 && b.bytes().all(|c| c.is_ascii_hexdigit()) => b.to_owned(),
            Some(b) => {
                return Err(GitError::Command {
                    args: "diff".into(),
                    message: format!("{b:?} is not a commit id"),
                });
            }
            None => self.head_commit().unwrap_or_else(|| EMPTY_TREE.to_owned()),
        };
        let mut all: Vec<String> = paths(&output(
            self,
            &["diff", "--name-only", "-z", "--no-renames", &base, "--"],
        )?)
        .collect();
        all.sort();
        all.dedup();
        Ok(all)
    }
}

impl Repo {
    /// `git add -- <path>` (a path relative to the work tree): stage a file
    /// a hook regenerated.
    pub fn stage(&self, path: &str) -> Result<(), GitError> {
        output(self, &["add", "--", path]).map(|_| ())
    }
}
