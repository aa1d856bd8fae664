//! `kapi store rebuild`: every derived thing made again from the log
//! alone, what changed said, and nothing that is not derived touched.

use serde_json::Value;

use crate::common::{TestEnv, is_fifo, mkfifo};

const DERIVED: [&str; 6] = [
    "fold.base",
    "fold.checkpoint",
    // Left by the keep: the view with every decision at the tips it made.
    "fold.decisions",
    "newest",
    "project",
    "arrivals.tips",
];

fn rebuild(env: &TestEnv) -> Value {
    env.kapi(&["store", "rebuild", "--json"]).ok().json()
}

fn removed(answer: &Value) -> Vec<String> {
    answer["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_rebuild_removes_and_makes_again_every_derived_file_and_leaves_the_log_alone() {
    let env = TestEnv::new();
    env.write("AGENTS.md", "# Agents\n");
    let id = env.suggested_rule("Quickcast", "Quick cast");
    env.kapi(&["context", "review", "--keep", &id]).ok();
    env.suggested_rule("Bravo", "bravo");
    // A watcher polled: the arrival record exists.
    let polled = env
        .kapi(&["context", "log", "--since", "0", "--json"])
        .ok()
        .json();
    let statuses = |env: &TestEnv| -> Vec<(String, String)> {
        env.log()
            .iter()
            .map(|o| {
                (
                    o["id"].as_str().unwrap().to_owned(),
                    o["status"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let before = statuses(&env);
    let tip = env.git(&["rev-parse", "refs/kapi/ops"]);
    let arrivals = std::fs::read(env.join(".git/kapi/arrivals")).unwrap();
    let agents = std::fs::read_to_string(env.join("AGENTS.md")).unwrap();

    let answer = rebuild(&env);
    assert_eq!(removed(&answer), DERIVED, "{answer}");
    assert_eq!(answer["operations"], 3);
    assert_eq!(answer["changed"], serde_json::json!([]));
    assert_eq!(answer["rules_files"], serde_json::json!([]));
    for name in DERIVED {
        assert!(
            env.join(".git/kapi").join(name).is_file(),
            "{name} made again"
        );
    }
    // The view with every decision too (read by a listing of one kind).
    assert!(env.join(".git/kapi/fold.decisions").is_file());
    // The log, the arrival record and the answers are as they were.
    assert_eq!(env.git(&["rev-parse", "refs/kapi/ops"]), tip);
    assert_eq!(
        std::fs::read(env.join(".git/kapi/arrivals")).unwrap(),
        arrivals
    );
    assert_eq!(statuses(&env), before);
    assert_eq!(
        std::fs::read_to_string(env.join("AGENTS.md")).unwrap(),
        agents
    );
    let again = env
        .kapi(&[
            "context",
            "log",
            "--since",
            "3",
            "--generation",
            polled["generation"].as_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(again["restarted"], false, "{again}");

    // A person reads it as sentences.
    let text = env.kapi(&["store", "rebuild"]).ok().stdout;
    for line in [
        "rebuilt from the log alone: 3 operations folded",
        "removed: fold.base (the whole folded ledger, ",
        "statuses: none changed (the caches agreed with the log)",
        "rules files: none changed",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
}

#[test]
fn a_rules_file_edited_inside_its_managed_block_is_written_again_and_named() {
    let env = TestEnv::new();
    env.write("AGENTS.md", "# Agents\n");
    let id = env.suggested_rule("Quickcast", "Quick cast");
    env.kapi(&["context", "review", "--keep", &id]).ok();
    let kept = std::fs::read_to_string(env.join("AGENTS.md")).unwrap();
    assert!(kept.contains("Write **Quickcast**"), "{kept}");
    env.write(
        "AGENTS.md",
        &kept.replace("Write **Quickcast**", "Write **Quick cast**"),
    );
    let text = env.kapi(&["store", "rebuild"]).ok().stdout;
    assert!(
        text.contains("rules files: AGENTS.md written again from the log"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(env.join("AGENTS.md")).unwrap(),
        kept
    );
}

#[test]
fn a_fifo_or_a_link_in_a_derived_files_place_is_removed_never_opened() {
    let env = TestEnv::new();
    env.suggested_rule("Quickcast", "Quick cast");
    env.log();
    let kapi = env.join(".git/kapi");
    std::fs::remove_file(kapi.join("fold.base")).unwrap();
    mkfifo(&kapi.join("fold.base"));
    let outside = env.join("outside.txt");
    std::fs::write(&outside, "not kapi's\n").unwrap();
    let _ = std::fs::remove_file(kapi.join("project"));
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, kapi.join("project")).unwrap();
    let answer = rebuild(&env);
    assert!(
        removed(&answer).contains(&"fold.base".to_owned()),
        "{answer}"
    );
    assert!(!is_fifo(&kapi.join("fold.base")));
    assert!(kapi.join("fold.base").is_file());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "not kapi's\n");
    assert!(!kapi.join("project").is_symlink());
}

#[test]
fn a_rebuild_reads_again_what_the_workspace_shares() {
    let a = TestEnv::new();
    let b = a.sibling("b");
    b.write("a.md", "Quickcast\n");
    let id = b.suggested_rule("Quickcast", "Quick cast");
    b.kapi(&[
        "context",
        "review",
        "--keep",
        &id,
        "--widen-to",
        "workspace",
    ])
    .ok();
    a.suggested_rule("Bravo", "bravo");
    // a reads the workspace once: b's answer is cached.
    a.write("guide.md", "Open Quick cast.\n");
    a.kapi(&["check", "guide.md"]);
    let answer = rebuild(&a);
    assert_eq!(answer["workspace_read"], 1, "{answer}");
    assert!(
        answer["workspace_removed"].as_u64().unwrap() >= 1,
        "{answer}"
    );
    // The rule b widened still holds here after the rebuild.
    let run = a.kapi(&["check", "guide.md"]);
    assert!(run.stdout.contains("Quickcast"), "{}", run.stdout);
}
