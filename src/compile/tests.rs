//! Unit tests of applicability, history and selection over small vaults.

use serde_json::json;

use super::applicability::{Lookups, State, evaluate};
use super::verify::{Expected, Input, VerifyOptions, VerifyStatus, verify_compiled};
use super::{Options, Ranking, compile_context, compile_vault, history};
use crate::digest::sha256_hex;
use crate::vault::{self, Grant, Vault};

const BODY: &str = "# Body\n\nreview policy text\n";

fn decision(id: &str, extra: &str) -> String {
    format!(
        "---\nid: {id}\ntype: decision\ntitle: {id}\nstatus: approved\nsensitivity: public\n{extra}approval:\n  by: A\n  sha256: {}\n---\n{BODY}",
        sha256_hex(BODY.as_bytes())
    )
}

fn load(files: &[(&str, String)]) -> (tempfile::TempDir, Vault) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let v = vault::load(dir.path(), &Grant::public(), &Default::default()).unwrap();
    (dir, v)
}

fn day(s: &str) -> time::Date {
    vault::date::parse(s).unwrap()
}

fn states(v: &Vault, today: &str) -> Vec<(String, State, Vec<&'static str>)> {
    let l = Lookups::new(v);
    (0..v.notes.len())
        .map(|i| {
            let a = evaluate(v, &l, i, day(today));
            (
                v.notes[i].meta.id.clone().unwrap_or_default(),
                a.state,
                a.reasons,
            )
        })
        .collect()
}

#[test]
fn lifecycle_validity_approval_and_evidence() {
    let (_d, v) = load(&[
        ("a.md", decision("D-001", "valid_from: 2026-01-01\nvalid_until: 2026-12-01\n")),
        ("b.md", decision("D-002", "valid_from: 2027-01-01\n")),
        ("c.md", decision("D-003", "valid_until: 2026-01-01\n")),
        ("d.md", decision("D-004", "valid_from: 2026-02-01\nvalid_until: 2026-01-01\n")),
        ("e.md", decision("D-005", "").replace("review policy text", "edited after approval")),
        ("f.md", decision("D-006", "supersedes: D-001\nstatus2: x\n").replace("status: approved", "status: draft")),
        ("g.md", decision("D-007", "evidence: [E-001, E-009]\n")),
        ("h.md", decision("D-008", "").replace("  sha256:", "  other:")),
        ("i.md", decision("D-009", "supersedes: [D-008]\n")),
        (
            "evidence.md",
            "---\ntype: evidence_register\nsensitivity: public\n---\n| id | sensitivity | state |\n|-|-|-|\n| E-001 | public | retired |\n| E-009 | restricted | active |\n"
                .to_string(),
        ),
    ]);
    let s = states(&v, "2026-11-30");
    let find = |id: &str| s.iter().find(|x| x.0 == id).unwrap().clone();
    assert_eq!(find("D-001").1, State::Applicable);
    assert_eq!(find("D-002").1, State::Reference);
    assert!(find("D-002").2.contains(&"validity.future"));
    assert!(find("D-003").2.contains(&"validity.expired"));
    assert!(find("D-004").2.contains(&"validity.invalid"));
    assert_eq!(
        (find("D-005").1, find("D-005").2),
        (
            State::NeedsReview,
            vec!["approval.mismatch", "validity.undeclared"]
        )
    );
    assert_eq!(find("D-006").1, State::Reference);
    assert_eq!(find("D-007").1, State::NeedsReview);
    assert!(
        find("D-007").2.contains(&"evidence.retired")
            && find("D-007").2.contains(&"evidence.unavailable")
    );
    assert_eq!(
        find("D-008").1,
        State::Reference,
        "superseded by the approved D-009"
    );
    assert!(find("D-008").2.contains(&"approval.missing"));
    // The draft D-006 does not supersede D-001.
    assert_eq!(find("D-001").2, Vec::<&str>::new());
}

