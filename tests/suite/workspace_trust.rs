//! The workspace registry as an attacker or an accident leaves it: long,
//! fed by clones and imports, or a FIFO. Nothing there may hold a command
//! up, and no rule reaches another repository unless a person chose to
//! share it on this machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Run, TestEnv, Transcript, shell_words, within_deadline};
use serde_json::Value;

fn registry(env: &TestEnv) -> PathBuf {
    env.root().join("home/.local/share/kapi/repositories.jsonl")
}

/// `kapi workspace list --json`, by path.
fn listed(env: &TestEnv) -> Value {
    env.kapi(&["workspace", "list", "--json"]).ok().json()
}

fn entry<'a>(listing: &'a Value, path: &Path) -> Option<&'a Value> {
    listing["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path.to_str().unwrap())
}

/// A project on another machine (its own home) whose log holds a rule a
/// person — or anyone who set a git identity — kept and widened to the
/// workspace: "Quickcast", not "Quick cast".
fn upstream_with_a_workspace_rule() -> TestEnv {
    let upstream = TestEnv::new();
    upstream.git(&["config", "user.email", "mallory@example.com"]);
    upstream.write("a.md", "Quickcast\n");
    upstream
        .agent_term("s1", "Quickcast", "Quick cast", &["--path", "a.md"])
        .ok();
    let log = upstream.log();
    let id = log
        .iter()
        .find(|o| o["subject"]["use"] == "Quickcast")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    upstream
        .kapi(&[
            "context",
            "review",
            "--keep",
            &id,
            "--widen-to",
            "workspace",
        ])
        .ok();
    upstream
}

/// A machine with a repository `c` whose guide writes "Quick cast", and a
/// repository `b` that fetched `upstream`'s log with `kapi context sync
/// --no-push`.
fn machine_with_a_synced_clone(upstream: &TestEnv) -> (TestEnv, TestEnv) {
    let c = TestEnv::new();
    c.write("guide.md", "Open Quick cast.\n");
    let b = c.sibling("b");
    b.git(&["remote", "add", "origin", upstream.path().to_str().unwrap()]);
    b.kapi(&["context", "sync", "--no-push"]).ok();
    (c, b)
}

#[test]
fn a_registry_of_40000_lines_holds_up_no_check_or_write() {
    let repo = TestEnv::new();
    repo.write("guide.md", "Open Quick cast.\n");
    let file = registry(&repo);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut text = String::new();
    for n in 0..40_000 {
        text.push_str(&format!(
            "{{\"path\":\"/gone/checkouts/of/this/machine/repository-{n:05}\",\"project\":\"p{n}\"}}\n"
        ));
    }
    std::fs::write(&file, &text).unwrap();
    // A write reads the registry to register its checkout, a check reads
    // it for workspace rules: both finish.
    within_deadline(
        repo.kapi_cmd(&["context", "note", "The guide addresses operators"]),
        b"",
    )
    .ok();
    within_deadline(repo.kapi_cmd(&["check"]), b"").ok();
    // Only the newest 1 MiB is read, and the list says so; the checkout
    // registered last is in it.
    let listing = listed(&repo);
    assert!(listing["skipped_bytes"].as_u64().unwrap() > 0, "{listing}");
    let here = entry(&listing, repo.path()).expect("registered");
    assert_eq!(here["shares"], false);
    let shown = listing["repositories"].as_array().unwrap().len();
    assert!((1_000..40_000).contains(&shown), "{shown}");
    // The human list says so first (thousands of lines follow, and the
    // byte count depends on the temporary path's length: no snapshot).
    let human = repo.kapi(&["workspace", "list"]).ok().stdout;
    let skipped = listing["skipped_bytes"].as_u64().unwrap();
    assert_eq!(
        human.lines().next().unwrap(),
        format!(
            "warning: the registry is larger than the 1 MiB read: its oldest {skipped} bytes \
             were not read (`kapi workspace forget --gone` rewrites it compacted)"
        ),
    );
    // Forgetting the gone ones compacts it to the one checkout left.
    repo.kapi(&["workspace", "forget", "--gone"]).ok();
    let listing = listed(&repo);
    assert_eq!(listing["skipped_bytes"], 0, "{listing}");
    assert_eq!(listing["repositories"].as_array().unwrap().len(), 1);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        1,
        "compacted"
    );
}

