//! Compiled context end to end: the real binary over the fixture vault,
//! golden artifacts, verification, `--all`, and property tests of the
//! budget and sensitivity laws through the library.

use std::path::{Path, PathBuf};

use kapi::compile::{self, Options, Ranking};
use kapi::vault::{Grant, Sensitivity};
use proptest::prelude::*;

use crate::common::{TestEnv, Transcript};

pub(super) const TODAY: &str = "2026-11-30";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vault")
}

/// A temp project (a plain folder, no repository) holding a copy of the
/// fixture vault at `decisions/`.
pub(super) fn project() -> TestEnv {
    let env = TestEnv::plain();
    copy_dir(&fixture(), &env.join("decisions"));
    env
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

fn run(dir: &TestEnv, args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = dir.kapi_cmd(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

const README_RECIPE: [&str; 10] = [
    "D-001",
    "--query",
    "review policy",
    "--ranking",
    "bm25",
    "--max-docs",
    "8",
    "--max-bytes",
    "32768",
    "--today",
];

pub(super) fn compile_readme(dir: &TestEnv) -> Vec<u8> {
    let mut args = vec!["compile-context"];
    args.extend_from_slice(&README_RECIPE);
    args.push(TODAY);
    let (code, out, err) = run(dir, &args);
    assert_eq!(code, 0, "{err}");
    out
}

fn verify(dir: &TestEnv, artifact: &[u8], extra: &[&str]) -> (i32, serde_json::Value) {
    std::fs::write(dir.join("ctx.json"), artifact).unwrap();
    let mut args = vec!["verify-context", "ctx.json", "--today", TODAY];
    args.extend_from_slice(extra);
    let (code, out, err) = run(dir, &args);
    assert!(code != 2 && code != 70, "{err}");
    (code, json(&out))
}

fn golden(name: &str, actual: &[u8]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("KAPI_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{name} differs from its golden file; run with KAPI_BLESS=1 and read the diff"
    );
}

#[test]
fn golden_artifacts_byte_for_byte() {
    let dir = project();
    let bm25 = compile_readme(&dir);
    golden("readme-bm25.json", &bm25);
    let (code, out, _) = run(
        &dir,
        &[
            "compile-context",
            "--query",
            "review",
            "--max-docs",
            "3",
            "--max-bytes",
            "8192",
            "--today",
            TODAY,
            "--agent",
            "codex",
        ],
    );
    assert_eq!(code, 0);
    golden("query-substring-8k.json", &out);
    let (code, out, _) = run(
        &dir,
        &[
            "compile-context",
            "D-005",
            "N-001",
            "E-003",
            "--max-sensitivity",
            "restricted",
            "--today",
            TODAY,
        ],
    );
    assert_eq!(code, 0);
    golden("restricted-targets.json", &out);
}

#[test]
fn the_report_contract() {
    let dir = project();
    let out = compile_readme(&dir);
    assert!(out.ends_with(b"}\n") && !out.ends_with(b"\n\n"));
    let v = json(&out);
    assert_eq!(v["format"], "kapi.compiled-context/v1");
    assert_eq!(v["contract_version"], 1);
    assert_eq!(v["status"], "compiled");
    assert_eq!(v["execution_authorized"], false);
    assert_eq!(v["budget"]["used_bytes"], out.len());
    assert_eq!(compile::serialize(&v), out, "compact, sorted, one newline");
    let d1 = &v["contexts"][0];
    assert_eq!(d1["id"], "D-001");
    assert_eq!(d1["applicability"]["state"], "applicable");
    assert_eq!(d1["applicability"]["premise"], true);
    assert_eq!(d1["applicability"]["local_approval"], "matched");
    // The restricted review row is hidden; the effective one is kept.
    let reviews = d1["history"]["reviews"].as_array().unwrap();
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[1]["effective"], true);
    // Query selection excluded non-premise decisions (D-003 cites replaced
    // evidence, D-006 expired, D-007 has changes requested).
    for ctx in v["contexts"].as_array().unwrap() {
        if ctx["selected_by"] == "query" && ctx["kind"] == "decision" {
            assert_eq!(ctx["applicability"]["premise"], true);
        }
    }
    let codes: Vec<_> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "compiled.decision_log_unavailable",
            "compiled.evidence_retired"
        ]
    );
    // A security property, asserted by name: the artifact is pinned whole
    // by its golden file (golden_artifacts_byte_for_byte), but a leak must
    // fail here saying what leaked, not only as a changed golden file.
    let text = String::from_utf8(out).unwrap();
    for secret in [
        "SECRET",
        "ZEPHYR",
        "INTERNAL-STAFFING",
        "D-005-vendor",
        "Cy Park",
        "Ana Lima",
    ] {
        assert!(!text.contains(secret), "{secret} leaked");
    }
}

#[test]
fn explicit_targets_keep_their_state_and_denied_is_absent() {
    let dir = project();
    let (code, out, _) = run(
        &dir,
        &[
            "compile-context",
            "D-002",
            "D-006",
            "D-007",
            "D-004",
            "ADR-0001",
            "D-001",
            "D-001",
            "--today",
            TODAY,
        ],
    );
    assert_eq!(code, 0);
    let v = json(&out);
    let states: Vec<_> = v["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["applicability"]["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "reference",
            "reference",
            "needs_review",
            "reference",
            "unknown",
            "applicable"
        ]
    );
    assert_eq!(
        v["contexts"][0]["history"]["superseded_by"][0]["id"],
        "D-003"
    );
    // A denied target and an absent one are reported the same way.
    let (_, denied, _) = run(&dir, &["compile-context", "D-005", "--today", TODAY]);
    let (_, absent, _) = run(&dir, &["compile-context", "D-999", "--today", TODAY]);
    let (denied, absent) = (json(&denied), json(&absent));
    assert_eq!(
        denied["omissions"],
        serde_json::json!([{ "reason": "not_found", "target": "D-005" }])
    );
    assert_eq!(
        absent["omissions"],
        serde_json::json!([{ "reason": "not_found", "target": "D-999" }])
    );
    assert_eq!(denied["manifest"]["inputs"], absent["manifest"]["inputs"]);
    // Raw logs are withheld even as explicit targets: the whole artifact
    // omits it as `withheld_log`.
    let mut t = Transcript::new();
    let out = t
        .kapi(
            &dir,
            &["compile-context", "review-log.md", "--today", TODAY],
        )
        .ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(
        json(out.stdout.as_bytes())["omissions"][0]["reason"],
        "withheld_log"
    );
    // Asserted by name too, as the withholding it is: no text of the log
    // (here the note of one of its public rows) is in the artifact.
    assert!(!out.stdout.contains("Still right"), "{}", out.stdout);
}

