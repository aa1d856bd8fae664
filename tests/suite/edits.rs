//! Edits of rules in force (`kapi context edit`, `kapi apply`), a review
//! round that keeps a suggestion with a replacement, and content-memory
//! pairs, through the real binary on real repositories.

use serde_json::{Value, json};

use crate::common::TestEnv;
use crate::suite::mcp::initialized;

/// The operation of the log whose id starts with `short`.
fn op(repo: &TestEnv, short: &str) -> Value {
    repo.log()
        .into_iter()
        .find(|o| o["id"].as_str().unwrap().starts_with(short))
        .unwrap_or_else(|| panic!("no operation #{short}"))
}

/// The operations of `kind`, in log order.
fn of_kind(repo: &TestEnv, kind: &str) -> Vec<Value> {
    repo.log()
        .into_iter()
        .filter(|o| o["kind"] == kind)
        .collect()
}

fn committed(repo: &TestEnv, rel: &str, text: &str) {
    repo.write(rel, text);
    repo.git(&["add", "."]);
    repo.git(&["commit", "-qm", rel]);
}

#[test]
fn a_person_edits_a_rule_in_force_and_the_edit_is_the_rule_from_then_on() {
    let repo = TestEnv::new();
    committed(&repo, "docs/intro.md", "Open Quick cast.\n");
    let rule = repo.kept_rule("Quickcast", "Quick cast");
    let edited = repo
        .kapi(&[
            "context",
            "edit",
            &rule,
            "--prefer",
            "QuickCast",
            "--note",
            "the brand",
        ])
        .ok();
    assert!(edited.stdout.starts_with("recorded #"), "{}", edited.stdout);
    assert!(
        edited.stdout.contains(&format!(
            "edit of #{rule}: \"QuickCast\", not \"Quickcast\", \"Quick cast\", \"Quick-cast\""
        )),
        "{}",
        edited.stdout
    );
    let edits = of_kind(&repo, "edit");
    assert_eq!(edits.len(), 1);
    let edit = &edits[0];
    // One edit naming the rule, established from the start, by the person.
    assert_eq!(edit["target"].as_str().unwrap()[..10], rule);
    assert_eq!(edit["status"], "established");
    assert_eq!(edit["actor"]["kind"], "person");
    assert_eq!(edit["actor"]["name"], "ada@example.com");
    assert_eq!(edit["note"], "the brand");
    assert_eq!(op(&repo, &rule)["status"], "dropped");
    // The check holds the edited rule.
    let check = repo.kapi(&["check", "--format", "json"]).code(1);
    let found = check.json();
    assert_eq!(found["findings"][0]["preferred"], "QuickCast", "{found}");
    // Advisory: it reports and fails nothing.
    let short = edit["short"].as_str().unwrap().to_owned();
    repo.kapi(&["context", "edit", &short, "--advisory", "yes"])
        .ok();
    repo.kapi(&["check"]).ok();
    // The rule it replaced is named for what it became.
    let again = repo
        .kapi(&["context", "edit", &rule, "--prefer", "Quickcast"])
        .code(3);
    assert!(
        again
            .stderr
            .contains(&format!("was replaced by the edit #{short}")),
        "{}",
        again.stderr
    );
    // A suggestion is kept, not edited; an edit that changes nothing says so.
    let suggestion = repo.suggested_rule("Flowkit", "Flow kit");
    let refused = repo
        .kapi(&["context", "edit", &suggestion, "--prefer", "FlowKit"])
        .code(3);
    assert!(
        refused.stderr.contains("--replace-use"),
        "{}",
        refused.stderr
    );
    let latest = of_kind(&repo, "edit").last().unwrap()["short"]
        .as_str()
        .unwrap()
        .to_owned();
    let nothing = repo
        .kapi(&["context", "edit", &latest, "--advisory", "yes"])
        .code(2);
    assert!(
        nothing.stderr.contains("changes nothing"),
        "{}",
        nothing.stderr
    );
}

