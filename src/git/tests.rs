//! The adapter on scripted repositories with pinned dates and an isolated
//! git configuration.

use std::path::Path;
use std::process::Command;

use super::range::FileDiff;
use super::*;

/// How long a fetch or push in these tests may take.
const T: std::time::Duration = std::time::Duration::from_secs(60);

/// Run git in `dir` with HOME and the configuration isolated and the dates
/// pinned; panics when git fails.
pub(crate) fn sh(dir: &Path, args: &[&str]) -> String {
    let home = dir.join(".test-home-unused");
    let mut cmd = Command::new("git");
    // Nothing of the shell's git (a hook's GIT_DIR, GIT_INDEX_FILE, …)
    // reaches the test's repository, nor does the test write outside it.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(name);
        }
    }
    let out = cmd
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir))
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", "2026-11-30T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-11-30T00:00:00Z")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn init(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    sh(dir, &["init", "-q", "-b", "main"]);
}

#[test]
fn worktrees_share_the_common_dir_and_bare_repositories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let main = base.join("main");
    init(&main);
    write(&main.join("a.md"), "a\n");
    sh(&main, &["add", "a.md"]);
    sh(&main, &["commit", "-q", "-m", "one"]);
    sh(&main, &["worktree", "add", "-q", "../linked"]);
    let linked = base.join("linked");
    std::fs::create_dir_all(linked.join("sub/dir")).unwrap();

    let repo = Repo::discover(&linked.join("sub/dir")).unwrap();
    assert_eq!(repo.require_work_tree().unwrap(), linked);
    assert_eq!(
        std::fs::canonicalize(repo.common_dir()).unwrap(),
        main.join(".git")
    );
    assert_eq!(
        std::fs::canonicalize(repo.git_dir()).unwrap(),
        main.join(".git/worktrees/linked")
    );
    assert_eq!(
        std::fs::canonicalize(repo.kapi_dir().parent().unwrap()).unwrap(),
        main.join(".git")
    );

    assert_eq!(
        Repo::project_root(&linked.join("sub/dir")),
        Some(linked.clone())
    );

    let outside = base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    assert_eq!(Repo::project_root(&outside), None);
    // A `.git` placeholder gix cannot open still marks a project's top.
    std::fs::create_dir_all(outside.join("p/.git")).unwrap();
    std::fs::create_dir_all(outside.join("p/q")).unwrap();
    assert_eq!(
        Repo::project_root(&outside.join("p/q")),
        Some(outside.join("p"))
    );
    assert!(matches!(
        Repo::discover(&outside),
        Err(GitError::NotARepository(_))
    ));
    assert!(Repo::discover_above(&outside.join("not/yet")).is_none());
    assert!(Repo::discover_above(&outside.join("p/q")).is_none());
    assert_eq!(
        Repo::discover_above(&main.join("not/yet"))
            .unwrap()
            .work_tree(),
        Some(main.as_path())
    );

    let bare = base.join("bare.git");
    sh(&base, &["init", "-q", "--bare", "bare.git"]);
    let repo = Repo::discover(&bare).unwrap();
    assert!(repo.work_tree().is_none());
    assert_eq!(Repo::project_root(&bare), None);
    let err = repo.files().unwrap_err();
    assert!(matches!(err, GitError::Bare(_)), "{err}");
    assert!(err.to_string().contains("needs a work tree"), "{err}");
    assert!(matches!(repo.staged_files(), Err(GitError::Bare(_))));
}