#[test]
fn verify_current_stale_refused() {
    let dir = project();
    let d = &dir;
    let artifact = compile_readme(d);
    assert_eq!(verify(d, &artifact, &[]).0, 0);
    // Expected parameters bind the caller's recipe.
    assert_eq!(
        verify(
            d,
            &artifact,
            &["--expect-ranking", "bm25", "--expect-targets", "D-001"]
        )
        .0,
        0
    );
    let (code, v) = verify(d, &artifact, &["--expect-max-docs", "9"]);
    assert_eq!(
        (code, v["reasons"][0].as_str()),
        (3, Some("expected_max_docs_mismatch"))
    );
    assert_eq!(v["signature_verified"], false);
    // Another evaluation date cannot be current.
    std::fs::write(d.join("ctx.json"), &artifact).unwrap();
    let (code, _, _) = run(d, &["verify-context", "ctx.json", "--today", "2026-12-01"]);
    assert_eq!(code, 1);
    // The verifier's own grant: a wider artifact is stale in a public view.
    // Tampering is refused.
    let text = String::from_utf8(artifact.clone()).unwrap();
    let tampered = text.replace(
        "one human review before merge",
        "two human review before merge",
    );
    assert_eq!(
        verify(d, tampered.as_bytes(), &[]).1["reasons"][0],
        "digest_mismatch"
    );
    let pretty = serde_json::to_vec_pretty(&json(&artifact)).unwrap();
    assert_eq!(verify(d, &pretty, &[]).1["reasons"][0], "not_canonical");
    assert_eq!(verify(d, b"\xff\xfe", &[]).1["reasons"][0], "not_utf8");
    assert_eq!(verify(d, b"[1]\n", &[]).1["reasons"][0], "not_an_object");
    let out = d.kapi_stdin(&["verify-context", "-", "--today", TODAY], &artifact);
    assert_eq!(out.code, 0);
    assert_eq!(json(out.stdout.as_bytes())["status"], "current");

    // Edits to restricted notes and hidden rows change nothing.
    let vault = d.join("decisions");
    let secret = vault.join("D-005-vendor-contract.md");
    let edited = std::fs::read_to_string(&secret)
        .unwrap()
        .replace("1.2M", "1.3M");
    std::fs::write(&secret, edited).unwrap();
    let register = vault.join("evidence.md");
    let edited = std::fs::read_to_string(&register)
        .unwrap()
        .replace("SECRET-SURVEY-2026", "SECRET-SURVEY-2027");
    std::fs::write(&register, edited).unwrap();
    let log = vault.join("review-log.md");
    let edited = std::fs::read_to_string(&log)
        .unwrap()
        .replace("| 2026-07-01 |", "| 2026-07-02 |");
    std::fs::write(&log, edited).unwrap();
    let log = vault.join("decision-log.md");
    std::fs::write(
        &log,
        std::fs::read_to_string(&log).unwrap()
            + "| 2026-02-02 | D-003-risk-labels.md | approved | internal | |\n",
    )
    .unwrap();
    assert_eq!(
        verify(d, &artifact, &[]).0,
        0,
        "denied edits must not make it stale"
    );
    assert_eq!(compile_readme(d), artifact);

    // Editing a public note outside the selection makes it stale.
    let public = vault.join("D-004-draft-freeze.md");
    std::fs::write(
        &public,
        std::fs::read_to_string(&public).unwrap() + "More.\n",
    )
    .unwrap();
    let (code, v) = verify(d, &artifact, &[]);
    assert_eq!((code, v["status"].as_str()), (1, Some("stale")));
    assert_eq!(v["reasons"][0], "notes_changed");
}

#[test]
fn a_new_matching_public_note_makes_it_stale() {
    let dir = project();
    let d = &dir;
    let artifact = compile_readme(d);
    std::fs::write(
        d.join("decisions/S-002-new.md"),
        "---\nid: S-002\ntype: source\ntitle: Review policy survey\nsensitivity: public\n---\nreview policy review policy\n",
    )
    .unwrap();
    let (code, v) = verify(d, &artifact, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        v["reasons"],
        serde_json::json!(["notes_changed", "selection_changed"]),
        "{v}"
    );
    // A new restricted note changes nothing.
    let dir = project();
    let d = &dir;
    let artifact = compile_readme(d);
    std::fs::write(
        d.join("decisions/S-003-secret.md"),
        "---\nid: S-003\ntype: source\ntitle: review policy\n---\nreview policy\n",
    )
    .unwrap();
    assert_eq!(verify(d, &artifact, &[]).0, 0);
}