#[test]
fn an_edit_changes_where_and_when_a_rule_holds() {
    let repo = TestEnv::new();
    let rule = repo.kept_rule("Quickcast", "Quick cast");
    repo.kapi(&[
        "context",
        "edit",
        &rule,
        "--point",
        "locale=de",
        "--valid-to",
        "2027-01-01",
    ])
    .ok();
    let edit = &of_kind(&repo, "edit")[0];
    assert_eq!(edit["scope"]["point"], json!({"locale": "de"}), "{edit}");
    assert_eq!(edit["scope"]["valid_to"], "2027-01-01");
    let short = edit["short"].as_str().unwrap().to_owned();
    repo.kapi(&["context", "edit", &short, "--project", "--valid-to", "none"])
        .ok();
    let edit = &of_kind(&repo, "edit")[1];
    assert!(edit["scope"].get("point").is_none(), "{edit}");
    assert!(edit["scope"].get("valid_to").is_none(), "{edit}");
    let short = edit["short"].as_str().unwrap().to_owned();
    let bad = repo
        .kapi(&[
            "context",
            "edit",
            &short,
            "--valid-from",
            "2027-01-01",
            "--valid-to",
            "2026-01-01",
        ])
        .code(2);
    assert_eq!(of_kind(&repo, "edit").len(), 2, "{}", bad.stderr);
}

#[test]
fn kapi_apply_records_every_edit_and_rewrites_content_or_nothing() {
    let repo = TestEnv::new();
    committed(&repo, "docs/intro.md", "Open Quick cast. Use Flow kit.\n");
    let quick = repo.kept_rule("Quickcast", "Quick cast");
    let flow = repo.kept_rule("Flowkit", "Flow kit");
    // An agent's suggestion whose preferred form the content edit writes.
    let slide = repo
        .agent_term(
            "s1",
            "Slidedeck",
            "Slide deck",
            &["--quote", "Slide deck", "--json"],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = repo.log().len();

    // One bad entry (the second names a suggestion): nothing is recorded
    // and no file written.
    repo.write(
        "set.json",
        &json!({"edits": [
            {"rule": quick, "use": "QuickCast"},
            {"rule": &slide[..10], "use": "SlideDeck"},
        ], "content": [{"path": "docs/intro.md", "old": "Use Flow kit.", "new": "Use Slidedeck."}]})
        .to_string(),
    );
    let refused = repo.kapi(&["apply", "set.json"]).code(3);
    assert!(refused.stderr.contains("edits[1]: #"), "{}", refused.stderr);
    assert_eq!(repo.log().len(), before);
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/intro.md")).unwrap(),
        "Open Quick cast. Use Flow kit.\n"
    );
    // A content edit that does not apply refuses the rule edits too.
    repo.write(
        "set.json",
        &json!({"edits": [{"rule": quick, "use": "QuickCast"}],
                "content": [{"path": "docs/intro.md", "old": "not there", "new": "x"}]})
        .to_string(),
    );
    let refused = repo.kapi(&["apply", "set.json"]).code(2);
    assert!(refused.stderr.contains("content[0]:"), "{}", refused.stderr);
    assert_eq!(repo.log().len(), before);

    repo.write(
        "set.json",
        &json!({"edits": [
            {"rule": quick, "use": "QuickCast", "note": "the brand"},
            {"rule": flow, "advisory": true},
        ], "content": [{"path": "docs/intro.md", "old": "Use Flow kit.", "new": "Use Slidedeck."}]})
        .to_string(),
    );
    let applied = repo.kapi(&["apply", "set.json", "--json"]).ok().json();
    let recorded = applied["recorded"].as_array().unwrap();
    assert_eq!(recorded.len(), 2, "{applied}");
    for (record, target) in recorded.iter().zip([&quick, &flow]) {
        assert_eq!(record["kind"], "context.edit");
        assert_eq!(record["target"].as_str().unwrap()[..10], **target);
        assert_eq!(record["actor"]["kind"], "person");
    }
    assert_eq!(recorded[1]["advisory"], true);
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/intro.md")).unwrap(),
        "Open Quick cast. Use Slidedeck.\n"
    );
    // The content edit wrote the suggestion's preferred form: an applied
    // signal as the tool `apply`.
    assert_eq!(applied["content"]["signals"][0]["target"], json!(slide));
    let signal = of_kind(&repo, "signal")
        .into_iter()
        .find(|s| s["actor"]["name"] == "apply")
        .expect("an applied signal");
    assert_eq!(signal["actor"]["kind"], "tool");
    assert_eq!(signal["signal"]["source"], "applied");
    for edit in of_kind(&repo, "edit") {
        assert_eq!(edit["status"], "established", "{edit}");
    }
    // Both rules it replaced are dropped; the check fails on QuickCast's
    // avoided form, and Flowkit only advises now.
    assert_eq!(op(&repo, &quick)["status"], "dropped");
    assert_eq!(op(&repo, &flow)["status"], "dropped");
    let check = repo
        .kapi(&["check", "docs/intro.md", "--format", "json"])
        .code(1);
    let findings = check.json()["findings"].clone();
    assert_eq!(findings.as_array().unwrap().len(), 1, "{findings}");
    assert_eq!(findings[0]["preferred"], "QuickCast");

    // Standard input works too.
    let edit = of_kind(&repo, "edit")[0]["short"]
        .as_str()
        .unwrap()
        .to_owned();
    let set = json!({"edits": [{"rule": edit, "avoid": ["Quick cast", "Quikcast"]}]});
    repo.kapi_stdin(&["apply", "-"], set.to_string().as_bytes())
        .ok();
    let last = of_kind(&repo, "edit").pop().unwrap();
    assert!(
        last["subject"]["avoid"]
            .as_array()
            .unwrap()
            .contains(&json!("Quikcast")),
        "{last}"
    );
}

