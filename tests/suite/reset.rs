//! `kapi context reset --before <point>` through the real binary: a
//! session, a date, an instant or an operation; newest-first set-aside; a
//! reset of a reset; a dry run that records nothing and says the same.

use crate::common::{TestEnv, Transcript};

fn status_of(repo: &TestEnv, term: &str) -> String {
    repo.log()
        .iter()
        .find(|o| o["subject"]["use"] == term)
        .unwrap_or_else(|| panic!("no operation states {term}"))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn id_of(repo: &TestEnv, term: &str) -> String {
    repo.log()
        .iter()
        .find(|o| o["subject"]["use"] == term)
        .unwrap()["short"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The short id of the newest reset.
fn last_reset(repo: &TestEnv) -> String {
    repo.log()
        .iter()
        .rev()
        .find(|o| o["kind"] == "reset")
        .unwrap()["short"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_reset_before_a_session_sets_its_work_aside_and_a_dry_run_says_the_same() {
    let repo = TestEnv::new();
    repo.agent_term("s0", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    let flow = id_of(&repo, "Flowkit");
    repo.kapi(&["context", "review", "--keep", &flow]).ok();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    repo.agent_term("s1", "Supabase", "Supa base", &["--quote", "q"])
        .ok();
    let supa = id_of(&repo, "Supabase");
    repo.kapi(&["context", "review", "--keep", &supa]).ok();

    // An agent resets nothing, not even in a dry run.
    let mut t = Transcript::new();
    t.agent(&repo, "s1", &["context", "reset", "--before", "s1"])
        .code(4);

    // The dry run: Quickcast and Supabase set aside, not Flowkit, and the
    // keep of Supabase with them.
    let before = repo.log().len();
    let dry = t
        .kapi(&repo, &["context", "reset", "--before", "s1", "--dry-run"])
        .ok();
    assert_eq!(repo.log().len(), before, "a dry run records nothing");
    assert_eq!(status_of(&repo, "Supabase"), "established");

    let real = t.kapi(&repo, &["context", "reset", "--before", "s1"]).ok();
    assert!(real.stdout.starts_with("recorded #"), "{}", real.stdout);
    // Everything after the first line is the same report.
    let tail = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(
        tail(&dry.stdout).replace("Set aside (would be):", "Set aside:"),
        tail(&real.stdout)
    );
    assert_eq!(status_of(&repo, "Quickcast"), "reset");
    assert_eq!(status_of(&repo, "Supabase"), "reset");
    assert_eq!(status_of(&repo, "Flowkit"), "established");
    // Nothing is erased: the log lists what was set aside.
    t.kapi(&repo, &["context", "log", "--status", "reset"]).ok();
    insta::assert_snapshot!(t.text());

    // A reset of the reset brings back what it set aside, decisions included.
    let reset = last_reset(&repo);
    let run = repo
        .kapi(&["context", "reset", "--before", &reset, "--json"])
        .ok()
        .json();
    let again: Vec<&str> = run["answer_again"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["short"].as_str().unwrap())
        .collect();
    assert_eq!(again.len(), 2, "{run}");
    assert_eq!(run["set_aside"], serde_json::json!([]), "{run}");
    assert_eq!(run["decisions"], 1, "the reset itself: {run}");
    assert_eq!(status_of(&repo, "Supabase"), "established");
    assert_eq!(status_of(&repo, "Quickcast"), "suggested");
}

#[test]
fn set_aside_is_computed_newest_first() {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Alpha", "Alfa", &["--quote", "q"])
        .ok();
    repo.agent_term("s1", "Bravo", "Brabo", &["--quote", "q"])
        .ok();
    let bravo = id_of(&repo, "Bravo");
    // R1 sets Bravo aside.
    repo.kapi(&["context", "reset", "--before", &bravo]).ok();
    let r1 = last_reset(&repo);
    repo.agent_term("s2", "Charlie", "Charly", &["--quote", "q"])
        .ok();
    // R2 reaches further back: Alpha, Bravo, R1 and Charlie are set aside,
    // and R1, inside its range, has no effect of its own.
    let alpha = id_of(&repo, "Alpha");
    repo.kapi(&["context", "reset", "--before", &alpha]).ok();
    let r2 = last_reset(&repo);
    for term in ["Alpha", "Bravo", "Charlie"] {
        assert_eq!(status_of(&repo, term), "reset", "{term}");
    }
    // Taking R2 back brings R1 back into force: Bravo stays set aside,
    // Alpha and Charlie answer again.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "reset", "--before", &r2]).ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(status_of(&repo, "Alpha"), "suggested");
    assert_eq!(status_of(&repo, "Bravo"), "reset");
    assert_eq!(status_of(&repo, "Charlie"), "suggested");
    let _ = r1;
}

#[test]
fn a_reset_before_a_date_or_an_instant() {
    let repo = TestEnv::new();
    let on = |when: &str, term: &str, avoid: &str| {
        let run = repo
            .kapi_cmd(&[
                "context",
                "note",
                "--term",
                term,
                "--instead-of",
                avoid,
                "--quote",
                "q",
            ])
            .env("KAPI_NOW", when)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    };
    on("2026-11-28T10:00:00Z", "Alpha", "Alfa");
    on("2026-11-29T10:00:00Z", "Bravo", "Brabo");
    on("2026-11-29T12:00:00Z", "Charlie", "Charly");
    // Before a date: that whole day on.
    let run = repo
        .kapi(&[
            "context",
            "reset",
            "--before",
            "2026-11-29",
            "--dry-run",
            "--json",
        ])
        .ok()
        .json();
    let aside: Vec<&str> = run["set_aside"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        aside,
        [r#""Bravo", not "Brabo""#, r#""Charlie", not "Charly""#],
        "{run}"
    );
    assert_eq!(run["point"]["kind"], "instant");
    // Before an instant.
    repo.kapi(&["context", "reset", "--before", "2026-11-29T11:00:00Z"])
        .ok();
    assert_eq!(status_of(&repo, "Bravo"), "suggested");
    assert_eq!(status_of(&repo, "Charlie"), "reset");
    // A point after everything, or one that is nothing, is an error.
    repo.kapi(&["context", "reset", "--before", "2026-12-25"])
        .code(3);
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "reset", "--before", "no-such-thing!"])
        .code(2);
    insta::assert_snapshot!(t.text());
}
