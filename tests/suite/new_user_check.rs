//! What a new user trips on (issue 22), the checker's side: one rule that
//! several agents suggest, Vale vocabularies without the Vale style, drift
//! after a widening, carets under wide text. Each test failed before its
//! fix.

use crate::common::{TestEnv, Transcript};

/// The carets stand under the match as a terminal shows the line: a
/// Japanese character takes two columns, a half-width kana one, a
/// combining mark none, a tab four (drawn as four spaces, as rustc draws
/// it), and a control, a bell, a carriage return or a bidi override from
/// the file is shown as its escape, never written raw, taking the columns
/// its escape takes.
#[test]
fn carets_stand_under_a_match_in_japanese_text() {
    let env = TestEnv::new();
    env.write(
        "terms.tsv",
        "1\testablished\tQuickcast\tQuick cast\n2\testablished\tクイックキャスト\tクイック キャスト\n",
    );
    env.write(
        "docs/ja.txt",
        "\t日本語では Quick cast と書かない。\n\
         \u{1b}e\u{301} 漢字の後に クイック キャスト も。\n\
         \x07鐘\r\u{202e}右から\u{2066}x\u{2069} ｶﾅ\tQuick cast.\n",
    );
    let run = env
        .kapi(&["check", "--rules", "terms.tsv", "docs/ja.txt"])
        .code(1);
    // Line 1: the tab (four), five wide characters (ten) and a space
    // before the match. Line 2: the escape `\u{1b}` (six), `e` with a
    // combining acute (one), a space, five wide characters and a space
    // (nineteen) before a match of seventeen. Line 3: `\u{7}` (five), a
    // wide character (two), `\r` (two), `\u{202e}` (eight), three wide
    // characters (six), `\u{2066}x\u{2069}` (seventeen), a space, two
    // half-width kana (two) and the tab (four): forty-seven. The columns
    // after the path count characters, as JSON and SARIF do.
    let expected = format!(
        "\
error[term]: use \"Quickcast\", not \"Quick cast\"
 --> docs/ja.txt:1:8
  |
1 |     日本語では Quick cast と書かない。
  | {}^^^^^^^^^^
  |
  = help: write \"Quickcast\"

error[term]: use \"クイックキャスト\", not \"クイック キャスト\"
 --> docs/ja.txt:2:11
  |
2 | \\u{{1b}}e\u{301} 漢字の後に クイック キャスト も。
  | {}^^^^^^^^^^^^^^^^^
  |
  = help: write \"クイックキャスト\"

error[term]: use \"Quickcast\", not \"Quick cast\"
 --> docs/ja.txt:3:15
  |
3 | \\u{{7}}鐘\\r\\u{{202e}}右から\\u{{2066}}x\\u{{2069}} ｶﾅ    Quick cast.
  | {}^^^^^^^^^^
  |
  = help: write \"Quickcast\"

checked 1 file: 3 findings, 3 failing, 0 reporting (score 3)
",
        " ".repeat(15),
        " ".repeat(19),
        " ".repeat(47),
    );
    assert_eq!(run.stdout, expected);
    for c in ['\x07', '\r', '\x1b', '\u{202e}', '\u{2066}', '\t'] {
        assert!(!run.stdout.contains(c), "{c:?} written raw");
    }
}