#[test]
fn a_change_set_with_a_mistake_is_refused_naming_the_entry() {
    let repo = TestEnv::new();
    let rule = repo.kept_rule("Quickcast", "Quick cast");
    let before = repo.log().len();
    for (set, says) in [
        ("not json".to_owned(), "not a change set"),
        ("{}".to_owned(), "the change set is empty"),
        (
            json!({"edits": [], "extra": 1}).to_string(),
            "unknown field `extra`",
        ),
        (
            json!({"version": 2, "edits": [{"rule": rule}]}).to_string(),
            "version 2",
        ),
        (
            json!({"edits": [{"rule": rule, "prefer": "QuickCast"}]}).to_string(),
            "edits[0]: unknown field `prefer`",
        ),
        (
            json!({"edits": [{"rule": rule, "use": "x"}, {"rule": rule, "text": "y"}]}).to_string(),
            "edits[1]:",
        ),
        (
            json!({"edits": [{"rule": rule, "text": "a note"}]}).to_string(),
            "edits[0]: #",
        ),
        (
            json!({"edits": [{"rule": "zzzz"}]}).to_string(),
            "edits[0]:",
        ),
        (
            json!({"edits": [{"use": "Quickcast"}]}).to_string(),
            "edits[0]: missing field `rule`",
        ),
        (
            json!({"edits": [{"rule": rule, "valid_to": 5}]}).to_string(),
            "edits[0]: invalid type",
        ),
        (
            json!({"content": [{"path": "a.md"}]}).to_string(),
            "content[0]: missing field `old`",
        ),
        (
            json!({"edits": [{"rule": rule, "point": {"locale": ""}}]}).to_string(),
            "edits[0]: `point`",
        ),
    ] {
        repo.write("set.json", &set);
        let run = repo.kapi(&["apply", "set.json"]);
        assert_ne!(run.code, 0, "{set}");
        assert!(run.stderr.contains(says), "{set}: {}", run.stderr);
    }
    // Hostile: oversized, too many entries, nested past any sense. Each is
    // refused before anything is read from the log or a file written.
    repo.write("big.json", &" ".repeat(2 << 20));
    let big = repo.kapi(&["apply", "big.json"]).code(2);
    assert!(big.stderr.contains("at most 1 MiB"), "{}", big.stderr);
    let many = json!({"edits": vec![json!({"rule": rule, "advisory": true}); 257]});
    repo.write("many.json", &many.to_string());
    let run = repo.kapi(&["apply", "many.json"]).code(2);
    assert!(run.stderr.contains("at most 256"), "{}", run.stderr);
    let many = json!({"content": vec![json!({"path": "a.md", "old": "a", "new": "b"}); 65]});
    repo.write("many.json", &many.to_string());
    let run = repo.kapi(&["apply", "many.json"]).code(2);
    assert!(run.stderr.contains("at most 64"), "{}", run.stderr);
    let deep = format!(
        "{{\"edits\": [{{\"rule\": {}{}}}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    repo.write("deep.json", &deep);
    let run = repo.kapi(&["apply", "deep.json"]).code(2);
    assert!(run.stderr.contains("recursion limit"), "{}", run.stderr);
    assert_eq!(repo.log().len(), before);
}

#[test]
fn an_agents_change_set_is_refused_before_anything_is_written() {
    let repo = TestEnv::new();
    committed(&repo, "docs/intro.md", "Open Quick cast.\n");
    let rule = repo.kept_rule("Quickcast", "Quick cast");
    let before = repo.log().len();
    repo.write(
        "set.json",
        &json!({"edits": [{"rule": rule, "use": "QuickCast"}],
                "content": [{"path": "docs/intro.md", "old": "Quick cast", "new": "Quickcast"}]})
        .to_string(),
    );
    let refused = repo.agent("s1", &["apply", "set.json"]).code(4);
    assert!(
        refused.stderr.contains("record a note instead"),
        "{}",
        refused.stderr
    );
    let refused = repo
        .agent("s1", &["context", "edit", &rule, "--prefer", "QuickCast"])
        .code(4);
    assert!(
        refused.stderr.contains("record a note instead"),
        "{}",
        refused.stderr
    );
    assert_eq!(repo.log().len(), before);
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/intro.md")).unwrap(),
        "Open Quick cast.\n"
    );

    // Through the MCP server: rule edits with apply_edits are refused, and
    // the content edits beside them are not written either.
    let mut server = initialized(&repo, "editor-agent");
    let response = server.call(
        2,
        "apply_edits",
        json!({"edits": [{"path": "docs/intro.md", "old": "Quick cast", "new": "Quickcast"}],
               "rules": [{"rule": rule, "use": "QuickCast"}]}),
    );
    assert_eq!(response["result"]["isError"], true, "{response}");
    let text = response["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("record a note instead"), "{text}");
    assert_eq!(repo.log().len(), before);
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/intro.md")).unwrap(),
        "Open Quick cast.\n"
    );
}

