//! What applies at a path, context files read into the log, and the rules
//! files agents load — through the real binary.

use crate::common::{TestEnv, Transcript};
use serde_json::Value;

/// Keep the newest operation that states a rule or a note.
fn keep_last(repo: &TestEnv) -> String {
    let lines = repo.log();
    let last = lines
        .iter()
        .rev()
        .find(|l| l["subject"].is_object())
        .unwrap();
    let id = last["short"].as_str().unwrap().to_owned();
    repo.kapi(&["context", "review", "--keep", &id]).ok();
    id
}

#[test]
fn context_at_a_path_says_what_applies_and_what_stays_correct() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"quickcast\" }\n",
    );
    repo.write("docs/app/a.md", "# App\n");
    repo.write("docs/intro.md", "# Intro\n");
    // A path that is not in the work tree is a mistake, never "nothing
    // applies here yet".
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "docs/app/typo.md"]).code(2);
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--path", "docs/app/a.md"])
        .ok();
    let flow = keep_last(&repo);
    repo.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    let note = keep_last(&repo);
    repo.agent_term("s1", "Supabase", "Supa base", &["--quote", "q"])
        .ok();

    let app = repo
        .kapi(&["context", "docs/app/a.md", "--json"])
        .ok()
        .json();
    assert_eq!(app["point"], serde_json::json!({"product": "quickcast"}));
    assert_eq!(app["rules"][0]["use"], "Flowkit");
    assert_eq!(app["rules"][0]["short"], flow.as_str());
    assert_eq!(
        app["notes"][0]["note"],
        "The docs address the administrator"
    );
    assert_eq!(app["notes"][0]["short"], note.as_str());
    assert_eq!(app["suggestions"][0]["use"], "Supabase");
    assert_eq!(app["elsewhere"], serde_json::json!([]));

    let intro = repo
        .kapi(&["context", "docs/intro.md", "--json"])
        .ok()
        .json();
    assert_eq!(intro["rules"], serde_json::json!([]));
    assert_eq!(intro["elsewhere"][0]["use"], "Flowkit");
    // Outside the product: Flowkit as wording that stays correct, and the
    // suggestions.
    t.kapi(&repo, &["context", "docs/intro.md"]).ok();
    insta::assert_snapshot!(t.text());

    // A rule outside its window does not apply.
    repo.agent_term(
        "s1",
        "Oldname",
        "Old name",
        &["--quote", "q", "--valid-to", "2026-01-01"],
    )
    .ok();
    keep_last(&repo);
    let now = repo
        .kapi(&["context", "docs/app/a.md", "--json"])
        .ok()
        .json();
    assert_eq!(now, app, "nothing of Oldname");
    repo.kapi(&["context"]).code(2);
}

