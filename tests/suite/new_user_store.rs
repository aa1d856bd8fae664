//! What a new user trips on (issue 22), the store's and settling's items:
//! a large import, two clones settling one merge, vault front matter over
//! its limit, and a team that keeps every rule by hand. Each test failed
//! before its fix.

use std::path::PathBuf;

use crate::common::{Run, TestEnv, Transcript};
use serde_json::Value;

/// A bare remote and two clones of one project: `a` (Ada) pushed the first
/// commit, `b` (Bob) cloned it.
struct Pair {
    _remote_dir: tempfile::TempDir,
    a: TestEnv,
    b: TestEnv,
}

fn pair(kapi_toml: &str) -> Pair {
    let dir = tempfile::tempdir().unwrap();
    let remote: PathBuf = dir.path().canonicalize().unwrap().join("remote.git");
    let a = TestEnv::new();
    a.git(&[
        "init",
        "-q",
        "--bare",
        "-b",
        "main",
        remote.to_str().unwrap(),
    ]);
    a.write("kapi.toml", kapi_toml);
    a.write(
        "docs/help/start.md",
        "# Start\n\nOpen Quick cast from the menu.\n",
    );
    a.git(&["add", "-A"]);
    a.git(&["commit", "-qm", "Initial docs"]);
    a.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    a.git(&["push", "-q", "origin", "main"]);
    let b = TestEnv::new();
    b.git(&["config", "user.email", "bob@example.com"]);
    b.git(&["config", "user.name", "Bob"]);
    b.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    b.git(&["fetch", "-q", "origin", "main"]);
    b.git(&["checkout", "-q", "-B", "main", "FETCH_HEAD"]);
    b.git(&["branch", "-q", "--set-upstream-to=origin/main"]);
    Pair {
        _remote_dir: dir,
        a,
        b,
    }
}

/// b runs on a later clock and another seed: another machine.
fn on_b(pair: &Pair, args: &[&str]) -> Run {
    pair.b
        .kapi_cmd(args)
        .env("KAPI_NOW", "2026-11-30T09:05:00Z")
        .env("KAPI_SEED", "11")
        .output()
        .unwrap()
        .into()
}

/// The agent of session `s1` on `a` suggests Quickcast where the help page
/// writes "Quick cast"; both clones hold it after a sync each.
fn suggest_and_share(p: &Pair) -> String {
    let run =
        p.a.agent_term(
            "s1",
            "Quickcast",
            "Quick cast",
            &["--path", "docs/help/start.md", "--json"],
        )
        .ok();
    let op: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    p.a.kapi(&["context", "sync"]).ok();
    on_b(p, &["context", "sync"]).ok();
    op["id"].as_str().unwrap().to_owned()
}

/// `a` merges a branch that writes the preferred form and pushes main; `b`
/// pulls it. Both then hold the same merged range `ORIG_HEAD..HEAD`.
fn merge_the_fix_on_both(p: &Pair) {
    p.a.git(&["checkout", "-q", "-b", "wording"]);
    p.a.write(
        "docs/help/start.md",
        "# Start\n\nOpen Quickcast from the menu.\n",
    );
    p.a.git(&["commit", "-qam", "Fix the product name"]);
    p.a.git(&["checkout", "-q", "main"]);
    p.a.git(&[
        "merge",
        "-q",
        "--no-ff",
        "wording",
        "-m",
        "Merge pull request #7 from ada/wording",
    ]);
    p.a.git(&["push", "-q", "origin", "main"]);
    p.b.git(&["pull", "-q", "--ff-only", "origin", "main"]);
}

fn log_lines(env: &TestEnv) -> Vec<Value> {
    env.kapi(&["context", "log", "--json"]).ok().json_lines()
}

