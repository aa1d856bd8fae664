//! `kapi context atlas --json`: the whole context in one versioned document
//! (docs/atlas.md) — through the real binary on a real git repository
//! (seed: "The atlas reads the whole context at once").

use serde_json::Value;

use super::axes::{at, typed_repo};

fn id(run: crate::common::Run) -> String {
    run.ok().json()["id"].as_str().unwrap().to_owned()
}

#[test]
fn the_atlas_holds_every_subject_with_its_history_events_windows_and_places() {
    let repo = typed_repo();
    // An agent suggests a rule in the Oslo pages for December; a person
    // keeps it an hour later.
    let rule = id(repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &[
            "--path",
            "docs/oslo/a.md",
            "--valid-from",
            "2026-12-01",
            "--valid-to",
            "2027-01-01",
            "--json",
        ],
    ));
    at(
        &repo,
        "2026-11-30T10:00:00Z",
        &["context", "review", "--keep", &rule[..10]],
    )
    .ok();
    // A note in the Nordic pages, narrowed to a locale; a rival rule a
    // person drops.
    let note = id(repo.agent(
        "s1",
        &[
            "context",
            "note",
            "The Nordic pages address the administrator",
            "--path",
            "docs/nordics/a.md",
            "--point",
            "locale=nb-NO",
            "--json",
        ],
    ));
    let rival = id(repo.agent_term(
        "s2",
        "Fastcast",
        "Quick cast",
        &["--path", "docs/bergen/a.md", "--json"],
    ));
    at(
        &repo,
        "2026-11-30T11:00:00Z",
        &["context", "review", "--drop", &rival[..10]],
    )
    .ok();

    let run = at(
        &repo,
        "2026-11-30T12:00:00Z",
        &["context", "atlas", "--json"],
    )
    .ok();
    let doc: Value = run.json();
    assert_eq!(doc["atlas"], 1);
    let subject = |id: &str| {
        doc["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id} in {doc}"))
            .clone()
    };
    let r = subject(&rule);
    assert_eq!(r["family"], "rule");
    assert_eq!(r["status"], "established");
    assert_eq!(r["coordinates"], serde_json::json!({"place": "oslo"}));
    assert_eq!(r["derived"]["region"], "no");
    assert_eq!(r["derived"]["actor"], "agent:claude-code");
    let history: Vec<&str> = r["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["to"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["suggested", "established"]);
    let n = subject(&note);
    assert_eq!(n["family"], "note");
    assert_eq!(n["derived"]["locale"], "nb-NO");
    assert_eq!(n["derived"]["region"], "NO");
    assert_eq!(subject(&rival)["status"], "dropped");
    // Every operation is an event on the recorded clock.
    assert_eq!(doc["events"].as_array().unwrap().len(), 5);
    assert!(
        doc["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["clock"] == "recorded")
    );
    // Window boundaries on the effective clock.
    let windows: Vec<(String, String)> = doc["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["bound"].as_str().unwrap().into(),
                w["at"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        windows,
        [
            (
                "valid_from".to_string(),
                "2026-12-01T00:00:00.000Z".to_string()
            ),
            (
                "valid_to".to_string(),
                "2027-01-01T00:00:00.000Z".to_string()
            )
        ]
    );
    // The places its geo values name, and those containing them.
    let places: Vec<&str> = doc["places"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(places, ["bergen", "greater-oslo", "no", "no-03", "oslo"]);

    let pretty = serde_json::to_string_pretty(&doc).unwrap();
    insta::assert_snapshot!("atlas_document", repo.normalize(&pretty));

    // The summary for people: 2 rules, 1 note.
    let summary = at(&repo, "2026-11-30T12:00:00Z", &["context", "atlas"]).ok();
    insta::assert_snapshot!("atlas_summary", repo.transcript(&summary));
}