/// A vocabulary that `Vocab` names is two rules of Vale's own style,
/// `Vale.Terms` (accept.txt) and `Vale.Avoid` (reject.txt): Vale applies
/// them only to the files whose section names `Vale` in `BasedOnStyles`.
#[test]
fn a_vocabulary_applies_only_where_the_vale_style_is_enabled() {
    // What each import said, under the .vale.ini it read.
    let imports = std::cell::RefCell::new(String::new());
    let vocabulary = |ini: &str| {
        let env = TestEnv::new();
        env.write(".vale.ini", ini);
        env.write("styles/config/vocabularies/Base/accept.txt", "Kubernetes\n");
        env.write("styles/config/vocabularies/Base/reject.txt", "utilize\n");
        env.write(
            "styles/House/Terms.yml",
            "extends: substitution\nmessage: x\nlevel: error\nswap:\n  Github: GitHub\n",
        );
        env.write("docs/a.md", "We utilize kubernetes on Github.\n");
        env.write("docs/a.txt", "We utilize kubernetes on Github.\n");
        let import = env.kapi(&["store", "import"]).ok();
        let check = env.kapi(&["check", "--format", "json"]);
        let found: Vec<String> = check.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                format!(
                    "{}:{} {}",
                    f["path"].as_str().unwrap(),
                    f["matched"].as_str().unwrap(),
                    f["level"].as_str().unwrap_or("-")
                )
            })
            .collect();
        imports.borrow_mut().push_str(&format!(
            "## .vale.ini\n{ini}-- kapi store import\n{}{}\n",
            import.stdout, import.stderr
        ));
        (import.stdout, check.code, found)
    };

    // Vocab is set, but no section names the Vale style: Vale applies
    // neither Vale.Terms nor Vale.Avoid, and the import says why.
    let (import, code, found) =
        vocabulary("StylesPath = styles\nVocab = Base\n\n[*.md]\nBasedOnStyles = House\n");
    assert_eq!(found, ["docs/a.md:Github error"], "{import}");
    assert_eq!(code, 1);

    // With Vale in the section's BasedOnStyles, the vocabulary holds for
    // that section's files only, at Vale's level for it (error).
    let (import, _, found) =
        vocabulary("StylesPath = styles\nVocab = Base\n\n[*.md]\nBasedOnStyles = House, Vale\n");
    assert_eq!(
        found,
        [
            "docs/a.md:utilize error",
            "docs/a.md:kubernetes error",
            "docs/a.md:Github error"
        ],
        "{import}"
    );

    // A section can turn one of the two rules on without the style, or
    // off, and set its level: for every file, as Vale keeps one level a
    // rule.
    let (import, _, found) = vocabulary(
        "StylesPath = styles\nVocab = Base\n\n[*.md]\nBasedOnStyles = House, Vale\nVale.Terms = NO\n\n[*.txt]\nVale.Avoid = warning\n",
    );
    assert_eq!(
        found,
        [
            "docs/a.md:utilize warning",
            "docs/a.md:Github error",
            "docs/a.txt:utilize warning"
        ],
        "{import}"
    );

    // Without Vocab, Vale loads no vocabulary, Vale style or not; and a
    // .vale.ini naming no style at all enables no Vale style either.
    let (import, _, found) =
        vocabulary("StylesPath = styles\n\n[*]\nBasedOnStyles = House, Vale\n");
    let github = ["docs/a.md:Github error", "docs/a.txt:Github error"];
    assert_eq!(found, github, "{import}");
    let (import, _, found) = vocabulary("StylesPath = styles\nVocab = Base\n");
    assert_eq!(found, github, "{import}");
    // The first says why Vale.Terms and Vale.Avoid do not apply; where
    // there is no Vocab, no vocabulary is read.
    insta::assert_snapshot!(imports.into_inner());
}

/// The digest (`kapi context review --json`): what awaits a decision,
/// then what is in force.
fn digest(env: &TestEnv) -> Vec<serde_json::Value> {
    let doc = env.kapi(&["context", "review", "--json"]).ok().json();
    ["awaiting", "in_force"]
        .iter()
        .flat_map(|k| doc[k].as_array().cloned().unwrap_or_default())
        .collect()
}

/// Usage counts taken before and after a widening cover different files:
/// comparing them is no drift. Drift compares the counts taken over the
/// files the rule holds for now; a form written more often there is.
#[test]
fn widening_a_rule_is_no_drift_though_it_counts_more_files() {
    let env = TestEnv::new();
    env.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"quickcast\" }\n\n\
         [[points]]\npaths = [\"docs/other/**\"]\naxes = { product = \"other\" }\n",
    );
    env.write("docs/app/a.md", "Open Quick cast.\n");
    env.write("docs/other/b.md", "Open Quick cast.\nQuick cast again.\n");
    env.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &["--path", "docs/app/a.md"],
    )
    .ok();
    let log = env.log();
    let id = log[0]["short"].as_str().unwrap().to_owned();
    env.kapi(&["context", "review", "--keep", &id]).ok();
    // Counted where it holds: one avoided form, in docs/app.
    env.kapi(&["check"]).code(1);
    env.kapi(&["context", "review", "--widen", &id, "--widen-to", "project"])
        .ok();
    // Counted again, now over the whole project: three. No text changed.
    env.kapi(&["check"]).code(1);
    let rule = |env: &TestEnv| {
        digest(env)
            .into_iter()
            .find(|p| p["short"] == id.as_str())
            .expect("the rule is in force")
    };
    let now = rule(&env);
    assert_eq!(now["awaiting"], false, "{now}");
    assert!(
        now["standing"].is_null(),
        "no text changed, no drift: {now}"
    );
    let log = env.log();
    assert!(log[0]["drift"].is_null(), "{}", log[0]);

    // A form written more often where it holds now is drift.
    env.write("docs/app/a.md", "Open Quick cast.\nQuick cast, twice.\n");
    env.kapi(&["check"]).code(1);
    let now = rule(&env);
    assert_eq!(now["awaiting"], true, "{now}");
    assert_eq!(
        now["standing"], "drift: avoided forms written 4× now, 3× when it came into force",
        "{now}"
    );
}

