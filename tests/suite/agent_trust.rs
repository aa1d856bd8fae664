//! Nothing an agent claims decides for a person, and nothing a host hands
//! kapi takes the machine down (issue 21): a session does not vouch for its
//! own suggestion, an agent's account of a person's change must be what git
//! shows, any value of an agent host's variable names the agent, and the
//! files a hook or `kapi hooks install` opens are regular files, read
//! without blocking and under a cap.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{
    NOW, Run, SEED, TestEnv, Transcript, fed, is_fifo, kapi_bin, mkfifo, shell_words,
    within_deadline,
};

/// A kapi command as the agent `claude-code` in `session`, run through a
/// shell that caps its address space at 4 GiB: a read that does not stop
/// fails fast instead of taking the machine's memory.
fn capped_agent(repo: &TestEnv, session: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("sh");
    repo.isolate(&mut cmd);
    cmd.env("KAPI_NOW", NOW)
        .env("KAPI_SEED", SEED)
        .env("CLAUDECODE", "1")
        .env("KAPI_SESSION", session)
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(kapi_bin())
        .args(args);
    cmd
}

/// The id of the operation a `--json` note printed.
fn id_of(run: &Run) -> String {
    run.json()["id"].as_str().unwrap().to_owned()
}

fn status_of(repo: &TestEnv, id: &str) -> String {
    repo.log()
        .into_iter()
        .find(|l| l["id"] == id)
        .and_then(|l| l["status"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The tip of the shared log (empty before the first operation).
fn ops_tip(repo: &TestEnv) -> String {
    let out = repo
        .git_cmd(&["rev-parse", "--verify", "-q", "refs/kapi/ops"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `docs/a.md` says "Fast cast too." and `docs/b.md` "Open Fast cast.",
/// both committed; the agent `claude-code` in session s1 suggests
/// Fastcast, seen in `docs/b.md`. Its id.
fn suggested(repo: &TestEnv) -> String {
    repo.write("docs/a.md", "Fast cast too.\n");
    repo.write("docs/b.md", "Open Fast cast.\n");
    repo.git(&["add", "."]);
    repo.git(&["commit", "-qm", "docs"]);
    id_of(
        &repo
            .agent_term(
                "s1",
                "Fastcast",
                "Fast cast",
                &["--path", "docs/b.md", "--json"],
            )
            .ok(),
    )
}

/// `kapi context note --from FROM --to TO --path PATH` as `session`.
fn correct(repo: &TestEnv, session: &str, from: &str, to: &str, path: &str) -> Run {
    repo.agent(
        session,
        &[
            "context", "note", "--from", from, "--to", to, "--path", path,
        ],
    )
}

// ---- settling: a session does not vouch for itself ----

#[test]
fn a_session_does_not_vouch_for_its_own_suggestion() {
    let repo = TestEnv::new();
    let id = suggested(&repo);
    // The person's change is there for git to show; the session that
    // suggested the rule records it.
    repo.write("docs/a.md", "Fastcast too.\n");
    correct(&repo, "s1", "Fast cast too", "Fastcast too", "docs/a.md").ok();
    assert_eq!(status_of(&repo, &id), "suggested");
    // Still a suggestion: reported, and no failure.
    let mut t = Transcript::new();
    t.kapi(&repo, &["check"]).code(0);
    insta::assert_snapshot!(t.text());

    // An agent that names no session cannot show it is another one.
    let nameless = |args: &[&str]| -> Run {
        repo.kapi_cmd(args)
            .env("KAPI_AGENT", "helper")
            .output()
            .unwrap()
            .into()
    };
    let rule = id_of(
        &nameless(&[
            "context",
            "note",
            "--term",
            "Slowcast",
            "--instead-of",
            "Slow cast",
            "--path",
            "docs/b.md",
            "--json",
        ])
        .ok(),
    );
    repo.write("docs/c.md", "Slow cast here.\n");
    repo.git(&["add", "docs/c.md"]);
    repo.write("docs/c.md", "Slowcast here.\n");
    nameless(&[
        "context",
        "note",
        "--from",
        "Slow cast here",
        "--to",
        "Slowcast here",
        "--path",
        "docs/c.md",
    ])
    .ok();
    assert_eq!(status_of(&repo, &rule), "suggested");

    // Another session recording a change git shows is a person signal.
    correct(&repo, "s2", "Fast cast too", "Fastcast too", "docs/a.md").ok();
    assert_eq!(status_of(&repo, &id), "established");
    repo.kapi(&["check"]).code(1);
}

// ---- at the door: an agent's account of a person's change ----

#[test]
fn an_agents_correction_git_does_not_show_is_refused_and_records_nothing() {
    let repo = TestEnv::new();
    let id = suggested(&repo);
    repo.write("docs/both.md", "Fast cast too. Fastcast too.\n");
    repo.git(&["add", "docs/both.md"]);
    repo.git(&["commit", "-qm", "both"]);
    let tip = ops_tip(&repo);
    // Each refusal says what git shows instead (the transcript).
    let mut t = Transcript::new();
    let mut refused = |args: &[&str]| {
        let mut all = vec!["context", "note", "--from", "Fast cast too"];
        all.extend_from_slice(args);
        t.agent(&repo, "s2", &all).code(2);
        assert_eq!(ops_tip(&repo), tip, "nothing is recorded: {args:?}");
    };
    // No file to look at: --path, what git shows.
    refused(&["--to", "Fastcast too", "--quote", "Fast cast too"]);
    // The work tree does not say what the agent claims.
    refused(&["--to", "Fastcast too", "--path", "docs/a.md"]);
    // The wording before is neither committed (HEAD) nor staged (index).
    repo.write("docs/a.md", "Fastcast too.\n");
    refused(&["--to", "Fastcast too", "--path", "docs/b.md"]);
    refused(&["--to", "Fastcast too", "--path", "docs/none.md"]);
    // Both wordings were already there, and nothing changed.
    refused(&["--to", "Fastcast too", "--path", "docs/both.md"]);
    // Committed already: git no longer shows a change to record.
    repo.git(&["commit", "-qam", "fix"]);
    refused(&["--to", "Fastcast too", "--path", "docs/a.md"]);
    insta::assert_snapshot!(t.text());
    // Staged and not yet committed: the index shows what it was, and the
    // change, recorded by another session, settles the suggestion.
    repo.write("docs/new.md", "Fast cast here.\n");
    repo.git(&["add", "docs/new.md"]);
    repo.write("docs/new.md", "Fastcast here.\n");
    correct(
        &repo,
        "s2",
        "Fast cast here",
        "Fastcast here",
        "docs/new.md",
    )
    .ok();
    assert_eq!(status_of(&repo, &id), "established");
    // A person is trusted for their own words.
    repo.kapi(&[
        "context",
        "note",
        "--from",
        "Fast cast too",
        "--to",
        "Fastcast too",
        "--quote",
        "said in review",
    ])
    .ok();
}

// ---- who acts ----

#[test]
fn any_value_of_an_agent_hosts_variable_names_the_agent() {
    let repo = TestEnv::new();
    let id = suggested(&repo);
    // Any value names the agent claude-code (4); an empty one is a usage
    // error naming the variable (2).
    let mut t = Transcript::new();
    for (value, code) in [
        ("1", 4),
        ("0", 4),
        ("true", 4),
        ("yes", 4),
        ("false", 4),
        ("", 2),
        ("  ", 2),
    ] {
        let args = ["context", "review", "--keep", &id];
        let run: Run = repo
            .kapi_cmd(&args)
            .env("CLAUDECODE", value)
            .output()
            .unwrap()
            .into();
        let line = format!(
            "CLAUDECODE={} kapi {}",
            shell_words(&[value]),
            shell_words(&args)
        );
        t.step(&repo, &line, run).code(code);
    }
    insta::assert_snapshot!(t.text());
    assert_eq!(status_of(&repo, &id), "suggested");
}

// ---- special files ----

fn hook_input(repo: &TestEnv, session: &str, transcript: &Path) -> String {
    serde_json::json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": repo.path(),
        "stop_hook_active": false,
    })
    .to_string()
}

#[test]
fn a_fifo_as_claude_env_file_is_refused_and_the_session_starts() {
    let repo = TestEnv::new();
    let fifo = repo.root().join("env.fifo");
    mkfifo(&fifo);
    let mut cmd = repo.kapi_cmd(&["hook", "claude-session-start"]);
    cmd.env("CLAUDECODE", "1").env("CLAUDE_ENV_FILE", &fifo);
    let input = hook_input(&repo, "s-env", &repo.root().join("none.jsonl"));
    let run = within_deadline(cmd, input.as_bytes());
    let mut t = Transcript::new();
    let line = format!(
        "CLAUDECODE=1 CLAUDE_ENV_FILE={} kapi hook claude-session-start",
        fifo.display()
    );
    let line = fed(input.as_bytes(), &line);
    t.step(&repo, &line, run).code(0);
    insta::assert_snapshot!(t.text());
    assert!(is_fifo(&fifo));
    // A regular file is appended to.
    let file = repo.root().join("env.sh");
    std::fs::write(&file, "export A=1\n").unwrap();
    let mut cmd = repo.kapi_cmd(&["hook", "claude-session-start"]);
    cmd.env("CLAUDECODE", "1").env("CLAUDE_ENV_FILE", &file);
    within_deadline(cmd, input.as_bytes()).code(0);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "export A=1\nexport KAPI_SESSION='s-env'\n"
    );
}

#[test]
fn a_transcript_that_is_a_fifo_or_dev_zero_is_not_read() {
    let repo = TestEnv::new();
    repo.write("docs/a.md", "Plain words.\n");
    let fifo = repo.root().join("transcript.fifo");
    mkfifo(&fifo);
    // Each is named, "not a regular file", and the Stop goes on.
    let mut t = Transcript::new();
    for (session, transcript) in [
        ("s-fifo", fifo.clone()),
        ("s-zero", PathBuf::from("/dev/zero")),
    ] {
        let input = hook_input(&repo, session, &transcript);
        let cmd = capped_agent(&repo, session, &["hook", "claude-stop"]);
        let run = within_deadline(cmd, input.as_bytes());
        let line = format!(
            "(ulimit -v 4194304; CLAUDECODE=1 KAPI_SESSION={session} kapi hook claude-stop)"
        );
        let line = fed(input.as_bytes(), &line);
        t.step(&repo, &line, run).code(0);
    }
    insta::assert_snapshot!(t.text());
    assert!(is_fifo(&fifo));
}

/// Every entry under `.git/hooks` and `.claude`: name, kind and bytes (a
/// link's target).
fn hooks_state(repo: &TestEnv) -> Vec<(PathBuf, String, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in [repo.join(".git/hooks"), repo.join(".claude")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let (kind, bytes) = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                ("link", target.into_os_string().into_encoded_bytes())
            } else if is_fifo(&path) {
                ("fifo", Vec::new())
            } else {
                ("file", std::fs::read(&path).unwrap())
            };
            out.push((path, kind.to_owned(), bytes));
        }
    }
    out.sort();
    out
}

#[test]
fn a_fifo_where_a_git_hook_is_is_refused_without_hanging() {
    let repo = TestEnv::new();
    std::fs::create_dir_all(repo.join(".git/hooks")).unwrap();
    let hook = repo.join(".git/hooks/pre-commit");
    mkfifo(&hook);
    let before = hooks_state(&repo);
    // Each names pre-commit, "not a regular file".
    let mut t = Transcript::new();
    for args in [
        &["hooks", "install", "--git"][..],
        &["hooks", "status"][..],
        &["hooks", "uninstall", "--git"][..],
    ] {
        let run = within_deadline(repo.kapi_cmd(args), b"");
        t.step(&repo, &format!("kapi {}", shell_words(args)), run)
            .code(2);
        assert_eq!(hooks_state(&repo), before, "{args:?} changed nothing");
    }
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_dangling_kept_hook_is_never_overwritten() {
    let repo = TestEnv::new();
    let dir = repo.join(".git/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    std::os::unix::fs::symlink("gone/pre-commit", dir.join("pre-commit.pre-kapi")).unwrap();
    let before = hooks_state(&repo);
    let mut t = Transcript::new();
    t.kapi(&repo, &["hooks", "install", "--git"]).code(2);
    insta::assert_snapshot!(t.text());
    assert_eq!(hooks_state(&repo), before);
}

#[test]
fn claude_settings_that_are_not_utf8_are_refused_and_left_as_they_are() {
    let repo = TestEnv::new();
    let bytes = b"{\"permissions\": {\"allow\": [\"Bash(\xff)\"]}}\n";
    repo.write_bytes(".claude/settings.json", bytes);
    let before = hooks_state(&repo);
    // Each names settings.json and UTF-8.
    let mut t = Transcript::new();
    for args in [
        &["hooks", "install", "--claude"][..],
        &["hooks", "uninstall", "--claude"][..],
    ] {
        t.kapi(&repo, args).code(2);
        assert_eq!(hooks_state(&repo), before);
    }
    insta::assert_snapshot!(t.text());
    assert_eq!(
        std::fs::read(repo.join(".claude/settings.json")).unwrap(),
        bytes
    );
}
