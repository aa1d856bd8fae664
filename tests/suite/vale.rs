//! Vale rule sets as Vale reads them: the styles in `fixtures/vale`, each
//! reproducing one way the hand-written reader lost rules silently.

use std::path::Path;

use crate::common::{TestEnv, Transcript};

/// Copy `fixtures/vale` into the repository (styles under `styles/`).
fn with_fixture_styles(repo: &TestEnv) {
    with_fixture(repo, "vale");
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = Defects\n",
    );
}

#[test]
fn every_style_vale_reads_is_imported_and_every_file_it_refuses_is_named_with_its_line() {
    let repo = TestEnv::new();
    with_fixture_styles(&repo);
    // A style Vale refuses is a warning naming file and line (Unclosed
    // and Tabs: not valid YAML; Duplicate: a key twice; List: `swap` must
    // be a mapping); the others (DocMarker, Quoted, Bom, Empty, Classes,
    // Space, Lookaround) import, none skipped, and the import succeeds.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "import"]).ok();
    insta::assert_snapshot!(t.text());

    let check = repo.kapi(&["check", "--format", "json", "prose.md"]);
    let doc = check.json();
    let found: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["matched"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        found,
        [
            "Github",
            "Javascript",
            "touchpoint",
            "back end",
            "back-end",
            "ad hoc",
            "adhoc",
            "log in",
            "login",
            "speedy",
            "quick",
        ],
        "{doc}"
    );
}

#[test]
fn vale_ini_sections_rule_switches_levels_and_vocabularies_are_honoured() {
    let repo = TestEnv::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vale-ini");
    for rel in [
        ".vale.ini",
        "styles/House/Binding.yml",
        "styles/House/Warned.yml",
        "styles/House/Hint.yml",
        "styles/House/Quiet.yml",
        "styles/House/Soft.yml",
        "styles/AsciiOnly/Terms.yml",
        "styles/config/vocabularies/Used/reject.txt",
        "styles/config/vocabularies/Unused/reject.txt",
        "page.md",
        "page.adoc",
    ] {
        repo.write_bytes(rel, &std::fs::read(root.join(rel)).unwrap());
    }
    repo.write(
        "kapi.toml",
        "[check]\nprose = [\"**/*.md\", \"**/*.adoc\"]\n",
    );
    // House.Hint is below MinAlertLevel; the Unused vocabulary is not read.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "import"]).ok();
    insta::assert_snapshot!(t.text());

    let findings = |path: &str| -> (i32, Vec<(String, String, bool)>) {
        let run = repo.kapi(&["check", "--format", "json", path]);
        let doc = run.json();
        let list = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["matched"].as_str().unwrap().to_string(),
                    f["level"].as_str().unwrap_or("").to_string(),
                    f["fails"].as_bool().unwrap(),
                )
            })
            .collect();
        (run.code, list)
    };
    let s = |m: &str, l: &str, f: bool| (m.to_string(), l.to_string(), f);
    let (code, md) = findings("page.md");
    assert_eq!(code, 1);
    assert_eq!(
        md,
        [
            s("Github", "error", true),
            s("Javascript", "warning", false),
            // House.Quiet = NO; House.Soft = error raises a suggestion.
            s("Postgres", "error", true),
            // Vale.Avoid, from the Used vocabulary: `Vale` is in this
            // section's BasedOnStyles.
            s("foobarize", "error", true),
        ]
    );
    let (_, adoc) = findings("page.adoc");
    assert_eq!(
        adoc,
        [
            s("Github", "error", true),
            s("Javascript", "warning", false),
            // Quiet is on here; `House.Soft = error` in [*.md] sets the
            // rule's level for every file, as Vale keeps one level a rule.
            s("Gitlab", "error", true),
            s("Postgres", "error", true),
            s("Typescript", "error", true),
            // No Vale style here, so no vocabulary.
        ]
    );
}

