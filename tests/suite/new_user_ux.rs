//! What a new user trips on (issue 22): advice that works in the state
//! that gave it, a test suite that runs after `cargo install`, messages
//! that say what to do. Each test failed before its fix.

use std::process::Command;

use crate::common::{Run, TestEnv};

/// A person records a term rule and keeps it: it fails checks. Its short
/// id.
fn kept_rule(repo: &TestEnv) -> String {
    let id = suggested_rule(repo, "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &id]).ok();
    id
}

/// A person records a term rule (a suggestion); its short id.
fn suggested_rule(repo: &TestEnv, term: &str, avoided: &str) -> String {
    repo.kapi(&[
        "context",
        "note",
        "--term",
        term,
        "--instead-of",
        avoided,
        "--quote",
        avoided,
    ])
    .ok();
    last_short(repo)
}

fn last_short(repo: &TestEnv) -> String {
    let lines = repo.kapi(&["context", "log", "--json"]).ok().json_lines();
    lines.last().unwrap()["short"].as_str().unwrap().to_owned()
}

// Item 12: the README's own order, `cargo install --locked --path .` then
// `cargo test --locked`, put an installed `kapi` on PATH that the tests'
// git hooks ran instead of the binary under test.

/// Run by `a_hook_runs_the_binary_under_test_whatever_kapi_is_first_on_path`
/// with a `kapi` that fails loudly first on the test process's PATH.
#[test]
#[ignore = "run by a_hook_runs_the_binary_under_test_whatever_kapi_is_first_on_path"]
fn hooks_run_the_binary_under_test() {
    let repo = TestEnv::new();
    repo.write(
        "decisions/D-001.md",
        "---\nid: D-001\ntitle: Cache\nkind: decision\nstatus: accepted\nsensitivity: public\ndate: 2026-01-01\n---\nWe cache things.\n",
    );
    // An artifact whose evaluation day is the clock's: current on the
    // pinned clock, stale on any other day.
    repo.write(
        "kapi.toml",
        "[[compile]]\noutput = \"ctx/cache.json\"\nquery = \"cache\"\n",
    );
    repo.kapi(&["compile-context", "--all"]).ok();
    kept_rule(&repo);
    repo.kapi(&["hooks", "install", "--git"]).ok();
    repo.git(&["add", "-A"]);
    // The pre-commit hook ran (the binary under test, on the pinned clock).
    let run: Run = repo
        .git_cmd(&["commit", "-qm", "one"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{}", run.stderr);
    // And it refuses a broken rule: it is not skipped.
    repo.write("docs/a.md", "Open Quick cast.\n");
    repo.git(&["add", "docs/a.md"]);
    let run: Run = repo
        .git_cmd(&["commit", "-qm", "two"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("Quick cast"), "{}", run.stderr);
    assert!(!run.stderr.contains("FAKE"), "{}", run.stderr);
}

#[test]
#[cfg(unix)]
fn a_hook_runs_the_binary_under_test_whatever_kapi_is_first_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let fake = tempfile::tempdir().unwrap();
    let kapi = fake.path().join("kapi");
    std::fs::write(&kapi, "#!/bin/sh\necho \"FAKE kapi from PATH ran: $*\" >&2\nexit 97\n").unwrap();
    std::fs::set_permissions(&kapi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(fake.path().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    // The test binary runs the inner test as `cargo test` would, with the
    // fake first on PATH and `KAPI` naming it too.
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::new_user_ux::hooks_run_the_binary_under_test",
            "--ignored",
            "--test-threads=1",
        ])
        .env("PATH", &path)
        .env("KAPI", &kapi)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// Item 13: the demo the README starts with.

/// `ci/demo` run with the binary under test, stdout a pipe; its output and
/// the demo repository it left.
fn run_demo(env: &TestEnv, extra: &[(&str, &str)]) -> (Run, std::path::PathBuf) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/demo");
    let mut cmd = Command::new("bash");
    env.isolate(&mut cmd);
    cmd.arg(&script)
        .env("KAPI", crate::common::kapi_bin())
        .env("TMPDIR", env.root());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let run: Run = cmd.output().unwrap().into();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let demo = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("demo repository: "))
        .expect("the demo names its repository")
        .into();
    (run, demo)
}

#[test]
fn the_demo_shows_only_files_it_made_and_no_colour_codes_into_a_pipe() {
    let env = TestEnv::plain();
    let (run, demo) = run_demo(&env, &[]);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    // Every rules file the demo says lists the rule exists and lists it.
    for name in ["AGENTS.md", "CLAUDE.md"] {
        if run.stdout.contains(name) {
            let text = std::fs::read_to_string(demo.join(name))
                .unwrap_or_else(|e| panic!("the demo names {name}, which is not there: {e}"));
            assert!(text.contains("Quickcast"), "{name}:\n{text}");
        }
    }
    assert!(run.stdout.contains("AGENTS.md"), "{}", run.stdout);
    // NO_COLOR is heeded too (here stdout is a pipe anyway).
    let (run, _) = run_demo(&env, &[("NO_COLOR", "1")]);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
}

// Item 14: messages.

/// A bare repository `bare.git` inside `env`'s work folder.
fn bare(env: &TestEnv) -> String {
    env.git(&["init", "-q", "--bare", "bare.git"]);
    env.join("bare.git").to_str().unwrap().to_owned()
}

#[test]
fn a_count_of_one_takes_the_singular() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    let exported = repo.kapi(&["store", "export", "one.jsonl"]).ok();
    let doctor = repo.kapi(&["store", "doctor"]).ok();
    let other = repo.sibling("other");
    let from = repo.join("one.jsonl");
    let imported = other
        .kapi(&["store", "import", from.to_str().unwrap()])
        .ok();
    let atlas = repo.kapi(&["context", "atlas"]).ok();
    for (what, text, said) in [
        ("export", &exported.stderr, "exported 1 operation to one.jsonl"),
        ("doctor", &doctor.stdout, "1 operation read"),
        ("import", &imported.stderr, "read 1 operation from"),
        ("atlas", &atlas.stdout, "1 note, 0 pairs"),
        ("atlas", &atlas.stdout, "; 1 operation, 0 window boundaries"),
    ] {
        assert!(text.contains(said), "{what}: {text}");
        assert!(!text.contains("1 operations"), "{what}: {text}");
    }
    // A term list of one rule, and a suggestion counted once.
    repo.write("terms.tsv", "t1\testablished\tQuickcast\tQuick cast\n");
    repo.write("kapi.toml", "[context]\nterms = [\"terms.tsv\"]\n");
    let run = repo.kapi(&["store", "import"]).ok();
    assert!(run.stdout.contains(": 1 term rule\n"), "{}", run.stdout);
    suggested_rule(&repo, "Flowkit", "Flow kit");
    repo.write("docs/a.md", "Flowkit.\n");
    repo.kapi(&["check"]).ok();
    let run = repo.kapi(&["context", "review"]).ok();
    assert!(run.stdout.contains("1 of 1 use ·"), "{}", run.stdout);
}

#[test]
fn a_git_message_that_ends_a_sentence_is_not_ended_twice() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    let gone = repo.root().join("gone.git");
    repo.git(&["remote", "add", "origin", gone.to_str().unwrap()]);
    let run = repo.kapi(&["context", "sync"]).code(6);
    assert!(run.stderr.contains("Nothing local was lost"), "{}", run.stderr);
    assert!(!run.stderr.contains(".."), "{}", run.stderr);
}

