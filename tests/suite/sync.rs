//! Sync between machines through a bare remote, merge signals from merged
//! ranges, and settling: scripted repositories with pinned dates.

use std::path::{Path, PathBuf};

use crate::common::{Run, TestEnv, Transcript, shell_words};
use serde_json::Value;

const POINTS: &str = r#"
[[points]]
paths = ["docs/help/**"]
axes = { section = "help" }

[[points]]
paths = ["docs/legal/**"]
axes = { section = "legal" }
"#;

/// A bare remote and two clones of one project: `a` (Ada) pushed the first
/// commit, `b` (Bob) cloned it. The remote is in `a`'s root.
pub(super) struct Pair {
    pub(super) remote: PathBuf,
    pub(super) a: TestEnv,
    pub(super) b: TestEnv,
}

pub(super) fn pair() -> Pair {
    let a = TestEnv::new();
    let remote = a.bare_remote();
    a.write("kapi.toml", POINTS);
    a.write(
        "docs/help/start.md",
        "# Start\n\nOpen Quick cast from the menu.\n",
    );
    a.write(
        "docs/legal/terms.md",
        "# Terms\n\nQuick cast is a trademark.\n",
    );
    a.publish(&remote);
    let b = TestEnv::clone_of(&remote, "Bob", "bob@example.com");
    Pair { remote, a, b }
}

impl Pair {
    /// A transcript knowing both clones: `$` is a, `[ROOT2]/work$` b.
    fn transcript(&self) -> Transcript {
        let mut t = Transcript::new();
        t.knows(&self.a).knows(&self.b);
        t
    }
}

/// [`on_b`], recorded.
fn on_b_in(t: &mut Transcript, pair: &Pair, args: &[&str]) -> Run {
    let line = format!(
        "KAPI_NOW=2026-11-30T10:00:00Z KAPI_SEED=11 kapi {}",
        shell_words(args)
    );
    t.step(&pair.b, &line, on_b(pair, args))
}

/// b runs on a later clock and another seed: another machine.
fn on_b(pair: &Pair, args: &[&str]) -> Run {
    pair.b
        .kapi_cmd(args)
        .env("KAPI_NOW", "2026-11-30T10:00:00Z")
        .env("KAPI_SEED", "11")
        .output()
        .unwrap()
        .into()
}

fn suggest(env: &TestEnv, session: &str, path: &str) -> String {
    let run = env
        .agent_term(
            session,
            "Quickcast",
            "Quick cast",
            &["--path", path, "--json"],
        )
        .ok();
    let op: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    op["id"].as_str().unwrap().to_owned()
}