#[test]
fn effective_review_is_kept_when_the_list_is_capped() {
    let mut log = String::from(
        "---\ntype: review_log\nsensitivity: public\n---\n| date | target | outcome |\n|-|-|-|\n",
    );
    log.push_str("| 2026-05-01 | a.md | changes_requested |\n");
    for m in 1..=9 {
        log.push_str(&format!("| 2027-0{m}-01 | a.md | confirmed |\n"));
    }
    log.push_str("| 2026-01-01 | a.md | confirmed |\n| 2026-01-01 | a.md | confirmed |\n");
    let (_d, v) = load(&[("a.md", decision("D-001", "")), ("review-log.md", log)]);
    let l = Lookups::new(&v);
    assert_eq!(
        evaluate(&v, &l, 0, day("2026-11-30")).state,
        State::NeedsReview
    );
    let h = history::history(&v, &l, 0, "2026-11-30");
    let reviews = h["reviews"].as_array().unwrap();
    assert_eq!(reviews.len(), 8);
    assert_eq!(h["truncated"], true);
    let effective: Vec<_> = reviews.iter().filter(|r| r["effective"] == true).collect();
    assert_eq!(effective.len(), 1);
    assert_eq!(effective[0]["date"], "2026-05-01");
    assert_eq!(effective[0]["outcome"], "changes_requested");
    // Later in time the future confirmations take over.
    assert_eq!(
        evaluate(&v, &l, 0, day("2027-12-01")).state,
        State::Applicable
    );
    // Duplicate rows are distinguished by their occurrence.
    let (_d, v) = load(&[
        ("a.md", decision("D-001", "")),
        (
            "review-log.md",
            "---\ntype: review_log\nsensitivity: public\n---\n| date | target | outcome |\n|-|-|-|\n| 2026-01-01 | a.md | confirmed |\n| 2026-01-01 | a.md | confirmed |\n"
                .to_string(),
        ),
    ]);
    let h = history::history(&v, &Lookups::new(&v), 0, "2026-11-30");
    assert_eq!(h["reviews"][1]["occurrence"], json!(2));
    assert_eq!(h["reviews"][1]["effective"], true);
}