fn status_of(env: &TestEnv, id: &str) -> String {
    log_lines(env)
        .into_iter()
        .find(|l| l["id"] == id)
        .and_then(|l| l["status"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn kinds(env: &TestEnv, kind: &str) -> usize {
    log_lines(env).iter().filter(|l| l["kind"] == kind).count()
}

// Item 4: two clones that each settle one merge before they sync.

#[test]
fn two_clones_settling_one_merge_hold_one_establishment_and_doctor_finds_nothing_to_do() {
    let p = pair("");
    let suggestion = suggest_and_share(&p);
    merge_the_fix_on_both(&p);
    // Each machine counts the merge and settles before it has seen the
    // other's: the post-merge hook does both, and so does a sync run
    // before the remote holds the other's.
    p.a.kapi(&[
        "context",
        "sync",
        "--merged",
        "ORIG_HEAD..HEAD",
        "--no-push",
    ])
    .ok();
    on_b(
        &p,
        &[
            "context",
            "sync",
            "--merged",
            "ORIG_HEAD..HEAD",
            "--no-push",
        ],
    )
    .ok();
    assert_eq!(status_of(&p.a, &suggestion), "established");
    assert_eq!(status_of(&p.b, &suggestion), "established");
    // Then they share: a, b, a.
    p.a.kapi(&["context", "sync"]).ok();
    on_b(&p, &["context", "sync"]).ok();
    p.a.kapi(&["context", "sync"]).ok();
    for env in [&p.a, &p.b] {
        assert_eq!(status_of(env, &suggestion), "established");
        assert_eq!(kinds(env, "establish"), 1, "one settlement, one operation");
        assert_eq!(kinds(env, "signal"), 1, "one merge, one signal");
        let doctor = env.kapi(&["store", "doctor"]);
        assert_eq!(
            doctor.code, 0,
            "a normal workflow leaves doctor nothing to do:\n{}{}",
            doctor.stdout, doctor.stderr
        );
        // Syncing again records nothing more.
        let again = env.kapi(&["context", "sync", "--json"]).ok().json();
        assert_eq!(again["established"], Value::Array(Vec::new()), "{again}");
    }
}

// Item 11: vault front matter the vault cannot read.

#[test]
fn a_note_whose_front_matter_does_not_close_within_64_kib_is_vault_unreadable_under_a_grant_that_permits_it()
 {
    let env = TestEnv::plain();
    env.write(
        "decisions/D-001-small.md",
        "---\nid: D-001\ntype: decision\ntitle: Small\nstatus: approved\nsensitivity: public\n---\nOne review.\n",
    );
    // 70 KiB of comment inside the front matter: it closes past the
    // prefix the vault reads.
    env.write(
        "decisions/D-002-big.md",
        &format!(
            "---\nid: D-002\ntype: decision\ntitle: Big\nstatus: approved\nsensitivity: restricted\n# {}\n---\nTwo reviews.\n",
            "x".repeat(70 * 1024)
        ),
    );
    let mut t = Transcript::new();
    let mut compile = |grant: &str| {
        t.kapi(
            &env,
            &[
                "compile-context",
                "D-002",
                "--root",
                "decisions",
                "--max-sensitivity",
                grant,
                "--today",
                "2026-11-30",
            ],
        )
    };
    // The grant would permit it: the compile fails closed, naming it
    // `vault_unreadable`, rather than report the target not found (no
    // artifact, no `not_found` omission).
    compile("restricted").code(5);
    // A grant that would not permit a restricted note skips it like any
    // denied one: the target is not found.
    compile("public").ok();
    insta::assert_snapshot!(t.text());
}

// Item 17: a team that keeps every rule by hand.

/// One repository: an agent suggests Quickcast where a page writes "Quick
/// cast", a merge to main fixes that page, and another page still writes
/// it. Returns the suggestion's id, after the merge was counted.
fn merged_suggestion(env: &TestEnv, kapi_toml: &str) -> String {
    env.write("kapi.toml", kapi_toml);
    env.write("docs/a.md", "# A\n\nOpen Quick cast from the menu.\n");
    env.write("docs/b.md", "# B\n\nQuick cast records the screen.\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "Docs"]);
    let id = env.agent_rule_at("s1", "Quickcast", "Quick cast", "docs/a.md");
    env.git(&["checkout", "-q", "-b", "wording"]);
    env.write("docs/a.md", "# A\n\nOpen Quickcast from the menu.\n");
    env.git(&["commit", "-qam", "Fix the product name"]);
    env.git(&["checkout", "-q", "main"]);
    env.git(&["merge", "-q", "--no-ff", "wording", "-m", "Merge wording"]);
    env.kapi(&[
        "context",
        "sync",
        "--merged",
        "ORIG_HEAD..HEAD",
        "--no-push",
    ])
    .ok();
    id
}

#[test]
fn with_settle_keep_only_a_merge_does_not_establish_a_suggestion_and_check_does_not_fail() {
    let env = TestEnv::new();
    let id = merged_suggestion(&env, "[context]\nsettle = \"keep-only\"\n");
    assert_eq!(status_of(&env, &id), "suggested");
    assert_eq!(kinds(&env, "establish"), 0, "sync records no establish");
    assert_eq!(kinds(&env, "signal"), 1, "the merge is still counted");
    let check = env.kapi(&["check", "docs/b.md"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    // A person keeps it: then it binds.
    env.kapi(&["context", "review", "--keep", &id]).ok();
    assert_eq!(status_of(&env, &id), "established");
    env.kapi(&["check", "docs/b.md"]).code(1);
}

#[test]
fn by_default_a_merge_establishes_a_suggestion_and_check_fails() {
    let env = TestEnv::new();
    let id = merged_suggestion(&env, "");
    assert_eq!(status_of(&env, &id), "established");
    assert_eq!(kinds(&env, "establish"), 1);
    env.kapi(&["check", "docs/b.md"]).code(1);
    // Switching to keep-only afterwards: the same log folds with no
    // establishment by settling (the fold checkpoint is not reused).
    env.write("kapi.toml", "[context]\nsettle = \"keep-only\"\n");
    assert_eq!(status_of(&env, &id), "suggested");
    env.kapi(&["check", "docs/b.md"]).ok();
}

#[test]
fn an_unknown_settle_value_is_a_configuration_error() {
    let env = TestEnv::new();
    env.write("kapi.toml", "[context]\nsettle = \"never\"\n");
    // The error names the value and the one it may be.
    let mut t = Transcript::new();
    t.kapi(&env, &["context", "log"]).code(2);
    insta::assert_snapshot!(t.text());
}

// Item 3: a large import.

/// A term list of `n` rules, some 95 bytes a line (15,000 rules: 1.4 MB).
fn term_list(n: usize) -> String {
    let mut out = String::with_capacity(n * 100);
    for i in 0..n {
        out.push_str(&format!(
            "term-{i:05}\testablished\tTerm{i:05}\tTerm {i:05}|Term-{i:05}|term {i:05}|TERM {i:05}|Term_{i:05}|Trm{i:05}\n"
        ));
    }
    out
}

const TERMS_TOML: &str = "[context]\nterms = [\"terms.tsv\"]\n";

fn exported(env: &TestEnv) -> Vec<String> {
    env.kapi(&["store", "export", "-"])
        .ok()
        .stdout
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_term_list_of_15000_rules_imports_with_its_rules_in_a_blob_the_record_names() {
    let env = TestEnv::new();
    env.write("kapi.toml", TERMS_TOML);
    let list = term_list(15_000);
    assert!(list.len() > 1_400_000, "{}", list.len());
    env.write("terms.tsv", &list);
    // It imports 15000 term rules; doctor finds nothing to do.
    let mut t = Transcript::new();
    t.kapi(&env, &["store", "import"]).ok();
    t.kapi(&env, &["store", "doctor"]).ok();
    // The record itself is small: it names the blob, its SHA-256 and size.
    let lines = exported(&env);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].len() < 4096, "{} bytes", lines[0].len());
    let record: Value = serde_json::from_str(&lines[0]).unwrap();
    let blob = &record["subject"]["blob"];
    assert!(record["subject"]["terms"].is_null(), "{record}");
    let id = blob["id"].as_str().unwrap();
    assert_eq!(blob["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        env.git(&["cat-file", "-s", id]),
        blob["bytes"].as_u64().unwrap().to_string()
    );
    // Reachable from the log's ref, so a push carries it: one of the
    // objects `git rev-list --objects` lists (each line an id, then a path
    // for a tree or a blob).
    let reachable = env.git(&["rev-list", "--objects", "refs/kapi/ops"]);
    assert!(
        reachable.lines().any(|l| l.split(' ').next() == Some(id)),
        "{reachable}"
    );
    // Every rule is in force: the last one and one written in capitals.
    env.write("docs/a.md", "Use Term 14999 and TERM 00007 here.\n");
    t.comment("docs/a.md: Use Term 14999 and TERM 00007 here.");
    t.kapi(&env, &["check", "docs/a.md"]).code(1);
    // Unchanged bytes import nothing again.
    t.kapi(&env, &["store", "import"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_term_list_over_20000_rules_exits_2_naming_the_limit_and_journals_nothing() {
    let env = TestEnv::new();
    env.write("kapi.toml", TERMS_TOML);
    env.write("terms.tsv", &term_list(20_001));
    // The refusal names the count and the limit.
    let mut t = Transcript::new();
    t.kapi(&env, &["store", "import"]).code(2);
    insta::assert_snapshot!(t.text());
    assert!(exported(&env).is_empty());
    assert!(!env.join(".git/kapi/journal.rejected").exists());
    env.kapi(&["store", "doctor"]).ok();
}

#[test]
fn a_large_import_syncs_with_its_blob_and_a_log_naming_a_blob_it_lacks_is_named_not_read() {
    let p = pair(TERMS_TOML);
    // Large enough for a blob (the record would pass 64 KiB).
    p.a.write("terms.tsv", &term_list(2_000));
    p.a.kapi(&["store", "import"]).ok();
    p.a.kapi(&["context", "sync"]).ok();
    on_b(&p, &["context", "sync"]).ok();
    // The other clone holds the blob and the rules.
    let line = exported(&p.b).pop().unwrap();
    let record: Value = serde_json::from_str(&line).unwrap();
    let id = record["subject"]["blob"]["id"].as_str().unwrap().to_owned();
    p.b.git(&["cat-file", "-e", &id]);
    p.b.write("docs/b.md", "Term 00042 is here.\n");
    on_b(&p, &["check", "docs/b.md"]).code(1);
    let doctor = on_b(&p, &["store", "doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);

    // A repository whose log names that blob without holding it: every
    // read names it and reads on; the operation is not folded.
    let c = TestEnv::new();
    let noted: Run = c
        .kapi_cmd(&["context", "note", "The docs address the administrator"])
        .env("KAPI_SEED", "99")
        .output()
        .unwrap()
        .into();
    noted.ok();
    let (path, old) = super::durability::segment_of(&c, record["id"].as_str().unwrap());
    let segment = super::durability::blob(&c, format!("{old}{line}\n").as_bytes());
    super::durability::push_segments(&c, &[(path, segment)], "without its content");
    // Doctor names the blob the log names and the repository does not hold.
    let mut t = Transcript::new();
    t.kapi(&c, &["store", "doctor"]).code(1);
    c.write("docs/c.md", "Term 00042 is here.\n");
    t.comment("docs/c.md: Term 00042 is here.");
    t.kapi(&c, &["check", "docs/c.md"]).ok();
    assert_eq!(
        c.kapi(&["context", "log", "--json"])
            .ok()
            .json_lines()
            .len(),
        1
    );
    // A file naming it is refused by name: a file carries no blob.
    c.write("ops.jsonl", &format!("{line}\n"));
    t.comment("ops.jsonl: that operation, exported");
    t.kapi(&c, &["store", "import", "ops.jsonl"]).code(5);
    // And the sync door leaves it behind, named.
    let d = TestEnv::new();
    let remote = c.root().join("c-remote.git");
    c.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    c.git(&[
        "push",
        "-q",
        remote.to_str().unwrap(),
        "refs/kapi/ops:refs/kapi/ops",
    ]);
    d.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    t.comment("another repository, whose origin holds only that log");
    let sync = t.kapi(&d, &["context", "sync", "--no-push"]);
    t.kapi(&d, &["store", "doctor"]).ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(
        d.kapi(&["context", "log", "--json"])
            .ok()
            .json_lines()
            .len(),
        1,
        "{}{}",
        sync.stdout,
        sync.stderr
    );
}

#[test]
fn doctor_names_a_journal_line_set_aside_for_its_size_by_its_size_not_as_torn() {
    let env = TestEnv::new();
    env.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    // What a kapi that did not check sizes at the door left: a whole
    // operation over 1 MiB, set aside from the journal.
    let line = exported(&env).pop().unwrap();
    let mut op: Value = serde_json::from_str(&line).unwrap();
    op["note"] = Value::from("x".repeat(1_100_000));
    let big = serde_json::to_string(&op).unwrap();
    env.write(".git/kapi/journal.rejected", &format!("{big}\n"));
    // Named by its size (over the 1048576 bytes one record may have),
    // never as a torn line.
    let mut t = Transcript::new();
    t.kapi(&env, &["store", "doctor"]).code(1);
    insta::assert_snapshot!(t.text());
}
