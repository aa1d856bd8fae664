//! Issue 13: nothing forged through kapi's own doors, nothing oversized,
//! no clock dragged forward, nothing lost silently.

use crate::common::{Run, TestEnv, Transcript, shell_words};
use serde_json::Value;

use super::durability::{blob, push_segments, segment_of};

/// The agent's suggestion, then a hand-written file holding a person's
/// `keep` of it: the agent may not merge that file.
#[test]
fn an_agent_may_not_merge_a_file_of_operations() {
    let repo = TestEnv::new();
    let run = repo
        .agent_term("s1", "Quickcast", "Quick cast", &["--quote", "Quick cast"])
        .ok();
    let _ = run;
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let suggestion: Value = serde_json::from_str(exported.trim()).unwrap();
    let id = suggestion["id"].as_str().unwrap().to_owned();
    let forged_id = kapi::ops::OpId::mint(kapi::ops::id::EPOCH_MS + 1000, 9, None).unwrap();
    let mut keep = suggestion.clone();
    keep["id"] = Value::from(forged_id.to_string());
    keep["at"] = Value::from(forged_id.instant());
    keep["kind"] = Value::from("context.keep");
    keep["target"] = Value::from(id.clone());
    keep["actor"] = serde_json::json!({"kind": "person", "name": "ada@example.com"});
    for field in ["subject", "evidence"] {
        keep.as_object_mut().unwrap().remove(field);
    }
    repo.write("forged.jsonl", &format!("{keep}\n"));
    let before = repo.git(&["rev-parse", "refs/kapi/ops"]);
    let mut t = Transcript::new();
    t.agent(&repo, "s1", &["store", "import", "forged.jsonl"])
        .code(4);
    insta::assert_snapshot!(t.text());
    assert_eq!(
        repo.git(&["rev-parse", "refs/kapi/ops"]),
        before,
        "nothing was merged"
    );
    let status = repo
        .log()
        .into_iter()
        .find(|l| l["id"] == id.as_str())
        .unwrap()["status"]
        .clone();
    assert_eq!(status, "suggested");
    // From stdin too.
    let run = repo
        .kapi_cmd(&["store", "import", "-"])
        .env("CLAUDECODE", "1")
        .env("KAPI_SESSION", "s1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(4), "{run:?}");
    assert_eq!(repo.git(&["rev-parse", "refs/kapi/ops"]), before);
    // A person merges it (attribution is not authentication: see
    // docs/security.md).
    repo.kapi(&["store", "import", "forged.jsonl"]).ok();
}

/// `kapi ARGS` with `KAPI_NOW` set to `now`, or on the real clock
/// (`None`), recorded.
fn at(t: &mut Transcript, repo: &TestEnv, now: Option<&str>, args: &[&str]) -> Run {
    let mut cmd = repo.kapi_cmd(args);
    let line = match now {
        Some(now) => {
            cmd.env("KAPI_NOW", now);
            format!("KAPI_NOW={now} kapi {}", shell_words(args))
        }
        None => {
            cmd.env_remove("KAPI_NOW");
            format!("env -u KAPI_NOW kapi {}", shell_words(args))
        }
    };
    t.step(repo, &line, cmd.output().unwrap().into())
}

/// Now as Unix milliseconds.
fn real_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn no_id_is_minted_more_than_ten_minutes_past_the_system_clock() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let before = repo.git(&["rev-parse", "refs/kapi/ops"]);
    // 2045, through KAPI_NOW: refused, naming the bound, nothing recorded.
    // The refusal names the date, the bound and KAPI_NOW; the machine's
    // clock it prints reads [SYSTEM CLOCK].
    let mut t = Transcript::new();
    let run = at(
        &mut t,
        &repo,
        Some("2045-01-01T00:00:00Z"),
        &["context", "note", "From the future"],
    )
    .code(2);
    let clock = run
        .stderr
        .split_once("machine's clock (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(clock, _)| clock.to_owned())
        .expect("the refusal gives the machine's clock");
    t.redact(clock, "[SYSTEM CLOCK]");
    insta::assert_snapshot!(t.text());
    assert_eq!(repo.git(&["rev-parse", "refs/kapi/ops"]), before);
    assert!(
        !std::fs::read_to_string(repo.path().join(".git/kapi/journal"))
            .unwrap_or_default()
            .contains("From the future")
    );
    // Within the bound (five minutes ahead): recorded.
    let soon = real_now_ms() + 5 * 60 * 1000;
    let run = repo
        .kapi_cmd(&["context", "note", "Five minutes ahead", "--json"])
        .env("KAPI_NOW", soon.to_string())
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    // The harness's own clock (in the past) still records, never dragged
    // past the operation five minutes ahead into a refusal.
    repo.kapi(&["context", "note", "Back to the pinned clock"])
        .ok();
}

#[test]
fn an_operation_dated_2045_in_the_log_cannot_drag_ids_even_with_the_clock_pinned_there() {
    let repo = TestEnv::new();
    let run = repo
        .kapi(&["context", "note", "A first note", "--json"])
        .ok();
    let template: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let template = template.get("record").cloned().unwrap_or(template);
    let ms_2045 = 2_366_841_600_000u64; // 2045-01-01T00:00:00Z
    let id = kapi::ops::OpId::mint(ms_2045, 77, None).unwrap();
    let mut op = template.clone();
    op["id"] = Value::from(id.to_string());
    op["at"] = Value::from(id.instant());
    op["subject"] = serde_json::json!({"type": "note", "text": "dated 2045"});
    // A person's import with the clock pinned to 2045 does not admit it.
    repo.write("ahead.jsonl", &format!("{op}\n"));
    let mut t = Transcript::new();
    at(
        &mut t,
        &repo,
        Some("2045-01-01T00:00:01Z"),
        &["store", "import", "ahead.jsonl"],
    )
    .code(5);
    let (path, old) = segment_of(&repo, &id.to_string());
    let b = blob(&repo, format!("{old}{op}\n").as_bytes());
    push_segments(&repo, &[(path, b)], "pushed ahead");
    // With KAPI_NOW in 2045 the pushed id would be "within" the bound:
    // still refused, against the system clock.
    let run = repo
        .kapi_cmd(&["context", "note", "pinned to 2045"])
        .env("KAPI_NOW", "2045-01-01T00:00:01Z")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    // With the real clock, the next id is not dragged to 2045.
    let run = repo
        .kapi_cmd(&["context", "note", "now", "--json"])
        .env_remove("KAPI_NOW")
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let now: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert!(!now["at"].as_str().unwrap().starts_with("2045"), "{now}");
    // Named by the doctor, even with the clock pinned to 2045.
    for pinned in [None, Some("2045-01-01T00:00:01Z")] {
        at(&mut t, &repo, pinned, &["store", "doctor"]).code(1);
    }
    insta::assert_snapshot!(t.text());
}

#[test]
fn limits_are_enforced_at_the_door_with_exit_2_naming_the_limit() {
    let repo = TestEnv::new();
    repo.write("doc.md", "Open Quick cast.\n");
    let long_note = "word ".repeat(120 * 1024 / 5);
    let long_path = "d/".repeat(50 * 1024) + "x.md";
    let long_quote = "q".repeat(9000);
    let long_form = format!("Quick{}", "a".repeat(100 * 1024));
    // Each refusal names what is over which limit (the values themselves
    // are written short here).
    let mut t = Transcript::new();
    t.redact(long_note.as_str(), "[NOTE: \"word \" 24576 times]")
        .redact(long_path.as_str(), "[PATH: \"d/\" 51200 times, x.md]")
        .redact(long_quote.as_str(), "[QUOTE: q 9000 times]")
        .redact(long_form.as_str(), "[FORM: Quick, a 102400 times]");
    t.kapi(&repo, &["context", "note", &long_note]).code(2);
    t.kapi_term(&repo, "Quickcast", "Quick cast", &["--path", &long_path])
        .code(2);
    t.kapi_term(&repo, "Quickcast", "Quick cast", &["--quote", &long_quote])
        .code(2);
    t.kapi_term(&repo, &long_form, "Quick cast", &["--quote", "Quick cast"])
        .code(2);
    insta::assert_snapshot!(t.text());
    assert!(
        repo.git_cmd(&["rev-parse", "-q", "--verify", "refs/kapi/ops"])
            .output()
            .unwrap()
            .stdout
            .is_empty(),
        "nothing was recorded"
    );
}

/// A suggestion with a 100 KB form pushed with another tool: named and
/// skipped on read, so a whole-project check neither uses it nor repeats
/// it in every finding (it wrote gigabytes and ran past a minute).
#[test]
fn an_oversized_pushed_suggestion_is_named_and_skipped_on_read() {
    let repo = TestEnv::new();
    let mut page = String::new();
    for _ in 0..400 {
        page.push_str("Open Quick cast and Quick cast again.\n");
    }
    for n in 0..10 {
        repo.write(&format!("docs/p{n}.md"), &page);
    }
    let run = repo
        .agent_term(
            "s1",
            "Quickcast",
            "Quick cast",
            &["--quote", "Quick cast", "--json"],
        )
        .ok();
    let mut op: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    if let Some(record) = op.get("record") {
        op = record.clone();
    }
    let id = kapi::ops::OpId::mint(kapi::ops::id::EPOCH_MS + 5000, 5, None).unwrap();
    op["id"] = Value::from(id.to_string());
    op["at"] = Value::from(id.instant());
    let big = format!("Quick{}", "a".repeat(100 * 1024));
    op["subject"]["use"] = Value::from(big.clone());
    for key in ["status", "contested_by", "established", "standing"] {
        op.as_object_mut().unwrap().remove(key);
    }
    let (path, old) = segment_of(&repo, &id.to_string());
    let b = blob(&repo, format!("{old}{op}\n").as_bytes());
    push_segments(&repo, &[(path, b)], "pushed oversized");
    // The doctor names it over the limit; the log says it skipped one.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).code(1);
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
    let check = repo.kapi(&["check", "--format", "json"]);
    assert!(check.code == 0 || check.code == 1, "{}", check.stderr);
    assert!(
        !check.stdout.contains(&big[..2048]),
        "the oversized rule is not used"
    );
    assert!(
        check.stdout.len() < 8 * 1024 * 1024,
        "the report stays linear in the findings: {} bytes",
        check.stdout.len()
    );
}

#[test]
fn a_note_in_a_bare_repository_cannot_name_a_path_as_evidence() {
    let repo = TestEnv::new();
    repo.git(&["init", "-q", "--bare", "bare.git"]);
    let bare = repo.path().join("bare.git");
    for (k, v) in [("user.email", "ada@example.com"), ("user.name", "Ada")] {
        repo.git(&["-C", bare.to_str().unwrap(), "config", k, v]);
    }
    let mut t = Transcript::new();
    t.kapi(
        &repo,
        &[
            "-C",
            bare.to_str().unwrap(),
            "context",
            "note",
            "--term",
            "Quickcast",
            "--instead-of",
            "Quick cast",
            "--path",
            "docs/intro.md",
        ],
    )
    .code(2);
    insta::assert_snapshot!(t.text());
    assert!(
        repo.git_cmd(&[
            "-C",
            bare.to_str().unwrap(),
            "rev-parse",
            "-q",
            "--verify",
            "refs/kapi/ops"
        ])
        .output()
        .unwrap()
        .stdout
        .is_empty(),
        "nothing was recorded"
    );
    // A quote is evidence a bare repository can carry.
    repo.kapi(&[
        "-C",
        bare.to_str().unwrap(),
        "context",
        "note",
        "--term",
        "Quickcast",
        "--instead-of",
        "Quick cast",
        "--quote",
        "Quick cast",
    ])
    .ok();
}

/// A checked-in `AGENTS.md` linking out of the work tree is never written
/// through: the keep is recorded, the failed refresh is reported, and the
/// file it points at keeps its bytes.
#[test]
fn a_rules_file_linking_outside_the_work_tree_is_not_written() {
    let repo = TestEnv::new();
    let outside = repo.root().join("home/outside.md");
    std::fs::write(&outside, "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.path().join("AGENTS.md")).unwrap();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    let id = repo
        .log()
        .into_iter()
        .rev()
        .find(|l| l["subject"].is_object())
        .unwrap()["short"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut t = Transcript::new();
    let run = t.kapi(&repo, &["context", "review", "--keep", &id]);
    assert_ne!(
        run.code, 0,
        "the failed refresh is an error: {}",
        run.stderr
    );
    insta::assert_snapshot!(t.text());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    assert!(
        std::fs::symlink_metadata(repo.path().join("AGENTS.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// Output that cannot be written (stdout on a full device) is an error
/// with the store's code, whether it fails while writing or at the last
/// flush; it was exit 70 (a bug) for export and success for the log.
#[test]
fn output_that_cannot_be_written_is_an_error_not_success() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    // Each says it cannot write output: no space left.
    let mut t = Transcript::new();
    for args in [
        &["store", "export", "-"][..],
        &["context", "log"][..],
        &["context", "log", "--json"][..],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = repo.kapi_cmd(args).stdout(full).output().unwrap();
        let line = format!("kapi {} > /dev/full", shell_words(args));
        t.step(&repo, &line, out.into()).code(5);
    }
    insta::assert_snapshot!(t.text());
}