#[test]
fn files_are_tracked_and_untracked_but_not_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    init(dir);
    let excludes = dir.join("global-excludes");
    write(&excludes, "*.global\n");
    sh(
        dir,
        &["config", "core.excludesFile", excludes.to_str().unwrap()],
    );
    write(
        &dir.join(".gitignore"),
        "ignored/\n*.log\n/global-excludes\n",
    );
    write(&dir.join(".git/info/exclude"), "*.info\n");
    for f in [
        "README.md",
        "docs/a.md",
        "docs/new.md",
        "ignored/x.md",
        "tracked.log",
        "b.log",
        "c.info",
        "d.global",
        "deep/er/e.txt",
    ] {
        write(&dir.join(f), "x\n");
    }
    sh(dir, &["add", "README.md", "docs/a.md", ".gitignore"]);
    sh(dir, &["add", "-f", "tracked.log"]);
    sh(dir, &["commit", "-q", "-m", "one"]);
    // Staged but never committed, and deleted from disk while tracked.
    write(&dir.join("staged.md"), "s\n");
    sh(dir, &["add", "staged.md"]);
    std::fs::remove_file(dir.join("docs/a.md")).unwrap();
    // A nested repository is not descended into.
    init(&dir.join("nested"));
    write(&dir.join("nested/inner.md"), "n\n");
    // Nested .gitignore files, negations, and names git would quote.
    write(&dir.join("sub/.gitignore"), "*.md\n!keep.md\n");
    write(&dir.join("sub/drop.md"), "x\n");
    write(&dir.join("sub/keep.md"), "x\n");
    write(&dir.join("sub/deeper/drop.md"), "x\n");
    write(&dir.join("sub/deeper/keep.md"), "x\n");
    write(&dir.join("sp ace/ä.md"), "x\n");

    let repo = Repo::discover(dir).unwrap();
    let files = repo.files().unwrap();
    let expected = sh(
        dir,
        &[
            "-c",
            "core.quotePath=false",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
    );
    let mut expected: Vec<String> = expected
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.ends_with('/'))
        .collect();
    expected.sort();
    expected.dedup();
    assert_eq!(files, expected);
    assert_eq!(
        files,
        [
            ".gitignore",
            "README.md",
            "deep/er/e.txt",
            "docs/a.md",
            "docs/new.md",
            "sp ace/ä.md",
            "staged.md",
            "sub/.gitignore",
            "sub/deeper/keep.md",
            "sub/keep.md",
            "tracked.log"
        ]
    );
    // The untracked ones alone, as `git ls-files --others` lists them (the
    // nested repository's `nested/` entry is no file).
    let others = sh(
        dir,
        &[
            "-c",
            "core.quotePath=false",
            "ls-files",
            "--others",
            "--exclude-standard",
        ],
    );
    let mut others: Vec<String> = others
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.ends_with('/'))
        .collect();
    others.sort();
    let untracked = repo.untracked().unwrap();
    assert_eq!(untracked, others);
    assert_eq!(
        untracked,
        [
            "deep/er/e.txt",
            "docs/new.md",
            "sp ace/ä.md",
            "sub/.gitignore",
            "sub/deeper/keep.md",
            "sub/keep.md",
        ]
    );
}

#[test]
fn staged_blobs_are_capped_before_they_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    init(dir);
    write(&dir.join("small.md"), "small\n");
    write(&dir.join("big.md"), &"x".repeat(100));
    sh(dir, &["add", "small.md", "big.md"]);
    // The work tree differs from the index: the index wins.
    write(&dir.join("small.md"), "changed\n");

    let repo = Repo::discover(dir).unwrap();
    let staged = repo.staged_files().unwrap();
    let names: Vec<&str> = staged.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["big.md", "small.md"]);
    assert_eq!(
        repo.read_blob(staged[0].1, 99).unwrap(),
        Blob::TooLarge(100)
    );
    assert_eq!(
        repo.read_blob(staged[0].1, 100).unwrap(),
        Blob::Bytes("x".repeat(100).into_bytes())
    );
    assert_eq!(
        repo.read_blob(staged[1].1, 99).unwrap(),
        Blob::Bytes(b"small\n".to_vec())
    );
}