#[test]
fn query_excludes_non_premise_decisions_but_targets_keep_them() {
    let (_d, v) = load(&[
        ("a.md", decision("D-001", "")),
        (
            "b.md",
            decision("D-002", "").replace("status: approved", "status: draft"),
        ),
    ]);
    let opts = Options::new(day("2026-11-30"))
        .query("review policy")
        .ranking(Ranking::Bm25);
    let r = compile_vault(&v, &opts).unwrap().value;
    let ids: Vec<_> = r["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].clone())
        .collect();
    assert_eq!(ids, [json!("D-001")]);
    let r = compile_vault(&v, &opts.clone().targets(["D-002"]))
        .unwrap()
        .value;
    assert_eq!(r["contexts"][0]["applicability"]["state"], "reference");
    assert_eq!(r["contexts"][1]["id"], "D-001");
}

#[test]
fn verifies_a_parsed_value_and_binds_expected_parameters() {
    let (dir, _) = load(&[("a.md", decision("D-001", ""))]);
    let opts = Options::new(day("2026-11-30"))
        .targets(["D-001"])
        .agent("codex");
    let compiled = compile_context(dir.path(), &opts).unwrap();
    let mut vo = VerifyOptions {
        today: day("2026-11-30"),
        grant: Grant::public(),
        expected: Expected::all(&opts.recipe),
        scope: Default::default(),
        layout: Default::default(),
    };
    let v = verify_compiled(dir.path(), Input::Value(&compiled.value), &vo).unwrap();
    assert_eq!(v.status, VerifyStatus::Current);
    let bytes = compiled.to_bytes();
    let v = verify_compiled(dir.path(), Input::Bytes(&bytes), &vo).unwrap();
    assert_eq!(v.status, VerifyStatus::Current);
    vo.expected.agent = Some(Some("claude".into()));
    let v = verify_compiled(dir.path(), Input::Value(&compiled.value), &vo).unwrap();
    assert_eq!(
        (v.status, v.reasons),
        (VerifyStatus::Refused, vec!["expected_agent_mismatch"])
    );
    // A wider verifier grant is a different policy: stale, never current.
    vo.expected = Expected::default();
    vo.grant = Grant::up_to(crate::vault::Sensitivity::Internal);
    let v = verify_compiled(dir.path(), Input::Value(&compiled.value), &vo).unwrap();
    assert_eq!(
        (v.status, v.reasons),
        (VerifyStatus::Stale, vec!["policy_changed"])
    );
    let mut forged = compiled.value.clone();
    forged["execution_authorized"] = json!(true);
    let v = verify_compiled(dir.path(), Input::Value(&forged), &vo).unwrap();
    assert_eq!(v.reasons, ["execution_authorized"]);
}

#[test]
fn a_path_scope_only_narrows_and_is_refreshed() {
    let (dir, _) = load(&[
        ("a.md", decision("D-001", "")),
        (
            "b.md",
            decision("D-002", "").replace("sensitivity: public", "sensitivity: restricted"),
        ),
    ]);
    let paths: std::collections::BTreeSet<String> = ["a.md".into(), "b.md".into()].into();
    let opts = Options::new(day("2026-11-30"))
        .query("review policy")
        .paths(paths);
    let before = compile_context(dir.path(), &opts).unwrap();
    assert_eq!(before.value["contexts"].as_array().unwrap().len(), 1);
    // A new public path outside the scope never joins.
    std::fs::write(dir.path().join("c.md"), decision("D-003", "")).unwrap();
    assert_eq!(compile_context(dir.path(), &opts).unwrap(), before);
    // A restricted-to-public change inside the scope counts.
    std::fs::write(dir.path().join("b.md"), decision("D-002", "")).unwrap();
    let after = compile_context(dir.path(), &opts).unwrap();
    assert_eq!(after.value["contexts"].as_array().unwrap().len(), 2);
}

#[test]
fn only_a_successor_in_effect_supersedes() {
    let unapproved = decision("D-002", "supersedes: [D-001]\n").replace("  sha256:", "  other:");
    let future = decision("D-003", "supersedes: [D-001]\nvalid_from: 2027-01-01\n");
    let (_d, v) = load(&[
        ("a.md", decision("D-001", "")),
        ("b.md", unapproved),
        ("c.md", future),
    ]);
    let s = states(&v, "2026-11-30");
    assert_eq!(s[0].1, State::Applicable, "{:?}", s[0]);
    assert!(s[0].2.contains(&"superseded_by.pending"));
    assert!(!s[0].2.contains(&"superseded_by.approved"));
    // Once the future successor's interval begins, it takes effect.
    let s = states(&v, "2027-01-02");
    assert_eq!(s[0].1, State::Reference);
    assert!(s[0].2.contains(&"superseded_by.approved"));
    // Mutual supersession terminates.
    let (_d, v) = load(&[
        ("a.md", decision("D-001", "supersedes: [D-002]\n")),
        ("b.md", decision("D-002", "supersedes: [D-001]\n")),
    ]);
    let s = states(&v, "2026-11-30");
    assert!(s.iter().all(|x| x.1 == State::Reference));
}

#[test]
fn a_future_approval_is_not_yet_an_approval() {
    let text = decision("D-001", "").replace("  by: A\n", "  by: A\n  on: 2026-12-01\n");
    let (_d, v) = load(&[("a.md", text)]);
    let l = Lookups::new(&v);
    let a = evaluate(&v, &l, 0, day("2026-11-30"));
    assert_eq!((a.state, a.local_approval), (State::Reference, "future"));
    assert!(a.reasons.contains(&"approval.future"));
    let a = evaluate(&v, &l, 0, day("2026-12-01"));
    assert_eq!((a.state, a.local_approval), (State::Applicable, "matched"));
}

#[test]
fn the_effective_decision_log_event_counts() {
    let log = "---\nsensitivity: public\n---\n| date | target | event |\n|-|-|-|\n\
        | 2026-01-01 | a.md | approved |\n| 2026-03-01 | a.md | reopened |\n\
        | 2026-01-01 | b.md | approved |\n| 2027-01-01 | c.md | approved |\n";
    let (_d, v) = load(&[
        ("a.md", decision("D-001", "")),
        ("b.md", decision("D-002", "")),
        ("c.md", decision("D-003", "")),
        ("decision-log.md", log.to_string()),
    ]);
    let l = Lookups::new(&v);
    assert!(!l.approval_logged("a.md", "2026-11-30"), "reopened later");
    assert!(l.approval_logged("a.md", "2026-02-01"));
    assert!(l.approval_logged("b.md", "2026-11-30"));
    assert!(
        !l.approval_logged("c.md", "2026-11-30"),
        "dated in the future"
    );
}

#[test]
fn an_unknown_type_is_not_a_decision() {
    let (_d, v) = load(&[(
        "m.md",
        "---\nid: M-001\ntype: memo\nsensitivity: public\n---\nx\n".to_string(),
    )]);
    let s = states(&v, "2026-11-30");
    assert_eq!(
        (s[0].1, s[0].2.clone()),
        (State::NotDecision, vec!["kind.unknown"])
    );
}

#[test]
fn a_view_is_compiled_only_with_its_own_grant_and_scope() {
    let (_d, v) = load(&[("a.md", decision("D-001", ""))]);
    let opts = Options::new(day("2026-11-30")).targets(["D-001"]);
    assert!(compile_vault(&v, &opts).is_ok());
    let wider = opts
        .clone()
        .allowed_sensitivities(Grant::up_to(crate::vault::Sensitivity::Restricted));
    assert!(matches!(
        compile_vault(&v, &wider),
        Err(super::CompileError::ViewMismatch)
    ));
    let moved = opts.clone().layout(crate::vault::Layout {
        review_logs: vec!["logs/reviews.md".into()],
        ..Default::default()
    });
    assert!(matches!(
        compile_vault(&v, &moved),
        Err(super::CompileError::ViewMismatch)
    ));
    let scoped = opts.paths(["a.md".to_string()].into());
    assert!(matches!(
        compile_vault(&v, &scoped),
        Err(super::CompileError::ViewMismatch)
    ));
}

#[test]
fn hybrid_edges_come_from_what_records_state() {
    let source = |id: &str, title: &str, links: &str| {
        format!(
            "---\nid: {id}\ntype: source\ntitle: {title}\nsensitivity: public\n{links}---\nbody\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("s1.md", source("S-001", "alpha", "links:\n  - cites: E-001\n")),
        ("s2.md", source("S-002", "other", "links:\n  - see_also: S-001\n")),
        ("s3.md", source("S-003", "third", "")),
        ("s4.md", source("S-004", "unrelated", "")),
        (
            "evidence.md",
            "---\ntype: evidence_register\nsensitivity: public\n---\n| id | sensitivity | state | replaced_by | title | url |\n|-|-|-|-|-|-|\n| E-001 | public | replaced | E-002 | old | https://e/1 |\n| E-002 | public | active | | new | https://e/2 |\n".to_string(),
        ),
        (
            "review-log.md",
            "---\ntype: review_log\nsensitivity: public\n---\n| date | target | outcome | sensitivity |\n|-|-|-|-|\n| 2026-03-01 | s1.md | confirmed | public |\n| 2026-03-01 | s3.md | confirmed | public |\n| 2026-04-01 | s4.md | confirmed | public |\n".to_string(),
        ),
    ];
    for (path, text) in &files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    let opts = Options::new(day("2026-11-30"))
        .query("alpha")
        .ranking(Ranking::Hybrid)
        .max_docs(8);
    let v = compile_context(dir.path(), &opts).unwrap().value;
    let r = &v["retrieval"];
    assert_eq!(
        r["graph"],
        json!({ "edges": 4, "hits": 1, "nodes": 6, "seeds": 1 })
    );
    let via: Vec<(String, Vec<String>)> = r["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let steps = c["via"].as_array().unwrap();
            (
                c["id"].as_str().unwrap().to_string(),
                steps
                    .iter()
                    .skip(1)
                    .map(|s| s["edge"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    let via: Vec<(&str, Vec<&str>)> = via
        .iter()
        .map(|(id, e)| (id.as_str(), e.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        via,
        [
            ("S-001", vec![]),
            ("E-001", vec!["evidence"]),
            ("E-002", vec!["evidence", "supersedes"]),
            ("S-002", vec!["link"]),
            ("S-003", vec!["reviewed_with"]),
        ],
        "S-004 was reviewed on another day"
    );
    assert_eq!(r["contexts"][2]["scores"]["proximity"], "0.720000");
}

#[test]
fn a_callers_evidence_scope_withholds_a_claim_it_leaves_out() {
    let capture = "quoted bytes\n";
    let sha = sha256_hex(capture.as_bytes());
    let files: [(String, String); 3] = [
        (
            "evidence.md".into(),
            "---\nsensitivity: public\n---\n| id | state |\n|-|-|\n| E-001 | active |\n| E-002 | active |\n".to_string(),
        ),
        (
            "c.md".into(),
            format!("---\nid: C-001\ntype: claim\nsensitivity: restricted\n---\n```claim\nclaim = \"quoted\"\nevidence = [\"E-001\", \"E-002\"]\ncapture = \"{sha}\"\nsource = \"s\"\n```\n"),
        ),
        (format!("captures/{sha}"), capture.to_string()),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in &files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let grant = Grant::up_to(crate::vault::Sensitivity::Restricted);
    let base = Options::new(day("2026-11-30"))
        .targets(["C-001"])
        .allowed_sensitivities(grant);
    let all = compile_context(dir.path(), &base).unwrap().value;
    assert_eq!(all["contexts"][0]["claim"]["claim_id"], "C-001");
    assert_eq!(all["manifest"]["inputs"]["claims"]["released"], 1);
    // The caller's filtered evidence view leaves out E-002: withheld.
    let scoped = base.clone().evidence_ids(["E-001".to_string()].into());
    let v = compile_context(dir.path(), &scoped).unwrap().value;
    assert_eq!(v["contexts"], json!([]));
    assert_eq!(v["omissions"][0]["reason"], "withheld_claim");
    assert_eq!(v["manifest"]["inputs"]["claims"]["withheld"], 1);
    // Withheld: its capture is not read, so its loss changes nothing.
    std::fs::remove_file(dir.path().join(format!("captures/{sha}"))).unwrap();
    assert_eq!(compile_context(dir.path(), &scoped).unwrap().value, v);
    assert!(compile_context(dir.path(), &base).is_err());
}
