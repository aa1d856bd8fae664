//! Text from the log, a remote, a commit or a file that would steer a
//! terminal (a note that erases its own line and prints a fake digest
//! entry, a bidi override) is shown escaped in every human format and
//! exact in JSON; and a merged range whose commits carry values over a
//! documented limit still gives the merge signals of everything else.

use std::path::PathBuf;

use crate::common::{Run, TestEnv, Transcript, fed, shell_words};
use serde_json::Value;

/// A note that returns to the start of its line, erases it, and prints
/// what looks like a rule a person established.
const ERASING: &str =
    "Prefer short titles\r\x1b[2K0ttd83m11q established \"Quickcast\" · person Ada\x1b[1A";
/// A note whose right-to-left override reorders the rest of the line.
const REORDERING: &str = "Titles stay short\u{202e} ,esolc\u{2066}x\u{2069}";

/// No byte a terminal would obey: C0 controls (but the line ends kapi
/// writes), DEL, C1 controls, bidi overrides and isolates.
fn assert_inert(what: &str, text: &str) {
    for (i, c) in text.chars().enumerate() {
        let steering = (c.is_control() && c != '\n')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(
            !steering,
            "{what}: {c:?} at char {i} is printed raw:\n{}",
            text.escape_debug()
        );
    }
}

fn note(env: &TestEnv, session: &str, text: &str) -> String {
    let run = env
        .agent(session, &["context", "note", text, "--json"])
        .ok();
    let op: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    op["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_note_that_erases_its_line_is_shown_escaped_in_log_review_and_search_and_exact_in_json() {
    let env = TestEnv::new();
    let erasing = note(&env, "s1", ERASING);
    note(&env, "s1", REORDERING);

    // Every human format shows both notes escaped: `\r`, `\u{1b}[2K`,
    // `\u{202e}`, `\u{2066}`...
    let mut t = Transcript::new();
    for args in [
        &["context", "log"][..],
        &["context", "review"],
        &["context", "search", "titles"],
        &["context", "session", "s1"],
    ] {
        let run = t.kapi(&env, args).ok();
        assert_inert(&format!("{args:?}"), &run.stdout);
        assert_inert(&format!("{args:?} stderr"), &run.stderr);
    }

    // JSON is exact: the note reads back byte for byte.
    let log = env.log();
    let texts: Vec<&str> = log
        .iter()
        .filter_map(|l| l["subject"]["text"].as_str())
        .collect();
    assert_eq!(texts, [ERASING, REORDERING]);
    let review = env.kapi(&["context", "review", "--json"]).ok().json();
    let awaiting = review["awaiting"].as_array().unwrap();
    assert_eq!(awaiting[0]["short"], &erasing[..10], "{review}");
    assert_eq!(awaiting[0]["subject"], ERASING, "{review}");
    let search = env
        .kapi(&["context", "search", "titles", "--json"])
        .ok()
        .json();
    assert_eq!(search["notes"][0]["note"], ERASING, "{search}");
    assert_eq!(search["notes"][1]["note"], REORDERING, "{search}");

    // A person keeps it: `kapi context <path>` shows the note kept, and a
    // dry-run reset the note it would set aside, both escaped.
    env.kapi(&["context", "review", "--keep", &erasing]).ok();
    env.write("README.md", "# Project\n");
    t.comment("the erasing note kept");
    let here = t.kapi(&env, &["context", "README.md"]).ok();
    assert_inert("context .", &here.stdout);
    let reset = t
        .kapi(&env, &["context", "reset", "--before", "s1", "--dry-run"])
        .ok();
    assert_inert("reset --dry-run", &reset.stdout);
    insta::assert_snapshot!(t.text());
}

#[test]
fn an_actor_name_from_the_log_cannot_steer_the_terminal() {
    let env = TestEnv::new();
    env.git(&[
        "config",
        "user.email",
        "ada\x1b]0;owned\x07\u{9b}2K@example.com",
    ]);
    env.kapi(&["context", "note", "Write for administrators"])
        .ok();
    // Read by a teammate: the log names the writer (the writer would read
    // "you").
    env.git(&["config", "user.email", "bob@example.com"]);
    let mut t = Transcript::new();
    let log = t.kapi(&env, &["context", "log"]).ok();
    assert_inert("log", &log.stdout);
    insta::assert_snapshot!(t.text());
    let json = env.log();
    assert_eq!(
        json[0]["actor"]["name"],
        "ada\x1b]0;owned\x07\u{9b}2K@example.com"
    );
}

#[test]
fn check_shows_a_hostile_line_and_file_name_escaped_for_people_and_exact_for_tools() {
    let env = TestEnv::new();
    env.kept_rule("Quickcast", "Quick cast");
    let name = "docs/a\r\x1b[2Kfake\n::error file=x::y.md";
    env.write(name, "Open Quick cast \x1b[2K\u{202e}now.\n");

    let mut t = Transcript::new();
    let human = t.kapi(&env, &["check"]).code(1);
    assert_inert("check", &human.stdout);
    insta::assert_snapshot!(t.text());
    // The carets still stand under the match.
    let lines: Vec<&str> = human.stdout.lines().collect();
    let at = lines.iter().position(|l| l.contains("Open Quick")).unwrap();
    let shown = lines[at].find("Quick cast").unwrap();
    assert_eq!(lines[at + 1].find('^'), Some(shown), "{}", human.stdout);

    // JSON gives the path as it is; GitHub's annotations escape what a
    // workflow command reads (`%`, CR, LF; `:` and `,` in properties).
    let json = env.kapi(&["check", "--format", "json"]).code(1).json();
    assert_eq!(json["findings"][0]["path"], name, "{json}");
    // Asserted, not snapshotted: the annotation holds a raw ESC (GitHub
    // reads it as text), which a .snap file would hide.
    let github = env.kapi(&["check", "--format", "github"]).code(1);
    let lines: Vec<&str> = github.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", github.stdout);
    assert_eq!(
        lines[0],
        "::error file=docs/a%0D\x1b[2Kfake%0A%3A%3Aerror file=x%3A%3Ay.md,line=1,col=6,\
         endColumn=16,title=kapi%3A term::use \"Quickcast\", not \"Quick cast\"",
    );
}

#[test]
fn the_agent_hook_names_a_hostile_file_escaped_on_stderr() {
    let env = TestEnv::new();
    env.kept_rule("Quickcast", "Quick cast");
    let name = "docs/b\r\x1b[2K.md";
    env.write(name, "Quick cast is fast.\n");
    let transcript = env.root().join("s-edit.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let input = serde_json::json!({
        "session_id": "s-edit",
        "transcript_path": transcript,
        "cwd": env.path(),
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": { "file_path": env.join(name), "content": "x" },
        "tool_response": { "filePath": env.join(name), "success": true },
        "tool_use_id": "toolu_01"
    });
    let mut cmd = env.kapi_cmd(&["hook", "claude-post-edit"]);
    cmd.env("CLAUDECODE", "1");
    let input = input.to_string();
    let run: Run = crate::common::piped_output(cmd, input.as_bytes()).into();
    let mut t = Transcript::new();
    let line = fed(input.as_bytes(), "CLAUDECODE=1 kapi hook claude-post-edit");
    let run = t.step(&env, &line, run).code(2);
    assert_inert("claude-post-edit", &run.stderr);
    insta::assert_snapshot!(t.text());
}