#[test]
fn budgets() {
    let dir = project();
    let d = &dir;
    let (code, out, err) = run(
        d,
        &[
            "compile-context",
            "D-001",
            "--max-bytes",
            "159",
            "--today",
            TODAY,
        ],
    );
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{err}");
    assert_eq!(
        err,
        "error: budget_too_small: max_bytes must be at least 160\n"
    );
    for max in ["160", "900"] {
        let (code, out, _) = run(
            d,
            &[
                "compile-context",
                "D-001",
                "--max-bytes",
                max,
                "--today",
                TODAY,
            ],
        );
        assert_eq!(code, 3);
        let v = json(&out);
        assert_eq!(
            (v["status"].as_str(), v["error"].as_str()),
            (Some("refused"), Some("budget_too_small"))
        );
        assert_eq!(v["budget"]["used_bytes"], out.len());
        assert!(out.len() <= max.parse().unwrap());
        assert_eq!(verify(d, &out, &[]), (3, verify(d, &out, &[]).1));
        assert_eq!(verify(d, &out, &[]).1["reasons"][0], "artifact_refused");
    }
    let (_, full, _) = run(d, &["compile-context", "D-001", "S-001", "--today", TODAY]);
    let max = (full.len() - 50).to_string();
    let (code, out, _) = run(
        d,
        &[
            "compile-context",
            "D-001",
            "S-001",
            "--max-bytes",
            &max,
            "--today",
            TODAY,
        ],
    );
    assert_eq!(code, 0);
    let v = json(&out);
    assert!(out.len() <= full.len() - 50);
    assert_eq!(v["budget"]["truncated_contexts"], 1);
    assert_eq!(v["contexts"][0]["content_truncated"], false);
    assert_eq!(v["contexts"][1]["content_truncated"], true);
    assert_eq!(verify(d, &out, &[]).0, 0);
    // The hybrid report's retrieval section counts toward the budget too:
    // a budget the whole bm25 report fits in is too small for it.
    let ranked = |ranking: &str| {
        run(
            d,
            &[
                "compile-context",
                "--query",
                "outages",
                "--ranking",
                ranking,
                "--max-bytes",
                "6000",
                "--today",
                TODAY,
            ],
        )
    };
    let (code, out, _) = ranked("bm25");
    assert_eq!(code, 0);
    assert_eq!(json(&out)["budget"]["truncated_contexts"], 0);
    let (code, out, _) = ranked("hybrid");
    assert_eq!(code, 3);
    assert_eq!(json(&out)["error"], "budget_too_small");
    let (code, _, err) = run(
        d,
        &[
            "compile-context",
            "D-001",
            "--ranking",
            "fuzzy",
            "--today",
            TODAY,
        ],
    );
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: unknown ranking \"fuzzy\": use substring, bm25 or hybrid\n"
    );
    let (code, _, _) = run(
        d,
        &[
            "compile-context",
            "D-001",
            "--max-docs",
            "65",
            "--today",
            TODAY,
        ],
    );
    assert_eq!(code, 2);
    let many: Vec<String> = (0..65).map(|i| format!("D-{i:03}")).collect();
    let mut args = vec!["compile-context"];
    args.extend(many.iter().map(String::as_str));
    assert_eq!(run(d, &args).0, 2);
    // The two limits, in words.
    let mut t = Transcript::new();
    t.kapi(
        d,
        &[
            "compile-context",
            "D-001",
            "--max-docs",
            "65",
            "--today",
            TODAY,
        ],
    )
    .code(2);
    t.kapi(d, &args).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn declared_artifacts_all() {
    let dir = project();
    let d = &dir;
    std::fs::create_dir(d.join(".git")).unwrap();
    std::fs::write(
        d.join("kapi.toml"),
        "[vault]\nroot = \"decisions\"\n\n[[compile]]\noutput = \"context/review.json\"\ntargets = [\"D-001\"]\nquery = \"review policy\"\nranking = \"bm25\"\nmax_bytes = 32768\n\n[[compile]]\noutput = \"context/all.json\"\nquery = \"review\"\nmax_sensitivity = \"restricted\"\n",
    )
    .unwrap();
    // Run from a subfolder, it names each artifact it compiled.
    let sub = d.kapi_in(
        "decisions/adr",
        &["compile-context", "--all", "--today", TODAY],
    );
    let mut t = Transcript::new();
    let line = format!("(cd decisions/adr && kapi compile-context --all --today {TODAY})");
    t.step(d, &line, sub).ok();
    insta::assert_snapshot!(t.text());
    assert!(d.join("context/all.json").is_file());
    let (code, out, _) = run(d, &["verify-context", "--all", "--today", TODAY]);
    assert_eq!(code, 0);
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
    // A restricted edit: the restricted artifact goes stale, the public one not.
    let secret = d.join("decisions/D-005-vendor-contract.md");
    std::fs::write(
        &secret,
        std::fs::read_to_string(&secret).unwrap() + "review\n",
    )
    .unwrap();
    let (code, out, _) = run(d, &["verify-context", "--all", "--today", TODAY]);
    assert_eq!(code, 1);
    let lines: Vec<_> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| json(l.as_bytes()))
        .collect();
    assert_eq!(lines[0]["status"], "current");
    assert_eq!(lines[1]["status"], "stale");
    std::fs::remove_file(d.join("context/review.json")).unwrap();
    let (code, out, _) = run(d, &["verify-context", "--all", "--today", TODAY]);
    assert_eq!(code, 1);
    let first = json(
        String::from_utf8(out)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .as_bytes(),
    );
    assert_eq!(first["path"], "context/review.json", "{first}");
    assert_eq!(first["reasons"], serde_json::json!(["artifact_missing"]));
    // The same compile from the command line equals the declared artifact.
    run(d, &["compile-context", "--all", "--today", TODAY]);
    let mut args = vec!["compile-context"];
    args.extend_from_slice(&README_RECIPE);
    args.push(TODAY);
    let (_, out, _) = run(d, &args);
    assert_eq!(out, std::fs::read(d.join("context/review.json")).unwrap());
}