#[test]
fn workspace_list_names_each_repository_and_forget_removes_them() {
    let a = TestEnv::new();
    let b = a.sibling("b");
    let gone = a.sibling("gone");
    for repo in [&a, &b, &gone] {
        repo.kapi(&["context", "note", "A note that registers"])
            .ok();
    }
    std::fs::remove_dir_all(gone.path()).unwrap();
    let listing = listed(&a);
    let rows = listing["repositories"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{listing}");
    let gone_row = entry(&listing, gone.path()).unwrap();
    assert_eq!(gone_row["exists"], false);
    assert_eq!(gone_row["project"], "gone");
    assert_eq!(gone_row["shares"], false);
    assert_eq!(entry(&listing, b.path()).unwrap()["exists"], true);
    let mut t = Transcript::new();
    t.kapi(&a, &["workspace", "list"]).ok();

    // An agent may list, not forget.
    t.agent(&a, "s1", &["workspace", "forget", "--gone"])
        .code(4);
    assert_eq!(listed(&a)["repositories"].as_array().unwrap().len(), 3);

    let run = a.kapi(&["workspace", "forget", "--gone", "--json"]).ok();
    let forgotten = run.json();
    assert_eq!(forgotten["forgotten"].as_array().unwrap().len(), 1);
    assert_eq!(forgotten["forgotten"][0]["project"], "gone");
    assert!(entry(&listed(&a), gone.path()).is_none());
    t.kapi(&a, &["workspace", "forget", "--gone"]).ok();

    // A path, named as the list shows it or relative to where kapi runs.
    t.kapi(&a, &["workspace", "forget", "../b"]).ok();
    let listing = listed(&a);
    assert!(entry(&listing, b.path()).is_none());
    assert!(entry(&listing, a.path()).is_some());
    // A path that is not registered changes nothing.
    t.kapi(&a, &["workspace", "forget", "../b"]).code(2);
    insta::assert_snapshot!(t.text());
    // Recording again registers again.
    b.kapi(&["context", "note", "Back again"]).ok();
    assert!(entry(&listed(&a), b.path()).is_some());
}

#[test]
fn a_synced_clone_with_a_persons_workspace_rule_puts_nothing_in_force_elsewhere() {
    let upstream = upstream_with_a_workspace_rule();
    let (c, b) = machine_with_a_synced_clone(&upstream);
    // The clone's log holds the widened rule.
    let log = b.log();
    assert!(log.iter().any(|o| o["kind"] == "widen"), "the rule arrived");
    // Other repositories are untouched: a check, a commit, what applies.
    let mut t = Transcript::new();
    t.kapi(&c, &["check"]).ok();
    c.git(&["add", "guide.md"]);
    t.kapi(&c, &["hook", "pre-commit"]).ok();
    t.kapi(&c, &["context", "guide.md"]).ok();
    insta::assert_snapshot!(t.text());
    // The sync registered the clone, not sharing.
    assert_eq!(entry(&listed(&c), b.path()).unwrap()["shares"], false);
    // Nor does an exported log imported into another checkout.
    let d = c.sibling("d");
    let exported = upstream.root().join("ops.jsonl");
    upstream
        .kapi(&["store", "export", exported.to_str().unwrap()])
        .ok();
    d.kapi(&["store", "import", exported.to_str().unwrap()])
        .ok();
    assert_eq!(entry(&listed(&c), d.path()).unwrap()["shares"], false);
    c.kapi(&["check"]).ok();
}

#[test]
fn a_person_adds_a_repository_and_its_rule_holds_elsewhere_naming_where_it_came_from() {
    let upstream = upstream_with_a_workspace_rule();
    let (c, b) = machine_with_a_synced_clone(&upstream);
    // c's work folder first: `$` is c, `[ROOT]/b$` is b.
    let mut t = Transcript::new();
    t.knows(&c);
    t.kapi(&b, &["workspace", "add"]).ok();
    assert_eq!(entry(&listed(&c), b.path()).unwrap()["shares"], true);
    t.kapi(&c, &["workspace", "add", b.path().to_str().unwrap()])
        .ok();
    // The finding and what applies name the rule's repository.
    t.kapi(&c, &["check"]).code(1);
    t.kapi(&c, &["context", "guide.md"]).ok();
    insta::assert_snapshot!(t.text());
    let doc = c.kapi(&["check", "--format", "json"]).code(1).json();
    let finding = &doc["findings"][0];
    assert_eq!(finding["workspace"], "work", "{doc}");
    assert_eq!(finding["repository"], b.path().to_str().unwrap(), "{doc}");

    let here = c.kapi(&["context", "guide.md", "--json"]).ok().json();
    assert_eq!(here["rules"][0]["workspace"], "work", "{here}");
    assert_eq!(here["rules"][0]["repository"], b.path().to_str().unwrap());
    // `check -v` names where its rules came from: here, only b's log.
    let verbose = c.kapi(&["-v", "check"]).code(1);
    assert_eq!(
        verbose.stderr.lines().next(),
        Some(
            format!(
                "rules: 1 rule from the workspace: work at {}",
                b.path().display()
            )
            .as_str()
        ),
        "{}",
        verbose.stderr
    );
    let very = c.kapi(&["-vv", "check"]).code(1);
    assert!(
        very.stderr
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("  #")),
        "{}",
        very.stderr
    );

    // Forgetting it lifts the rule.
    c.kapi(&["workspace", "forget", b.path().to_str().unwrap()])
        .ok();
    c.kapi(&["check"]).ok();
}