#[test]
fn a_commit_range_lists_commits_with_parents_and_line_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    init(dir);
    write(&dir.join("a.md"), "one\ntwo\nthree\n");
    sh(dir, &["add", "a.md"]);
    sh(dir, &["commit", "-q", "-m", "base"]);
    let base = sh(dir, &["rev-parse", "HEAD"]);
    write(&dir.join("a.md"), "one\nTWO\nthree\nfour\n");
    write(&dir.join("docs/b.md"), "bee\n");
    sh(dir, &["add", "a.md", "docs/b.md"]);
    sh(dir, &["commit", "-q", "-m", "second"]);
    let second = sh(dir, &["rev-parse", "HEAD"]);
    sh(dir, &["rm", "-q", "docs/b.md"]);
    sh(dir, &["commit", "-q", "-m", "third"]);
    let third = sh(dir, &["rev-parse", "HEAD"]);

    let repo = Repo::discover(dir).unwrap();
    let range = repo.commit_range(&format!("{base}..HEAD")).unwrap();
    let ids: Vec<String> = range.iter().map(|c| c.id.to_string()).collect();
    assert_eq!(ids, [third.clone(), second.clone()]);
    assert_eq!(
        range[0].parents,
        [ObjectId::from_hex(second.as_bytes()).unwrap()]
    );
    assert_eq!(
        range[1].parents,
        [ObjectId::from_hex(base.as_bytes()).unwrap()]
    );
    let line = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert_eq!(
        range[1].files,
        [
            FileDiff {
                path: "a.md".into(),
                added: line(&["TWO", "four"]),
                removed: line(&["two"]),
                opaque: false,
            },
            FileDiff {
                path: "docs/b.md".into(),
                added: line(&["bee"]),
                removed: vec![],
                opaque: false,
            },
        ]
    );
    assert_eq!(
        range[0].files,
        [FileDiff {
            path: "docs/b.md".into(),
            added: vec![],
            removed: line(&["bee"]),
            opaque: false,
        }]
    );
    // A root commit is compared with the empty tree.
    let all = repo.commit_range("HEAD").unwrap();
    assert_eq!(all.len(), 3);
    assert!(all[2].parents.is_empty());
    assert_eq!(all[2].files[0].added, line(&["one", "two", "three"]));
    assert!(repo.commit_range(&format!("{base}...HEAD")).is_err());

    // A merged range is A..B, both ends commits; anything else is refused
    // by name rather than read as all of a revision's history.
    let merged = repo.merged_range(&format!("{base}..HEAD")).unwrap();
    assert_eq!(merged.from.to_string(), base);
    assert_eq!(merged.to.to_string(), third);
    let by_walk = repo.merged_commits_where(&merged, true, &|_| true).unwrap();
    assert_eq!(by_walk, range);
    for spec in [
        String::new(),
        "HEAD".into(),
        "..HEAD".into(),
        format!("{base}.."),
        format!("{base}...HEAD"),
        format!("{base}..HEAD..HEAD"),
        "nonsense..HEAD".into(),
        format!("{base}..nonsense"),
    ] {
        let e = repo.merged_range(&spec).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("`{spec}`")) && e.contains("A..B"),
            "{spec}: {e}"
        );
    }
}

#[test]
fn push_and_fetch_through_the_one_child_process() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    sh(base, &["init", "-q", "--bare", "remote.git"]);
    let remote = base.join("remote.git");
    let (a, b) = (base.join("a"), base.join("b"));
    init(&a);
    init(&b);
    write(&a.join("f.md"), "one\n");
    sh(&a, &["add", "f.md"]);
    sh(&a, &["commit", "-q", "-m", "one"]);
    let one = sh(&a, &["rev-parse", "HEAD"]);
    sh(&a, &["update-ref", "refs/kapi/ops", &one]);

    let repo_a = Repo::discover(&a).unwrap();
    let url = remote.to_str().unwrap();
    assert_eq!(
        repo_a.push(url, "refs/kapi/ops:refs/kapi/ops", T).unwrap(),
        remote::Pushed::Accepted
    );
    assert_eq!(sh(&remote, &["rev-parse", "refs/kapi/ops"]), one);

    let repo_b = Repo::discover(&b).unwrap();
    repo_b
        .fetch(url, "+refs/kapi/ops:refs/remotes/origin/kapi/ops", T)
        .unwrap();
    assert_eq!(sh(&b, &["rev-parse", "refs/remotes/origin/kapi/ops"]), one);

    // b's own history does not descend from a's: not a fast-forward.
    write(&b.join("g.md"), "two\n");
    sh(&b, &["add", "g.md"]);
    sh(&b, &["commit", "-q", "-m", "two"]);
    let two = sh(&b, &["rev-parse", "HEAD"]);
    sh(&b, &["update-ref", "refs/kapi/ops", &two]);
    assert!(matches!(
        repo_b.push(url, "refs/kapi/ops:refs/kapi/ops", T).unwrap(),
        remote::Pushed::Rejected(_)
    ));
    assert_eq!(sh(&remote, &["rev-parse", "refs/kapi/ops"]), one);
    assert!(repo_b.fetch(url, "refs/kapi/missing:refs/x", T).is_err());
}

#[test]
fn a_remote_or_refspec_that_reads_as_an_option_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    sh(dir.path(), &["init", "-q"]);
    let repo = Repo::discover(dir.path()).unwrap();
    for (remote, refspec) in [
        ("--upload-pack=touch /tmp/kapi-pwned", "refs/kapi/ops"),
        ("origin", "--exec=touch /tmp/kapi-pwned"),
    ] {
        let err = repo.fetch(remote, refspec, T).unwrap_err().to_string();
        assert!(err.contains("is not a remote or a refspec"), "{err}");
        assert!(repo.push(remote, refspec, T).is_err());
    }
    assert!(!std::path::Path::new("/tmp/kapi-pwned").exists());
}