/// Two agents suggesting the same rule suggested one rule: the check
/// reports each occurrence once, naming both (human, JSON, SARIF); the
/// digest, `kapi context <path>` and AGENTS.md list the rule once; keeping
/// it keeps both, dropping it drops both.
#[test]
fn two_agents_suggesting_one_rule_give_one_finding_one_item_and_one_decision() {
    let env = TestEnv::new();
    env.write("docs/a.md", "Open Quick cast.\n");
    env.write("AGENTS.md", "# Agents\n");
    for session in ["s1", "s2"] {
        env.agent_term(session, "Quickcast", "Quick cast", &["--path", "docs/a.md"])
            .ok();
    }
    let log = env.log();
    let (first, second) = (
        log[0]["id"].as_str().unwrap().to_owned(),
        log[1]["id"].as_str().unwrap().to_owned(),
    );
    let (short1, short2) = (&first[..10], &second[..10]);

    // The check: one finding per occurrence, naming both rules.
    let mut t = Transcript::new();
    let human = t.kapi(&env, &["check", "docs/a.md"]).ok();
    assert_eq!(
        human.stdout.matches("--> docs/a.md:1:6").count(),
        1,
        "{}",
        human.stdout
    );
    let json = env
        .kapi(&["check", "--format", "json", "docs/a.md"])
        .ok()
        .json();
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{json}");
    assert_eq!(findings[0]["rule"], first.as_str());
    assert_eq!(findings[0]["rules"], serde_json::json!([first, second]));
    let sarif = env
        .kapi(&["check", "--format", "sarif", "docs/a.md"])
        .ok()
        .json();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif}");
    assert_eq!(results[0]["ruleId"], first.as_str());
    assert_eq!(
        results[0]["properties"]["rules"],
        serde_json::json!([first, second])
    );

    // The digest: one item, naming both.
    let digest = env.kapi(&["context", "review", "--json"]).ok().json();
    let awaiting = digest["awaiting"].as_array().unwrap();
    assert_eq!(awaiting.len(), 1, "{digest}");
    let members: Vec<&str> = awaiting[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(members, [first.as_str(), second.as_str()]);
    // One item, naming the other suggestion.
    let text = t.kapi(&env, &["context", "review"]).ok().stdout;
    assert_eq!(text.matches("suggested \"Quickcast\"").count(), 1, "{text}");
    // What applies at the path: one suggestion.
    let here = env.kapi(&["context", "docs/a.md", "--json"]).ok().json();
    assert_eq!(here["suggestions"].as_array().unwrap().len(), 1, "{here}");
    assert_eq!(
        here["suggestions"][0]["members"],
        serde_json::json!([first, second])
    );

    // Keeping one keeps the rule: both members, one item in force, one
    // line in AGENTS.md, one failing finding.
    t.kapi(&env, &["context", "review", "--keep", short2]).ok();
    let digest = env.kapi(&["context", "review", "--json"]).ok().json();
    assert_eq!(digest["awaiting"], serde_json::json!([]), "{digest}");
    assert_eq!(digest["in_force"].as_array().unwrap().len(), 1, "{digest}");
    let agents = std::fs::read_to_string(env.join("AGENTS.md")).unwrap();
    assert_eq!(agents.matches("Write **Quickcast**").count(), 1, "{agents}");
    let here = env.kapi(&["context", "docs/a.md", "--json"]).ok().json();
    assert_eq!(here["rules"].as_array().unwrap().len(), 1, "{here}");
    let json = env
        .kapi(&["check", "--format", "json", "docs/a.md"])
        .code(1)
        .json();
    assert_eq!(json["summary"]["findings"], 1, "{json}");
    assert_eq!(json["summary"]["failing"], 1, "{json}");

    // Dropping it drops both: nothing is left in force.
    t.kapi(&env, &["context", "review", "--drop", short1]).ok();
    insta::assert_snapshot!(t.text());
    let log = env.log();
    assert_eq!(log[0]["status"], "dropped");
    assert_eq!(log[1]["status"], "dropped");
    env.kapi(&["check", "docs/a.md"]).ok();
}