#[test]
fn context_files_are_imported_once_by_a_person() {
    let repo = TestEnv::new();
    repo.write("terms.tsv", "# id\tstatus\tpreferred\tavoided\n1\testablished\tQuickcast\tQuick cast|Quick-cast|QuickCast\n2\tsuggested\tSupabase\tSupa base\n");
    repo.write("kapi.toml", "[context]\nterms = [\"terms.tsv\"]\n");
    repo.write(
        ".vale.ini",
        "StylesPath = styles\nMinAlertLevel = suggestion\nVocab = Base\n\n[*]\nBasedOnStyles = Vale, Acme\n",
    );
    repo.write("styles/config/vocabularies/Base/accept.txt", "Kubernetes\n");
    repo.write("styles/config/vocabularies/Base/reject.txt", "utilize\n");
    repo.write("styles/Acme/Terms.yml", "extends: substitution\nmessage: Use '%s'\nignorecase: true\nswap:\n  Open Telemetry: OpenTelemetry\n");

    let mut t = Transcript::new();
    t.agent(&repo, "s1", &["store", "import"]).code(4);
    // The term list, the Vale style and both vocabulary files.
    t.kapi(&repo, &["store", "import"]).ok();
    let log = repo.log();
    assert_eq!(log.len(), 4);
    for op in &log {
        assert_eq!(op["kind"], "import");
        assert_eq!(op["status"], "established");
        assert_eq!(op["actor"]["kind"], "person");
        assert_eq!(op["evidence"][0]["sha256"].as_str().unwrap().len(), 64);
    }
    let terms = log
        .iter()
        .find(|o| o["evidence"][0]["path"] == "terms.tsv")
        .unwrap();
    assert_eq!(terms["subject"]["terms"][0]["use"], "Quickcast");
    assert_eq!(terms["subject"]["terms"][1]["suggested"], true);

    // Unchanged bytes record nothing; --force reads regardless; a change re-imports.
    t.kapi(&repo, &["store", "import"]).ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(repo.log().len(), 4);
    repo.kapi(&["store", "import", "--force"]).ok();
    assert_eq!(repo.log().len(), 8);
    repo.write("terms.tsv", "1\testablished\tQuickcast\tQuick cast\n");
    repo.kapi(&["store", "import"]).ok();
    let log = repo.log();
    let term_imports: Vec<&Value> = log
        .iter()
        .filter(|o| o["evidence"][0]["path"] == "terms.tsv")
        .collect();
    assert_eq!(term_imports.len(), 3);
    assert_eq!(term_imports[0]["status"], "dropped");
    assert_eq!(term_imports[1]["status"], "dropped");
    assert_eq!(term_imports[2]["status"], "established");

    repo.write("README.md", "# A project\n");
    // Quickcast; utilize avoided with no form to use (reject.txt);
    // OpenTelemetry (the style); Kubernetes and the case it avoids
    // (accept.txt); Supabase nowhere, the re-imported list no longer holds
    // it.
    let here = repo.kapi(&["context", "README.md", "--json"]).ok().json();
    insta::assert_snapshot!(
        "readme_in_force",
        serde_json::to_string_pretty(&here).unwrap()
    );

    // What was imported is in the reader's view: an import of unchanged
    // files reads that, not the whole ledger.
    let base = repo.join(".git/kapi/fold.base");
    assert!(base.exists());
    std::fs::remove_file(&base).unwrap();
    repo.kapi(&["store", "import"]).ok();
    assert!(!base.exists(), "the import read the whole ledger");
}

#[test]
fn a_bad_context_file_is_named_and_the_others_still_import() {
    let repo = TestEnv::new();
    repo.write("good.tsv", "1\testablished\tQuickcast\tQuick cast\n");
    repo.write("bad.tsv", "1\tmaybe\tQuickcast\tQuick cast\n");
    repo.write("kapi.toml", "[context]\nterms = [\"*.tsv\"]\n");
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "import"]).code(2);
    repo.write("kapi.toml", "[context]\nterms = [\"missing.tsv\"]\n");
    t.comment("kapi.toml names missing.tsv");
    t.kapi(&repo, &["store", "import"]).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn the_rules_files_list_what_is_in_force_and_nothing_else_changes() {
    let repo = TestEnv::new();
    repo.write("AGENTS.md", "# Agents\n\nHand-written guidance stays.\n");
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    // A suggestion is not in force: no rules file is written.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("AGENTS.md")).unwrap(),
        "# Agents\n\nHand-written guidance stays.\n"
    );
    assert!(!repo.path().join("CLAUDE.md").exists());

    let id = keep_last(&repo);
    let agents = std::fs::read_to_string(repo.path().join("AGENTS.md")).unwrap();
    // The hand-written text, then kapi's block listing the kept rule.
    insta::assert_snapshot!("agents_md_kept", agents);
    // CLAUDE.md did not exist and the defaults are never created unasked.
    assert!(!repo.path().join("CLAUDE.md").exists());

    // Text after the block survives a refresh; a drop takes the rule out.
    std::fs::write(
        repo.path().join("AGENTS.md"),
        format!("{agents}\nMore notes below.\n"),
    )
    .unwrap();
    repo.kapi(&["context", "review", "--drop", &id]).ok();
    let agents = std::fs::read_to_string(repo.path().join("AGENTS.md")).unwrap();
    insta::assert_snapshot!("agents_md_dropped", agents);

    // Opting out.
    let other = TestEnv::new();
    other.write("AGENTS.md", "# Agents\n");
    other.write("kapi.toml", "[context]\nrules_files = []\n");
    other.kapi(&["context", "note", "A kept note"]).ok();
    keep_last(&other);
    assert_eq!(
        std::fs::read_to_string(other.path().join("AGENTS.md")).unwrap(),
        "# Agents\n"
    );

    // Named in kapi.toml, a rules file is created when missing; the
    // defaults that are not named are not.
    let named = TestEnv::new();
    named.write("kapi.toml", "[context]\nrules_files = [\"RULES.md\"]\n");
    named
        .kapi(&["context", "note", "A kept note", "--quote", "q"])
        .ok();
    keep_last(&named);
    let rules = std::fs::read_to_string(named.path().join("RULES.md")).unwrap();
    insta::assert_snapshot!("rules_md_created", rules);
    assert!(!named.path().join("AGENTS.md").exists());
    assert!(!named.path().join("CLAUDE.md").exists());
}