/// Copy one fixture folder into the repository, keeping its layout.
fn with_fixture(repo: &TestEnv, name: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    fn copy(repo: &TestEnv, root: &Path, dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                copy(repo, root, &path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                repo.write_bytes(&rel, &std::fs::read(&path).unwrap());
            }
        }
    }
    copy(repo, &root, &root);
}

#[test]
fn keys_match_as_vale_matches_them_without_word_boundaries_and_with_regex_ones() {
    let repo = TestEnv::new();
    with_fixture(&repo, "vale-edges");
    // `nonword` is read, not named as unsupported; a heading scope and
    // the action `remove` are, with their lines.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "import"]).ok();
    insta::assert_snapshot!(t.text());

    let doc = repo.kapi(&["check", "--format", "json", "page.md"]).json();
    let found: Vec<(u64, u64, &str)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["column"].as_u64().unwrap(),
                f["matched"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            // `nonword: true`: `w/o` before a space, and at a line end,
            // where the look-ahead sees the newline.
            (3, 7, "w/o"),
            (3, 22, "w/o"),
            // ...and inside a longer word.
            (4, 13, "thru-put"),
            (4, 29, "thru-put"),
            // `\b` as a regular expression reads it: before a hyphen, and
            // after a dot only where a word character follows.
            (5, 3, "legacy"),
            (5, 44, "approx."),
        ],
        "{doc}"
    );
}

#[test]
fn imported_rules_that_disagree_are_named_at_import_and_in_review_and_both_report() {
    let repo = TestEnv::new();
    repo.write(
        "styles/House/Terms.yml",
        "extends: substitution\nmessage: x\nlevel: error\nignorecase: true\nswap:\n  back-end: backend\n",
    );
    repo.write(
        "styles/Team/Terms.yml",
        "extends: substitution\nmessage: x\nlevel: error\nignorecase: true\nswap:\n  backend: back end\n  frontend: front end\n",
    );
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = House, Team\n",
    );
    repo.write("a.md", "The backend and the back-end.\n");
    // Named at import and in review: House's "backend", not "back-end"
    // and Team's "back end", not "backend".
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "import"]).ok();
    t.kapi(&repo, &["context", "review"]).ok();
    // Neither rule's findings disappear: one rule avoids what the other
    // prescribes, and both report.
    let doc = repo.kapi(&["check", "--format", "json", "a.md"]).json();
    let found: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["matched"].as_str().unwrap())
        .collect();
    assert_eq!(found, ["backend", "back-end"], "{doc}");

    // Rules enabled for files that never meet do not disagree.
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = House\n\n[*.adoc]\nBasedOnStyles = Team\n",
    );
    t.comment(".vale.ini: House for *.md, Team for *.adoc");
    t.kapi(&repo, &["store", "import", "--force"]).ok();
    t.kapi(&repo, &["context", "review"]).ok();
    insta::assert_snapshot!(t.text());
}

/// The findings of `kapi check --format json` on `paths`: (path, line,
/// matched).
fn found(repo: &TestEnv, paths: &[&str]) -> Vec<(String, u64, String)> {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(paths);
    let doc = repo.kapi(&args).json();
    doc["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["matched"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn at(path: &str, line: u64, matched: &str) -> (String, u64, String) {
    (path.to_string(), line, matched.to_string())
}

#[test]
fn a_variable_length_look_behind_is_read_and_matched_as_vale_matches_it() {
    let repo = TestEnv::new();
    // Red Hat's TermsSuggestions: `operator` unless `-` (what `.*-` ending
    // there can end with) or `program ` comes right before it.
    repo.write(
        "styles/RedHat/TermsSuggestions.yml",
        "extends: substitution\nmessage: x\nlevel: warning\nignorecase: false\nswap:\n  '(?<!.*-|program )operator': Operator\n  '(?<!.*-|program )operators': Operators\n",
    );
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = RedHat\n",
    );
    repo.write(
        "a.md",
        "Install the operator.\n\nA Kubernetes-native operator.\n\nThe cluster-operator, the program operator, two operators and an Operator.\n",
    );
    let import = repo.kapi(&["store", "import"]).ok();
    assert!(!import.stdout.contains("skipped"), "{}", import.stdout);
    assert_eq!(
        found(&repo, &["a.md"]),
        [
            at("a.md", 1, "operator"),
            at("a.md", 3, "operator"),
            at("a.md", 5, "operators")
        ]
    );
}