#[test]
fn a_review_round_keeps_a_suggestion_with_a_replacement() {
    let repo = TestEnv::new();
    committed(&repo, "docs/intro.md", "Open Quick cast.\n");
    let suggest = |session: &str| {
        repo.agent_term(
            session,
            "Quickcast",
            "Quick cast",
            &["--quote", "Quick cast", "--json"],
        )
        .ok()
        .json()["id"]
            .as_str()
            .unwrap()[..10]
            .to_owned()
    };
    let (first, second) = (suggest("s1"), suggest("s2"));
    // Refused shapes record nothing.
    for args in [
        vec![
            "--keep",
            "all",
            "--session",
            "s1",
            "--replace-use",
            "QuickCast",
        ],
        vec![
            "--keep",
            &first,
            "--keep",
            &second,
            "--replace-use",
            "QuickCast",
        ],
        vec![
            "--keep",
            &first,
            "--replace-use",
            "QuickCast",
            "--widen-to",
            "project",
        ],
        vec!["--drop", &first, "--replace-use", "QuickCast"],
    ] {
        let mut all = vec!["context", "review"];
        all.extend(args.iter().copied());
        let run = repo.kapi(&all);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    }
    let round = repo
        .kapi(&[
            "context",
            "review",
            "--keep",
            &first,
            "--replace-use",
            "QuickCast",
            "--replace-avoid",
            "Quick cast",
            "--note",
            "camel case",
        ])
        .ok();
    // Keep + edit, and the other proposal of the same rule dropped.
    let lines: Vec<&str> = round.stdout.lines().collect();
    assert!(
        lines[0].contains(&format!("keep #{first}")),
        "{}",
        round.stdout
    );
    assert!(
        lines[1].contains(&format!("drop #{second}")),
        "{}",
        round.stdout
    );
    assert!(
        lines[2].contains(&format!("edit #{first}: \"QuickCast\", not \"Quick cast\"")),
        "{}",
        round.stdout
    );
    let edit = &of_kind(&repo, "edit")[0];
    assert_eq!(edit["status"], "established");
    assert_eq!(edit["note"], "camel case");
    assert_eq!(op(&repo, &first)["status"], "dropped");
    assert_eq!(op(&repo, &second)["status"], "dropped");
    let check = repo.kapi(&["check", "--format", "json"]).code(1);
    assert_eq!(check.json()["findings"][0]["preferred"], "QuickCast");
    // An agent cannot carry a replacement.
    repo.agent_term("s3", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    let flow = repo.log().last().unwrap()["short"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = repo
        .agent(
            "s3",
            &[
                "context",
                "review",
                "--keep",
                &flow,
                "--replace-use",
                "FlowKit",
            ],
        )
        .code(4);
    assert!(!refused.stderr.is_empty());
}

#[test]
fn a_pair_is_recorded_reviewed_listed_and_checked_only_once_in_force() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/de/**\"]\naxes = { locale = \"de\" }\n",
    );
    committed(&repo, "docs/de/login.md", "Klicken Sie auf Sign in.\n");
    committed(&repo, "docs/en/login.md", "Click Sign in.\n");
    let noted = repo
        .agent(
            "s1",
            &[
                "context",
                "note",
                "--pair",
                "Sign in",
                "--target",
                "Anmelden",
                "--path",
                "docs/de/login.md",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(
        noted["subject"],
        json!({"type": "pair", "source": "Sign in", "target": "Anmelden"})
    );
    assert_eq!(noted["scope"]["point"], json!({"locale": "de"}));
    let short = noted["id"].as_str().unwrap()[..10].to_owned();
    // Suggested: listed as a suggestion, reported by no check.
    let here = repo
        .kapi(&["context", "docs/de/login.md", "--json"])
        .ok()
        .json();
    assert_eq!(here["suggestions"][0]["source"], "Sign in", "{here}");
    assert_eq!(here["pairs"], json!([]));
    let check = repo.kapi(&["check", "--format", "json"]).ok().json();
    assert_eq!(check["findings"], json!([]), "{check}");
    // A person keeps it in review; then the check reports the phrase where
    // its rendering is expected, and only there.
    repo.kapi(&["context", "review", "--keep", &short]).ok();
    let check = repo.kapi(&["check", "--format", "json"]).code(1).json();
    let findings = check["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{check}");
    assert_eq!(findings[0]["path"], "docs/de/login.md");
    assert_eq!(findings[0]["preferred"], "Anmelden");
    let here = repo.kapi(&["context", "docs/de/login.md"]).ok();
    assert!(
        here.stdout.contains("Pairs in force")
            && here.stdout.contains("\"Sign in\" → \"Anmelden\""),
        "{}",
        here.stdout
    );
    let en = repo
        .kapi(&["context", "docs/en/login.md", "--json"])
        .ok()
        .json();
    assert_eq!(en["pairs"], json!([]), "{en}");
    // The atlas lists it as a pair.
    let atlas = repo.kapi(&["context", "atlas", "--json"]).ok().json();
    let pair = atlas["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["family"] == "pair")
        .unwrap_or_else(|| panic!("no pair in {atlas}"));
    assert_eq!(pair["status"], "established", "{pair}");
    // A person edits its rendering.
    repo.kapi(&["context", "edit", &short, "--target", "Jetzt anmelden"])
        .ok();
    let edit = &of_kind(&repo, "edit")[0];
    assert_eq!(edit["subject"]["target"], "Jetzt anmelden");
    // Bad pairs are refused.
    let same = repo
        .kapi(&[
            "context", "note", "--pair", "x", "--target", "x", "--quote", "x",
        ])
        .code(2);
    assert!(same.stderr.contains("as itself"), "{}", same.stderr);
    repo.kapi(&["context", "note", "--pair", "x", "--target", "y"])
        .code(2);
}

#[test]
fn the_walk_keeps_a_suggestion_with_a_replacement_as_the_flags_do() {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    let walked = repo
        .kapi_stdin(
            &["context", "review", "--interactive"],
            b"r\nFlowKit\n\nq\n",
        )
        .ok();
    assert!(walked.stdout.contains("[r]eplace"), "{}", walked.stdout);
    let kinds: Vec<String> = repo
        .log()
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["observe", "keep", "edit"], "{}", walked.stdout);
    let edit = &of_kind(&repo, "edit")[0];
    assert_eq!(edit["subject"]["use"], "FlowKit");
    assert_eq!(edit["status"], "established");
    // Nothing given: nothing replaced, and the question comes again.
    repo.agent_term("s1", "Supabase", "Supa base", &["--quote", "q"])
        .ok();
    let walked = repo
        .kapi_stdin(&["context", "review", "--interactive"], b"r\n\n\nq\n")
        .ok();
    assert!(
        walked.stderr.contains("nothing replaced"),
        "{}",
        walked.stderr
    );
}

#[test]
fn an_agent_notes_a_pair_through_the_server_as_a_suggestion() {
    let repo = TestEnv::new();
    committed(&repo, "docs/de/login.md", "Sign in.\n");
    let mut server = initialized(&repo, "translator");
    let noted = server.call(
        2,
        "context_note",
        json!({"pair": "Sign in", "target": "Anmelden", "path": "docs/de/login.md"}),
    );
    assert_ne!(noted["result"]["isError"], true, "{noted}");
    let pair = of_kind(&repo, "observe").pop().unwrap();
    assert_eq!(pair["subject"]["type"], "pair");
    assert_eq!(pair["status"], "suggested");
    let half = server.call(3, "context_note", json!({"pair": "Sign in"}));
    assert_eq!(half["result"]["isError"], true, "{half}");
}