fn check_json(repo: &TestEnv, args: &[&str]) -> (i32, Value) {
    let mut full = vec!["check", "--format", "json"];
    full.extend_from_slice(args);
    let run = repo.kapi(&full);
    (run.code, run.json())
}

#[test]
fn a_kept_rule_fails_the_check_and_a_suggestion_only_advises() {
    let repo = TestEnv::new();
    repo.write(
        "docs/intro.md",
        "# Intro\n\nOpen Quick cast from the menu.\n\n```\nquick cast --help\n```\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "docs"]);
    repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &["--path", "docs/intro.md"],
    )
    .ok();

    let (code, doc) = check_json(&repo, &[]);
    assert_eq!(code, 0);
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{doc}");
    assert_eq!(findings[0]["suggested"], true);
    assert_eq!(findings[0]["fails"], false);
    assert_eq!(findings[0]["path"], "docs/intro.md");
    assert_eq!(findings[0]["line"], 3);
    let mut t = Transcript::new();
    t.kapi(&repo, &["check"]).ok();
    insta::assert_snapshot!(t.text());

    let id = keep_last(&repo);
    let (code, doc) = check_json(&repo, &[]);
    assert_eq!(code, 1, "{doc}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(
        findings.len(),
        1,
        "the rules files list the forms as code, not prose: {doc}"
    );
    assert_eq!(findings[0]["fails"], true);
    assert!(findings[0]["rule"].as_str().unwrap().starts_with(&id));

    // The pre-commit use: what is staged, not the work tree.
    repo.write(
        "docs/intro.md",
        "# Intro\n\nOpen Quickcast from the menu.\n",
    );
    repo.kapi(&["check", "--staged"]).code(1);
    repo.git(&["add", "docs/intro.md"]);
    repo.kapi(&["check", "--staged"]).ok();
    // Advisory: reports, never fails.
    repo.write("docs/intro.md", "Quick cast\n");
    repo.kapi(&["context", "review", "--keep", &id, "--advisory"])
        .ok();
    let (code, doc) = check_json(&repo, &["docs/intro.md"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["findings"][0]["fails"], false);
}

#[test]
fn a_rule_holds_only_where_its_scope_covers_the_file() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"quickcast\" }\n",
    );
    repo.write("docs/app/a.md", "Open Quick cast.\n");
    repo.write("docs/web/b.md", "Open Quick cast.\n");
    repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &["--path", "docs/app/a.md"],
    )
    .ok();
    keep_last(&repo);
    let (code, doc) = check_json(&repo, &[]);
    assert_eq!(code, 1);
    let paths: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["docs/app/a.md"], "{doc}");
    // A rule outside its window does not apply.
    let other = TestEnv::new();
    other.write("a.md", "Old name here.\n");
    other
        .agent_term(
            "s1",
            "Oldname",
            "Old name",
            &["--quote", "q", "--valid-to", "2026-06-01"],
        )
        .ok();
    keep_last(&other);
    other.kapi(&["check"]).ok();
}