#[test]
fn a_raw_scope_rule_matches_the_files_raw_text_markup_and_code_included() {
    let repo = TestEnv::new();
    repo.write(
        "styles/House/Links.yml",
        "extends: substitution\nmessage: x\nlevel: error\nnonword: true\nscope: raw\nswap:\n  'See \\[': 'See the'\n  Github: GitHub\n",
    );
    repo.write(
        "styles/House/Prose.yml",
        "extends: substitution\nmessage: x\nlevel: error\nswap:\n  Gitlab: GitLab\n",
    );
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = House\n",
    );
    repo.write(
        "a.md",
        "See [the guide](guide.md).\n\n```\nGithub and Gitlab in code\n```\n\n<!-- vale off -->\nSee [off](x.md) Github\n<!-- vale on -->\n\n`Gitlab` and Gitlab.\n",
    );
    // `scope: raw` is read, not named as unsupported.
    let import = repo.kapi(&["store", "import"]).ok();
    assert!(!import.stdout.contains("scope"), "{}", import.stdout);
    assert_eq!(
        found(&repo, &["a.md"]),
        [
            // The link's bracket and the code block are raw text ...
            at("a.md", 1, "See ["),
            at("a.md", 4, "Github"),
            // ... a passage switched off is off for raw rules too, and a
            // prose rule still reads prose only.
            at("a.md", 11, "Gitlab"),
        ]
    );
    // A raw match may stand in markup or code: reported, never rewritten.
    let fix = repo.kapi(&["check", "--fix", "a.md"]);
    assert_eq!(fix.code, 1, "{}", fix.stdout);
    assert_eq!(
        std::fs::read_to_string(repo.join("a.md")).unwrap(),
        "See [the guide](guide.md).\n\n```\nGithub and Gitlab in code\n```\n\n<!-- vale off -->\nSee [off](x.md) Github\n<!-- vale on -->\n\n`Gitlab` and GitLab.\n"
    );
}