fn statuses(env: &TestEnv) -> Vec<(String, String)> {
    env.log()
        .into_iter()
        .filter(|l| !l["status"].is_null())
        .map(|l| {
            (
                l["id"].as_str().unwrap().to_owned(),
                l["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn status_of(env: &TestEnv, id: &str) -> String {
    statuses(env)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, s)| s)
        .unwrap_or_default()
}

fn tip(git_dir_or_work: &Path) -> String {
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(if git_dir_or_work.join(".git").exists() {
            git_dir_or_work.join(".git")
        } else {
            git_dir_or_work.to_path_buf()
        })
        .args(["rev-parse", "--verify", "-q", "refs/kapi/ops"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Each clone's agent suggests Quickcast in help and legal pages; Bob
/// corrects the help page. Syncing in `order` (a clone name per step).
fn converge(order: &[char]) -> (Pair, Vec<String>) {
    let p = pair();
    let help = suggest(&p.a, "a1", "docs/help/start.md");
    let legal = suggest(&p.a, "a1", "docs/legal/terms.md");
    let seen_by_b = {
        let run =
            p.b.kapi_cmd(&[
                "context",
                "note",
                "--term",
                "Flowkit",
                "--instead-of",
                "Flow kit",
                "--path",
                "docs/help/start.md",
                "--json",
            ])
            .env("CLAUDECODE", "1")
            .env("KAPI_SESSION", "b1")
            .env("KAPI_NOW", "2026-11-30T10:00:00Z")
            .env("KAPI_SEED", "11")
            .output()
            .unwrap();
        let op: Value = serde_json::from_slice(&run.stdout).unwrap();
        op["id"].as_str().unwrap().to_owned()
    };
    on_b(
        &p,
        &[
            "context",
            "note",
            "--from",
            "Open Quick cast from the menu.",
            "--to",
            "Open Quickcast from the menu.",
            "--path",
            "docs/help/start.md",
        ],
    )
    .ok();
    for &who in order {
        match who {
            'a' => p.a.kapi(&["context", "sync"]).ok(),
            _ => on_b(&p, &["context", "sync"]).ok(),
        };
    }
    (p, vec![help, legal, seen_by_b])
}

#[test]
fn two_clones_converge_in_either_order_and_a_correction_settles_only_where_it_was_seen() {
    let mut folds = Vec::new();
    for order in [['a', 'b', 'a'], ['b', 'a', 'b']] {
        let (p, ids) = converge(&order);
        let (help, legal, flowkit) = (&ids[0], &ids[1], &ids[2]);
        let tips = [tip(p.a.path()), tip(p.b.path()), tip(&p.remote)];
        assert_eq!(tips[0], tips[1], "{order:?}: both clones hold one tip");
        assert_eq!(tips[0], tips[2], "{order:?}: and so does the remote");
        let (sa, sb) = (statuses(&p.a), statuses(&p.b));
        assert_eq!(sa, sb, "{order:?}: the same statuses on both");
        assert_eq!(status_of(&p.a, help), "established", "{order:?}");
        assert_eq!(status_of(&p.a, legal), "suggested", "{order:?}");
        assert_eq!(status_of(&p.a, flowkit), "suggested", "{order:?}");
        // The establishment is recorded once, by the tool settle.
        let log = p.a.log();
        let establishes: Vec<&Value> = log.iter().filter(|l| l["kind"] == "establish").collect();
        assert_eq!(establishes.len(), 1, "{order:?}: {establishes:?}");
        assert_eq!(establishes[0]["target"], help.as_str());
        assert_eq!(establishes[0]["actor"]["name"], "settle");
        // The help page's rule now fails a check; the legal page's advises.
        let check = p.a.kapi(&["check", "--format", "json"]).code(1).json();
        let findings = check["findings"].as_array().unwrap();
        let failing: Vec<&str> = findings
            .iter()
            .filter(|f| f["fails"] == true)
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(failing, ["docs/help/start.md"], "{check}");
        let subjects: Vec<(String, String)> =
            sa.into_iter().filter(|(id, _)| ids.contains(id)).collect();
        folds.push(subjects);
    }
    assert_eq!(folds[0], folds[1], "both orders reach the same answer");
}

#[test]
fn a_merged_range_establishes_a_scoped_suggestion_and_the_same_range_twice_adds_nothing() {
    let p = pair();
    let help = suggest(&p.a, "a1", "docs/help/start.md");
    let legal = suggest(&p.a, "a1", "docs/legal/terms.md");
    p.a.git(&["checkout", "-q", "-b", "wording"]);
    p.a.write(
        "docs/legal/terms.md",
        "# Terms\n\nQuickcast is a trademark.\n",
    );
    p.a.git(&["commit", "-qam", "Fix the product name"]);
    p.a.git(&["checkout", "-q", "main"]);
    p.a.git(&[
        "merge",
        "-q",
        "--no-ff",
        "wording",
        "-m",
        "Merge pull request #412 from ada/wording",
    ]);
    // An agent may not record what a merge to the default branch says.
    p.a.agent(
        "a1",
        &[
            "context",
            "sync",
            "--no-push",
            "--merged",
            "ORIG_HEAD..HEAD",
        ],
    )
    .code(4);
    let ci = |args: &[&str]| -> Run {
        p.a.kapi_cmd(args)
            .env("KAPI_TOOL", "ci")
            .output()
            .unwrap()
            .into()
    };
    let run = ci(&["context", "sync", "--merged", "ORIG_HEAD..HEAD", "--json"]).ok();
    let report = run.json();
    let signals = report["merged"]["signals"].as_array().unwrap();
    assert_eq!(signals.len(), 1, "{report}");
    assert_eq!(signals[0]["target"], legal.as_str());
    assert_eq!(signals[0]["pr"], "412");
    assert_eq!(signals[0]["preferred"], 1);
    assert_eq!(signals[0]["avoided"], 1);
    assert_eq!(status_of(&p.a, &legal), "established");
    assert_eq!(
        status_of(&p.a, &help),
        "suggested",
        "the help pages saw no merge"
    );
    // The rule established, "merged in #412".
    let mut t = p.transcript();
    t.kapi(&p.a, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
    // The signal is the CI tool's; the same range again records nothing.
    let before = p.a.log().len();
    let again = ci(&["context", "sync", "--merged", "ORIG_HEAD..HEAD", "--json"]).ok();
    let after = p.a.log().len();
    assert_eq!(before, after, "{}", again.stdout);
    // The other clone sees the same after one sync.
    on_b(&p, &["context", "sync"]).ok();
    assert_eq!(status_of(&p.b, &legal), "established");
}

#[test]
fn a_merged_range_that_establishes_refreshes_only_the_rules_files_there_are() {
    let p = pair();
    let legal = suggest(&p.a, "a1", "docs/legal/terms.md");
    let help = suggest(&p.a, "a1", "docs/help/start.md");
    let ci = |args: &[&str]| -> Run {
        p.a.kapi_cmd(args)
            .env("KAPI_TOOL", "ci")
            .output()
            .unwrap()
            .into()
    };
    let merge = |path: &str, text: &str, subject: &str| -> Value {
        let before = p.a.git(&["rev-parse", "HEAD"]).trim().to_owned();
        p.a.write(path, text);
        p.a.git(&["commit", "-qam", subject]);
        let range = format!("{before}..HEAD");
        ci(&["context", "sync", "--no-push", "--merged", &range, "--json"])
            .ok()
            .json()
    };
    // No rules file: none is made, and the rule is established all the same.
    let report = merge(
        "docs/legal/terms.md",
        "# Terms\n\nQuickcast is a trademark.\n",
        "Fix the product name",
    );
    assert_eq!(
        report["established"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert_eq!(report["refreshed"], serde_json::json!([]), "{report}");
    assert_eq!(status_of(&p.a, &legal), "established");
    assert!(!p.a.path().join("AGENTS.md").exists());
    assert!(!p.a.path().join("CLAUDE.md").exists());
    // With one: the sync that establishes a rule writes it there.
    p.a.write("AGENTS.md", "# Agents\n\nOur own words.\n");
    let report = merge(
        "docs/help/start.md",
        "# Start\n\nOpen Quickcast from the menu.\n",
        "Fix the product name in help",
    );
    assert_eq!(
        report["established"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert_eq!(status_of(&p.a, &help), "established");
    assert_eq!(report["refreshed"].as_array().unwrap().len(), 1, "{report}");
    let agents = std::fs::read_to_string(p.a.path().join("AGENTS.md")).unwrap();
    assert!(
        agents.starts_with("# Agents\n\nOur own words.\n"),
        "{agents}"
    );
    assert!(agents.contains("Quickcast"), "{agents}");
    assert!(!p.a.path().join("CLAUDE.md").exists());
}

#[test]
fn a_push_race_ends_with_both_operations_on_the_remote() {
    let p = pair();
    let first = suggest(&p.a, "a1", "docs/help/start.md");
    p.a.kapi(&["context", "sync"]).ok();
    on_b(&p, &["context", "sync"]).ok();
    let from_a = suggest(&p.a, "a2", "docs/legal/terms.md");
    let from_b = {
        let run = on_b(
            &p,
            &["context", "note", "Write for administrators", "--json"],
        )
        .ok();
        let op: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        op["id"].as_str().unwrap().to_owned()
    };
    // Between b's fetch and its push, a pushes: b's first push is refused
    // (not a fast-forward), and b fetches, merges and pushes again.
    let kapi = crate::common::kapi_bin();
    let marker = p.b.join(".git/raced");
    let hook = format!(
        "#!/bin/sh\nif [ ! -e '{marker}' ]; then touch '{marker}'; \
         (cd '{a}' && unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE && KAPI_NOW=2026-11-30T09:30:00Z '{kapi}' context sync >'{marker}.log' 2>&1); fi\nexit 0\n",
        marker = marker.display(),
        a = p.a.path().display(),
        kapi = kapi.display()
    );
    p.b.write(".git/hooks/pre-push", &hook);
    make_executable(&p.b.join(".git/hooks/pre-push"));
    let run = on_b(&p, &["context", "sync", "--json"]).ok();
    assert!(
        run.json()["attempts"].as_u64().unwrap() >= 2,
        "{}",
        run.stdout
    );
    p.a.kapi(&["context", "sync"]).ok();
    assert_eq!(tip(p.a.path()), tip(&p.remote));
    assert_eq!(tip(p.b.path()), tip(&p.remote));
    let held: Vec<String> = statuses(&p.a).into_iter().map(|(id, _)| id).collect();
    for id in [&first, &from_a, &from_b] {
        assert!(held.contains(id), "{id} is on the remote: {held:?}");
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn an_agent_may_fetch_but_not_push() {
    let p = pair();
    suggest(&p.a, "a1", "docs/help/start.md");
    // Refused, offering --no-push.
    let mut t = p.transcript();
    t.agent(&p.a, "a1", &["context", "sync"]).code(4);
    assert_eq!(tip(&p.remote), "", "nothing was pushed");
    t.agent(&p.a, "a1", &["context", "sync", "--no-push"]).ok();
    // A person pushes; the agent on the other clone reads it.
    t.kapi(&p.a, &["context", "sync"]).ok();
    t.agent(&p.b, "b1", &["context", "sync", "--no-push"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn remotes_that_fail_lose_nothing_local_and_say_why() {
    let p = pair();
    let id = suggest(&p.a, "a1", "docs/help/start.md");
    // A remote that does not exist. Its refusal here and the one of a
    // remote refusing the ref below quote git's own messages, whose
    // wording is the installed git's: asserted, not snapshotted.
    let run =
        p.a.kapi(&["context", "sync", "--remote", "nowhere"])
            .code(6);
    assert!(run.stderr.contains("cannot fetch"), "{}", run.stderr);
    let run =
        p.a.kapi(&["context", "sync", "--remote", "--upload-pack=touch"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(status_of(&p.a, &id), "suggested");
    // A remote without the ref yet takes ours.
    let mut t = p.transcript();
    t.kapi(&p.a, &["context", "sync"]).ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(tip(p.a.path()), tip(&p.remote));
    // A remote that refuses refs/kapi/*.
    let hook = p.remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'refs/kapi is not welcome here' >&2\nexit 1\n",
    )
    .unwrap();
    make_executable(&hook);
    suggest(&p.a, "a2", "docs/legal/terms.md");
    let run = p.a.kapi(&["context", "sync"]).code(6);
    assert!(
        run.stderr.contains("refused refs/kapi/ops"),
        "{}",
        run.stderr
    );
    assert_eq!(statuses(&p.a).len(), 2, "both suggestions are still here");
}

/// Write `lines` into the remote's log as one more commit on its tip, as
/// another tool (or an attacker) could.
fn push_raw_lines(p: &Pair, lines: &[(&str, String)]) {
    // Hermetic git (TestEnv's), pointed at the bare remote.
    let remote = p.remote.to_str().unwrap();
    let git = |args: &[&str], input: Option<&str>| -> String {
        let mut full = vec![
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "--git-dir",
            remote,
        ];
        full.extend_from_slice(args);
        match input {
            Some(input) => p.a.git_stdin(&full, input.as_bytes()),
            None => p.a.git(&full),
        }
    };
    let parent = git(&["rev-parse", "refs/kapi/ops"], None);
    let mut tree_listing = git(&["ls-tree", &format!("{parent}^{{tree}}")], None);
    for (shard, line) in lines {
        let (outer, inner) = shard.split_at(1);
        let blob = git(
            &["hash-object", "-w", "--stdin"],
            Some(&format!("{line}\n")),
        );
        let inner_tree = git(&["mktree"], Some(&format!("100644 blob {blob}\t{inner}\n")));
        tree_listing = tree_listing
            .lines()
            .filter(|l| !l.ends_with(&format!("\t{outer}")))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            + &format!("040000 tree {inner_tree}\t{outer}\n");
    }
    let tree = git(&["mktree"], Some(&tree_listing));
    let commit = git(&["commit-tree", &tree, "-p", &parent, "-m", "raw"], None);
    git(&["update-ref", "refs/kapi/ops", &commit], None);
}

#[test]
fn malformed_and_future_dated_operations_fetched_are_named_and_not_folded() {
    let p = pair();
    let id = suggest(&p.a, "a1", "docs/help/start.md");
    p.a.kapi(&["context", "sync"]).ok();
    // A line that is no operation, and a keep dated 2059 that would
    // establish the suggestion.
    let future = kapi::ops::OpId::mint(
        kapi::ops::id::EPOCH_MS + 33 * 365 * 86_400_000,
        0x1234_5678_9abc,
        None,
    )
    .unwrap();
    let keep = serde_json::json!({
        "v": 1, "id": future.as_str(), "at": future.instant(), "project": "remote",
        "actor": {"kind": "person", "name": "mallory@example.com"},
        "kind": "context.keep", "target": id,
    });
    let f = future.as_str();
    push_raw_lines(
        &p,
        &[
            ("zz", "{\"this is\": not json".to_owned()),
            (&f[8..10], keep.to_string()),
        ],
    );
    // The keep dated 2059 is held back, the line named; the doctor names
    // the keep.
    let mut t = p.transcript();
    t.kapi(&p.a, &["context", "sync"]).ok();
    assert_eq!(
        status_of(&p.a, &id),
        "suggested",
        "the future keep is not folded"
    );
    t.kapi(&p.a, &["store", "doctor"]);
    insta::assert_snapshot!(t.text());
}

#[test]
fn two_machines_merging_the_same_two_tips_write_the_same_commit() {
    let p = pair();
    p.a.kapi(&["context", "note", "Write for administrators"])
        .ok();
    on_b(&p, &["context", "note", "Dates are ISO 8601"]).ok();
    let (a_path, b_path) = (
        p.a.path().to_str().unwrap().to_owned(),
        p.b.path().to_str().unwrap().to_owned(),
    );
    let mut t = p.transcript();
    t.kapi(&p.a, &["context", "sync", "--no-push", "--remote", &b_path])
        .ok();
    on_b_in(
        &mut t,
        &p,
        &["context", "sync", "--no-push", "--remote", &a_path],
    )
    .ok();
    insta::assert_snapshot!(t.text());
    // b fetched a's merge commit, which already holds both: b took it.
    assert_eq!(tip(p.a.path()), tip(p.b.path()));
    // And merged independently, the two write one commit.
    let q = pair();
    q.a.kapi(&["context", "note", "Write for administrators"])
        .ok();
    on_b(&q, &["context", "note", "Dates are ISO 8601"]).ok();
    let (qa, qb) = (
        q.a.path().to_str().unwrap().to_owned(),
        q.b.path().to_str().unwrap().to_owned(),
    );
    let (a_tip, b_tip) = (tip(q.a.path()), tip(q.b.path()));
    q.a.kapi(&["context", "sync", "--no-push", "--remote", &qb])
        .ok();
    // b merges a's original tip, not a's merge: fetch from a saved copy.
    let saved = q.a.path().join("saved.git");
    q.a.git(&["init", "-q", "--bare", saved.to_str().unwrap()]);
    q.a.git(&[
        "push",
        "-q",
        saved.to_str().unwrap(),
        &format!("{a_tip}:refs/kapi/ops"),
    ]);
    on_b(
        &q,
        &[
            "context",
            "sync",
            "--no-push",
            "--remote",
            saved.to_str().unwrap(),
        ],
    )
    .ok();
    assert_ne!(tip(q.b.path()), b_tip);
    assert_eq!(tip(q.a.path()), tip(q.b.path()), "{qa} {qb}");
}

/// The objects a merge writes (the united segments, the trees above them,
/// the merge commit) go into one pack that git reads as its own: none is
/// left loose, no temporary file is left behind, and `git fsck` and
/// `git verify-pack` find the repository whole; the remote takes them
/// with the push.
#[test]
fn a_merge_writes_its_objects_as_one_pack_git_reads() {
    let p = pair();
    for n in 0..12 {
        p.a.kapi(&["context", "note", &format!("Ada's note {n}")])
            .ok();
        on_b(&p, &["context", "note", &format!("Bob's note {n}")]).ok();
    }
    p.a.kapi(&["context", "sync"]).ok();
    let packs_before = packs(p.b.path());
    let out = on_b(&p, &["context", "sync", "--json"]).ok();
    let synced: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(synced["fetched"]["joined"], "merged", "{}", out.stdout);
    let merged = tip(p.b.path());
    let tree = p.b.git(&["rev-parse", &format!("{merged}^{{tree}}")]);
    let objects = p.b.path().join(".git/objects");
    let loose = |id: &str| objects.join(&id[..2]).join(&id[2..]).exists();
    assert!(
        !loose(&merged) && !loose(&tree),
        "the merge's objects are not loose"
    );
    let new_packs: Vec<PathBuf> = packs(p.b.path())
        .into_iter()
        .filter(|pack| !packs_before.contains(pack))
        .collect();
    // The fetch's own pack (if git kept one) and the merge's.
    assert!(!new_packs.is_empty());
    let listed: String = new_packs
        .iter()
        .map(|idx| p.b.git(&["verify-pack", "-v", idx.to_str().unwrap()]))
        .collect();
    assert!(
        listed.contains(&merged) && listed.contains(&tree),
        "{listed}"
    );
    p.b.git(&["fsck", "--strict", "--no-dangling"]);
    let counted = p.b.git(&["count-objects", "-v"]);
    assert!(counted.contains("garbage: 0"), "{counted}");
    assert!(
        std::fs::read_dir(&objects)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".tmp")),
        "no temporary file is left"
    );
    // The remote took the merge with the push, and reads it whole.
    assert_eq!(tip(&p.remote), merged);
    let fsck = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&p.remote)
        .args(["fsck", "--strict", "--no-dangling"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    // And a later read in another process folds the merged log.
    let listed = p.b.kapi(&["context", "log", "--json"]).ok();
    assert_eq!(listed.stdout.matches("Ada's note").count(), 12);
    assert_eq!(listed.stdout.matches("Bob's note").count(), 12);
}

/// Two logs diverged from a shared one: each gained operations in a
/// segment both hold (the remote's older than the one held here, so no
/// checkpoint can be advanced by the merge and the fold starts over), and
/// the remote left other segments as the shared log had them (taken
/// unread). The merged log holds every operation once, and reads as a
/// fold from the start does with no checkpoint at all.
#[test]
fn a_merge_of_diverged_logs_holds_both_sides_and_reads_as_a_fresh_fold() {
    let p = pair();
    for n in 0..6 {
        p.a.kapi(&["context", "note", &format!("Shared note {n}")])
            .ok();
    }
    p.a.kapi(&["context", "sync"]).ok();
    on_b(&p, &["context", "sync"]).ok();
    // One stored line as it is (the listing does not name the project).
    let listing = p.a.git(&["ls-tree", "-r", "refs/kapi/ops"]);
    let blob = listing
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap();
    let stored = p.a.git(&["cat-file", "blob", blob]);
    let first: Value = serde_json::from_str(stored.lines().next().unwrap()).unwrap();
    let id = first["id"].as_str().unwrap();
    let op = |tail: &str, text: &str| {
        serde_json::json!({
            "v": 1, "id": format!("{}{tail}", &id[..8]), "project": first["project"],
            "actor": {"kind": "agent", "name": "claude-code", "session": "s9"},
            "kind": "context.observe", "at": first["at"],
            "subject": {"type": "note", "text": text},
            "evidence": [{"path": "docs/help/start.md", "quote": "Open"}],
        })
    };
    // Ada's sorts before Bob's, in the one segment `zz`.
    let ada = op("zz00000000000001", "Ada's older note");
    let bob = op("zz00000000000009", "Bob's newer note");
    // And Bob's in the segment of a shared note, which Ada's log leaves
    // as the shared log had it.
    let shared = op(
        &format!("{}zzzzzzzzzzzzzz", &id[8..10]),
        "Bob's second note",
    );
    p.a.write("ada.jsonl", &format!("{ada}\n"));
    p.a.kapi(&["store", "import", "ada.jsonl"]).ok();
    p.a.kapi(&["context", "sync"]).ok();
    p.b.write("bob.jsonl", &format!("{bob}\n{shared}\n"));
    on_b(&p, &["store", "import", "bob.jsonl"]).ok();
    // A read leaves a checkpoint on b before the merge.
    let before = on_b(&p, &["context", "log", "--json"]).ok().stdout;
    assert!(before.contains("Bob's newer note") && !before.contains("Ada's older note"));
    let out = on_b(&p, &["context", "sync", "--json"]).ok();
    let synced: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(synced["fetched"]["joined"], "merged", "{}", out.stdout);
    assert_eq!(synced["fetched"]["added"], 1, "{}", out.stdout);
    let merged = on_b(&p, &["context", "log", "--json"]).ok().stdout;
    for text in ["Ada's older note", "Bob's newer note", "Bob's second note"] {
        assert_eq!(merged.matches(text).count(), 1, "{text}: {merged}");
    }
    assert_eq!(merged.matches("Shared note").count(), 6);
    // Every derived file gone: a fold from the start says the same.
    for entry in std::fs::read_dir(p.b.path().join(".git/kapi"))
        .unwrap()
        .flatten()
    {
        if entry.file_name().to_string_lossy().starts_with("fold.") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    assert_eq!(on_b(&p, &["context", "log", "--json"]).ok().stdout, merged);
    // And Ada, taking the merge back, holds the same log.
    p.a.kapi(&["context", "sync"]).ok();
    assert_eq!(tip(p.a.path()), tip(p.b.path()));
}

/// The pack indexes under a clone's objects folder.
fn packs(work: &Path) -> Vec<PathBuf> {
    let dir = work.join(".git/objects/pack");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "idx"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// A push to the remote's main (merged as #77) that writes the preferred
/// form of an agent's suggestion for `docs/legal/terms.md`: the pair, the
/// suggestion's id, and the branch's commits before and after the push.
pub(super) fn pushed_suggestion() -> (Pair, String, String, String) {
    let p = pair();
    let legal = suggest(&p.a, "a1", "docs/legal/terms.md");
    p.a.kapi(&["context", "sync"]).ok();
    let before = p.a.git(&["rev-parse", "HEAD"]);
    p.a.write(
        "docs/legal/terms.md",
        "# Terms\n\nQuickcast is a trademark.\n",
    );
    p.a.git(&["commit", "-qam", "Use the product's name (#77)"]);
    p.a.git(&["push", "-q", "origin", "main"]);
    let after = p.a.git(&["rev-parse", "HEAD"]);
    (p, legal, before, after)
}

/// After a CI step ran for [`pushed_suggestion`]: once Ada syncs, the
/// suggestion is established by a merge signal the tool `ci` recorded.
pub(super) fn counted_by_ci(p: &Pair, legal: &str) -> Value {
    p.a.kapi(&["context", "sync"]).ok();
    assert_eq!(status_of(&p.a, legal), "established");
    let log = p.a.log();
    let signal = log.iter().find(|l| l["kind"] == "signal").unwrap().clone();
    assert_eq!(signal["actor"]["name"], "ci", "{signal}");
    signal
}

#[test]
fn the_ci_step_records_merge_signals_for_a_push_as_the_tool_ci() {
    let (p, legal, before, after) = pushed_suggestion();
    // CI: a fresh clone of the remote runs the step.
    let ci = TestEnv::clone_of(&p.remote, "Ada", "ada@example.com");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/kapi-after-push");
    let step = |before: &str| {
        let mut cmd = std::process::Command::new("sh");
        ci.isolate(&mut cmd);
        cmd.arg(&script)
            .args([before, after.as_str()])
            .env("KAPI_NOW", crate::common::NOW)
            .env("KAPI", crate::common::kapi_bin())
            .output()
            .unwrap()
    };
    // The signal names #77; a new branch (BEFORE all zeros) only syncs.
    let mut t = Transcript::new();
    t.knows(&p.a);
    let line = format!("ci/kapi-after-push {before} {after}");
    t.step(&ci, &line, step(&before).into()).ok();
    // The signal is the CI tool's, and both the remote and Ada see the rule.
    counted_by_ci(&p, &legal);
    // A new branch's push only syncs.
    let zeros = "0".repeat(40);
    let line = format!("ci/kapi-after-push {zeros} {after}");
    t.step(&ci, &line, step(&zeros).into()).ok();
    // The command itself: a BEFORE this clone lacks (a shallow checkout)
    // syncs without counting; an AFTER it lacks is refused.
    let missing = "1234567890abcdef1234567890abcdef12345678";
    t.kapi(&ci, &["ci", "after-push", missing, &after]).ok();
    t.kapi(&ci, &["ci", "after-push", &before, missing]).code(2);
    insta::assert_snapshot!(t.text());
}

/// The seed's actor paragraph: the digest and the log show a teammate's
/// operation under the teammate's name and the reader's own as "you";
/// the JSON names every party the same way for every reader.
#[test]
fn the_digest_and_the_log_say_you_for_the_readers_own_operations_and_name_a_teammate() {
    let p = pair();
    // Ada keeps an agent's suggestion and shares it.
    p.a.kept_rule("Quickcast", "Quick cast");
    p.a.kapi(&["context", "sync"]).ok();
    // Bob fetches it and suggests one of his own.
    on_b(&p, &["context", "sync"]).ok();
    on_b(
        &p,
        &[
            "context",
            "note",
            "--term",
            "Flowkit",
            "--instead-of",
            "Flow kit",
            "--path",
            "docs/help/start.md",
        ],
    )
    .ok();
    let bobs_log = on_b(&p, &["context", "log"]).ok().stdout;
    let keep = bobs_log.lines().find(|l| l.contains(" keep ")).unwrap();
    assert!(keep.ends_with("· person ada@example.com"), "{bobs_log}");
    let note = bobs_log.lines().find(|l| l.contains("Flowkit")).unwrap();
    assert!(note.contains("· you"), "{bobs_log}");
    // The digest Bob reads: Ada's rule in force is Ada's (the agent's
    // suggestion she kept is the agent's), his own suggestion is his.
    let digest = on_b(&p, &["context", "review"]).ok().stdout;
    let flowkit = digest.lines().find(|l| l.contains("Flowkit")).unwrap();
    assert!(flowkit.contains(" · you · "), "{digest}");
    assert!(!digest.contains("bob@example.com"), "{digest}");
    // Ada, after a sync, reads the same operations the other way round.
    on_b(&p, &["context", "sync"]).ok();
    p.a.kapi(&["context", "sync"]).ok();
    let adas_log = p.a.kapi(&["context", "log"]).ok().stdout;
    let keep = adas_log.lines().find(|l| l.contains(" keep ")).unwrap();
    assert!(keep.ends_with("· you"), "{adas_log}");
    let note = adas_log.lines().find(|l| l.contains("Flowkit")).unwrap();
    assert!(note.contains("· person bob@example.com"), "{adas_log}");
    let adas_digest = p.a.kapi(&["context", "review"]).ok().stdout;
    assert!(
        adas_digest.contains("person bob@example.com"),
        "{adas_digest}"
    );
    // `--actor you` is the reader's; the JSON names the party.
    let mine = p.a.kapi(&["context", "log", "--actor", "you"]).ok().stdout;
    assert!(mine.lines().any(|l| l.contains(" keep ")), "{mine}");
    assert!(!mine.contains("Flowkit"), "{mine}");
    let json = p.a.kapi(&["context", "review", "--json"]).ok().stdout;
    assert!(!json.contains("\"you\""), "{json}");
}

/// A repository whose 150 commits after its first (made by `git
/// fast-import`, which stores each version as a delta on the one before)
/// write the preferred form in help and legal pages, drop lines holding the
/// avoided one, and change files no suggestion can match: a help page
/// without either form, code, a binary page. Every 20th commit is a
/// squash-merged pull request. With `repack`, the objects are repacked
/// (newer versions whole, older ones deltas on them). Returns the
/// repository, the first commit, and the help and legal suggestions.
fn long_history(repack: bool) -> (TestEnv, String, String, String) {
    let env = TestEnv::new();
    env.write("kapi.toml", POINTS);
    let mut start = String::from("# Start\n\n");
    for k in 0..40 {
        start.push_str(&format!("Old {k}: open Quick cast.\n"));
    }
    let mut terms = String::from("# Terms\n\nQuick cast is a trademark.\n");
    env.write("docs/help/start.md", &start);
    env.write("docs/legal/terms.md", &terms);
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "Initial docs"]);
    let help = suggest(&env, "a1", "docs/help/start.md");
    let legal = suggest(&env, "a1", "docs/legal/terms.md");
    let base = env.git(&["rev-parse", "HEAD"]);
    let (mut plain, mut code) = (String::new(), String::new());
    let mut stream = Vec::new();
    for i in 0..150u32 {
        let msg = match i % 20 {
            19 => format!("Edit {i} (#{})\n", i / 20),
            _ => format!("Edit {i}\n"),
        };
        stream.extend(
            format!(
                "commit refs/heads/main\ncommitter Ada <ada@example.com> {} +0000\ndata {}\n{msg}",
                1_780_000_000 + i,
                msg.len()
            )
            .bytes(),
        );
        if i == 0 {
            stream.extend(format!("from {base}\n").bytes());
        }
        let (path, body) = match i % 5 {
            0 => {
                start.push_str(&format!("Step {i}: open Quickcast.\n"));
                ("docs/help/start.md", &start)
            }
            1 => {
                terms.push_str(&format!("Clause {i}: Quickcast is ours.\n"));
                ("docs/legal/terms.md", &terms)
            }
            2 => {
                plain.push_str(&format!("Note {i}: nothing to count here.\n"));
                ("docs/help/plain.md", &plain)
            }
            3 => {
                code.push_str(&format!("// Quickcast {i} replaces Quick cast\n"));
                ("src/main.rs", &code)
            }
            _ => {
                let first = start.find("Old ").expect("an old line is left");
                let end = first + start[first..].find('\n').unwrap() + 1;
                start.replace_range(first..end, "");
                start.push_str(&format!("Step {i}: Quickcast again.\n"));
                ("docs/help/start.md", &start)
            }
        };
        stream.extend(format!("M 100644 inline {path}\ndata {}\n{body}\n", body.len()).bytes());
        if i % 7 == 3 {
            let bin = [b'Q', 0, b'c', i as u8];
            stream
                .extend(format!("M 100644 inline docs/help/blob.md\ndata {}\n", bin.len()).bytes());
            stream.extend_from_slice(&bin);
            stream.push(b'\n');
        }
    }
    env.git_stdin(&["fast-import", "--quiet"], &stream);
    env.git(&["reset", "-q", "--hard"]);
    if repack {
        env.git(&[
            "repack",
            "-q",
            "-a",
            "-d",
            "-f",
            "--depth=50",
            "--window=50",
        ]);
        env.git(&["prune-packed"]);
    }
    (env, base, help, legal)
}

/// A merge signal as the report gives it: (suggestion, commit, pull
/// request, preferred, avoided).
type Modelled = (&'static str, String, Option<String>, u64, u64);

/// The signals a range of [`long_history`] gives, by the model of its
/// lines: (suggestion, newest commit of the group, pull request,
/// preferred, avoided), grouped as the range is read (newest first).
fn modelled_signals(env: &TestEnv, base: &str) -> Vec<Modelled> {
    let commits: Vec<String> = env
        .git(&["rev-list", "--first-parent", &format!("{base}..HEAD")])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(commits.len(), 150);
    // (pr, newest commit, help (p, a), legal (p, a)), in order of first sight.
    type Group = (Option<String>, String, (u64, u64), (u64, u64));
    let mut groups: Vec<Group> = Vec::new();
    for (j, commit) in commits.iter().enumerate() {
        let i = 149 - j as u32;
        let pr = (i % 20 == 19).then(|| (i / 20).to_string());
        let g = match groups.iter().position(|g| g.0 == pr) {
            Some(g) => g,
            None => {
                groups.push((pr, commit.clone(), (0, 0), (0, 0)));
                groups.len() - 1
            }
        };
        match i % 5 {
            0 => groups[g].2.0 += 1,
            1 => groups[g].3.0 += 1,
            4 => {
                groups[g].2.0 += 1;
                groups[g].2.1 += 1;
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (pr, commit, help, legal) in groups {
        for (label, (p, a)) in [("help", help), ("legal", legal)] {
            if p + a > 0 {
                out.push((label, commit.clone(), pr.clone(), p, a));
            }
        }
    }
    out
}

#[test]
fn a_long_merged_range_gives_the_modelled_signals_however_its_packs_store_deltas() {
    let mut reports = Vec::new();
    for repack in [false, true] {
        let (env, base, help, legal) = long_history(repack);
        let run: Run = env
            .kapi_cmd(&[
                "context",
                "sync",
                "--no-push",
                "--merged",
                &format!("{base}..HEAD"),
                "--json",
            ])
            .env("KAPI_TOOL", "ci")
            .output()
            .unwrap()
            .into();
        let report = run.ok().json();
        let merged = &report["merged"];
        assert_eq!(merged["commits"], 150, "{report}");
        // Changed prose files read: help and legal pages, not code, not the
        // binary page.
        assert_eq!(merged["files"], 120, "{report}");
        let label = |id: &str| match id {
            id if id == help => "help",
            id if id == legal => "legal",
            other => panic!("a signal for {other}"),
        };
        let signals: Vec<Modelled> = merged["signals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                assert_eq!(s["recorded"], true, "{s}");
                (
                    label(s["target"].as_str().unwrap()),
                    s["commit"].as_str().unwrap().to_owned(),
                    s["pr"].as_str().map(str::to_owned),
                    s["preferred"].as_u64().unwrap(),
                    s["avoided"].as_u64().unwrap(),
                )
            })
            .collect();
        // The signals were one append of many lines: its commit and the
        // trees it rewrote went into one pack, not loose files.
        let objects = env.path().join(".git/objects");
        let loose = |id: &str| objects.join(&id[..2]).join(&id[2..]).exists();
        let log = env.git(&["log", "--format=%H %T %s", "refs/kapi/ops"]);
        let batches: Vec<&str> = log
            .lines()
            .filter(|l| {
                l.split(' ').nth(3).and_then(|n| n.parse::<usize>().ok()) >= Some(8)
                    && l.contains(" operations, last ")
            })
            .collect();
        assert!(!batches.is_empty(), "{log}");
        for batch in batches {
            let mut ids = batch.split(' ');
            let (commit, tree) = (ids.next().unwrap(), ids.next().unwrap());
            assert!(!loose(commit) && !loose(tree), "{batch}");
        }
        env.git(&["fsck", "--strict", "--no-dangling"]);
        let mut sorted = signals.clone();
        let mut expected = modelled_signals(&env, &base);
        sorted.sort();
        expected.sort();
        assert_eq!(sorted, expected, "repacked: {repack}");
        reports.push(signals);
    }
    // The same signals in the same order, whichever way the commits were read.
    assert_eq!(reports[0], reports[1]);
}

/// A note's few objects (its segment, the trees above it, its commit)
/// are written loose, as git writes them: each a read-only zlib stream
/// under its id that git reads, no new pack, no temporary file left, and
/// `git fsck --strict` finds the repository whole.
#[test]
fn a_note_writes_its_objects_loose_as_git_does() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    env.kapi(&["context", "note", "A first note"]).ok();
    let before = packs(env.path());
    for n in 0..3 {
        env.kapi(&["context", "note", &format!("Note {n}")]).ok();
    }
    assert_eq!(packs(env.path()), before, "a note writes no pack");
    let head = tip(env.path());
    let tree = env.git(&["rev-parse", &format!("{head}^{{tree}}")]);
    let objects = env.path().join(".git/objects");
    for id in [&head, &tree] {
        let path = objects.join(&id[..2]).join(&id[2..]);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{id} is not loose: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o222, 0, "{id} is read-only");
    }
    assert_eq!(env.git(&["cat-file", "-t", &head]).trim(), "commit");
    env.git(&["fsck", "--strict", "--no-dangling"]);
    assert!(
        std::fs::read_dir(&objects)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".tmp")),
        "no temporary file is left"
    );
    let listed = env.kapi(&["context", "log", "--json"]).ok();
    assert_eq!(listed.stdout.matches("Note ").count(), 3);
}