#[cfg(unix)]
#[test]
fn unsafe_files_are_excluded_without_blocking() {
    let dir = project();
    let d = &dir;
    let vault = d.join("decisions");
    let before = compile_readme(d);
    let outside = d.join("outside.md");
    std::fs::write(&outside, "---\nid: S-009\ntype: source\ntitle: review policy\nsensitivity: public\n---\nreview policy\n")
        .unwrap();
    std::os::unix::fs::symlink(&outside, vault.join("S-009-link.md")).unwrap();
    std::os::unix::fs::symlink(d.path(), vault.join("escape")).unwrap();
    let fifo = vault.join("fifo.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made || !fifo.exists());
    assert_eq!(compile_readme(d), before);
}

// ---- properties, through the library ----

fn note(id: &str, label: &str, title: &str, body: &str) -> String {
    typed_note("source", id, label, title, body)
}

fn typed_note(kind: &str, id: &str, label: &str, title: &str, body: &str) -> String {
    format!("---\nid: {id}\ntype: {kind}\ntitle: {title}\nsensitivity: {label}\n---\n{body}\n")
}

fn write_vault(root: &Path, public: &[String], secret: &[String]) {
    std::fs::create_dir_all(root).unwrap();
    for (i, body) in public.iter().enumerate() {
        std::fs::write(
            root.join(format!("S-{i:03}.md")),
            note(&format!("S-{i:03}"), "public", "review notes", body),
        )
        .unwrap();
    }
    for (i, body) in secret.iter().enumerate() {
        let label = ["internal", "confidential", "restricted", "unlabelled"][i % 4];
        // Denied notes may declare any type, log types included.
        let kind = ["source", "review_log", "decision_log", "evidence_register"][i % 4];
        std::fs::write(
            root.join(format!("hidden-path-{i}.md")),
            typed_note(
                kind,
                &format!("H-{i:03}"),
                label,
                &format!("HIDDENTITLE{i} review"),
                &format!("HIDDENBODY {body} review"),
            ),
        )
        .unwrap();
    }
}

fn options(max_bytes: usize, ranking: Ranking) -> Options {
    let today = kapi::vault::date::parse(TODAY).unwrap();
    Options::new(today)
        .targets(["S-000", "H-000"])
        .query("review")
        .ranking(ranking)
        .max_docs(6)
        .max_bytes(max_bytes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn never_exceeds_the_budget_nor_leaks_denied_notes(
        public in proptest::collection::vec("[a-zé\"\\\\ \n]{0,300}", 1..5),
        secret in proptest::collection::vec("[a-z ]{0,50}", 1..5),
        edit in "[a-z]{1,20}",
        max_bytes in 160usize..6000,
        ranker in 0u8..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("v");
        write_vault(&root, &public, &secret);
        let ranking = [Ranking::Substring, Ranking::Bm25, Ranking::Hybrid][usize::from(ranker)];
        let opts = options(max_bytes, ranking);
        let first = compile::compile_context(&root, &opts).unwrap();
        let bytes = first.to_bytes();
        prop_assert!(bytes.len() <= max_bytes);
        prop_assert_eq!(&first.value["budget"]["used_bytes"], &serde_json::json!(bytes.len()));
        let text = String::from_utf8(bytes.clone()).unwrap();
        // Substrings: the inputs are generated, and no denied title, body
        // or path may show in any artifact (a security property).
        prop_assert!(!text.contains("HIDDEN") && !text.contains("hidden-path"));
        // Editing every denied note changes nothing.
        let edited: Vec<String> = secret.iter().map(|s| format!("{s}{edit}")).collect();
        write_vault(&root, &public, &edited);
        let second = compile::compile_context(&root, &opts).unwrap();
        prop_assert_eq!(&second.to_bytes(), &bytes);
        // And the denied notes might as well not exist.
        let bare = dir.path().join("bare");
        write_vault(&bare, &public, &[]);
        let third = compile::compile_context(&bare, &opts).unwrap();
        prop_assert_eq!(&third.to_bytes(), &bytes);
        // With the grant, the denied notes do appear (the test is not vacuous).
        let wide = opts.clone().allowed_sensitivities(Grant::up_to(Sensitivity::Restricted));
        if max_bytes > 5000 {
            let w = compile::compile_context(&root, &wide).unwrap();
            // A substring: the artifact holds generated notes.
            prop_assert!(w.refused() || String::from_utf8(w.to_bytes()).unwrap().contains("H-000"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// No single-byte alteration of an artifact verifies as current.
    #[test]
    fn altered_artifacts_are_never_current(at in 0usize..100_000, byte in any::<u8>()) {
        use kapi::compile::verify::{Expected, Input, VerifyOptions, VerifyStatus, verify_compiled};
        let dir = project();
        let root = dir.path().join("decisions");
        let today = kapi::vault::date::parse(TODAY).unwrap();
        let opts = Options::new(today).targets(["D-001"]).query("review policy").ranking(Ranking::Bm25);
        let mut bytes = compile::compile_context(&root, &opts).unwrap().to_bytes();
        let at = at % bytes.len();
        prop_assume!(bytes[at] != byte);
        bytes[at] = byte;
        let vo = VerifyOptions { today, grant: Grant::public(), expected: Expected::default(), scope: Default::default(), layout: Default::default() };
        let v = verify_compiled(&root, Input::Bytes(&bytes), &vo).unwrap();
        prop_assert_ne!(v.status, VerifyStatus::Current);
    }

    /// Arbitrary JSON-ish input is refused, never current, never a panic.
    #[test]
    fn arbitrary_input_is_refused(text in "[\\[\\]{}\":,0-9a-z_ -]{0,300}") {
        use kapi::compile::verify::{Expected, Input, VerifyOptions, VerifyStatus, verify_compiled};
        let root = fixture();
        let today = kapi::vault::date::parse(TODAY).unwrap();
        let vo = VerifyOptions { today, grant: Grant::public(), expected: Expected::default(), scope: Default::default(), layout: Default::default() };
        let v = verify_compiled(&root, Input::Bytes(text.as_bytes()), &vo).unwrap();
        prop_assert_eq!(v.status, VerifyStatus::Refused);
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
            let v = verify_compiled(&root, Input::Value(&value), &vo).unwrap();
            prop_assert_eq!(v.status, VerifyStatus::Refused);
        }
    }
}

// ---- reviewer findings ----

fn today() -> time::Date {
    kapi::vault::date::parse(TODAY).unwrap()
}

fn reasons(ctx: &serde_json::Value) -> Vec<&str> {
    ctx["applicability"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect()
}

fn warning_codes(v: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["code"].as_str().unwrap().to_string(), w["path"].clone()))
        .collect()
}

#[test]
fn a_path_scope_leaving_out_the_logs_makes_them_unavailable() {
    let opts = Options::new(today()).targets(["D-007"]);
    let full = compile::compile_context(&fixture(), &opts).unwrap().value;
    let d7 = &full["contexts"][0];
    assert_eq!(d7["applicability"]["state"], "needs_review");
    assert_eq!(reasons(d7), ["review.changes_requested"]);
    let scoped = opts.paths(["D-007-release-train.md".to_string()].into());
    let v = compile::compile_context(&fixture(), &scoped).unwrap().value;
    let d7 = &v["contexts"][0];
    assert_eq!(d7["applicability"]["state"], "needs_review");
    assert_eq!(reasons(d7), ["review.unavailable"], "{d7}");
    assert_eq!(d7["history"]["unavailable"], true);
    let codes: Vec<String> = warning_codes(&v).into_iter().map(|c| c.0).collect();
    for code in [
        "compiled.review_log_unavailable",
        "compiled.decision_log_unavailable",
        "compiled.evidence_register_unavailable",
    ] {
        assert!(codes.iter().any(|c| c == code), "{code}");
    }
}

#[test]
fn a_denied_note_declaring_a_log_type_changes_nothing() {
    let dir = project();
    let d = &dir;
    let artifact = compile_readme(d);
    std::fs::write(
        d.join("decisions/secret.md"),
        "---\ntype: review_log\nsensitivity: restricted\n---\n",
    )
    .unwrap();
    assert_eq!(compile_readme(d), artifact);
    assert_eq!(verify(d, &artifact, &[]).0, 0);
    // A denied file at the review log's path does make it unavailable.
    let log = d.join("decisions/review-log.md");
    std::fs::write(
        &log,
        std::fs::read_to_string(&log)
            .unwrap()
            .replace("sensitivity: public", "sensitivity: internal"),
    )
    .unwrap();
    let (_, out, _) = run(d, &["compile-context", "D-001", "--today", TODAY]);
    let v = json(&out);
    assert_eq!(v["contexts"][0]["applicability"]["state"], "needs_review");
    assert_eq!(reasons(&v["contexts"][0]), ["review.unavailable"]);
}

#[cfg(unix)]
#[test]
fn an_unreadable_denied_file_does_not_abort_the_compile() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project();
    let d = &dir;
    let artifact = compile_readme(d);
    let locked = d.join("decisions/locked.md");
    std::fs::write(&locked, "---\nsensitivity: restricted\n---\nx\n").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&locked).is_ok() {
        // Running as root, which reads mode-000 files: the unit test
        // `unreadable_files_fail_closed_for_that_file_only` covers this path.
        return;
    }
    assert_eq!(compile_readme(d), artifact);
    let (code, _, err) = run(
        d,
        &[
            "compile-context",
            "D-001",
            "--max-sensitivity",
            "restricted",
            "--today",
            TODAY,
        ],
    );
    assert_eq!(code, 5, "{err}");
    // Not reached as root (above); kept as the substring it was, since
    // the message cannot be read here to pin it.
    assert!(err.contains("vault_unreadable"), "{err}");
}

#[test]
fn an_approved_successor_without_a_receipt_does_not_supersede() {
    let dir = project();
    let d = &dir;
    std::fs::write(
        d.join("decisions/D-008-no-review.md"),
        "---\nid: D-008\ntype: decision\ntitle: No reviews\nstatus: approved\nsensitivity: public\nsupersedes: [D-001]\n---\nNo review at all.\n",
    )
    .unwrap();
    let (_, out, _) = run(d, &["compile-context", "D-001", "D-008", "--today", TODAY]);
    let v = json(&out);
    let d1 = &v["contexts"][0];
    assert_eq!(d1["applicability"]["state"], "applicable", "{d1}");
    assert_eq!(reasons(d1), ["superseded_by.pending"]);
    assert_eq!(v["contexts"][1]["applicability"]["state"], "unknown");
}

#[test]
fn the_decision_log_check_uses_the_effective_event() {
    let dir = project();
    let d = &dir;
    std::fs::write(
        d.join("decisions/decision-log.md"),
        "---\ntype: decision_log\nsensitivity: public\n---\n| date | target | event |\n|-|-|-|\n\
         | 2026-01-14 | D-001-review-policy.md | approved |\n\
         | 2026-10-01 | D-001-review-policy.md | reopened |\n\
         | 2026-04-01 | D-007-release-train.md | approved |\n\
         | 2026-02-01 | D-003-risk-labels.md | approved |\n\
         | 2026-12-24 | D-006-old-ci.md | approved |\n",
    )
    .unwrap();
    let (_, out, _) = run(
        d,
        &[
            "compile-context",
            "D-001",
            "D-003",
            "D-006",
            "D-007",
            "--today",
            TODAY,
        ],
    );
    let missing: Vec<String> = warning_codes(&json(&out))
        .into_iter()
        .filter(|c| c.0 == "compiled.decision_log_missing_approval")
        .map(|c| c.1.as_str().unwrap().to_string())
        .collect();
    assert_eq!(missing, ["D-001-review-policy.md", "D-006-old-ci.md"]);
}

#[test]
fn an_approval_dated_after_today_is_not_yet_one() {
    let dir = project();
    let d = &dir;
    let path = d.join("decisions/D-001-review-policy.md");
    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("on: 2026-01-14", "on: 2026-12-14"),
    )
    .unwrap();
    let (_, out, _) = run(d, &["compile-context", "D-001", "--today", TODAY]);
    let ctx = &json(&out)["contexts"][0];
    assert_eq!(ctx["applicability"]["local_approval"], "future");
    assert_eq!(ctx["applicability"]["premise"], false);
    assert_eq!(reasons(ctx), ["approval.future"]);
}

#[test]
fn verification_creates_no_lock_file() {
    let dir = project();
    let d = &dir;
    std::fs::create_dir(d.join(".git")).unwrap();
    let artifact = compile_readme(d);
    assert_eq!(verify(d, &artifact, &["--root", "decisions"]).0, 0);
    assert!(
        !d.join(".git/kapi").exists(),
        "verification wrote .git/kapi"
    );
    std::fs::remove_dir(d.join(".git")).unwrap();
    assert_eq!(verify(d, &artifact, &["--root", "decisions"]).0, 0);
    assert!(!d.join("decisions/.kapi-lock").exists());
}

#[test]
fn a_note_of_an_unknown_type_is_not_a_decision() {
    let dir = project();
    let d = &dir;
    std::fs::write(
        d.join("decisions/M-001-memo.md"),
        "---\nid: M-001\ntype: memo\ntitle: A memo\nsensitivity: public\n---\nA memo.\n",
    )
    .unwrap();
    let (_, out, _) = run(d, &["compile-context", "M-001", "--today", TODAY]);
    let ctx = &json(&out)["contexts"][0];
    assert_eq!(ctx["applicability"]["state"], "not_decision");
    assert_eq!(reasons(ctx), ["kind.unknown"]);
}

#[test]
fn hidden_rows_cannot_crowd_out_a_visible_review() {
    let dir = project();
    let d = &dir;
    let mut log = String::from(
        "---\nsensitivity: public\n---\n| date | target | outcome | sensitivity |\n|-|-|-|-|\n",
    );
    for _ in 0..200_000 {
        log.push_str("| 2026-01-01 | x.md | confirmed | restricted |\n");
    }
    log.push_str("| 2026-09-01 | D-001-review-policy.md | rejected | public |\n");
    std::fs::write(d.join("decisions/review-log.md"), log).unwrap();
    let (_, out, _) = run(d, &["compile-context", "D-001", "--today", TODAY]);
    let ctx = &json(&out)["contexts"][0];
    assert_eq!(ctx["applicability"]["state"], "needs_review");
    assert_eq!(reasons(ctx), ["review.rejected"]);
}

#[test]
fn vault_config_names_the_log_paths() {
    let dir = project();
    let d = &dir;
    let vault = d.join("decisions");
    std::fs::create_dir(vault.join("logs")).unwrap();
    std::fs::rename(vault.join("review-log.md"), vault.join("logs/reviews.md")).unwrap();
    // Misplaced and not configured: the review log is unavailable.
    let (_, out, _) = run(d, &["compile-context", "D-007", "--today", TODAY]);
    assert_eq!(reasons(&json(&out)["contexts"][0]), ["review.unavailable"]);
    std::fs::write(
        d.join("kapi.toml"),
        "[vault]\nroot = \"decisions\"\nreview_logs = [\"logs/reviews.md\"]\n",
    )
    .unwrap();
    let (_, out, _) = run(d, &["compile-context", "D-007", "--today", TODAY]);
    let ctx = &json(&out)["contexts"][0];
    // Read from the configured log: changes requested, not unavailable.
    assert_eq!(reasons(ctx), ["review.changes_requested"], "{ctx}");
    assert_eq!(verify(d, &out, &[]).0, 0);
}

// ---- hybrid ranking ----

const HYBRID_RECIPE: [&str; 10] = [
    "--query",
    "outages",
    "--ranking",
    "hybrid",
    "--max-docs",
    "4",
    "--max-bytes",
    "32768",
    "--today",
    TODAY,
];

fn compile_hybrid(dir: &TestEnv, extra: &[&str]) -> (i32, Vec<u8>) {
    let mut args = vec!["compile-context"];
    args.extend_from_slice(&HYBRID_RECIPE);
    args.extend_from_slice(extra);
    let (code, out, err) = run(dir, &args);
    assert!(code == 0 || code == 3, "{err}");
    (code, out)
}

/// Every node on every path is cited in `retrieval.citations`, with the
/// digest the report's own citations give it when it is also a context.
fn assert_paths_cited(v: &serde_json::Value) {
    let r = &v["retrieval"];
    let cited: Vec<(&str, &str)> = r["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["path"].as_str().unwrap()))
        .collect();
    for ctx in r["contexts"].as_array().unwrap() {
        let via = ctx["via"].as_array().unwrap();
        assert!(!via.is_empty() && via.len() <= 3, "{ctx}");
        assert_eq!(via[0]["edge"], serde_json::Value::Null);
        assert_eq!(via.last().unwrap()["id"], ctx["id"], "{ctx}");
        for step in via {
            let node = (step["id"].as_str().unwrap(), step["path"].as_str().unwrap());
            assert!(cited.contains(&node), "{node:?} uncited");
        }
    }
    for c in r["citations"].as_array().unwrap() {
        for own in v["citations"].as_array().unwrap() {
            if own["path"] == c["path"] {
                assert_eq!(own["sha256"], c["sha256"]);
            }
        }
    }
}

#[test]
fn hybrid_golden_bytes_manifest_and_cited_paths() {
    let dir = project();
    let d = &dir;
    let (code, out) = compile_hybrid(d, &[]);
    assert_eq!(code, 0);
    golden("hybrid-outages.json", &out);
    // Deterministic: the same vault, recipe and day give the same bytes.
    assert_eq!(compile_hybrid(d, &[]).1, out);
    let v = json(&out);
    assert_eq!(v["budget"]["used_bytes"], out.len());
    // The recipe the manifest binds holds the fixed weights and bounds.
    let recipe = &v["manifest"]["recipe"];
    assert_eq!(recipe["ranking"], "hybrid");
    assert_eq!(recipe["retrieval"]["limits"], v["retrieval"]["limits"]);
    assert_eq!(
        recipe["retrieval"]["edge_weights_per_mille"]["evidence"],
        800
    );
    assert!(
        v["manifest"]["engine"]["ranker"]
            .as_str()
            .unwrap()
            .starts_with("kapi-hybrid/1 on tantivy")
    );
    // A typed path from a query match: E-001 cites nothing, D-001 cites
    // E-001 and names S-001 as its source.
    let r = &v["retrieval"];
    assert_eq!(r["graph"]["nodes"], 5);
    assert_eq!(r["truncated"], false);
    let d1 = r["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "D-001")
        .unwrap();
    assert_eq!(d1["via"][1]["edge"], "evidence", "{d1}");
    assert_eq!(d1["scores"]["proximity"], "0.800000");
    assert_paths_cited(&v);
    // Substring and bm25 reports have no retrieval section.
    let bm25 = compile_readme(d);
    assert!(json(&bm25).get("retrieval").is_none());
    assert!(json(&bm25)["manifest"]["recipe"].get("retrieval").is_none());
    // Verification recompiles it: current; an edited link is stale.
    assert_eq!(verify(d, &out, &["--expect-ranking", "hybrid"]).0, 0);
    let (code, report) = verify(d, &out, &["--expect-ranking", "bm25"]);
    assert_eq!(
        (code, &report["reasons"][0]),
        (3, &serde_json::json!("expected_ranking_mismatch"))
    );
    let d001 = d.join("decisions/D-001-review-policy.md");
    let text = std::fs::read_to_string(&d001).unwrap();
    std::fs::write(&d001, text.replace("  - cites: E-001\n", "")).unwrap();
    let (code, report) = verify(d, &out, &[]);
    assert_eq!(code, 1);
    assert_eq!(report["reasons"], serde_json::json!(["notes_changed"]));
    std::fs::write(&d001, text).unwrap();
    // A retrieval section removed or changed is refused, not recompiled.
    let mut cut = v.clone();
    cut.as_object_mut().unwrap().remove("retrieval");
    let bytes = compile::serialize(&cut);
    assert_eq!(
        verify(d, &bytes, &[]).1["reasons"],
        serde_json::json!(["unexpected_structure"])
    );
    let mut forged = v.clone();
    forged["retrieval"]["contexts"][0]["scores"]["total"] = serde_json::json!("9.000000");
    let bytes = compile::serialize(&forged);
    assert_eq!(
        verify(d, &bytes, &[]).1["reasons"],
        serde_json::json!(["digest_mismatch"])
    );
    // A forged recipe whose weights differ, its digest made to match: stale,
    // the engine changed.
    let mut weights = v.clone();
    weights["manifest"]["recipe"]["retrieval"]["edge_weights_per_mille"]["evidence"] =
        serde_json::json!(700);
    weights["manifest"]["report_sha256"] = serde_json::json!("0".repeat(64));
    let bytes = compile::serialize(&weights);
    weights["manifest"]["report_sha256"] = serde_json::json!(kapi::digest::sha256_hex(&bytes));
    let bytes = compile::serialize(&weights);
    let (code, report) = verify(d, &bytes, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["reasons"], serde_json::json!(["engine_changed"]));
}

/// Public S-100 (the query's only match) depends on restricted H-001,
/// which names public S-200 as its source: the hidden note is the only
/// path to S-200.
fn hidden_path_vault(root: &Path, with_hidden: bool) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(
        root.join("S-100.md"),
        "---\nid: S-100\ntype: source\ntitle: Zebra crossings\nsensitivity: public\nlinks:\n  - depends_on: H-001\n---\nzebra\n",
    )
    .unwrap();
    std::fs::write(
        root.join("S-200.md"),
        "---\nid: S-200\ntype: source\ntitle: Road paint\nsensitivity: public\n---\npaint\n",
    )
    .unwrap();
    std::fs::write(
        root.join("N-300.md"),
        "---\nid: N-300\ntype: note\ntitle: Unrelated\nsensitivity: public\n---\nnothing\n",
    )
    .unwrap();
    let hidden = root.join("hidden-H-001.md");
    if with_hidden {
        std::fs::write(
            &hidden,
            "---\nid: H-001\ntype: note\ntitle: HIDDENTITLE\nsensitivity: restricted\nlinks:\n  - source: S-200\n  - cites: S-100\n---\nHIDDENBODY stripes\n",
        )
        .unwrap();
    } else {
        let _ = std::fs::remove_file(hidden);
    }
}

#[test]
fn hybrid_no_hidden_node_on_a_path_in_a_count_or_a_hash() {
    let env = TestEnv::plain();
    let d = &env;
    let root = d.join("decisions");
    hidden_path_vault(&root, true);
    let zebra = |extra: &[&str]| {
        let mut args = vec![
            "compile-context",
            "--root",
            "decisions",
            "--query",
            "zebra",
            "--ranking",
            "hybrid",
            "--today",
            TODAY,
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = run(d, &args);
        assert_eq!(code, 0, "{err}");
        out
    };
    let public = zebra(&[]);
    let v2 = json(&public);
    let text = String::from_utf8(public.clone()).unwrap();
    for leak in ["HIDDEN", "hidden-H-001"] {
        assert!(!text.contains(leak), "{leak} leaked");
    }
    // S-100's own link shows its target as written (public text); the
    // retrieval section never names the hidden note.
    let retrieval = compile::serialize(&v2["retrieval"]);
    assert!(!String::from_utf8(retrieval).unwrap().contains("H-001"));
    let ids: Vec<&str> = v2["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["S-100"], "S-200 is reachable only through H-001");
    assert_eq!(v2["retrieval"]["graph"]["nodes"], 3);
    assert_eq!(v2["retrieval"]["graph"]["edges"], 0);
    // Not in a count or a hash either: byte for byte the report of the
    // same vault without the hidden note, and editing it changes nothing.
    hidden_path_vault(&root, false);
    assert_eq!(zebra(&[]), public);
    hidden_path_vault(&root, true);
    let hidden = root.join("hidden-H-001.md");
    std::fs::write(
        &hidden,
        std::fs::read_to_string(&hidden).unwrap() + "zebra zebra\n",
    )
    .unwrap();
    assert_eq!(zebra(&[]), public);
    assert_eq!(verify(d, &public, &["--root", "decisions"]).0, 0);
    hidden_path_vault(&root, true);
    // Granted, the hidden note is a visible, cited node on the path.
    let wide = zebra(&["--max-sensitivity", "restricted"]);
    let w = json(&wide);
    let s200 = w["retrieval"]["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "S-200")
        .expect("S-200 reached through H-001");
    let via: Vec<(&str, &serde_json::Value)> = s200["via"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), &s["edge"]))
        .collect();
    assert_eq!(via.len(), 3, "{s200}");
    assert_eq!(via[1].0, "H-001");
    assert_eq!(via[2], ("S-200", &serde_json::json!("input")));
    assert_paths_cited(&w);
}

#[test]
fn hybrid_over_its_bounds_is_refused_never_another_ranker() {
    let env = TestEnv::plain();
    let d = &env;
    let root = d.join("decisions");
    std::fs::create_dir_all(&root).unwrap();
    hidden_path_vault(&root, false);
    // 20,001 public evidence rows: over the 20,000 nodes the graph holds.
    let mut register = String::from(
        "---\ntype: evidence_register\nsensitivity: public\n---\n| id | sensitivity | state | title | url |\n|-|-|-|-|-|\n",
    );
    for e in 0..20_001 {
        register.push_str(&format!(
            "| E-{e:05} | public | active | zebra {e} | https://example.org/{e} |\n"
        ));
    }
    std::fs::write(root.join("evidence.md"), register).unwrap();
    let args = |ranking: &'static str| {
        [
            "compile-context",
            "--root",
            "decisions",
            "--query",
            "zebra",
            "--ranking",
            ranking,
            "--today",
            TODAY,
        ]
    };
    let (code, out, _) = run(d, &args("hybrid"));
    assert_eq!(code, 3);
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        "{\"budget\":{\"max_bytes\":32768,\"used_bytes\":158},\"error\":\"scope_too_large\",\"execution_authorized\":false,\"format\":\"kapi.compiled-context/v1\",\"status\":\"refused\"}\n"
    );
    // The refusal is an artifact verification refuses.
    assert_eq!(
        verify(d, &out, &["--root", "decisions"]).1["reasons"],
        serde_json::json!(["artifact_refused"])
    );
    // The same corpus ranks under bm25: the refusal is the hybrid bound.
    assert_eq!(run(d, &args("bm25")).0, 0);
    // Declared, it is refused and not written.
    std::fs::create_dir(d.join(".git")).unwrap();
    std::fs::write(
        d.join("kapi.toml"),
        "[vault]\nroot = \"decisions\"\n\n[[compile]]\noutput = \"context/big.json\"\nquery = \"zebra\"\nranking = \"hybrid\"\n",
    )
    .unwrap();
    let (code, out, _) = run(d, &["compile-context", "--all", "--today", TODAY]);
    assert_eq!(code, 3);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "refused context/big.json: scope_too_large (not written)\n"
    );
    assert!(!d.join("context/big.json").exists());
}