#[test]
fn vale_ini_sections_apply_to_the_files_their_globs_name_with_their_ignores() {
    let repo = TestEnv::new();
    repo.write(
        "styles/House/Terms.yml",
        "extends: substitution\nmessage: x\nlevel: error\nswap:\n  Github: GitHub\n",
    );
    repo.write(
        "styles/Team/Terms.yml",
        "extends: substitution\nmessage: x\nlevel: error\nswap:\n  Gitlab: GitLab\n",
    );
    repo.write(
        "kapi.toml",
        "[check]\nprose = [\"**/*.md\", \"**/*.adoc\", \"**/*.txt\"]\n",
    );
    // House for Markdown and AsciiDoc, with Hugo shortcodes and <x>
    // blocks ignored; under docs/, Team instead of House (the last section
    // matching a file decides), and Team.Terms off under docs/old/.
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.{md,adoc}]\nBasedOnStyles = House\nTokenIgnores = (\\{\\{<[^>]*>\\}\\}), (:[A-Za-z]+:)\nBlockIgnores = (?s)(<x>.*?</x>)\n\n[docs/**/*.md]\nBasedOnStyles = Team\n\n[docs/old/*.md]\nTeam.Terms = NO\n",
    );
    let text = "Github and Gitlab {{< Github >}} :Github:\n<x>\nGithub\n</x>\n";
    for path in ["a.md", "b.adoc", "c.txt", "docs/d/e.md", "docs/old/f.md"] {
        repo.write(path, text);
    }
    repo.kapi(&["store", "import"]).ok();
    assert_eq!(
        found(&repo, &["a.md", "b.adoc", "c.txt", "docs"]),
        [
            at("a.md", 1, "Github"),
            at("b.adoc", 1, "Github"),
            at("docs/d/e.md", 1, "Gitlab"),
        ]
    );
    // A pattern kapi cannot read is named and left out; the others hold.
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = House\nTokenIgnores = (unclosed, (\\{\\{<[^>]*>\\}\\})\n",
    );
    repo.kapi(&["store", "import"]).ok();
    let run = repo.kapi(&["check", "--format", "json", "a.md"]);
    let doc = run.json();
    assert_eq!(doc["findings"].as_array().unwrap().len(), 3, "{doc}");
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains("the ignore pattern \\\"(unclosed\\\""),
        "{warnings}"
    );
}

#[test]
fn two_vale_checks_at_one_place_are_two_findings_and_kapis_own_rules_join_one() {
    let repo = TestEnv::new();
    // Two styles swap the same phrase for the same form (SUSE's common and
    // asciidoc styles both do): Vale reports an alert per check at a place.
    for style in ["House", "Team"] {
        repo.write(
            &format!("styles/{style}/Wordy.yml"),
            "extends: substitution\nmessage: x\nlevel: warning\nignorecase: true\nswap:\n  in order to: to\n",
        );
    }
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = House, Team\n",
    );
    // A rule of kapi's own saying the same joins one of them.
    repo.write("terms.tsv", "1\testablished\tto\tin order to\n");
    repo.write("a.md", "Read it in order to learn.\n");
    repo.kapi(&["store", "import"]).ok();
    let doc = repo
        .kapi(&["check", "--format", "json", "--rules", "terms.tsv", "a.md"])
        .json();
    let findings = doc["findings"].as_array().unwrap();
    let rules: Vec<Vec<&str>> = findings
        .iter()
        .map(|f| {
            f["rules"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(findings.len(), 2, "{doc}");
    for f in findings {
        assert_eq!(
            (f["line"].as_u64(), f["column"].as_u64()),
            (Some(1), Some(9))
        );
    }
    let with = |id: &str| rules.iter().filter(|r| r.contains(&id)).count();
    assert_eq!(with("terms.tsv:1"), 1, "{rules:?}");
    // Each Vale check carries its own finding.
    let vale: Vec<&&str> = rules
        .iter()
        .flatten()
        .filter(|r| !r.starts_with("terms.tsv"))
        .collect();
    assert_eq!(vale.len(), 2, "{rules:?}");
    assert!(
        rules
            .iter()
            .all(|r| r.iter().filter(|id| !id.starts_with("terms.tsv")).count() <= 1)
    );
}

#[test]
fn a_pattern_match_at_emphasis_or_a_link_is_found_as_in_vales_rendered_text_but_never_over_code() {
    let repo = TestEnv::new();
    // SUSE's DoubleDash: Vale matches its rendered text, where emphasis
    // delimiters and link targets are gone and code spans are `*`s.
    repo.write(
        "styles/SUSE/DoubleDash.yml",
        "extends: substitution\nmessage: x\nlevel: warning\nswap:\n  (?:\\s*)--(?:\\s*) : '&mdash;'\n",
    );
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = SUSE\n",
    );
    repo.write(
        "a.md",
        "A *trait* -- this one.\n\nThe `Rc<T>` -- count, `a`--`b`.\n\nSee [it](http://x.org/a-b) -- here.\n\n**Feedback**--more, and plain -- dashes.\n",
    );
    repo.kapi(&["store", "import"]).ok();
    let found: Vec<(String, u64, String)> = found(&repo, &["a.md"])
        .into_iter()
        .map(|(p, l, m)| (p, l, m.trim().to_string()))
        .collect();
    assert_eq!(
        found,
        [
            at("a.md", 1, "--"),
            at("a.md", 5, "--"),
            at("a.md", 7, "--"),
            at("a.md", 7, "--"),
        ]
    );
}