#[test]
fn check_in_a_bare_repository_says_it_is_bare_and_what_to_do() {
    let env = TestEnv::new();
    let bare = bare(&env);
    let run = env.kapi(&["-C", &bare, "check"]).code(2);
    assert!(
        run.stderr.contains("is a bare repository")
            && run.stderr.contains("a clone or a `git worktree`")
            && !run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_empty_log_says_so_and_its_json_is_empty() {
    let repo = TestEnv::new();
    let bare = bare(&repo);
    for dir in [repo.path().to_str().unwrap(), bare.as_str()] {
        let run = repo.kapi(&["-C", dir, "context", "log"]).ok();
        assert_eq!(run.stdout, "the log is empty: nothing is recorded yet\n", "{dir}");
        assert_eq!(run.stderr, "", "{dir}");
        let run = repo.kapi(&["-C", dir, "context", "log", "--json"]).ok();
        assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""), "{dir}");
    }
    // A filter that leaves nothing says what the log holds.
    repo.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    let run = repo
        .kapi(&["context", "log", "--status", "established"])
        .ok();
    assert_eq!(run.stdout, "no operation matches: the log holds 1 operation\n");
    let run = repo
        .kapi(&["context", "log", "--as-of", "2026-01-01"])
        .ok();
    assert!(
        run.stdout.starts_with("the log was empty at 2026-01-01"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_missing_decisions_folder_is_configuration_naming_vault_root() {
    let repo = TestEnv::new();
    let run = repo
        .kapi(&["compile-context", "D-001", "--query", "cache"])
        .code(2);
    assert!(run.stderr.contains("`[vault] root`"), "{}", run.stderr);
    repo.write(
        "kapi.toml",
        "[vault]\nroot = \"records\"\n\n[[compile]]\noutput = \"ctx/c.json\"\nquery = \"cache\"\n",
    );
    let run = repo.kapi(&["compile-context", "--all"]).code(2);
    assert!(
        run.stderr.contains("records is not a directory") && run.stderr.contains("`[vault] root`"),
        "{}",
        run.stderr
    );
}

// Item 15: a misspelt subcommand is not a path.

#[test]
fn a_misspelt_subcommand_is_named_not_read_as_a_path() {
    let repo = TestEnv::new();
    for (typed, meant) in [
        ("reveiw", "review"),
        ("sesion", "session"),
        ("serach", "search"),
        ("lgo", "log"),
    ] {
        let run = repo.kapi(&["context", typed]).code(2);
        assert!(
            run.stderr
                .contains(&format!("did you mean `kapi context {meant}`?")),
            "{typed}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("does not exist"), "{}", run.stderr);
    }
    // A path far from every name is still a path that does not exist.
    let run = repo.kapi(&["context", "intro.md"]).code(2);
    assert!(run.stderr.contains("does not exist in the work tree"), "{}", run.stderr);
    // And a file that is there is read as a path, whatever its name.
    repo.write("reveiw", "notes\n");
    let run = repo.kapi(&["context", "reveiw"]).ok();
    assert!(run.stdout.starts_with("reveiw"), "{}", run.stdout);
}
