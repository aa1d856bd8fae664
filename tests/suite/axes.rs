//! Coverage on the project's typed axes, narrowing a submission's point,
//! rule windows and reading the log as of an instant — through the real
//! binary on a real git repository (seed: "Coverage reads the project's
//! typed axes", "A submission may narrow its point", "A rule holds for a
//! window of time", "The log can be read as of an instant").

use serde_json::Value;

use crate::common::{Run, TestEnv, Transcript, shell_words};

const KAPI_TOML: &str = include_str!("../../fixtures/axes/kapi.toml");
const PLACES: &str = include_str!("../../fixtures/axes/places.toml");

/// A repository with the fixture's typed axes and a prose file in each of
/// its folders.
pub(crate) fn typed_repo() -> TestEnv {
    let repo = TestEnv::new();
    repo.write("kapi.toml", KAPI_TOML);
    repo.write("places.toml", PLACES);
    for dir in [
        "nordics", "no", "de", "teens", "adults", "oslo", "bergen", "app", "plain",
    ] {
        repo.write(&format!("docs/{dir}/a.md"), "Open Quick cast now.\n");
    }
    repo
}

/// Run at another instant of the pinned clock.
pub(crate) fn at(repo: &TestEnv, now: &str, args: &[&str]) -> Run {
    repo.kapi_cmd(args)
        .env("KAPI_NOW", now)
        .output()
        .unwrap()
        .into()
}

/// A person notes `Quickcast` instead of `Quick cast` with `extra`, and
/// keeps it; its short id.
fn kept_rule(repo: &TestEnv, extra: &[&str]) -> String {
    let mut args = vec![
        "context",
        "note",
        "--term",
        "Quickcast",
        "--instead-of",
        "Quick cast",
        "--json",
    ];
    args.extend_from_slice(extra);
    let id = short(&repo.kapi(&args).ok().json());
    repo.kapi(&["context", "review", "--keep", &id]).ok();
    id
}

fn short(record: &Value) -> String {
    record["id"].as_str().unwrap()[..10].to_owned()
}

