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

#[test]
fn the_workspace_atlas_covers_every_registered_repository_naming_each_project() {
    let repo = crate::common::TestEnv::new();
    repo.write("kapi.toml", "project = \"docs\"\n");
    let other = repo.sibling("other");
    other.write("kapi.toml", "project = \"app\"\n");
    let mine = id(repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q", "--json"]));
    let theirs = id(other.agent_term("s2", "Flowkit", "Flow kit", &["--quote", "q", "--json"]));

    // Without --workspace: this project only, and no record names it.
    let doc = repo.kapi(&["context", "atlas", "--json"]).ok().json();
    assert_eq!(doc["covers"], "project");
    assert!(doc.get("projects").is_none(), "{doc}");
    let ids: Vec<&str> = doc["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [mine.as_str()]);
    assert!(doc["subjects"][0]["derived"].get("project").is_none());

    // With it: every registered repository, each record with its project.
    let doc = repo
        .kapi(&["context", "atlas", "--workspace", "--json"])
        .ok()
        .json();
    assert_eq!(doc["atlas"], 1);
    assert_eq!(doc["covers"], "workspace");
    assert_eq!(doc["project"], "docs");
    let subjects: Vec<(&str, &str)> = doc["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap(),
                s["derived"]["project"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        subjects,
        [(mine.as_str(), "docs"), (theirs.as_str(), "app")]
    );
    let events: Vec<&str> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["project"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["docs", "app"]);
    let projects = doc["projects"].as_array().unwrap();
    assert_eq!(projects.len(), 2, "{doc}");
    assert_eq!(projects[0]["project"], "docs");
    assert_eq!(projects[0]["this"], true);
    assert_eq!(projects[0]["operations"], 1);
    assert_eq!(projects[1]["project"], "app");
    assert_eq!(projects[1]["operations"], 1);
    assert!(projects[1].get("skipped").is_none());
    let summary = repo.kapi(&["context", "atlas", "--workspace"]).ok();
    assert!(
        summary
            .stdout
            .contains("across the workspace: 2 projects read of 2 registered"),
        "{}",
        summary.stdout
    );
}

#[test]
fn a_hostile_or_gone_checkout_in_the_workspace_is_listed_and_never_stops_the_atlas() {
    let repo = crate::common::TestEnv::new();
    repo.write("kapi.toml", "project = \"docs\"\n");
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    // A clone whose kapi.toml kapi could not read, and whose gazetteer is a
    // FIFO: the atlas reads its log, never its configuration.
    let clone = repo.sibling("clone");
    clone.write("kapi.toml", "project = \"clone\"\n");
    clone
        .agent_term("s2", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    clone.write(
        "kapi.toml",
        "project = \"clone\"\n[axes.place]\nkind = \"geo\"\ngazetteer = \"fifo\"\n",
    );
    crate::common::mkfifo(&clone.join("fifo"));
    // One whose log ref names a blob, not a commit.
    let broken = repo.sibling("broken");
    broken.write("kapi.toml", "project = \"broken\"\n");
    broken
        .agent_term("s3", "Zipline", "Zip line", &["--quote", "q"])
        .ok();
    broken.write("blob.txt", "not a log\n");
    let blob = broken.git(&["hash-object", "-w", "blob.txt"]);
    broken.git(&["update-ref", "refs/kapi/ops", blob.trim()]);
    // One that is no git repository any more.
    let plain = repo.sibling("plain");
    plain.write("kapi.toml", "project = \"not-a-repository\"\n");
    plain
        .agent_term("s5", "Gadget", "Gad get", &["--quote", "q"])
        .ok();
    std::fs::remove_dir_all(plain.join(".git")).unwrap();
    // One whose folder is gone.
    let gone = repo.sibling("gone");
    gone.write("kapi.toml", "project = \"gone\"\n");
    gone.agent_term("s4", "Widget", "Wid get", &["--quote", "q"])
        .ok();
    std::fs::remove_dir_all(gone.path()).unwrap();

    let run = crate::common::within_deadline(
        repo.kapi_cmd(&["context", "atlas", "--workspace", "--json"]),
        b"",
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let doc: Value = run.json();
    let projects = doc["projects"].as_array().unwrap();
    let by = |name: &str| {
        projects
            .iter()
            .find(|p| p["project"] == name)
            .unwrap_or_else(|| panic!("{name} in {doc}"))
    };
    assert_eq!(by("clone")["operations"], 1, "{doc}");
    assert_eq!(by("broken")["operations"], 0, "{doc}");
    assert!(by("not-a-repository")["skipped"].is_string(), "{doc}");
    assert_eq!(by("gone")["skipped"], "its folder is gone");
    let from: Vec<&str> = doc["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["derived"]["project"].as_str().unwrap())
        .collect();
    assert_eq!(from, ["docs", "clone"]);
}

#[test]
fn content_cells_count_prose_files_by_collection_language_and_state() {
    let repo = crate::common::TestEnv::new();
    repo.write("README.md", "Hello.\n");
    repo.write("docs/en/guide/a.md", "Open Quickcast.\n");
    repo.write_bytes("docs/en/guide/bin.md", b"\x00\x01\x02 binary");
    repo.write("docs/nb-NO/guide/a.md", "Apne Quick cast.\n");
    repo.write("docs/guide/b.md", "---\nlang: de\n---\nQuick cast\n");
    repo.kept_rule("Quickcast", "Quick cast");
    let log = repo.log().len();

    let doc = repo
        .kapi(&["context", "atlas", "--content", "--json"])
        .ok()
        .json();
    let cells: Vec<(String, Value, String, u64)> = doc["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|c| {
            (
                c["collection"].as_str().unwrap().to_owned(),
                c["language"].clone(),
                c["state"].as_str().unwrap().to_owned(),
                c["files"].as_u64().unwrap(),
            )
        })
        .collect();
    let cell = |c: &str, l: Value, s: &str, n: u64| (c.to_owned(), l, s.to_owned(), n);
    assert_eq!(
        cells,
        [
            cell(".", Value::Null, "clean", 1),
            cell("docs/guide", "de".into(), "findings", 1),
            cell("docs/guide", "en".into(), "clean", 1),
            cell("docs/guide", "en".into(), "unchecked", 1),
            cell("docs/guide", "nb-NO".into(), "findings", 1),
        ],
        "{doc}"
    );
    // Reading the atlas records nothing (no usage signals).
    assert_eq!(repo.log().len(), log);
    let summary = repo.kapi(&["context", "atlas", "--content"]).ok();
    assert!(
        summary
            .stdout
            .contains("content: 2 prose files clean, 2 with findings, 1 not checked, in 5 cells"),
        "{}",
        summary.stdout
    );
}