#[test]
fn hybrid_declared_artifacts_compile_and_verify() {
    let dir = project();
    let d = &dir;
    std::fs::create_dir(d.join(".git")).unwrap();
    std::fs::write(
        d.join("kapi.toml"),
        "[vault]\nroot = \"decisions\"\n\n[[compile]]\noutput = \"context/hybrid.json\"\nquery = \"outages\"\nranking = \"hybrid\"\nmax_docs = 4\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["compile-context", "--all", "--today", TODAY]);
    assert_eq!(code, 0, "{err}");
    assert!(
        String::from_utf8(out)
            .unwrap()
            .starts_with("compiled context/hybrid.json (")
    );
    // The declared artifact is the command line's, byte for byte.
    let (_, cli) = compile_hybrid(d, &[]);
    assert_eq!(std::fs::read(d.join("context/hybrid.json")).unwrap(), cli);
    let (code, _, _) = run(d, &["verify-context", "--all", "--today", TODAY]);
    assert_eq!(code, 0);
    let s001 = d.join("decisions/sources/S-001-outage-review.md");
    std::fs::write(&s001, std::fs::read_to_string(&s001).unwrap() + "outages\n").unwrap();
    let (code, _, _) = run(d, &["verify-context", "--all", "--today", TODAY]);
    assert_eq!(code, 1);
}