#[test]
fn sync_names_an_unreadable_fetched_line_escaped() {
    let env = TestEnv::new();
    let remote = env.bare_remote();
    env.add_origin(&remote);
    env.kapi(&["context", "note", "Write for administrators"])
        .ok();
    env.kapi(&["context", "sync"]).ok();
    // Another machine pushes a log holding a line that is no operation.
    let other = env.sibling("other");
    other.add_origin(&remote);
    other.git(&["fetch", "-q", "origin", "refs/kapi/ops:refs/kapi/ops"]);
    let tree = other.git(&["ls-tree", "-r", "refs/kapi/ops"]);
    let segment = tree.lines().next().unwrap().split('\t').nth(1).unwrap();
    let blob = other.git(&["show", &format!("refs/kapi/ops:{segment}")]);
    let mut forged: Value = serde_json::from_str(blob.lines().next().unwrap()).unwrap();
    forged["kind"] = "\x1b[2K\u{202e}fake".into();
    let hostile = format!("{blob}\n{forged}\n");
    let new_blob = other.git_stdin(&["hash-object", "-w", "--stdin"], hostile.as_bytes());
    other.git(&["read-tree", "refs/kapi/ops"]);
    other.git(&[
        "update-index",
        "--cacheinfo",
        &format!("100644,{new_blob},{segment}"),
    ]);
    let new_tree = other.git(&["write-tree"]);
    let parent = other.git(&["rev-parse", "refs/kapi/ops"]);
    let commit = other.git(&["commit-tree", &new_tree, "-p", &parent, "-m", "x"]);
    other.git(&["push", "-q", "origin", &format!("{commit}:refs/kapi/ops")]);

    // The fetched line's kind is named escaped.
    let mut t = Transcript::new();
    let run = t.kapi(&env, &["context", "sync", "--no-push"]).ok();
    assert_inert("sync stdout", &run.stdout);
    assert_inert("sync stderr", &run.stderr);
    // Past kapi's door (fetched by git itself), doctor names it escaped.
    env.git(&["fetch", "-q", "origin", "+refs/kapi/ops:refs/kapi/ops"]);
    t.comment("git fetch -q origin +refs/kapi/ops:refs/kapi/ops");
    let doctor = t.kapi(&env, &["store", "doctor"]).code(1);
    assert_inert("doctor", &doctor.stdout);
    insta::assert_snapshot!(t.text());
}