#[test]
fn a_whole_project_check_records_usage_only_when_it_changes() {
    let repo = TestEnv::new();
    repo.write("docs/a.md", "Quickcast is here. Quick cast is not.\n");
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--path", "docs/a.md"])
        .ok();
    let signals = |r: &TestEnv| {
        r.kapi(&["context", "log", "--kind", "signal", "--json"])
            .ok()
            .json_lines()
    };
    repo.kapi(&["check", "docs/a.md"]).ok();
    assert!(
        signals(&repo).is_empty(),
        "a check of named files records none"
    );
    repo.kapi(&["check", "--staged"]).ok();
    assert!(
        signals(&repo).is_empty(),
        "a check of the index records none"
    );
    repo.kapi(&["check"]).ok();
    let s = signals(&repo);
    assert_eq!(s.len(), 1);
    assert_eq!(
        s[0]["actor"],
        serde_json::json!({"kind": "tool", "name": "check"})
    );
    let full = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let signal = full
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|op| op["kind"] == "context.signal")
        .unwrap();
    assert_eq!(
        signal["signal"],
        serde_json::json!({"avoided": 1, "preferred": 1, "source": "usage"})
    );
    repo.kapi(&["check"]).ok();
    assert_eq!(signals(&repo).len(), 1, "unchanged counts record nothing");
    repo.write("docs/a.md", "Quickcast is here. Quickcast again.\n");
    repo.kapi(&["check"]).ok();
    assert_eq!(signals(&repo).len(), 2);
    // The rule's standing: 2 of 2 uses.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn check_warns_about_context_files_never_imported() {
    let repo = TestEnv::new();
    repo.write("terms.tsv", "1\testablished\tQuickcast\tQuick cast\n");
    repo.write("kapi.toml", "[context]\nterms = [\"terms.tsv\"]\n");
    repo.write("a.md", "Quick cast\n");
    let (code, doc) = check_json(&repo, &[]);
    assert_eq!(code, 0);
    assert_eq!(
        doc["warnings"][1]["message"],
        "1 context file was never imported (terms.tsv): a person runs `kapi store import` to put them in force",
        "{doc}"
    );
    repo.kapi(&["store", "import"]).ok();
    let (code, doc) = check_json(&repo, &[]);
    assert_eq!(
        code, 1,
        "an imported term list is established from the start"
    );
    assert_eq!(doc["warnings"], serde_json::json!([]), "{doc}");
}

#[test]
fn rules_files_follow_corrections_symlinks_and_modes() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TestEnv::new();
    repo.write("CLAUDE.md", "# Claude\n");
    std::os::unix::fs::symlink("CLAUDE.md", repo.path().join("AGENTS.md")).unwrap();
    std::fs::set_permissions(
        repo.path().join("CLAUDE.md"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    keep_last(&repo);
    let link = std::fs::symlink_metadata(repo.path().join("AGENTS.md")).unwrap();
    assert!(link.file_type().is_symlink(), "AGENTS.md stays a symlink");
    let claude = std::fs::read_to_string(repo.path().join("CLAUDE.md")).unwrap();
    insta::assert_snapshot!("claude_md_kept", claude);
    let mode = std::fs::metadata(repo.path().join("CLAUDE.md"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o640);
    // A person's correction contests the rule: it is no longer listed as in force.
    repo.kapi(&[
        "context",
        "note",
        "--from",
        "Quickcast",
        "--to",
        "Quick cast",
        "--quote",
        "legal says so",
    ])
    .ok();
    let claude = std::fs::read_to_string(repo.path().join("CLAUDE.md")).unwrap();
    insta::assert_snapshot!("claude_md_contested", claude);
}

#[test]
fn context_paths_resolve_from_where_kapi_runs() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"qc\" }\n",
    );
    repo.write("docs/app/a.md", "x\n");
    repo.write("tools/x.sh", "x\n");
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--path", "docs/app/a.md"])
        .ok();
    keep_last(&repo);
    for (dir, path) in [
        ("tools", "../docs/app/a.md"),
        (".", "docs/app"),
        (".", "./docs/app/../app/a.md"),
    ] {
        let doc = repo.kapi_in(dir, &["context", path, "--json"]).ok().json();
        assert_eq!(doc["point"]["product"], "qc", "{dir} {path}: {doc}");
        assert_eq!(doc["rules"][0]["use"], "Flowkit", "{dir} {path}: {doc}");
    }
    repo.kapi(&["context", "../outside.md"]).code(2);
}

#[test]
fn a_broken_context_section_warns_but_does_not_change_the_verdict() {
    let repo = TestEnv::new();
    repo.write("kapi.toml", "[context]\nterms = [\"missing.tsv\"]\n");
    repo.write("a.md", "Quick cast\n");
    let (code, doc) = check_json(&repo, &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["warnings"][1]["message"],
        "context files: kapi.toml [context] terms names missing.tsv, which is not a file in the work tree",
        "{doc}"
    );
}

#[test]
fn vale_rules_imported_into_the_log_match_case_as_vale_does() {
    let repo = TestEnv::new();
    repo.write(".vale.ini", "StylesPath = styles\n");
    repo.write(
        "styles/Acme/Terms.yml",
        "extends: substitution\nmessage: x\nlevel: error\nswap:\n  US: United States\n",
    );
    repo.write("a.md", "Tell us about the US market.\n");
    repo.kapi(&["store", "import"]).ok();
    let (code, doc) = check_json(&repo, &["a.md"]);
    assert_eq!(code, 1, "{doc}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "only the capitalised US: {doc}");
    assert_eq!(findings[0]["matched"], "US");
}