#[test]
fn an_agent_or_a_tool_may_not_add_a_repository_to_the_workspace() {
    let upstream = upstream_with_a_workspace_rule();
    let (c, b) = machine_with_a_synced_clone(&upstream);
    let mut t = Transcript::new();
    t.agent(&b, "s1", &["workspace", "add"]).code(4);
    let run: Run = b
        .kapi_cmd(&["workspace", "add"])
        .env("KAPI_TOOL", "ci")
        .output()
        .unwrap()
        .into();
    t.step(&b, "KAPI_TOOL=ci kapi workspace add", run).code(4);
    insta::assert_snapshot!(t.text());
    assert_eq!(entry(&listed(&c), b.path()).unwrap()["shares"], false);
    c.kapi(&["check"]).ok();
}

#[test]
fn a_registry_written_before_sharing_existed_shares_nothing() {
    let upstream = upstream_with_a_workspace_rule();
    let (c, b) = machine_with_a_synced_clone(&upstream);
    // The line an earlier kapi wrote, without the field.
    std::fs::write(
        registry(&c),
        format!(
            "{{\"path\":\"{}\",\"project\":\"work\"}}\n",
            b.path().display()
        ),
    )
    .unwrap();
    c.kapi(&["check"]).ok();
    assert_eq!(entry(&listed(&c), b.path()).unwrap()["shares"], false);
    // A person opts it in.
    b.kapi(&["workspace", "add"]).ok();
    c.kapi(&["check"]).code(1);
}

#[cfg(unix)]
#[test]
fn a_fifo_for_a_registry_hangs_no_command() {
    let repo = TestEnv::new();
    repo.write("guide.md", "Open Quick cast.\n");
    let file = registry(&repo);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let made = Command::new("mkfifo").arg(&file).status().unwrap();
    assert!(made.success());
    // A write appends to it (registering), a check reads it; the list
    // says why it read nothing, and changing it is refused, naming why.
    let mut t = Transcript::new();
    let mut step = |args: &[&str]| {
        let run = within_deadline(repo.kapi_cmd(args), b"");
        t.step(&repo, &format!("kapi {}", shell_words(args)), run)
    };
    step(&["context", "note", "The guide addresses operators"]).ok();
    step(&["check"]).ok();
    step(&["workspace", "list"]).ok();
    let listing = step(&["workspace", "list", "--json"]).ok().json();
    assert_eq!(listing["repositories"], serde_json::json!([]));
    assert!(listing["unread"].is_string(), "{listing}");
    step(&["workspace", "add"]).code(5);
    step(&["workspace", "forget", "--gone"]).code(5);
    insta::assert_snapshot!(t.text());
    // It is still a FIFO: nothing replaced it.
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_fifo()
    );

    // Nor does a FIFO where the rules a shared repository widens are
    // cached: the entry is computed again.
    std::fs::remove_file(&file).unwrap();
    let shared = repo.sibling("shared");
    shared
        .kapi(&["context", "note", "A note that registers"])
        .ok();
    shared.kapi(&["workspace", "add"]).ok();
    let key = &kapi::digest::sha256_hex(shared.path().to_str().unwrap().as_bytes())[..32];
    let cache = repo
        .root()
        .join(format!("home/.cache/kapi/workspace/{key}.json"));
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&cache)
            .status()
            .unwrap()
            .success()
    );
    within_deadline(repo.kapi_cmd(&["check"]), b"").ok();
}

#[test]
fn a_shared_rule_counts_here_only_as_its_own_repositorys_trust_counts_it() {
    // Mallory's keep of the rule, widened to the workspace, is unsigned.
    let upstream = upstream_with_a_workspace_rule();
    let (c, b) = machine_with_a_synced_clone(&upstream);
    // b asks for signed decisions, and its default branch lists no key of
    // Mallory's: b's own fold does not count the keep.
    b.write(
        "kapi.toml",
        "[trust]\nallowed_signers = \".kapi/allowed_signers\"\ndecisions = \"signed\"\n",
    );
    b.kapi(&["workspace", "add"]).ok();
    c.kapi(&["workspace", "add", b.path().to_str().unwrap()])
        .ok();
    let doctor = b.kapi(&["store", "doctor"]).stdout;
    assert!(doctor.contains("unsigned: "), "{doctor}");
    // Nor does c, which reads b's rules as b's fold reads them.
    let check = c.kapi(&["check"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    // With signatures only shown in b, the same rule holds in c again (the
    // cached answer is keyed by b's trust, not read stale).
    b.write(
        "kapi.toml",
        "[trust]\nallowed_signers = \".kapi/allowed_signers\"\n",
    );
    c.kapi(&["check"]).code(1);
}