#[test]
fn a_shallow_clones_boundary_commit_reads_as_a_root() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    init(&origin);
    write(&origin.join("a.md"), "one\n");
    sh(&origin, &["add", "a.md"]);
    sh(&origin, &["commit", "-q", "-m", "base"]);
    write(&origin.join("a.md"), "one\ntwo\n");
    sh(&origin, &["commit", "-q", "-am", "second"]);
    let url = format!("file://{}", origin.display());
    sh(
        tmp.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let repo = Repo::discover(&tmp.path().join("shallow")).unwrap();
    let range = repo.commit_range("HEAD").unwrap();
    assert_eq!(range.len(), 1);
    assert_eq!(range[0].files[0].added, ["one", "two"]);
}

#[test]
fn a_push_is_read_as_a_new_branch_a_range_a_forced_range_or_nothing_to_count() {
    use super::range::Pushed;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    init(&dir);
    let commit = |file: &str, message: &str| {
        write(&dir.join(file), message);
        sh(&dir, &["add", file]);
        sh(&dir, &["commit", "-qm", message]);
        sh(&dir, &["rev-parse", "HEAD"])
    };
    let a = commit("a.md", "a");
    let b = commit("b.md", "b");
    // A push that rewrote b: c sits on a, beside b.
    sh(&dir, &["checkout", "-q", "-b", "side", &a]);
    let c = commit("c.md", "c");
    // History of its own.
    sh(&dir, &["checkout", "-q", "--orphan", "other"]);
    let d = commit("d.md", "d");
    let repo = Repo::discover(&dir).unwrap();
    let id = |hex: &str| ObjectId::from_hex(hex.as_bytes()).unwrap();
    let range = |from: &str, to: &str| MergedRange {
        from: id(from),
        to: id(to),
    };
    let zeros = "0".repeat(40);
    assert_eq!(repo.pushed(&zeros, &b).unwrap(), Pushed::NewBranch);
    assert_eq!(
        repo.pushed(&a, &b).unwrap(),
        Pushed::Range {
            range: range(&a, &b),
            forced: false
        }
    );
    // b was pushed over c: counted from their merge base, a.
    assert_eq!(
        repo.pushed(&c, &b).unwrap(),
        Pushed::Range {
            range: range(&a, &b),
            forced: true
        }
    );
    assert_eq!(repo.pushed(&d, &b).unwrap(), Pushed::Unrelated);
    let absent = "1234567890abcdef1234567890abcdef12345678";
    assert_eq!(repo.pushed(absent, &b).unwrap(), Pushed::BeforeMissing);
    assert!(repo.pushed(&a, absent).is_err());
}

/// The line changes of each commit of `base..HEAD` (first parents, newest
/// first) as git itself lists the changed paths and their contents, diffed
/// line by line as the range reader does: the reference the reader must
/// match whatever order it reads the commits in.
fn range_by_git(dir: &Path, base: &str) -> Vec<(String, Vec<FileDiff>)> {
    let lines = |old: &str, new: &str, tag: similar::ChangeTag| -> Vec<String> {
        let diff = similar::TextDiff::from_lines(old, new);
        diff.iter_all_changes()
            .filter(|c| c.tag() == tag)
            .map(|c| c.value().trim_end_matches(['\n', '\r']).to_owned())
            .collect()
    };
    let show = |rev: &str, path: &str| -> Option<Vec<u8>> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["cat-file", "blob", &format!("{rev}:{path}")])
            .output()
            .unwrap();
        out.status.success().then_some(out.stdout)
    };
    sh(
        dir,
        &["rev-list", "--first-parent", &format!("{base}..HEAD")],
    )
    .lines()
    .map(|commit| {
        let changed = sh(
            dir,
            &[
                "diff-tree",
                "-r",
                "--no-renames",
                "--name-only",
                "--no-commit-id",
                &format!("{commit}^"),
                commit,
            ],
        );
        let files = changed
            .lines()
            .map(|path| {
                let (old, new) = (show(&format!("{commit}^"), path), show(commit, path));
                let binary = |b: &Option<Vec<u8>>| b.as_ref().is_some_and(|b| b.contains(&0));
                if binary(&old) || binary(&new) {
                    return FileDiff {
                        path: path.into(),
                        added: vec![],
                        removed: vec![],
                        opaque: true,
                    };
                }
                let text = |b: Option<Vec<u8>>| String::from_utf8(b.unwrap_or_default()).unwrap();
                let (old, new) = (text(old), text(new));
                FileDiff {
                    path: path.into(),
                    added: lines(&old, &new, similar::ChangeTag::Insert),
                    removed: lines(&old, &new, similar::ChangeTag::Delete),
                    opaque: false,
                }
            })
            .collect();
        (commit.to_owned(), files)
    })
    .collect()
}

