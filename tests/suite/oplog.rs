//! The operation log through the real binary: record, fold, review, move a
//! log between repositories, concurrent writers, untrusted operations.

use crate::common::{TestEnv, Transcript};
use serde_json::Value;

fn note_term(repo: &TestEnv, session: &str, term: &str, instead: &str) -> String {
    repo.agent_rule_at(session, term, instead, "docs/intro.md")
}

fn status_of(repo: &TestEnv, id: &str) -> String {
    repo.log().into_iter().find(|l| l["id"] == id).unwrap()["status"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn an_agent_suggests_and_a_person_keeps() {
    let repo = TestEnv::new();
    // The note says the rule with the forms it avoids; the log, its kind,
    // status and standing.
    let mut t = Transcript::new();
    t.agent_term(
        &repo,
        "s1",
        "Quickcast",
        "Quick cast",
        &["--path", "docs/intro.md", "--quote", "Open Quick cast"],
    )
    .ok();
    t.kapi(&repo, &["context", "log"]).ok();
    let lines = repo.log();
    assert_eq!(lines.len(), 1);
    let op = &lines[0];
    assert_eq!(op["kind"], "observe");
    assert_eq!(op["status"], "suggested");
    assert_eq!(op["actor"]["kind"], "agent");
    assert_eq!(op["actor"]["name"], "claude-code");
    assert_eq!(op["actor"]["session"], "s1");
    assert_eq!(
        op["subject"]["avoid"],
        serde_json::json!(["Quick cast", "Quick-cast", "QuickCast"])
    );
    assert_eq!(op["evidence"][0]["quote"], "Open Quick cast");
    assert_eq!(op["contested_by"], serde_json::json!([]));
    let short = op["short"].as_str().unwrap().to_owned();
    assert_eq!(short.len(), 10);
    assert!(op["id"].as_str().unwrap().starts_with(&short));

    t.kapi(&repo, &["context", "review", "--keep", &short]).ok();
    let lines = repo.log();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "established");
    assert_eq!(lines[0]["established"], true);
    assert_eq!(lines[1]["kind"], "keep");
    assert_eq!(lines[1]["actor"]["name"], "ada@example.com");
    assert_eq!(lines[1]["target"], lines[0]["id"]);
    // Keeping twice records nothing.
    t.kapi(&repo, &["context", "review", "--keep", &short])
        .code(3);
    insta::assert_snapshot!(t.text());
}

#[test]
fn the_record_is_canonical_and_versioned() {
    let repo = TestEnv::new();
    let out = repo
        .kapi(&[
            "context",
            "note",
            "The docs address the administrator",
            "--json",
        ])
        .ok()
        .stdout;
    let line = out.trim();
    let value: Value = serde_json::from_str(line).unwrap();
    assert_eq!(value["v"], 1);
    assert_eq!(value["kind"], "context.observe");
    assert_eq!(
        value["actor"],
        serde_json::json!({"kind": "person", "name": "ada@example.com"})
    );
    assert_eq!(value["at"], "2026-11-30T09:00:00.000Z");
    // Sorted keys, compact: re-serializing the parsed value gives the same bytes.
    assert_eq!(serde_json::to_string(&value).unwrap(), line);
    // And it is what the ref stores.
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    assert_eq!(exported.trim(), line);
}

#[test]
fn a_rule_needs_evidence() {
    let repo = TestEnv::new();
    let mut t = Transcript::new();
    t.agent_term(&repo, "s1", "Quickcast", "Quick cast", &[])
        .code(2);
    t.kapi(
        &repo,
        &[
            "context",
            "note",
            "--from",
            "Quick cast",
            "--to",
            "Quickcast",
        ],
    )
    .code(2);
    // A word with no parts avoids only what --instead-of lists; none given is an error.
    t.agent(
        &repo,
        "s1",
        &["context", "note", "--term", "utilize", "--quote", "utilise"],
    )
    .code(2);
    insta::assert_snapshot!(t.text());
    assert!(repo.log().is_empty());
}

#[test]
fn only_a_person_decides() {
    let repo = TestEnv::new();
    let id = note_term(&repo, "s1", "Quickcast", "Quick cast");
    let mut t = Transcript::new();
    t.agent(&repo, "s1", &["context", "review", "--keep", &id[..10]])
        .code(4);
    t.agent(&repo, "s1", &["context", "review", "--drop", &id[..10]])
        .code(4);
    insta::assert_snapshot!(t.text());
    assert_eq!(repo.log().len(), 1);
}

#[test]
fn prefixes_resolve_and_ambiguous_ones_list_candidates() {
    let repo = TestEnv::new();
    let a = note_term(&repo, "s1", "Quickcast", "Quick cast");
    let b = note_term(&repo, "s1", "Supabase", "Supa base");
    // The pinned clock and seed make both ids share their first seven characters.
    assert_eq!(a[..7], b[..7]);
    // An ambiguous prefix lists both candidates and asks for more
    // characters; an unknown one and a malformed one are named.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "review", "--keep", &a[..7]])
        .code(2);
    t.kapi(&repo, &["context", "review", "--keep", "zzzzzzzz"])
        .code(2);
    t.kapi(&repo, &["context", "review", "--keep", "not-an-id"])
        .code(2);
    t.kapi(
        &repo,
        &["context", "review", "--keep", &format!("#{}", &b[..12])],
    )
    .ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(status_of(&repo, &b), "established");
    assert_eq!(status_of(&repo, &a), "suggested");
}

#[test]
fn an_author_withdraws_only_its_own_suggestion_in_its_session() {
    let repo = TestEnv::new();
    let id = note_term(&repo, "s1", "Quickcast", "Quick cast");
    let mut t = Transcript::new();
    t.agent(&repo, "s2", &["context", "note", "--withdraw", &id[..10]])
        .code(4);
    t.agent(&repo, "s1", &["context", "note", "--withdraw", &id[..10]])
        .ok();
    assert_eq!(status_of(&repo, &id), "withdrawn");
    t.agent(&repo, "s1", &["context", "note", "--withdraw", &id[..10]])
        .code(3);
    insta::assert_snapshot!(t.text());
    // The log reads back one session's operations.
    let mine = repo
        .agent("s1", &["context", "log", "--session", "this", "--json"])
        .ok()
        .json_lines();
    assert_eq!(mine.len(), 2);
    assert!(
        repo.agent("s2", &["context", "log", "--session", "this", "--json"])
            .ok()
            .stdout
            .is_empty()
    );
    let withdrawn = repo
        .kapi(&["context", "log", "--status", "withdrawn", "--json"])
        .ok()
        .json_lines();
    assert_eq!(withdrawn.len(), 1);
    let kinds = repo
        .kapi(&["context", "log", "--kind", "withdraw", "--json"])
        .ok()
        .json_lines();
    assert_eq!(kinds.len(), 1);
}

#[test]
fn disagreeing_suggestions_are_contested_until_a_person_chooses() {
    let repo = TestEnv::new();
    let a = note_term(&repo, "s1", "Quickcast", "Quick cast");
    let b = note_term(&repo, "s2", "Quick Cast", "Quickcast");
    let lines = repo.log();
    assert_eq!(lines[0]["status"], "contested");
    assert_eq!(lines[0]["contested_by"], serde_json::json!([b]));
    assert_eq!(lines[1]["status"], "contested");
    assert_eq!(lines[1]["contested_by"], serde_json::json!([a]));
    // Each names the other; keeping one without the other is refused.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "log"]).ok();
    t.kapi(&repo, &["context", "review", "--keep", &a[..10]])
        .code(3);
    insta::assert_snapshot!(t.text());
    repo.kapi(&["context", "review", "--keep", &a[..10], "--drop", &b[..10]])
        .ok();
    assert_eq!(status_of(&repo, &a), "established");
    assert_eq!(status_of(&repo, &b), "dropped");
    // Drops are recorded before keeps.
    let kinds: Vec<String> = repo
        .log()
        .iter()
        .map(|l| l["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["observe", "observe", "drop", "keep"]);

    // A later suggestion against the established rule is contested by it; the rule stays.
    let c = note_term(&repo, "s3", "Quick-Cast", "Quickcast");
    assert_eq!(status_of(&repo, &c), "contested");
    assert_eq!(status_of(&repo, &a), "established");
}

#[test]
fn rules_in_different_windows_or_points_do_not_disagree() {
    let repo = TestEnv::new();
    repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &["--quote", "q", "--valid-to", "2026-12-01"],
    )
    .ok();
    repo.agent_term(
        "s1",
        "Quick Cast",
        "Quickcast",
        &["--quote", "q", "--valid-from", "2026-12-01"],
    )
    .ok();
    repo.agent_term(
        "s1",
        "Flowkit",
        "Flow kit",
        &["--quote", "q", "--point", "market=no"],
    )
    .ok();
    repo.agent_term(
        "s1",
        "Flow Kit",
        "Flowkit",
        &["--quote", "q", "--point", "market=de"],
    )
    .ok();
    for line in repo.log() {
        assert_eq!(line["status"], "suggested", "{line}");
    }
    let mut t = Transcript::new();
    t.agent(
        &repo,
        "s1",
        &[
            "context",
            "note",
            "--term",
            "X Y",
            "--quote",
            "q",
            "--valid-from",
            "2027-01-01",
            "--valid-to",
            "2026-01-01",
        ],
    )
    .code(2);
    t.agent(
        &repo,
        "s1",
        &[
            "context",
            "note",
            "--term",
            "X Y",
            "--quote",
            "q",
            "--point",
            "product=a",
        ],
    )
    .code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_persons_correction_reversing_a_rule_contests_it_until_kept_again() {
    let repo = TestEnv::new();
    let rule = note_term(&repo, "s1", "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &rule[..10]])
        .ok();
    let out = repo
        .kapi(&[
            "context",
            "note",
            "--from",
            "Quickcast",
            "--to",
            "Quick cast",
            "--path",
            "docs/legal.md",
            "--json",
        ])
        .ok()
        .stdout;
    let correction: Value = serde_json::from_str(out.trim()).unwrap();
    let cid = correction["id"].as_str().unwrap();
    assert_eq!(correction["kind"], "context.correct");
    assert_eq!(status_of(&repo, &rule), "contested");
    assert_eq!(status_of(&repo, cid), "contested");
    // The person keeps the rule again: it binds, the correction stays contested.
    repo.kapi(&[
        "context",
        "review",
        "--keep",
        &rule[..10],
        "--drop",
        &cid[..10],
    ])
    .ok();
    assert_eq!(status_of(&repo, &rule), "established");
    assert_eq!(status_of(&repo, cid), "dropped");
}

#[test]
fn an_agents_correction_against_a_rule_does_not_unseat_it() {
    let repo = TestEnv::new();
    let rule = note_term(&repo, "s1", "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &rule[..10]])
        .ok();
    // The change is one git shows: committed before, edited in the work tree.
    repo.write("docs/legal.md", "Open Quickcast.\n");
    repo.git(&["add", "docs/legal.md"]);
    repo.git(&["commit", "-qm", "legal"]);
    repo.write("docs/legal.md", "Open Quick cast.\n");
    repo.agent(
        "s2",
        &[
            "context",
            "note",
            "--from",
            "Quickcast",
            "--to",
            "Quick cast",
            "--suggest",
            "--path",
            "docs/legal.md",
        ],
    )
    .ok();
    assert_eq!(status_of(&repo, &rule), "established");
    let lines = repo.log();
    assert_eq!(lines[2]["status"], "contested");
    assert_eq!(lines[2]["subject"]["use"], "Quick cast");
}

#[test]
fn logs_moved_by_file_converge_in_either_order() {
    let a = TestEnv::new();
    let b = TestEnv::new();
    note_term(&a, "a1", "Quickcast", "Quick cast");
    a.kapi(&["context", "note", "Write for administrators"])
        .ok();
    // Different seeds and clocks on the two machines.
    b.kapi_cmd(&[
        "context",
        "note",
        "--term",
        "Flowkit",
        "--instead-of",
        "Flow kit",
        "--quote",
        "q",
    ])
    .env("KAPI_SEED", "99")
    .env("KAPI_NOW", "2026-11-29T10:00:00Z")
    .output()
    .unwrap();
    b.kapi_cmd(&["context", "note", "Use the second person"])
        .env("KAPI_SEED", "98")
        .output()
        .unwrap();

    let a_file = a.path().join("a.jsonl");
    let b_file = b.path().join("b.jsonl");
    a.kapi(&["store", "export", a_file.to_str().unwrap()]).ok();
    b.kapi(&["store", "export", b_file.to_str().unwrap()]).ok();
    // a's work folder first ($), b's second ([ROOT2]/work$).
    let mut t = Transcript::new();
    t.knows(&a);
    t.kapi(&b, &["store", "import", a_file.to_str().unwrap()])
        .ok();
    t.kapi(&a, &["store", "import", b_file.to_str().unwrap()])
        .ok();

    let tree = |r: &TestEnv| r.git(&["rev-parse", "refs/kapi/ops^{tree}"]);
    assert_eq!(tree(&a), tree(&b));
    let fold = |r: &TestEnv| r.kapi(&["context", "log", "--json"]).ok().stdout;
    assert_eq!(fold(&a), fold(&b));
    assert_eq!(a.log().len(), 4);
    // Importing again changes nothing.
    t.kapi(&a, &["store", "import", b_file.to_str().unwrap()])
        .ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(tree(&a), tree(&b));
    // New ids on either side still sort after everything either holds.
    let newest = a.log().last().unwrap()["id"].as_str().unwrap().to_owned();
    let next = note_term(&a, "a1", "Supabase", "Supa base");
    assert!(next > newest);
}

#[test]
fn concurrent_writers_lose_nothing() {
    let repo = TestEnv::new();
    let writers = 8;
    let each = 5;
    std::thread::scope(|s| {
        for w in 0..writers {
            let repo = &repo;
            s.spawn(move || {
                for i in 0..each {
                    let term = format!("Widget{w}x{i}");
                    let instead = format!("Widget{w} x{i}");
                    let out = repo
                        .kapi_cmd(&[
                            "context",
                            "note",
                            "--term",
                            &term,
                            "--instead-of",
                            &instead,
                            "--quote",
                            "q",
                        ])
                        .env_remove("KAPI_NOW")
                        .env_remove("KAPI_SEED")
                        .env("KAPI_AGENT", format!("agent-{w}"))
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            });
        }
    });
    let lines = repo.log();
    assert_eq!(lines.len(), writers * each);
    let mut ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), writers * each);
    let shorts: std::collections::BTreeSet<&str> =
        lines.iter().map(|l| l["short"].as_str().unwrap()).collect();
    assert_eq!(
        shorts.len(),
        writers * each,
        "short ids are unique on one machine"
    );
}

#[test]
fn a_corrupted_operation_on_the_ref_is_named_and_skipped() {
    let repo = TestEnv::new();
    let id = note_term(&repo, "s1", "Quickcast", "Quick cast");
    let good = repo.git(&[
        "show",
        &format!("refs/kapi/ops:{}/{}", &id[8..9], &id[9..10]),
    ]);
    let future = good.replace("\"v\":1", "\"v\":2");
    let future = future.replacen(&id[20..], "zzzz", 1);
    let huge = format!("{{\"v\":1,\"note\":\"{}\"}}", "x".repeat(1_100_000));
    let segment = format!("{good}\nthis is not json\n{future}\n{huge}\n");
    let blob = repo.git_stdin(&["hash-object", "-w", "--stdin"], segment.as_bytes());
    let level = repo.git_stdin(
        &["mktree"],
        format!("100644 blob {blob}\t{}\n", &id[9..10]).as_bytes(),
    );
    let root = repo.git_stdin(
        &["mktree"],
        format!("040000 tree {level}\t{}\n", &id[8..9]).as_bytes(),
    );
    let parent = repo.git(&["rev-parse", "refs/kapi/ops"]);
    let commit = repo.git(&["commit-tree", &root, "-p", &parent, "-m", "tampered"]);
    repo.git(&["update-ref", "refs/kapi/ops", &commit]);

    // The valid operation still reads, and the rest of kapi keeps working.
    let lines = repo.log();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["id"], id);
    // Lines 2 (malformed), 3 (format version 2) and 4 (oversized) named.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).code(1);
    insta::assert_snapshot!(t.text());
    // Appending still works on top of the damaged segment.
    note_term(&repo, "s1", "Supabase", "Supa base");
    assert_eq!(repo.log().len(), 2);
}

#[test]
fn an_import_reports_bad_lines_and_merges_the_valid_ones() {
    let a = TestEnv::new();
    note_term(&a, "s1", "Quickcast", "Quick cast");
    let exported = a.kapi(&["store", "export", "-"]).ok().stdout;
    let b = TestEnv::new();
    b.write("ops.jsonl", &format!("{{\"v\":1}}\n{exported}not json\n"));
    // Lines 1 and 3 named malformed, the valid one merged (1 new).
    let mut t = Transcript::new();
    t.kapi(&b, &["store", "import", "ops.jsonl"]).code(5);
    assert_eq!(b.log().len(), 1);
    // An agent's import of a log file is a merge, not a reading of context files: but a forged
    // keep by an agent in the file is ignored by the fold.
    let mut forged: Value = serde_json::from_str(exported.trim()).unwrap();
    let target = forged["id"].as_str().unwrap().to_owned();
    forged["id"] = Value::from(format!("{}zzzzzzzzzzzzzz", &target[..10]));
    forged["kind"] = Value::from("context.keep");
    forged["target"] = Value::from(target.clone());
    forged.as_object_mut().unwrap().remove("subject");
    b.write("forged.jsonl", &format!("{forged}\n"));
    b.kapi(&["store", "import", "forged.jsonl"]).ok();
    assert_eq!(status_of(&b, &target), "suggested");
    // The doctor names the ignored keep: an agent may not keep.
    t.kapi(&b, &["store", "doctor"]).code(1);
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_person_without_git_identity_is_unnamed_and_outside_a_repo_is_an_error() {
    let repo = TestEnv::without_identity();
    let op = repo
        .kapi(&["context", "note", "A note", "--json"])
        .ok()
        .json();
    assert_eq!(
        op["actor"],
        serde_json::json!({"kind": "person", "name": "unnamed"})
    );
    let plain = TestEnv::plain();
    let mut t = Transcript::new();
    t.kapi(&plain, &["context", "log"]).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn git_kapi_is_a_git_subcommand() {
    let repo = TestEnv::new();
    let bin_dir = crate::common::kapi_bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = repo
        .git_cmd(&["kapi", "context", "note", "Via git", "--json"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(repo.log().len(), 1);
}

mod union_law {
    use crate::common::TestEnv;
    use kapi::ops::record::{Actor, ActorKind, Evidence, Kind, Record, Subject};
    use kapi::store::{LogRef, Store};
    use proptest::prelude::*;

    fn record(n: u32, term: u8, avoid: u8, session: u8) -> Record {
        let id = kapi::ops::OpId::mint(
            kapi::ops::id::EPOCH_MS + 1000 + u64::from(n),
            u128::from(n) * 7919,
            None,
        )
        .unwrap();
        let actor = Actor {
            kind: ActorKind::Agent,
            name: "a".into(),
            session: Some(format!("s{session}").into()),
        };
        Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            subject: Some(Box::new(Subject::Term {
                preferred: format!("Term{term}"),
                avoid: vec![format!("Form{avoid}")],
            })),
            evidence: vec![Evidence {
                quote: Some("q".into()),
                ..Default::default()
            }]
            .into(),
            ..Record::new("p", actor, Kind::Observe)
        }
    }

    const NOW: u64 = kapi::ops::id::EPOCH_MS + 86_400_000;

    fn statuses(store: &Store) -> Vec<(String, String, Vec<String>)> {
        let ledger = kapi::ops::fold(store.load_all().unwrap().records);
        ledger
            .iter()
            .map(|(r, s)| {
                let s = s.unwrap();
                (
                    r.id.to_string(),
                    s.status.as_str().to_owned(),
                    s.contested_by.iter().map(|c| c.to_string()).collect(),
                )
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn merging_in_either_order_gives_one_tree_and_one_fold(
            ops in proptest::collection::vec((0u8..4, 0u8..4, 0u8..3, any::<bool>(), any::<bool>()), 1..24)
        ) {
            let records: Vec<(Record, bool, bool)> = ops
                .iter()
                .enumerate()
                .map(|(n, &(t, a, s, in_a, in_b))| (record(n as u32, t, a, s), in_a, in_b))
                .collect();
            let left: Vec<Record> = records.iter().filter(|r| r.1).map(|r| r.0.clone()).collect();
            let right: Vec<Record> = records.iter().filter(|r| r.2 || !r.1).map(|r| r.0.clone()).collect();
            let one = TestEnv::new();
            let two = TestEnv::new();
            let s1 = Store::discover(one.path()).unwrap();
            let s2 = Store::discover(two.path()).unwrap();
            s1.merge_records(&left, NOW).unwrap();
            s1.merge_records(&right, NOW).unwrap();
            s2.merge_records(&right, NOW).unwrap();
            s2.merge_records(&left, NOW).unwrap();
            prop_assert_eq!(s1.tree_id(LogRef::Shared).unwrap(), s2.tree_id(LogRef::Shared).unwrap());
            prop_assert_eq!(statuses(&s1), statuses(&s2));
            prop_assert_eq!(s1.load_all().unwrap().records.len(), records.len());
        }
    }
}

#[test]
fn an_import_never_changes_an_operation_the_log_holds() {
    let a = TestEnv::new();
    let id = note_term(&a, "s1", "Quickcast", "Quick cast");
    let exported = a.kapi(&["store", "export", "-"]).ok().stdout;
    let mut forged: Value = serde_json::from_str(exported.trim()).unwrap();
    forged["subject"]["use"] = Value::from("QuICKCAST");
    forged["address"] = Value::from("x");
    a.write("forged.jsonl", &format!("{forged}\n"));
    let mut t = Transcript::new();
    t.kapi(&a, &["store", "import", "forged.jsonl"]).code(5);
    let lines = a.log();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["subject"]["use"], "Quickcast");
    assert_eq!(lines[0]["id"], id);

    // An operation dated far in the future is refused, and appends keep working.
    let mut future: Value = serde_json::from_str(exported.trim()).unwrap();
    let far =
        kapi::ops::OpId::mint(kapi::ops::id::EPOCH_MS + 30 * 365 * 86_400_000, 5, None).unwrap();
    future["id"] = Value::from(far.to_string());
    future["at"] = Value::from(far.instant());
    a.write("future.jsonl", &format!("{future}\n"));
    t.kapi(&a, &["store", "import", "future.jsonl"]).code(5);
    insta::assert_snapshot!(t.text());
    note_term(&a, "s1", "Supabase", "Supa base");
    assert_eq!(a.log().len(), 2);
}

#[test]
fn a_note_path_is_relative_to_where_kapi_runs() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"qc\" }\n",
    );
    std::fs::create_dir_all(repo.path().join("docs")).unwrap();
    let out = repo
        .kapi_cmd(&[
            "context",
            "note",
            "--term",
            "Flowkit",
            "--instead-of",
            "Flow kit",
            "--path",
            "app/a.md",
            "--json",
        ])
        .current_dir(repo.path().join("docs"))
        .env("KAPI_AGENT", "a")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let op: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(op["evidence"][0]["path"], "docs/app/a.md");
    assert_eq!(op["scope"]["point"]["product"], "qc");
}

#[test]
fn operations_the_fold_ignores_are_marked_in_the_log() {
    let repo = TestEnv::new();
    let id = note_term(&repo, "s1", "Quickcast", "Quick cast");
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let mut keep: Value = serde_json::from_str(exported.trim()).unwrap();
    let forged_id = kapi::ops::OpId::mint(kapi::ops::id::EPOCH_MS + 1000, 9, None).unwrap();
    keep["id"] = Value::from(forged_id.to_string());
    keep["at"] = Value::from(forged_id.instant());
    keep["kind"] = Value::from("context.keep");
    keep["target"] = Value::from(id.clone());
    keep.as_object_mut().unwrap().remove("subject");
    repo.write("keep.jsonl", &format!("{keep}\n"));
    repo.kapi(&["store", "import", "keep.jsonl"]).ok();
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
    let lines = repo.log();
    let forged = lines.iter().find(|l| l["kind"] == "keep").unwrap();
    assert_eq!(
        forged["ignored"],
        "agent claude-code [s1] may not keep a rule: a person decides in review: `kapi context review`",
        "{forged}"
    );
    assert_eq!(status_of(&repo, &id), "suggested");
}

#[test]
fn lines_a_crashed_writer_left_in_the_journal_are_committed_by_the_next_reader() {
    let a = TestEnv::new();
    note_term(&a, "s1", "Quickcast", "Quick cast");
    let line = a.kapi(&["store", "export", "-"]).ok().stdout;
    // Another repository's writer died after journaling, before committing;
    // a torn line follows.
    let b = TestEnv::new();
    let out = b
        .kapi_cmd(&["context", "note", "A first note"])
        .env("KAPI_SEED", "8")
        .output()
        .unwrap();
    assert!(out.status.success());
    let journal = b.path().join(".git/kapi/journal");
    std::fs::write(&journal, format!("{}{{\"v\":1,\"id\":\"0tt", line)).unwrap();
    let lines = b.log();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().any(|l| l["subject"]["use"] == "Quickcast"));
    assert_eq!(std::fs::read(&journal).unwrap(), b"");
    let rejected = std::fs::read_to_string(b.path().join(".git/kapi/journal.rejected")).unwrap();
    assert!(rejected.starts_with("{\"v\":1,\"id\":\"0tt"), "{rejected}");
    let mut t = Transcript::new();
    t.kapi(&b, &["store", "doctor"]).code(1);
    insta::assert_snapshot!(t.text());
}

/// A repository whose log holds 1,500 imported notes of some 200 bytes
/// each, the `n`th's id minted with the random tail `tail(n)`: enough that
/// reads keep a segment cache (over 256 KiB).
fn imported_notes(tail: impl Fn(u64) -> u128) -> TestEnv {
    let a = TestEnv::new();
    let mut lines = String::new();
    for n in 0..1500u64 {
        let id = kapi::ops::OpId::mint(kapi::ops::id::EPOCH_MS + 1_000 + n, tail(n), None).unwrap();
        let op = serde_json::json!({
            "v": 1, "id": id.to_string(), "project": "p", "at": id.instant(), "kind": "context.observe",
            "actor": {"kind": "agent", "name": "a", "session": "s"},
            "subject": {"type": "note", "text": format!("note {n}: {}", "x".repeat(200))},
        });
        lines.push_str(&op.to_string());
        lines.push('\n');
    }
    a.write("ops.jsonl", &lines);
    a.kapi(&["store", "import", "ops.jsonl"]).ok();
    a
}

#[test]
fn the_read_cache_gives_the_same_log_and_survives_damage() {
    let a = imported_notes(|n| u128::from(n) * 104_729);
    let first = a.kapi(&["context", "log", "--json"]).ok().stdout;
    let cache = a.path().join(".git/kapi/segments.cache");
    assert!(cache.exists(), "a read of a large log keeps a cache");
    let second = a.kapi(&["context", "log", "--json"]).ok().stdout;
    assert_eq!(first, second);
    assert_eq!(first.lines().count(), 1500);
    // A damaged cache is read around; a deleted one is rebuilt.
    let mut raw = std::fs::read(&cache).unwrap();
    let mid = raw.len() / 2;
    raw[mid] ^= 0x20;
    std::fs::write(&cache, raw).unwrap();
    assert_eq!(a.kapi(&["context", "log", "--json"]).ok().stdout, first);
    std::fs::remove_file(&cache).unwrap();
    assert_eq!(a.kapi(&["context", "log", "--json"]).ok().stdout, first);
    // An append changes one segment; the next read sees it.
    a.kapi(&["context", "note", "After the cache"]).ok();
    assert_eq!(
        a.kapi(&["context", "log", "--json"])
            .ok()
            .stdout
            .lines()
            .count(),
        1501
    );
}

/// Remove the fold checkpoint's files: the next read folds the log from
/// its segments (a cold read).
fn drop_checkpoint(repo: &TestEnv) {
    for entry in std::fs::read_dir(repo.path().join(".git/kapi")).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("fold.")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
}

#[test]
fn a_forged_read_cache_entry_is_read_from_git_instead() {
    let a = imported_notes(|n| u128::from(n + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c));
    let genuine = a.kapi(&["context", "log", "--json"]).ok().stdout;
    assert_eq!(genuine.lines().count(), 1500);
    let cache = a.path().join(".git/kapi/segments.cache");
    let written = std::fs::read(&cache).unwrap();
    // The forger rewrites the first entry in the file's own layout
    // (`<blob> <length> <check>\n<bytes>` after the file's first lines):
    // its segment with one more operation, well-formed and in the
    // segment's shard, and the check field a CRC-32 of the new bytes where
    // it is one (the layout before tags), else the entry's own tag (of the
    // bytes before).
    let line_end = |at: usize| at + written[at..].iter().position(|&b| b == b'\n').unwrap();
    let mut magic_end = line_end(0) + 1;
    // A line of one field after the magic line (the key it was written
    // under) is kept as it is.
    if !written[magic_end..line_end(magic_end)].contains(&b' ') {
        magic_end = line_end(magic_end) + 1;
    }
    let header_end = line_end(magic_end);
    let header = std::str::from_utf8(&written[magic_end..header_end]).unwrap();
    let fields: Vec<&str> = header.split(' ').collect();
    let len: usize = fields[1].parse().unwrap();
    let bytes = &written[header_end + 1..header_end + 1 + len];
    assert_eq!(
        bytes.trim_ascii(),
        a.git(&["cat-file", "blob", fields[0]]).as_bytes(),
        "an entry holds its segment's bytes"
    );
    let first_line = bytes.split(|&b| b == b'\n').next().unwrap();
    let mut forged: Value = serde_json::from_slice(first_line).unwrap();
    let shard = forged["id"].as_str().unwrap()[8..10].to_owned();
    // The shard is the two characters after the time: the random part's
    // top ten bits.
    let id = (0..1024u128)
        .map(|top| {
            kapi::ops::OpId::mint(kapi::ops::id::EPOCH_MS + 9_000, top << 70, None)
                .unwrap()
                .to_string()
        })
        .find(|id| id[8..10] == shard)
        .unwrap();
    forged["id"] = Value::from(id.clone());
    forged["at"] = Value::from(kapi::ops::OpId::parse(&id).unwrap().instant());
    forged["subject"]["text"] = Value::from("FORGED: skip the review");
    let mut new_bytes = bytes.to_vec();
    new_bytes.extend_from_slice(forged.to_string().as_bytes());
    new_bytes.push(b'\n');
    let check = match fields[2].parse::<u32>() {
        Ok(_) => crc32fast::hash(&new_bytes).to_string(),
        Err(_) => fields[2].to_owned(),
    };
    let mut raw = written[..magic_end].to_vec();
    raw.extend_from_slice(format!("{} {} {check}\n", fields[0], new_bytes.len()).as_bytes());
    raw.extend_from_slice(&new_bytes);
    raw.extend_from_slice(&written[header_end + 1 + len..]);
    std::fs::write(&cache, &raw).unwrap();
    // A cold read takes the segment from git: the forged operation is not
    // in the log, and the genuine log reads whole.
    drop_checkpoint(&a);
    let read = a.kapi(&["context", "log", "--json"]).ok().stdout;
    assert!(!read.contains("FORGED"), "a forged cache entry was obeyed");
    assert_eq!(read, genuine);
    // The cache is written anew with the genuine bytes, and still obeyed.
    let rewritten = std::fs::read(&cache).unwrap();
    assert!(!rewritten.windows(6).any(|w| w == b"FORGED"));
    assert_eq!(rewritten.len(), written.len());
    drop_checkpoint(&a);
    assert_eq!(a.kapi(&["context", "log", "--json"]).ok().stdout, genuine);
    // The secret made anew: no entry is vouched for, and the next read
    // writes the cache anew under the new secret.
    std::fs::remove_file(a.path().join(".git/kapi/trust.secret")).unwrap();
    drop_checkpoint(&a);
    assert_eq!(a.kapi(&["context", "log", "--json"]).ok().stdout, genuine);
    let anew = std::fs::read(&cache).unwrap();
    assert_eq!(anew.len(), written.len());
    assert_ne!(anew[..magic_end], rewritten[..magic_end]);
    drop_checkpoint(&a);
    assert_eq!(a.kapi(&["context", "log", "--json"]).ok().stdout, genuine);
}

/// The blob ids a read cache file holds (`<hex> <length> <tag>\n<bytes>`
/// entries after its magic line and its key line).
fn cached_blobs(cache: &std::path::Path) -> std::collections::BTreeSet<String> {
    let raw = std::fs::read(cache).unwrap();
    let magic = raw.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut at = magic + raw[magic..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut ids = std::collections::BTreeSet::new();
    while at < raw.len() {
        let end = at + raw[at..].iter().position(|&b| b == b'\n').unwrap();
        let header = std::str::from_utf8(&raw[at..end]).unwrap();
        let mut fields = header.split(' ');
        let id = fields.next().unwrap().to_owned();
        let len: usize = fields.next().unwrap().parse().unwrap();
        assert!(ids.insert(id), "one entry a blob");
        at = end + 1 + len;
    }
    assert_eq!(at, raw.len());
    ids
}

#[test]
fn a_fresh_clones_first_read_writes_the_read_cache_once_for_both_logs() {
    let a = TestEnv::new();
    let mut lines = String::new();
    for n in 0..1500u64 {
        let id = kapi::ops::OpId::mint(
            kapi::ops::id::EPOCH_MS + 1_000 + n,
            // Tails spread over the 80 random bits: ids fall in every segment.
            u128::from(n + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c),
            None,
        )
        .unwrap();
        // Every tenth a check run, which goes to the local log: the read
        // takes both.
        let op = if n % 10 == 9 {
            serde_json::json!({
                "v": 1, "id": id.to_string(), "project": "p", "at": id.instant(), "kind": "context.check",
                "actor": {"kind": "agent", "name": "a", "session": "s"},
                "check": {"hook": "stop", "files": [format!("docs/page{n}.md")], "failing": [], "clean": true},
            })
        } else {
            serde_json::json!({
                "v": 1, "id": id.to_string(), "project": "p", "at": id.instant(), "kind": "context.observe",
                "actor": {"kind": "agent", "name": "a", "session": "s"},
                "subject": {"type": "note", "text": format!("note {n}: {}", "x".repeat(200))},
            })
        };
        lines.push_str(&op.to_string());
        lines.push('\n');
    }
    a.write("ops.jsonl", &lines);
    a.kapi(&["store", "import", "ops.jsonl"]).ok();
    let first = a.kapi(&["context", "log", "--json"]).ok().stdout;
    // Everything derived goes, as in a fresh clone.
    std::fs::remove_dir_all(a.path().join(".git/kapi")).unwrap();
    let again = a.kapi(&["context", "log", "--json"]).ok().stdout;
    assert_eq!(again, first);
    // The cache holds every segment of both logs, each once: written by
    // the first thing that read the log (the project's oldest operation),
    // so the read of the whole log that followed did not write it again,
    // and neither does the next read.
    let mut segments = std::collections::BTreeSet::new();
    for log in ["refs/kapi/ops", "refs/kapi/local"] {
        let listed = a.git(&["ls-tree", "-r", "--object-only", log]);
        let before = segments.len();
        segments.extend(listed.lines().map(str::to_owned));
        assert!(segments.len() > before, "{log} holds segments");
    }
    assert!(segments.len() >= 64, "{}", segments.len());
    let cache = a.path().join(".git/kapi/segments.cache");
    assert!(
        cached_blobs(&cache) == segments,
        "the cache holds the log's segments"
    );
    use std::os::unix::fs::MetadataExt;
    let written = std::fs::metadata(&cache).unwrap().ino();
    assert_eq!(a.kapi(&["context", "log", "--json"]).ok().stdout, first);
    assert_eq!(std::fs::metadata(&cache).unwrap().ino(), written);
    // An import reads each log on its own: the cache still holds both.
    a.kapi(&["store", "import", "ops.jsonl"]).ok();
    assert!(
        cached_blobs(&cache) == segments,
        "the cache holds both logs' segments"
    );
    // A segment the cache lacks (a fetch, an append) is read by the next
    // read of the whole log (the checkpoint gone: a cold read) and the
    // cache written anew with it, the rest copied from the old one.
    a.kapi(&["context", "note", "After the cache"]).ok();
    drop_checkpoint(&a);
    assert_eq!(
        a.kapi(&["context", "log", "--json"])
            .ok()
            .stdout
            .lines()
            .count(),
        first.lines().count() + 1
    );
    let mut segments = std::collections::BTreeSet::new();
    for log in ["refs/kapi/ops", "refs/kapi/local"] {
        let listed = a.git(&["ls-tree", "-r", "--object-only", log]);
        segments.extend(listed.lines().map(str::to_owned));
    }
    assert!(
        cached_blobs(&cache) == segments,
        "the cache holds the log's segments"
    );
}

#[test]
fn a_decision_stands_and_is_shown_when_the_rules_files_cannot_be_written() {
    let repo = TestEnv::new();
    let id = note_term(&repo, "s1", "Quickcast", "Quick cast");
    // AGENTS.md is a folder: the refresh after the keep cannot write it.
    std::fs::create_dir_all(repo.path().join("AGENTS.md")).unwrap();
    // The recorded keep is shown, and the file it could not write named.
    let mut t = Transcript::new();
    let run = t.kapi(&repo, &["context", "review", "--keep", &id[..10]]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(t.text());
    assert_eq!(status_of(&repo, &id), "established");
}

#[test]
fn a_ceiling_that_holds_none_of_the_way_up_is_ignored_as_git_ignores_it() {
    let repo = TestEnv::new();
    let out = repo
        .kapi_cmd(&["context", "note", "under an unrelated ceiling"])
        .env("GIT_CEILING_DIRECTORIES", "/proc")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_keep_that_gives_one_bound_keeps_the_other() {
    let repo = TestEnv::new();
    let run = repo
        .agent_term(
            "s1",
            "Quickcast",
            "Quick cast",
            &["--quote", "q", "--valid-from", "2026-01-01", "--json"],
        )
        .ok();
    let op: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let id = op["id"].as_str().unwrap();
    repo.kapi(&[
        "context",
        "review",
        "--keep",
        id,
        "--valid-to",
        "2027-01-01",
    ])
    .ok();
    let line = repo.log().into_iter().find(|l| l["id"] == id).unwrap();
    assert_eq!(line["scope"]["valid_from"], "2026-01-01", "{line}");
    assert_eq!(line["scope"]["valid_to"], "2027-01-01", "{line}");
    // A bound that would leave the window empty is refused.
    let mut t = Transcript::new();
    t.kapi(
        &repo,
        &[
            "context",
            "review",
            "--keep",
            id,
            "--valid-to",
            "2025-06-01",
        ],
    )
    .code(2);
    insta::assert_snapshot!(t.text());
}

/// Every reader folds through the checkpoint beside the log: an operation
/// merged in that sorts before what the checkpoint holds, a damaged or
/// deleted checkpoint, all answer as a fold of the log from the start.
#[test]
fn reads_through_the_checkpoint_answer_as_a_fresh_fold() {
    let repo = TestEnv::new();
    let id = note_term(&repo, "s1", "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &id[..10]]).ok();
    repo.write("docs/intro.md", "Open Quick cast.\n");
    repo.kapi(&["check", "docs/intro.md"]).code(1);
    let checkpoint = repo.join(".git/kapi/fold.base");
    assert!(checkpoint.exists(), "a read leaves the checkpoint");

    // From elsewhere: a note dated between the observation and the keep.
    let first = repo.log().remove(0);
    let older = serde_json::json!({
        "v": 1, "id": format!("{}zzzzzzzzzzzzzzzz", &id[..8]), "project": "p",
        "actor": {"kind": "agent", "name": "claude-code", "session": "s9"},
        "kind": "context.observe", "at": first["at"],
        "subject": {"type": "note", "text": "The guide addresses the administrator."},
        "evidence": [{"path": "docs/intro.md", "quote": "Open"}],
    });
    repo.write("older.jsonl", &format!("{older}\n"));
    repo.kapi(&["store", "import", "older.jsonl"]).ok();

    let through_checkpoint = repo.kapi(&["context", "log", "--json"]).ok().stdout;
    let here = repo
        .kapi(&["context", "docs/intro.md", "--json"])
        .ok()
        .json();
    let said = "The guide addresses the administrator.";
    assert_eq!(here["suggestions"][0]["note"], said, "{here}");
    let older_id = older["id"].as_str().unwrap();
    let held = through_checkpoint
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["id"] == older_id)
        .expect("the older note is in the log");
    assert_eq!(held["subject"]["text"], said);
    repo.kapi(&["check", "docs/intro.md"]).code(1);

    // Damaged, then deleted: the same answers.
    for file in [checkpoint.clone(), repo.join(".git/kapi/fold.checkpoint")] {
        let mut bytes = std::fs::read(&file).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x20;
        std::fs::write(&file, bytes).unwrap();
    }
    assert_eq!(
        repo.kapi(&["context", "docs/intro.md", "--json"])
            .ok()
            .json(),
        here
    );
    assert_eq!(
        repo.kapi(&["context", "log", "--json"]).ok().stdout,
        through_checkpoint
    );
    std::fs::remove_file(&checkpoint).unwrap();
    assert_eq!(
        repo.kapi(&["context", "log", "--json"]).ok().stdout,
        through_checkpoint
    );
    assert_eq!(
        repo.kapi(&["context", "docs/intro.md", "--json"])
            .ok()
            .json(),
        here
    );
}

/// The listing of suggestions (`context log --status suggested --json`),
/// parsed, after checking it is what the whole ledger (`whole`, as
/// `repo.log()` reads it) lists as suggested.
fn suggested_as_the_whole_ledger_lists(repo: &TestEnv, whole: &[Value]) -> (String, Vec<Value>) {
    let listed = repo
        .kapi(&["context", "log", "--status", "suggested", "--json"])
        .ok()
        .stdout;
    let expected: Vec<&Value> = whole
        .iter()
        .filter(|l| l["status"] == "suggested")
        .collect();
    let got: Vec<Value> = listed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.iter().collect::<Vec<_>>(), expected);
    (listed, got)
}

/// The review digest and a listing by status read the reader's view, not
/// the whole ledger: with the whole ledger's checkpoint (`fold.base`)
/// deleted they answer as before and do not fold the log again (which
/// would write it anew); a listing by status that matches nothing still
/// counts every operation of the log.
#[test]
fn the_digest_and_a_listing_by_status_read_the_view_alone() {
    let repo = TestEnv::new();
    let kept = note_term(&repo, "s1", "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &kept[..10]])
        .ok();
    let suggested = note_term(&repo, "s2", "Widgetbar", "Widget bar");
    repo.write("docs/intro.md", "Open Quick cast and the Widget bar.\n");
    repo.kapi(&["check", "docs/intro.md"]).code(1);
    let whole = repo.log();
    let digest = repo.kapi(&["context", "review", "--json"]).ok().json();
    let (listed, got) = suggested_as_the_whole_ledger_lists(&repo, &whole);
    assert!(
        got.iter().any(|l| l["id"] == suggested.as_str()),
        "{listed}"
    );
    assert_eq!(digest["in_force"][0]["id"], kept.as_str(), "{digest}");
    assert_eq!(digest["awaiting"][0]["id"], suggested.as_str(), "{digest}");

    let base = repo.join(".git/kapi/fold.base");
    assert!(base.exists(), "a read leaves the whole ledger's checkpoint");
    std::fs::remove_file(&base).unwrap();
    assert_eq!(
        repo.kapi(&["context", "review", "--json"]).ok().json(),
        digest
    );
    assert_eq!(
        repo.kapi(&["context", "log", "--status", "suggested", "--json"])
            .ok()
            .stdout,
        listed
    );
    assert!(!base.exists(), "the whole ledger was read again");
    let none = repo
        .kapi(&["context", "log", "--status", "reset"])
        .ok()
        .stdout;
    assert_eq!(
        none,
        format!(
            "no operation matches: the log holds {} operations\n",
            whole.len()
        )
    );
}

/// A kept rule "Quickcast" and a page that breaks it, checked (and read by
/// `also`, when given), which leaves the whole ledger's checkpoint; then
/// that checkpoint deleted: a read that folds the whole ledger again
/// writes it anew. Its path.
fn kept_and_read_then_base_deleted(repo: &TestEnv, also: &[&str]) -> std::path::PathBuf {
    let kept = note_term(repo, "s1", "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &kept[..10]])
        .ok();
    repo.write("docs/intro.md", "Open Quick cast and the Widget bar.\n");
    repo.kapi(&["check", "docs/intro.md"]).code(1);
    if !also.is_empty() {
        repo.kapi(also).ok();
    }
    let base = repo.join(".git/kapi/fold.base");
    assert!(base.exists(), "a read leaves the whole ledger's checkpoint");
    std::fs::remove_file(&base).unwrap();
    base
}

/// An agent's note of a new rule, between two reads, is taken into the
/// reader's view as it stands: with the whole ledger's checkpoint
/// (`fold.base`) deleted, the check after it lists the new suggestion as
/// the whole ledger does and folds nothing again (which would write the
/// base anew). A rule the log holds, restated by another session, changes
/// its standing: that read applies the note to the whole ledger.
#[test]
fn a_note_of_a_new_rule_is_taken_into_the_view_without_the_whole_ledger() {
    let repo = TestEnv::new();
    let base = kept_and_read_then_base_deleted(&repo, &[]);

    let new = note_term(&repo, "s2", "Widgetbar", "Widget bar");
    let checked = repo
        .kapi(&["check", "docs/intro.md", "--format", "json"])
        .code(1);
    assert!(checked.stdout.contains("Widgetbar"), "{}", checked.stdout);
    let listed = repo
        .kapi(&["context", "log", "--status", "suggested", "--json"])
        .ok()
        .stdout;
    assert!(!base.exists(), "the whole ledger was read again");
    let (_, got) = suggested_as_the_whole_ledger_lists(&repo, &repo.log());
    assert!(got.iter().any(|l| l["id"] == new.as_str()), "{listed}");

    std::fs::remove_file(&base).unwrap();
    let again = note_term(&repo, "s3", "Widgetbar", "Widget bar");
    repo.kapi(&["check", "docs/intro.md"]).code(1);
    assert!(
        base.exists(),
        "a restated rule is applied to the whole ledger"
    );
    let (listed, got) = suggested_as_the_whole_ledger_lists(&repo, &repo.log());
    let standing =
        |id: &str| got.iter().find(|l| l["id"] == id).unwrap()["standing"]["sessions"].clone();
    assert_eq!(standing(&new), 2, "{listed}");
    assert_eq!(standing(&again), 2, "{listed}");
}

/// A person's note says what the person may do next from the rule's
/// state, which the reader's view answers: a new rule's note is taken into
/// it without the whole ledger, and `kapi context search` reads the view
/// with every decision. One that disagrees with a rule in force is still
/// found contested.
#[test]
fn a_persons_note_and_a_search_answer_without_the_whole_ledger() {
    let repo = TestEnv::new();
    let base = kept_and_read_then_base_deleted(&repo, &["context", "search", "cast"]);

    let person_notes = |term: &str, instead: &str| -> String {
        let args = [
            "context",
            "note",
            "--term",
            term,
            "--instead-of",
            instead,
            "--path",
            "docs/intro.md",
        ];
        repo.kapi(&args).ok().stdout
    };
    let search = |text: &str| -> Value {
        let found = repo.kapi(&["context", "search", text, "--json"]).ok();
        serde_json::from_str(&found.stdout).unwrap()
    };
    let noted = person_notes("Widgetbar", "Widget bar");
    assert!(noted.contains("until you keep it"), "{noted}");
    let found = search("widget");
    assert!(!base.exists(), "the whole ledger was read again");
    assert_eq!(found["rules"][0]["use"], "Widgetbar", "{found}");
    assert_eq!(found["rules"][0]["status"], "suggested", "{found}");

    let against = person_notes("Quick cast", "Quickcast");
    assert!(against.contains("until you choose a side"), "{against}");
    let found = search("quick");
    let statuses: Vec<&str> = found["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["established", "contested"], "{found}");
}

/// A person's decision is made over the whole ledger; once it is
/// recorded, that ledger, advanced by it, gives the next reader its view
/// (and the view with every decision): the check and the listing after a
/// keep, a withdrawal or an edit do not decode the whole ledger again.
#[test]
fn a_decision_leaves_the_next_reader_its_view() {
    let repo = TestEnv::new();
    let first = note_term(&repo, "s1", "Quickcast", "Quick cast");
    let second = note_term(&repo, "s2", "Widgetbar", "Widget bar");
    repo.write("docs/intro.md", "Open Quick cast and the Widget bar.\n");
    repo.kapi(&["check", "docs/intro.md"]).ok();
    let base = repo.join(".git/kapi/fold.base");

    repo.kapi(&["context", "review", "--keep", &first[..10]])
        .ok();
    assert!(base.exists(), "the decision read the whole ledger");
    std::fs::remove_file(&base).unwrap();
    let checked = repo
        .kapi(&["check", "docs/intro.md", "--format", "json"])
        .code(1)
        .stdout;
    let doc: Value = serde_json::from_str(&checked).unwrap();
    let failing: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["fails"] == true)
        .map(|f| f["preferred"].as_str().unwrap())
        .collect();
    assert_eq!(failing, ["Quickcast"], "{checked}");
    let keeps = repo
        .kapi(&["context", "log", "--kind", "keep", "--json"])
        .ok()
        .json_lines();
    assert_eq!(keeps.len(), 1);
    assert_eq!(keeps[0]["target"], first.as_str());
    assert!(
        !base.exists(),
        "a reader after the decision read the whole ledger"
    );

    // An agent's withdrawal of its own suggestion, the same.
    repo.agent("s2", &["context", "note", "--withdraw", &second[..10]])
        .ok();
    std::fs::remove_file(&base).unwrap();
    assert_eq!(status_of_in_view(&repo, &second), "withdrawn");
    assert!(
        !base.exists(),
        "a reader after the withdrawal read the whole ledger"
    );

    // A person's edit of the rule in force, the same: the check after it
    // fails on the form the edit prefers.
    repo.kapi(&["context", "edit", &first[..10], "--prefer", "QuickCast"])
        .ok();
    std::fs::remove_file(&base).unwrap();
    let checked = repo
        .kapi(&["check", "docs/intro.md", "--format", "json"])
        .code(1)
        .stdout;
    assert!(
        checked.contains("\"preferred\": \"QuickCast\""),
        "{checked}"
    );
    assert!(
        !base.exists(),
        "a reader after the edit read the whole ledger"
    );
}

fn status_of_in_view(repo: &TestEnv, id: &str) -> String {
    repo.kapi(&["context", "log", "--status", "withdrawn", "--json"])
        .ok()
        .json_lines()
        .into_iter()
        .find(|l| l["id"] == id)
        .map(|l| l["status"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// A listing of one kind other than usage signals and check runs reads
/// the view with every decision beside it (`fold.decisions`), not the
/// whole ledger, and answers as the whole ledger does; that file is
/// derived like the others: one forged (another part's file copied over
/// it, damaged) is not obeyed, and the log is folded again.
#[test]
fn a_listing_of_one_kind_reads_the_decisions_and_a_forged_file_is_folded_again() {
    let repo = TestEnv::new();
    let kept = note_term(&repo, "s1", "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &kept[..10]])
        .ok();
    let dropped = note_term(&repo, "s2", "Widgetbar", "Widget bar");
    repo.kapi(&["context", "review", "--drop", &dropped[..10]])
        .ok();
    repo.write("docs/intro.md", "Open Quick cast.\n");
    repo.kapi(&["check", "docs/intro.md"]).code(1);
    let whole = repo.log();
    let of_kind = |kind: &str| -> Vec<Value> {
        whole
            .iter()
            .filter(|l| l["kind"] == kind)
            .cloned()
            .collect()
    };
    let listed = |kind: &str| -> Vec<Value> {
        repo.kapi(&["context", "log", "--kind", kind, "--json"])
            .ok()
            .json_lines()
    };
    for kind in ["observe", "keep", "drop"] {
        assert_eq!(listed(kind), of_kind(kind), "{kind}");
    }
    assert_eq!(listed("keep").len(), 1);
    assert_eq!(listed("drop").len(), 1);
    let kapi = repo.join(".git/kapi");
    assert!(
        kapi.join("fold.decisions").is_file(),
        "the listing keeps it"
    );
    std::fs::remove_file(kapi.join("fold.base")).unwrap();
    assert_eq!(listed("drop"), of_kind("drop"));
    assert!(
        !kapi.join("fold.base").exists(),
        "the whole ledger was read again"
    );
    // The reader's view copied over it (a good checksum, no decisions in
    // it): not read as the decisions.
    std::fs::copy(kapi.join("fold.checkpoint"), kapi.join("fold.decisions")).unwrap();
    assert_eq!(listed("drop"), of_kind("drop"));
    assert_eq!(listed("keep"), of_kind("keep"));
    // Damaged in its ledger's bytes: the checksum refuses it.
    let file = kapi.join("fold.decisions");
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&file, bytes).unwrap();
    assert_eq!(listed("drop"), of_kind("drop"));
    // Usage signals and check runs are listed from the whole ledger.
    assert_eq!(listed("check"), of_kind("check"));
}

/// `context log --history` takes every subject's history from the file
/// kept beside the checkpoint (`fold.history`) when it is the log's as it
/// stands, and answers as a fold of the log from the start; the file is
/// derived like the checkpoint: one from before the log moved, one
/// damaged, another part's file copied over it, is not obeyed, and the
/// log is folded again.
#[test]
fn histories_are_kept_beside_the_checkpoint_and_a_forged_file_is_folded_again() {
    let repo = TestEnv::new();
    let kept = note_term(&repo, "s1", "Quickcast", "Quick cast");
    repo.kapi(&["context", "review", "--keep", &kept[..10]])
        .ok();
    let history = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["context", "log", "--history", "--json"];
        all.extend_from_slice(args);
        repo.kapi(&all).ok().json_lines()
    };
    let first = history(&[]);
    let file = repo.join(".git/kapi/fold.history");
    assert!(file.is_file(), "the listing keeps the histories");
    assert_eq!(history(&[]), first, "read from the file");
    let rule = first.iter().find(|l| l["id"] == kept.as_str()).unwrap();
    let statuses: Vec<&str> = rule["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["to"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.first(), Some(&"suggested"), "{rule}");
    assert_eq!(statuses.last(), rule["status"].as_str().as_ref(), "{rule}");
    assert!(statuses.len() >= 2, "{rule}");
    // A listing of one kind or by status reads the view (with the
    // decisions) beside the file, and answers as the whole ledger does.
    let only = |pick: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        first.iter().filter(|l| pick(l)).cloned().collect()
    };
    assert_eq!(
        history(&["--kind", "observe"]),
        only(&|l| l["kind"] == "observe")
    );
    assert_eq!(history(&["--kind", "keep"]), only(&|l| l["kind"] == "keep"));
    let status = rule["status"].as_str().unwrap();
    assert_eq!(
        history(&["--status", status]),
        only(&|l| l["status"] == status)
    );
    // The file from before the log moved: its tips are not the log's.
    let stale = std::fs::read(&file).unwrap();
    let dropped = note_term(&repo, "s2", "Widgetbar", "Widget bar");
    history(&[]);
    repo.kapi(&["context", "review", "--drop", &dropped[..10]])
        .ok();
    let after = history(&[]);
    assert_eq!(after.len(), first.len() + 2);
    let dropped_line = after.iter().find(|l| l["id"] == dropped.as_str()).unwrap();
    assert_eq!(
        dropped_line["history"].as_array().unwrap().last().unwrap()["to"],
        "dropped"
    );
    std::fs::write(&file, &stale).unwrap();
    assert_eq!(history(&[]), after);
    // Damaged in its bytes: the checksum refuses it.
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&file, bytes).unwrap();
    assert_eq!(history(&[]), after);
    // Another part's file (a good checksum, the log's tips) copied over it.
    repo.kapi(&["context", "log", "--kind", "drop"]).ok();
    let kapi = repo.join(".git/kapi");
    for other in ["fold.decisions", "fold.checkpoint", "fold.base"] {
        std::fs::copy(kapi.join(other), &file).unwrap();
        assert_eq!(history(&[]), after, "{other}");
    }
}