/// The files under docs/ a whole-project check flags.
fn flagged(repo: &TestEnv, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(extra);
    let run = repo.kapi(&args);
    let doc = run.json();
    let mut paths: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn status_of(repo: &TestEnv, id: &str, extra: &[&str]) -> String {
    let mut args = vec!["context", "log", "--json"];
    args.extend_from_slice(extra);
    let lines = repo.kapi(&args).ok().json_lines();
    lines
        .iter()
        .find(|l| l["short"] == id)
        .map(|l| l["status"].as_str().unwrap_or("").to_owned())
        .unwrap_or_else(|| "absent".into())
}

#[test]
fn a_rule_at_a_hierarchy_value_applies_at_its_members_and_nowhere_else() {
    let repo = typed_repo();
    let id = kept_rule(&repo, &["--path", "docs/nordics/a.md"]);
    assert_eq!(
        flagged(&repo, &[]),
        ["docs/no/a.md", "docs/nordics/a.md"],
        "market=nordics holds at market=no, not at market=de or where no market is set"
    );
    let no = repo
        .kapi(&["context", "docs/no/a.md", "--json"])
        .ok()
        .json();
    assert_eq!(no["rules"][0]["short"], id.as_str());
    let de = repo
        .kapi(&["context", "docs/de/a.md", "--json"])
        .ok()
        .json();
    assert_eq!(de["rules"], serde_json::json!([]));
    assert_eq!(de["elsewhere"][0]["short"], id.as_str());
}

#[test]
fn a_range_rule_applies_within_its_bounds_and_a_geo_rule_at_the_places_within() {
    let repo = typed_repo();
    kept_rule(
        &repo,
        &["--path", "docs/plain/a.md", "--point", "age=13-17"],
    );
    assert_eq!(
        flagged(&repo, &[]),
        ["docs/teens/a.md"],
        "14-16 within 13-17; 18- is not"
    );

    let repo = typed_repo();
    kept_rule(
        &repo,
        &["--path", "docs/plain/a.md", "--point", "place=no-03"],
    );
    assert_eq!(
        flagged(&repo, &[]),
        ["docs/oslo/a.md"],
        "oslo sits within no-03; bergen does not"
    );
    let oslo = repo
        .kapi(&["context", "docs/oslo/a.md", "--json"])
        .ok()
        .json();
    assert_eq!(oslo["point"], serde_json::json!({"place": "oslo"}));
    assert_eq!(oslo["rules"][0]["scope"]["point"]["place"], "no-03");
}

#[test]
fn an_axis_kapi_toml_does_not_type_compares_by_equality() {
    let repo = typed_repo();
    repo.write(
        "kapi.toml",
        &format!(
            "{KAPI_TOML}\n[[points]]\npaths = [\"docs/brand/**\"]\naxes = {{ brand = \"nordics\" }}\n\n[[points]]\npaths = [\"docs/brand-no/**\"]\naxes = {{ brand = \"no\" }}\n"
        ),
    );
    repo.write("docs/brand/a.md", "Open Quick cast now.\n");
    repo.write("docs/brand-no/a.md", "Open Quick cast now.\n");
    kept_rule(&repo, &["--path", "docs/brand/a.md"]);
    assert_eq!(flagged(&repo, &[]), ["docs/brand/a.md"]);
}

#[test]
fn rules_contest_where_their_typed_values_overlap() {
    let repo = typed_repo();
    let nordics = short(
        &repo
            .agent_term(
                "s1",
                "Quickcast",
                "Quick cast",
                &["--path", "docs/nordics/a.md", "--json"],
            )
            .ok()
            .json(),
    );
    let de = short(
        &repo
            .agent_term(
                "s2",
                "Fastcast",
                "Quick cast",
                &["--path", "docs/de/a.md", "--json"],
            )
            .ok()
            .json(),
    );
    assert_eq!(
        status_of(&repo, &nordics, &[]),
        "suggested",
        "nordics and de do not meet"
    );
    assert_eq!(status_of(&repo, &de, &[]), "suggested");
    let no = short(
        &repo
            .agent_term(
                "s3",
                "Fastcast",
                "Quick cast",
                &["--path", "docs/no/a.md", "--json"],
            )
            .ok()
            .json(),
    );
    assert_eq!(
        status_of(&repo, &nordics, &[]),
        "contested",
        "no sits within nordics"
    );
    assert_eq!(status_of(&repo, &no, &[]), "contested");

    // Ranges: 13-17 overlaps 16-20; 18- does not overlap 13-17.
    let teens = short(
        &repo
            .agent_term(
                "s4",
                "Flowkit",
                "Flow kit",
                &[
                    "--path",
                    "docs/plain/a.md",
                    "--point",
                    "age=13-17",
                    "--json",
                ],
            )
            .ok()
            .json(),
    );
    let adults = short(
        &repo
            .agent_term(
                "s5",
                "Flowbox",
                "Flow kit",
                &["--path", "docs/plain/a.md", "--point", "age=18-", "--json"],
            )
            .ok()
            .json(),
    );
    assert_eq!(status_of(&repo, &teens, &[]), "suggested");
    assert_eq!(status_of(&repo, &adults, &[]), "suggested");
    repo.agent_term(
        "s6",
        "Flowbox",
        "Flow kit",
        &["--path", "docs/plain/a.md", "--point", "age=16-20"],
    )
    .ok();
    assert_eq!(status_of(&repo, &teens, &[]), "contested");
}

#[test]
fn a_correction_seen_within_a_rules_point_settles_it() {
    let repo = typed_repo();
    let nordics = short(
        &repo
            .agent_term(
                "s1",
                "Quickcast",
                "Quick cast",
                &["--path", "docs/nordics/a.md", "--json"],
            )
            .ok()
            .json(),
    );
    // A person's correction in the German pages is not where the rule holds.
    repo.kapi(&[
        "context",
        "note",
        "--from",
        "Quick cast",
        "--to",
        "Quickcast",
        "--path",
        "docs/de/a.md",
    ])
    .ok();
    assert_eq!(status_of(&repo, &nordics, &[]), "suggested");
    // One at market=no counts for the rule at market=nordics.
    repo.kapi(&[
        "context",
        "note",
        "--from",
        "Quick cast",
        "--to",
        "Quickcast",
        "--path",
        "docs/no/a.md",
    ])
    .ok();
    assert_eq!(status_of(&repo, &nordics, &[]), "established");
}

#[test]
fn a_point_can_only_narrow_to_a_legal_value_within_the_evidence() {
    let repo = typed_repo();
    let mut t = Transcript::new();
    let mut note = |extra: &[&str]| {
        let mut args = vec![
            "context",
            "note",
            "--term",
            "Quickcast",
            "--instead-of",
            "Quick cast",
            "--json",
        ];
        args.extend_from_slice(extra);
        t.agent(&repo, "s1", &args)
    };
    // Narrowing within the evidence's point, and adding an axis it leaves unset.
    let narrowed = note(&[
        "--path",
        "docs/nordics/a.md",
        "--point",
        "market=no",
        "--point",
        "age=13-17",
    ])
    .ok()
    .json();
    assert_eq!(
        narrowed["scope"]["point"],
        serde_json::json!({"market": "no", "age": "13-17"})
    );
    // Widening, or moving sideways, is a person's decision in review
    // (--widen-to market).
    note(&["--path", "docs/no/a.md", "--point", "market=nordics"]).code(2);
    note(&["--path", "docs/nordics/a.md", "--point", "market=de"]).code(2);
    // A value the axis cannot take: the range axis age, the geo axis place.
    note(&["--path", "docs/plain/a.md", "--point", "age=teen"]).code(2);
    note(&["--path", "docs/plain/a.md", "--point", "place=atlantis"]).code(2);
    // Product and channel come from the file, named by its [[points]] entry.
    note(&["--path", "docs/app/a.md", "--point", "product=other"]).code(2);
    insta::assert_snapshot!(t.text());
    // Nothing was recorded but the one narrowed note.
    assert_eq!(repo.log().len(), 1);
}

#[test]
fn a_quoted_rule_without_a_file_advises_at_the_project_point_and_never_settles() {
    let repo = typed_repo();
    let quoted = short(
        &repo
            .agent_term(
                "s1",
                "Quickcast",
                "Quick cast",
                &["--quote", "Open Quick cast", "--json"],
            )
            .ok()
            .json(),
    );
    let doc = repo
        .kapi(&["context", "docs/de/a.md", "--json"])
        .ok()
        .json();
    assert_eq!(doc["suggestions"][0]["short"], quoted.as_str());
    repo.kapi(&[
        "context",
        "note",
        "--from",
        "Quick cast",
        "--to",
        "Quickcast",
        "--path",
        "docs/de/a.md",
    ])
    .ok();
    assert_eq!(status_of(&repo, &quoted, &[]), "suggested");
}

#[test]
fn a_points_value_a_typed_axis_cannot_take_is_named_with_its_entry() {
    let repo = typed_repo();
    repo.write(
        "kapi.toml",
        &KAPI_TOML.replace(
            "axes = { market = \"de\" }",
            "axes = { market = \"germany\" }",
        ),
    );
    let mut t = Transcript::new();
    t.comment("[[points]] entry 3 sets market = \"germany\"");
    t.kapi(&repo, &["context", "log"]).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_broken_gazetteer_is_named_with_the_axis() {
    let repo = typed_repo();
    repo.write(
        "places.toml",
        "[[place]]\nid = \"oslo\"\nwithin = [\"nowhere\"]\n",
    );
    let mut t = Transcript::new();
    t.comment("places.toml puts oslo within `nowhere`");
    t.kapi(&repo, &["context", "log"]).code(2);
    std::fs::remove_file(repo.join("places.toml")).unwrap();
    t.comment("places.toml removed");
    t.kapi(&repo, &["context", "log"]).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_rule_outside_its_window_does_not_apply_and_a_rename_is_two_rules_in_sequence() {
    let repo = TestEnv::new();
    repo.write("docs/a.md", "Open Flowkit. Open Quickflow.\n");
    // Until December the product is "Flowkit" (the new name must not leak);
    // from December it is "Quickflow".
    let old = kept_rule_forms(&repo, "Flowkit", "Quickflow", &["--valid-to", "2026-12-01"]);
    let new = kept_rule_forms(
        &repo,
        "Quickflow",
        "Flowkit",
        &["--valid-from", "2026-12-01"],
    );
    assert_eq!(status_of(&repo, &old, &[]), "established", "no contest");
    assert_eq!(status_of(&repo, &new, &[]), "established");
    let matched = |now: &str| -> Vec<String> {
        let doc = at(&repo, now, &["check", "--format", "json"]).json();
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["matched"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(matched("2026-11-30T23:59:59Z"), ["Quickflow"]);
    assert_eq!(
        matched("2026-12-01T00:00:00Z"),
        ["Flowkit"],
        "valid_to is exclusive"
    );
    // What applies at a path and the rules files read the same instant.
    let before = at(
        &repo,
        "2026-11-30T12:00:00Z",
        &["context", "docs/a.md", "--json"],
    )
    .json();
    assert_eq!(before["rules"][0]["short"], old.as_str());
    assert_eq!(before["rules"].as_array().unwrap().len(), 1);
    let after = at(
        &repo,
        "2026-12-02T00:00:00Z",
        &["context", "docs/a.md", "--json"],
    )
    .json();
    assert_eq!(after["rules"][0]["short"], new.as_str());
    assert_eq!(after["rules"].as_array().unwrap().len(), 1);
    // The same two rules without windows disagree.
    let repo = TestEnv::new();
    kept_rule_forms(&repo, "Flowkit", "Quickflow", &[]);
    let overlapping = short(
        &repo
            .agent_term(
                "s1",
                "Quickflow",
                "Flowkit",
                &[
                    "--path",
                    "docs/a.md",
                    "--valid-from",
                    "2026-11-30T23:00:00Z",
                    "--json",
                ],
            )
            .ok()
            .json(),
    );
    assert_eq!(status_of(&repo, &overlapping, &[]), "contested");
}

#[test]
fn rules_files_list_only_the_rules_in_force_now() {
    let repo = TestEnv::new();
    repo.write("kapi.toml", "[context]\nrules_files = [\"AGENTS.md\"]\n");
    kept_rule_forms(
        &repo,
        "Flowkit",
        "Flow kit",
        &["--valid-from", "2027-01-01"],
    );
    kept_rule_forms(&repo, "Quickcast", "Quick cast", &[]);
    // Quickcast; not Flowkit, not in force before 2027.
    let agents = std::fs::read_to_string(repo.join("AGENTS.md")).unwrap();
    insta::assert_snapshot!(agents);
}

/// A person notes `term` instead of `instead` and keeps it; its short id.
fn kept_rule_forms(repo: &TestEnv, term: &str, instead: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "context",
        "note",
        "--term",
        term,
        "--instead-of",
        instead,
        "--path",
        "docs/a.md",
        "--json",
    ];
    args.extend_from_slice(extra);
    let id = short(&repo.kapi(&args).ok().json());
    repo.kapi(&["context", "review", "--keep", &id]).ok();
    id
}

#[test]
fn the_log_a_path_and_a_check_read_as_of_an_instant() {
    let repo = TestEnv::new();
    repo.write("docs/a.md", "Open Quick cast.\n");
    let id = short(
        &repo
            .agent_term(
                "s1",
                "Quickcast",
                "Quick cast",
                &["--path", "docs/a.md", "--json"],
            )
            .ok()
            .json(),
    );
    // A person keeps it an hour later and drops it two hours later.
    at(
        &repo,
        "2026-11-30T10:00:00Z",
        &["context", "review", "--keep", &id],
    )
    .ok();
    at(
        &repo,
        "2026-11-30T11:00:00Z",
        &["context", "review", "--drop", &id],
    )
    .ok();
    let now = "2026-11-30T12:00:00Z";
    let log_as_of = |when: &str| {
        let lines = at(&repo, now, &["context", "log", "--json", "--as-of", when])
            .ok()
            .json_lines();
        let status = lines
            .iter()
            .find(|l| l["short"] == id.as_str())
            .map(|l| l["status"].as_str().unwrap().to_owned());
        (lines.len(), status)
    };
    assert_eq!(
        log_as_of("2026-11-30T08:00:00Z"),
        (0, None),
        "nothing recorded yet"
    );
    assert_eq!(
        log_as_of("2026-11-30T09:30:00Z"),
        (1, Some("suggested".into()))
    );
    assert_eq!(
        log_as_of("2026-11-30T10:30:00Z"),
        (2, Some("established".into()))
    );
    assert_eq!(
        log_as_of("2026-11-30"),
        (3, Some("dropped".into())),
        "a date is its whole day"
    );

    let here = at(
        &repo,
        now,
        &[
            "context",
            "docs/a.md",
            "--json",
            "--as-of",
            "2026-11-30T10:30:00Z",
        ],
    )
    .json();
    assert_eq!(here["rules"][0]["short"], id.as_str());
    let human = at(
        &repo,
        now,
        &["context", "docs/a.md", "--as-of", "2026-11-30T10:30:00Z"],
    )
    .ok()
    .stdout;
    assert!(
        human.starts_with("docs/a.md as of 2026-11-30T10:30:00.000Z\nRules in force:"),
        "{human}"
    );
    let here_now = at(&repo, now, &["context", "docs/a.md", "--json"]).json();
    assert_eq!(here_now["rules"], serde_json::json!([]));

    let check = |extra: &[&str]| {
        let mut args = vec!["check", "--format", "json"];
        args.extend_from_slice(extra);
        at(&repo, now, &args).code
    };
    assert_eq!(
        check(&["--as-of", "2026-11-30T10:30:00Z"]),
        1,
        "it bound then"
    );
    assert_eq!(check(&[]), 0, "it was dropped since");
    // A check as of an instant records no usage.
    let ops = at(&repo, now, &["context", "log", "--json"])
        .ok()
        .json_lines()
        .len();
    assert_eq!(ops, 3);
    // Its history: every status it took, at the instant that made it.
    let lines = at(&repo, now, &["context", "log", "--history", "--json"])
        .ok()
        .json_lines();
    let history: Vec<(String, String)> = lines[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["at"].as_str().unwrap().to_owned(),
                c["to"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("2026-11-30T09:00:00.000Z", "suggested"),
        ("2026-11-30T10:00:00.000Z", "established"),
        ("2026-11-30T11:00:00.000Z", "dropped"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(history, expected);
    let mut t = Transcript::new();
    let mut step = |args: &[&str]| {
        let line = format!("KAPI_NOW={now} kapi {}", shell_words(args));
        t.step(&repo, &line, at(&repo, now, args))
    };
    step(&["context", "log", "--history"]).ok();
    step(&["context", "log", "--as-of", "last week"]).code(2);
    insta::assert_snapshot!(t.text());
}