#[test]
fn a_range_reads_the_same_lines_whichever_way_its_packs_store_deltas() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    init(&dir);
    write(&dir.join("docs/a.md"), "# A\n");
    sh(&dir, &["add", "-A"]);
    sh(&dir, &["commit", "-q", "-m", "base"]);
    let base = sh(&dir, &["rev-parse", "HEAD"]);
    // git fast-import stores each version as a delta on the one before it
    // (the oldest is the base of each chain); a repack stores the larger,
    // newer versions whole. Pages grow, one is cut, one is binary, one is
    // deleted and written again, some commits change several files.
    let mut bodies: std::collections::BTreeMap<&str, String> = [
        ("docs/a.md", "# A\n".to_owned()),
        ("docs/deep/b.md", String::new()),
        ("src/c.rs", String::new()),
    ]
    .into();
    let mut stream = Vec::new();
    for i in 0..160u32 {
        let msg = format!("Edit {i}\n");
        stream.extend_from_slice(b"commit refs/heads/main\n");
        stream.extend(
            format!(
                "committer Ada <ada@example.com> {} +0000\n",
                1_780_000_000 + i
            )
            .bytes(),
        );
        stream.extend(format!("data {}\n{msg}", msg.len()).bytes());
        if i == 0 {
            stream.extend(format!("from {base}\n").bytes());
        }
        let mut touch = vec![["docs/a.md", "docs/deep/b.md", "src/c.rs"][i as usize % 3]];
        if i % 10 == 0 {
            touch.push("docs/deep/b.md");
        }
        touch.dedup();
        for path in touch {
            let body = bodies.get_mut(path).unwrap();
            if i % 17 == 5 {
                // Cut the first half of the page.
                let keep = body.lines().skip(body.lines().count() / 2);
                *body = keep.map(|l| format!("{l}\n")).collect();
            }
            body.push_str(&format!("Line {i} of {path}: open Quickcast.\n"));
            stream.extend(format!("M 100644 inline {path}\ndata {}\n{body}\n", body.len()).bytes());
        }
        if i % 40 == 13 {
            let bin = [b'P', 0, b'N', (i % 251) as u8];
            stream.extend(format!("M 100644 inline docs/logo.png\ndata {}\n", bin.len()).bytes());
            stream.extend_from_slice(&bin);
            stream.push(b'\n');
        }
        if i == 77 {
            stream.extend_from_slice(b"D src/c.rs\n");
            bodies.insert("src/c.rs", String::new());
        }
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["fast-import", "--quiet"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.join(".test-home-unused"))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(&stream).unwrap();
    }
    assert!(child.wait().unwrap().success());
    let spec = format!("{base}..HEAD");
    let expected = range_by_git(&dir, &base);
    assert_eq!(expected.len(), 160);
    let read = |dir: &Path| -> Vec<(String, Vec<FileDiff>)> {
        let repo = Repo::discover(dir).unwrap();
        let range = repo.merged_range(&spec).unwrap();
        repo.merged_commits_where(&range, true, &|_| true)
            .unwrap()
            .into_iter()
            .map(|c| (c.id.to_string(), c.files))
            .collect()
    };
    let as_imported = read(&dir);
    assert_eq!(as_imported, expected);
    assert!(
        Repo::discover(&dir)
            .unwrap()
            .reads_oldest_first(&spec)
            .unwrap(),
        "fast-import's chains start at the oldest version: read from there"
    );
    // A filter reads only the files it wants, the same lines.
    let repo = Repo::discover(&dir).unwrap();
    let md_only = repo
        .merged_commits_where(&repo.merged_range(&spec).unwrap(), true, &|p| {
            p.ends_with(".md")
        })
        .unwrap();
    for (c, (id, files)) in md_only.iter().zip(&expected) {
        assert_eq!(&c.id.to_string(), id);
        let wanted: Vec<&FileDiff> = files.iter().filter(|f| f.path.ends_with(".md")).collect();
        assert_eq!(c.files.iter().collect::<Vec<_>>(), wanted);
    }
    sh(
        &dir,
        &[
            "repack",
            "-q",
            "-a",
            "-d",
            "-f",
            "--depth=50",
            "--window=50",
        ],
    );
    sh(&dir, &["prune-packed"]);
    assert_eq!(read(&dir), expected);
    assert!(
        !Repo::discover(&dir)
            .unwrap()
            .reads_oldest_first(&spec)
            .unwrap(),
        "a repack keeps the newest versions whole: read newest first"
    );
}