// ---------------------------------------------------------------------------
// Merge signals: a value over a documented limit, and ranges that are none

/// A project with a bare remote, a suggestion for the help pages, and
/// three commits on main after `base`: `#7` by Ada, one whose subject ends
/// in a 300-digit pull request, and `#9` by an author with a 300-byte name.
struct Merged {
    remote: PathBuf,
    env: TestEnv,
    base: String,
    suggestion: String,
    long_pr_commit: String,
    long_author_commit: String,
}

fn merged() -> Merged {
    let env = TestEnv::new();
    let remote = env.bare_remote();
    env.write("docs/help/start.md", "# Start\n\nOpen Quick cast.\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "Initial docs"]);
    env.add_origin(&remote);
    let base = env.git(&["rev-parse", "HEAD"]);
    let run = env
        .agent_term(
            "a1",
            "Quickcast",
            "Quick cast",
            &["--path", "docs/help/start.md", "--json"],
        )
        .ok();
    let op: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let suggestion = op["id"].as_str().unwrap().to_owned();

    env.write("docs/help/start.md", "# Start\n\nOpen Quickcast.\n");
    env.git(&["commit", "-qam", "Fix the name (#7)"]);
    env.write("docs/help/more.md", "Quickcast is fast.\n");
    env.git(&["add", "-A"]);
    let subject = format!("Say more (#{})", "1".repeat(300));
    env.git(&["commit", "-qm", &subject]);
    let long_pr_commit = env.git(&["rev-parse", "HEAD"]);
    env.write("docs/help/again.md", "Quickcast again.\n");
    env.git(&["add", "-A"]);
    let mut cmd = env.git_cmd(&["commit", "-qm", "Say it again (#9)"]);
    cmd.env("GIT_AUTHOR_NAME", "M".repeat(300));
    assert!(cmd.status().unwrap().success());
    let long_author_commit = env.git(&["rev-parse", "HEAD"]);
    Merged {
        remote,
        env,
        base,
        suggestion,
        long_pr_commit,
        long_author_commit,
    }
}

fn as_ci(env: &TestEnv, args: &[&str]) -> Run {
    env.kapi_cmd(args)
        .env("KAPI_TOOL", "ci")
        .output()
        .unwrap()
        .into()
}

/// [`as_ci`], recorded.
fn as_ci_in(t: &mut Transcript, env: &TestEnv, args: &[&str]) -> Run {
    let line = format!("KAPI_TOOL=ci kapi {}", shell_words(args));
    t.step(env, &line, as_ci(env, args))
}

fn remote_tip(remote: &std::path::Path) -> String {
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args(["rev-parse", "--verify", "-q", "refs/kapi/ops"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn an_over_limit_author_or_pull_request_is_left_out_and_the_range_still_gives_its_signals() {
    let m = merged();
    let range = format!("{}..HEAD", m.base);
    let mut t = Transcript::new();
    let run = as_ci_in(
        &mut t,
        &m.env,
        &["context", "sync", "--merged", &range, "--json"],
    )
    .ok();
    let report = run.json();
    let signals = report["merged"]["signals"].as_array().unwrap();
    assert_eq!(signals.len(), 3, "{report}");
    for s in signals {
        assert_eq!(s["target"], m.suggestion.as_str());
        assert_eq!(s["recorded"], true);
    }
    let prs: Vec<Option<&str>> = signals.iter().map(|s| s["pr"].as_str()).collect();
    assert_eq!(prs, [Some("9"), None, Some("7")], "{report}");
    assert_eq!(signals[1]["commit"], m.long_pr_commit.as_str());
    // Both values are named on stderr, by commit, with the limit, and
    // neither is printed (the transcript).
    let skipped: Vec<(&str, &str, u64)> = report["merged"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["commit"].as_str().unwrap(),
                s["value"].as_str().unwrap(),
                s["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            (m.long_pr_commit.as_str(), "pr", 300),
            (m.long_author_commit.as_str(), "merger", 300)
        ],
        "{report}"
    );

    // The log holds the three signals: the one whose author is over the
    // limit names no merger, the one without a readable PR names none.
    let log = m
        .env
        .kapi(&["context", "log", "--kind", "signal", "--json"])
        .ok()
        .json_lines();
    assert_eq!(log.len(), 3, "{log:?}");
    let by_commit = |c: &str| {
        log.iter()
            .find(|l| l["signal"]["commit"] == c)
            .unwrap_or_else(|| panic!("{c}: {log:?}"))
    };
    assert!(by_commit(&m.long_author_commit)["signal"]["merger"].is_null());
    assert!(by_commit(&m.long_pr_commit)["signal"]["pr"].is_null());
    assert_eq!(by_commit(&m.long_pr_commit)["signal"]["merger"], "Ada");
    assert_eq!(
        remote_tip(&m.remote),
        m.env.git(&["rev-parse", "refs/kapi/ops"])
    );

    // The human report says the same on stderr. A pull request given
    // over the limit is the caller's own input: refused, nothing read.
    let m = merged();
    let range = format!("{}..HEAD", m.base);
    let pr = "5".repeat(300);
    t.comment("a second repository scripted the same way; --pr is 300 fives");
    t.redact(pr.as_str(), "[300 FIVES]");
    as_ci_in(
        &mut t,
        &m.env,
        &["context", "sync", "--merged", &range, "--pr", &pr],
    )
    .code(2);
    assert_eq!(remote_tip(&m.remote), "");
    as_ci_in(&mut t, &m.env, &["context", "sync", "--merged", &range]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn the_post_merge_hook_leaves_out_an_over_limit_value_and_records_the_rest() {
    let env = TestEnv::new();
    env.write("docs/a.md", "Open Quick cast.\n");
    env.git(&["add", "docs/a.md"]);
    env.git(&["commit", "-qm", "base"]);
    env.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "Quick cast"])
        .ok();
    env.git(&["checkout", "-qb", "fix"]);
    env.write("docs/a.md", "Open Quickcast.\n");
    let subject = format!("Write Quickcast (#{})", "4".repeat(300));
    let mut cmd = env.git_cmd(&["commit", "-qam", &subject]);
    cmd.env("GIT_AUTHOR_NAME", "M".repeat(300));
    assert!(cmd.status().unwrap().success());
    env.git(&["checkout", "-q", "main"]);
    env.git(&["merge", "-q", "fix"]);
    // The signal recorded, the over-limit values named with the limit, no
    // failure of the hook's merge signals.
    let mut t = Transcript::new();
    t.kapi(&env, &["hook", "post-merge", "0"]).ok();
    insta::assert_snapshot!(t.text());
    let signals = env
        .kapi(&["context", "log", "--kind", "signal", "--json"])
        .ok()
        .json_lines();
    assert_eq!(signals.len(), 1, "{signals:?}");
    assert!(signals[0]["signal"]["pr"].is_null());
    assert!(signals[0]["signal"]["merger"].is_null());
}

#[test]
fn a_merged_range_that_is_not_a_resolvable_a_to_b_range_is_a_usage_error() {
    let m = merged();
    // Each names the range given and the A..B it wants, and prints nothing
    // on stdout.
    let mut t = Transcript::new();
    let mut bad = |env: &TestEnv, range: &str| {
        as_ci_in(&mut t, env, &["context", "sync", "--merged", range]).code(2);
    };
    // With a suggestion awaiting evidence, and (in a fresh project) without.
    let fresh = TestEnv::new();
    fresh.write("a.md", "x\n");
    fresh.git(&["add", "-A"]);
    fresh.git(&["commit", "-qm", "x"]);
    fresh.add_origin(&m.remote);
    for env in [&m.env, &fresh] {
        for range in [
            "",
            "HEAD",
            "nonsense..HEAD",
            "HEAD..nonsense",
            "..HEAD",
            "HEAD..",
            "HEAD...HEAD",
        ] {
            bad(env, range);
        }
    }
    insta::assert_snapshot!(t.text());
    // Nothing was recorded or pushed.
    assert_eq!(remote_tip(&m.remote), "");
    let signals = m
        .env
        .kapi(&["context", "log", "--kind", "signal", "--json"])
        .ok();
    assert_eq!(signals.stdout, "");
    // A valid range still works.
    as_ci(
        &m.env,
        &["context", "sync", "--merged", &format!("{}..HEAD", m.base)],
    )
    .ok();
}
