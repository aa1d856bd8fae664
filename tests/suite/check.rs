//! `kapi check` end to end: the real binary in temporary git repositories.

use serde_json::Value;

use crate::common::{TestEnv, Transcript};

const TERMS: &str = "# id\tstatus\tpreferred\tavoided\n\
1\testablished\tQuickcast\tQuick cast|Quick-cast|QuickCast\n\
2\testablished\tGitHub\tGithub|Git Hub|github\n\
3\tsuggested\truntime\trun time|run-time\n\
4\tadvisory\tbackend\tback end|back-end\n";

/// A git repository with a term list at `terms.tsv`.
fn repo() -> TestEnv {
    let env = TestEnv::new();
    env.write("terms.tsv", TERMS);
    env
}

/// A plain folder (no repository) with a term list at `terms.tsv`.
fn plain() -> TestEnv {
    let env = TestEnv::plain();
    env.write("terms.tsv", TERMS);
    env
}

/// Run and return (exit code, stdout, stderr).
fn run(env: &TestEnv, args: &[&str]) -> (i32, String, String) {
    let out = env.kapi_cmd(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn json(env: &TestEnv, args: &[&str]) -> (i32, Value) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (code, out, err) = run(env, &a);
    (
        code,
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}")),
    )
}

fn matched(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}:{}:{}:{}",
                f["path"].as_str().unwrap(),
                f["line"],
                f["column"],
                f["matched"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn project_check_reads_tracked_and_untracked_prose_and_respects_gitignore() {
    let env = repo();
    env.write(".gitignore", "ignored/\n");
    env.write("README.md", "# Quick cast\n\nQuickcast is on GitHub.\n");
    env.git(&["add", "README.md", ".gitignore"]);
    env.git(&["commit", "-qm", "init"]);
    env.write("docs/new.md", "Try Quick-cast.\n");
    env.write("ignored/x.md", "Quick cast\n");
    env.write("src/main.rs", "// Quick cast\n");
    env.write("notes.txt", "See github.\n");
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 1);
    assert_eq!(
        matched(&doc),
        [
            "README.md:1:3:Quick cast",
            "docs/new.md:1:5:Quick-cast",
            "notes.txt:1:5:github"
        ]
    );
    assert_eq!(doc["summary"]["files"], 3);
    assert_eq!(doc["version"], 1);
}

#[test]
fn human_format_is_rustc_style() {
    let env = repo();
    env.write("a.md", "Intro.\nTry Quick cast today.\n");
    let (code, out, _) = run(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 1);
    let expected = "error[term]: use \"Quickcast\", not \"Quick cast\"\n \
--> a.md:2:5\n  |\n2 | Try Quick cast today.\n  |     ^^^^^^^^^^\n  |\n  = help: write \"Quickcast\"\n\n\
checked 1 file: 1 finding, 1 failing, 0 reporting (score 1)\n";
    assert_eq!(out, expected);
}

#[test]
fn suggestions_and_advisory_rules_do_not_fail() {
    let env = repo();
    env.write("a.md", "The run time and the back end.\n");
    // A warning[suggested] with its note, a warning[advisory]; exit 0.
    let mut t = Transcript::new();
    t.kapi(&env, &["check", "--rules", "terms.tsv"]).ok();
    insta::assert_snapshot!(t.text());
    let (_, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    let s = &doc["summary"];
    assert_eq!(
        (
            s["findings"].as_u64(),
            s["failing"].as_u64(),
            s["reporting"].as_u64(),
            s["score"].as_u64()
        ),
        (Some(2), Some(0), Some(2), Some(1))
    );
    let f = &doc["findings"][0];
    assert_eq!(f["suggested"], true);
    assert_eq!(f["fails"], false);
    assert_eq!(f["severity"], "note");
    assert_eq!(f["rule"], "terms.tsv:4");
    assert_eq!(
        f["message"],
        "Suggested rule about \"runtime\", not yet established: write \"runtime\", not \"run time\""
    );
}

#[test]
fn json_finding_carries_span_rule_and_preferred_form() {
    let env = repo();
    env.write("a.md", "naïve Github\n");
    let (_, doc) = json(&env, &["check", "--rules", "terms.tsv", "a.md"]);
    let f = &doc["findings"][0];
    assert_eq!(f["rule"], "terms.tsv:3");
    assert_eq!(
        (
            f["line"].as_u64(),
            f["column"].as_u64(),
            f["end_column"].as_u64()
        ),
        (Some(1), Some(7), Some(13))
    );
    assert_eq!(
        (f["start"].as_u64(), f["end"].as_u64()),
        (Some(7), Some(13))
    );
    assert_eq!(f["matched"], "Github");
    assert_eq!(f["preferred"], "GitHub");
    assert_eq!(f["fails"], true);
    assert_eq!(doc["warnings"], serde_json::json!([]));
}

#[test]
fn case_only_forms_match_as_written() {
    let env = repo();
    env.write(
        "a.md",
        "GitHub, GITHUB, github, Github, git hub, QUICK CAST, Quickcast, QuickCast, QUICKCAST\n",
    );
    let (_, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(
        matched(&doc),
        [
            "a.md:1:17:github",
            "a.md:1:25:Github",
            "a.md:1:33:git hub",
            "a.md:1:42:QUICK CAST",
            "a.md:1:65:QuickCast"
        ]
    );
}

#[test]
fn markdown_code_links_comments_and_switches_are_not_prose() {
    let env = repo();
    let text = "---\ntitle: Quick cast\n---\n\
Use `Quick cast` and [Quickcast](https://github.com/x/Quick-cast) or <https://github.com>.\n\
\n```\nQuick cast\n```\n\n    Quick cast in indented code\n\n\
<!-- Quick cast --> github.com/org ../.github docs/github/x.md\n\
<!-- kapi off -->\nQuick cast\n<!-- kapi on -->\n\
<!-- vale off -->\nQuick cast\n<!-- vale on -->\n\
<!-- kapi off: Quickcast -->Quick cast and Github<!-- kapi on: Quickcast -->\n\
{{< ref \"Quick cast\" >}} <span title=\"Quick cast\">x</span>\n\
Last Quick cast.\n";
    env.write("a.md", text);
    let (_, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(matched(&doc), ["a.md:19:44:Github", "a.md:21:6:Quick cast"]);
}

#[test]
fn staged_checks_index_blobs_not_the_work_tree() {
    let env = repo();
    env.write("a.md", "Quick cast\n");
    env.write("b.md", "fine\n");
    env.git(&["add", "a.md", "b.md"]);
    env.write("a.md", "Quickcast\n"); // fixed in the work tree, not staged
    env.write("b.md", "Github\n"); // broken in the work tree, not staged
    let (code, doc) = json(&env, &["check", "--staged", "--rules", "terms.tsv"]);
    assert_eq!(code, 1);
    assert_eq!(matched(&doc), ["a.md:1:1:Quick cast"]);
    let (code, doc) = json(&env, &["check", "--staged", "--rules", "terms.tsv", "b.md"]);
    assert_eq!(code, 0);
    assert_eq!(doc["summary"]["files"], 1);
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 1);
    assert_eq!(matched(&doc), ["b.md:1:1:Github"]);
}

#[test]
fn named_files_and_folders() {
    let env = repo();
    env.write("docs/a.md", "Github\n");
    env.write("docs/sub/b.markdown", "Git Hub\n");
    env.write("docs/c.rs", "Github\n");
    env.write("other.md", "Github\n");
    env.write("script.sh", "# Github\n");
    let (code, doc) = json(
        &env,
        &["check", "--rules", "terms.tsv", "docs", "script.sh"],
    );
    assert_eq!(code, 1);
    assert_eq!(
        matched(&doc),
        [
            "docs/a.md:1:1:Github",
            "docs/sub/b.markdown:1:1:Git Hub",
            "script.sh:1:3:Github"
        ]
    );
    // From a subfolder, paths stay repository-relative.
    let doc = env
        .kapi_in(
            "docs",
            &[
                "check",
                "--rules",
                "../terms.tsv",
                "--format",
                "json",
                "a.md",
            ],
        )
        .json();
    assert_eq!(matched(&doc), ["docs/a.md:1:1:Github"]);
    let (code, _, err) = run(&env, &["check", "--rules", "terms.tsv", "missing.md"]);
    assert_eq!(code, 2);
    assert_eq!(err, "error: missing.md: no such file or directory\n");
}

#[test]
fn outside_a_repository_named_paths_work_and_bare_check_is_a_usage_error() {
    let env = plain();
    env.write("corpus/a.md", "Github\n");
    env.write("corpus/.hidden/b.md", "Github\n");
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv", "corpus"]);
    assert_eq!(code, 1);
    assert_eq!(matched(&doc), ["corpus/a.md:1:1:Github"]);
    let (code, _, err) = run(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: not inside a git repository: name the files or folders to check (kapi check PATHS...)\n"
    );
}

#[test]
fn config_globs_choose_prose_and_bad_config_is_a_usage_error() {
    let env = repo();
    env.write(
        "kapi.toml",
        "[check]\nprose = [\"**/*.rst\", \"**/*.md\"]\nexclude = [\"vendor/**\"]\n",
    );
    env.write("a.rst", "Github\n");
    env.write("b.txt", "Github\n");
    env.write("vendor/c.md", "Github\n");
    let (_, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(matched(&doc), ["a.rst:1:1:Github"]);
    env.write("kapi.toml", "[check]\nprose = [\"[\"]\n");
    let (code, _, err) = run(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: invalid glob \"[\" in [check] of kapi.toml: unclosed character class; missing ']'\n"
    );
    env.write("kapi.toml", "[check]\nunknown = 1\n");
    let (code, _, _) = run(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 2);
}

#[test]
fn bad_term_list_is_a_usage_error_with_its_line() {
    let env = repo();
    env.write("bad.tsv", "# x\n1\tmaybe\tA\tb\n");
    env.write("a.md", "x\n");
    let (code, _, err) = run(&env, &["check", "--rules", "bad.tsv"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: bad.tsv: line 2: unknown status \"maybe\": use established, suggested, contested or advisory\n"
    );
    let (code, _, _) = run(&env, &["check", "--rules", "nope.tsv"]);
    assert_eq!(code, 2);
    let (code, _, _) = run(&env, &["check", "--format", "xml"]);
    assert_eq!(code, 2);
}

#[test]
fn binary_and_invalid_utf8_files_are_skipped_with_a_warning() {
    let env = repo();
    env.write_bytes("bin.md", b"Github\0\x01");
    env.write_bytes("latin1.txt", b"caf\xe9 Github");
    env.write("ok.md", "fine\n");
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 0);
    assert_eq!(doc["summary"]["files"], 1);
    let w: Vec<String> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            format!(
                "{}: {}",
                w["path"].as_str().unwrap(),
                w["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        w,
        [
            "bin.md: skipped: binary",
            "latin1.txt: skipped: not valid UTF-8"
        ]
    );
}

#[test]
fn no_rules_is_a_warning_not_a_failure() {
    let env = repo();
    env.write("a.md", "Github\n");
    let (code, out, _) = run(&env, &["check"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("warning: no rules are in force"), "{out}");
}

#[test]
fn sarif_is_what_code_scanning_reads() {
    let env = repo();
    env.write("docs/a.md", "Quick cast and run time\n");
    let (code, out, _) = run(
        &env,
        &["check", "--rules", "terms.tsv", "--format", "sarif"],
    );
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    assert_eq!(
        doc["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    let run = &doc["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "kapi");
    assert!(
        run["tool"]["driver"]["informationUri"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );
    assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), 2);
    let r = &run["results"];
    assert_eq!(r[0]["ruleId"], "terms.tsv:2");
    assert_eq!(r[0]["level"], "error");
    assert_eq!(r[1]["level"], "note");
    let loc = &r[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "docs/a.md");
    assert_eq!(
        loc["region"],
        serde_json::json!({"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 11})
    );
    assert!(r[0]["partialFingerprints"].as_object().unwrap().len() == 1);
}

#[test]
fn github_format_writes_annotations() {
    let env = repo();
    env.write("a.md", "Quick cast, run time, back end\n");
    let (code, out, _) = run(
        &env,
        &["check", "--rules", "terms.tsv", "--format", "github"],
    );
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "::error file=a.md,line=1,col=1,endColumn=11,title=kapi%3A term::use \"Quickcast\", not \"Quick cast\""
    );
    assert!(
        lines[1].starts_with("::notice file=a.md,line=1,col=13,endColumn=21,"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("::warning file=a.md,line=1,col=23,"),
        "{}",
        lines[2]
    );
}

#[test]
fn help_documents_the_flags() {
    let env = repo();
    // --staged, --format, --rules, [PATHS]...
    let mut t = Transcript::new();
    t.kapi(&env, &["check", "--help"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn crlf_lines_and_switch_by_rule_id() {
    let env = repo();
    env.write(
        "a.md",
        "Intro\r\nTry Quick cast\r\n<!-- kapi off: terms.tsv:2 -->Quick cast Github<!-- kapi on -->\r\n",
    );
    let (_, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(matched(&doc), ["a.md:2:5:Quick cast", "a.md:3:42:Github"]);
    // The line shown without its CR: `2 | Try Quick cast`.
    let mut t = Transcript::new();
    t.kapi(&env, &["check", "--rules", "terms.tsv"]).code(1);
    insta::assert_snapshot!(t.text());
}

#[test]
fn files_over_the_size_cap_are_skipped() {
    let env = repo();
    let mut big = "Github ".repeat(3 << 20).into_bytes();
    big.truncate((16 << 20) + 1);
    env.write_bytes("big.md", &big);
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 0);
    assert_eq!(doc["summary"]["files"], 0);
    let w = doc["warnings"][0]["message"].as_str().unwrap();
    assert!(w.starts_with("skipped: larger than 16 MiB"), "{w}");
}

#[test]
fn staged_file_deleted_from_the_work_tree_is_still_checked() {
    let env = repo();
    env.write("docs/a.md", "Github\n");
    env.git(&["add", "docs/a.md"]);
    std::fs::remove_file(env.path().join("docs/a.md")).unwrap();
    let (code, doc) = json(
        &env,
        &["check", "--staged", "--rules", "terms.tsv", "docs/a.md"],
    );
    assert_eq!(code, 1);
    assert_eq!(matched(&doc), ["docs/a.md:1:1:Github"]);
}

#[test]
fn dash_c_runs_as_if_started_there() {
    let env = repo();
    env.write("sub/a.md", "Github\n");
    let mut c = env.kapi_cmd(&[
        "-C",
        env.path().to_str().unwrap(),
        "check",
        "--rules",
        "terms.tsv",
        "--format",
        "json",
    ]);
    c.current_dir(env.root());
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(matched(&doc), ["sub/a.md:1:1:Github"]);
}

#[test]
fn sarif_uris_are_percent_encoded() {
    let env = repo();
    env.write("my docs/50% off#1.md", "Quick cast\n");
    env.write("notes/größe?v=2;a:b@c.md", "Quick cast\n");
    let (code, out, _) = run(
        &env,
        &["check", "--rules", "terms.tsv", "--format", "sarif"],
    );
    assert_eq!(code, 1, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let mut uris: Vec<&str> = doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    uris.sort_unstable();
    // RFC 3986 path segments: space, `%`, `#`, `?` and non-ASCII encoded;
    // `;`, `=`, `:` (past the first segment) and `@` kept.
    assert_eq!(
        uris,
        [
            "my%20docs/50%25%20off%231.md",
            "notes/gr%C3%B6%C3%9Fe%3Fv=2;a:b@c.md"
        ]
    );
}

#[test]
fn vale_rule_sources_are_not_checked_as_prose() {
    let env = repo();
    env.write(
        ".vale.ini",
        "StylesPath = ci/vale\n\n[*.md]\nBasedOnStyles = Vale\n",
    );
    env.write("ci/vale/Custom/notes.txt", "Github\n");
    env.write("ci/vale/config/vocabularies/Docs/reject.txt", "Github\n");
    env.write("styles/Vocab/Base/accept.txt", "Github\n");
    env.write("docs/a.md", "Github\n");
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 1);
    assert_eq!(matched(&doc), ["docs/a.md:1:1:Github"]);
    // A rule source named on the command line is still checked.
    let (_, doc) = json(
        &env,
        &[
            "check",
            "--rules",
            "terms.tsv",
            "styles/Vocab/Base/accept.txt",
        ],
    );
    assert_eq!(doc["findings"].as_array().unwrap().len(), 1);
}

#[test]
fn kapis_managed_block_in_agents_md_is_not_prose() {
    let env = repo();
    env.write(
        "AGENTS.md",
        "# Agents\n\n<!-- kapi:begin (managed by kapi: edits between these markers are replaced) -->\n## Project context (kapi)\n\n### Notes kept\n\n- Never write Github or Quick cast.\n<!-- kapi:end -->\n",
    );
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(matched(&doc), Vec::<String>::new());
    env.write(
        "AGENTS.md",
        "Use `<!-- vale off -->` to silence Vale.\n\nGithub\n",
    );
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv"]);
    assert_eq!(code, 1);
    assert_eq!(matched(&doc), ["AGENTS.md:3:1:Github"]);
}

#[test]
fn markdown_prose_is_what_commonmark_reads_as_text() {
    // fixtures/markdown/defects.md: each passage is one way the hand-written
    // masker disagreed with CommonMark (see its README).
    let env = plain();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/markdown");
    for name in ["defects.md", "terms.tsv"] {
        env.write_bytes(name, &std::fs::read(fixtures.join(name)).unwrap());
    }
    let (code, doc) = json(&env, &["check", "--rules", "terms.tsv", "defects.md"]);
    assert_eq!(code, 1, "{doc}");
    let at: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{}:{}", f["line"], f["column"]))
        .collect();
    assert_eq!(
        at,
        [
            "3:12", "3:25", "3:39", // emphasis delimiters are not word characters
            "7:14", "9:8", "10:8", // nested lists: items and paragraphs, not code
            "16:1", // an unclosed fence ends with its list item
            "19:4", // a tab-indented nested item
            "21:18", "21:26", "21:34", "21:43", "21:51", "21:60", // --, ---, ...
            "23:11", "25:14", // table cells, not the code span
            "31:7",  // a footnote
        ],
        "{doc}"
    );
}

#[test]
fn standard_input_is_checked_as_the_file_it_is_named_and_records_nothing() {
    let env = TestEnv::new();
    env.write("docs/guide.md", "Quickcast streams video.\n");
    env.kept_rule("Quickcast", "Quick cast");
    let before = env.log().len();
    let text = b"Open Quick cast.\n\n```\nQuick cast --help\n```\n";
    let mut t = Transcript::new();
    t.comment("`-`: standard input, read as Markdown (the fence is code)");
    t.kapi_stdin(&env, &["check", "-"], text).code(1);
    t.comment("named: its place and its kind (a .txt file has no fences)");
    t.kapi_stdin(
        &env,
        &["check", "-", "--stdin-filename", "docs/new.txt"],
        text,
    )
    .code(1);
    t.comment("nothing else goes with it");
    t.kapi_stdin(&env, &["check", "-", "docs/guide.md"], text)
        .code(2);
    t.kapi_stdin(&env, &["check", "--stdin-filename", "a.md"], text)
        .code(2);
    t.kapi_stdin(&env, &["check", "-", "--staged"], text)
        .code(2);
    insta::assert_snapshot!(t.text());

    let json = env
        .kapi_stdin(
            &[
                "check",
                "-",
                "--stdin-filename",
                "docs/new.md",
                "--format",
                "json",
            ],
            text,
        )
        .code(1)
        .json();
    let at: Vec<(String, u64)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(at, [("docs/new.md".to_owned(), 1)]);
    // A check of standard input says nothing of how the project writes.
    assert_eq!(env.log().len(), before);
}

/// The columns a line of ASCII and CJK text takes on a terminal.
fn columns(text: &str) -> usize {
    text.chars().map(|c| if c.is_ascii() { 1 } else { 2 }).sum()
}

/// Each finding's source line (`N | ...`) and caret line, as shown.
fn drawn(out: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = out.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[1].trim_start().starts_with("| ") && w[1].contains('^'))
        .map(|w| (w[0].to_owned(), w[1].to_owned()))
        .collect()
}

#[test]
fn a_long_line_is_windowed_around_the_match_and_the_carets_stay_under_it() {
    let env = repo();
    // A line of 600 bytes (the renderer windows it), one of 1 kB in wide
    // text and one of 97 kB with a finding every 3 kB (cut by kapi first,
    // then windowed): each shown within 140 columns, marked `...` where it was
    // cut, the carets under the match.
    let ascii = format!("{}Quick cast{}", "word ".repeat(60), " more".repeat(60));
    let wide = format!("{}Github {}\n", "日本語 ".repeat(100), "本".repeat(10));
    let long: String = (0..30)
        .map(|_| format!("{}Quick cast {}", "漢字 ".repeat(250), "字".repeat(490)))
        .collect();
    env.write("a.txt", &format!("{ascii}\n{wide}{long}\n"));
    let (code, out, _) = run(&env, &["check", "--rules", "terms.tsv", "a.txt"]);
    assert_eq!(code, 1);
    let shown = drawn(&out);
    assert_eq!(shown.len(), 32, "{out}");
    for (i, (line, carets)) in shown.iter().enumerate() {
        let source = line.split_once(" | ").unwrap().1;
        let gutter = line.len() - source.len();
        assert!(source.starts_with("..."), "{i}: {line}");
        // The wide line's end fits: shown as it ends.
        let end = if i == 1 {
            "Github 本本本本本本本本本本"
        } else {
            "..."
        };
        assert!(source.ends_with(end), "{i}: {line}");
        assert!(
            columns(line) <= 140,
            "{i}: {} columns: {line}",
            columns(line)
        );
        let form = if i == 1 { "Github" } else { "Quick cast" };
        let at = source.find(form).unwrap_or_else(|| panic!("{i}: {line}"));
        let caret = carets.find('^').unwrap() - gutter;
        assert_eq!(caret, columns(&source[..at]), "{i}:\n{line}\n{carets}");
        assert_eq!(
            carets.trim_end().len() - carets.find('^').unwrap(),
            form.len()
        );
    }
    // The place named is the file's, counted in characters.
    assert!(out.contains(" --> a.txt:1:301\n"), "{out}");
    assert!(out.contains(" --> a.txt:2:401\n"), "{out}");
    assert!(out.contains(" --> a.txt:3:751\n"), "{out}");
    assert!(
        out.contains(&format!(" --> a.txt:3:{}\n", 1251 * 29 + 751)),
        "{out}"
    );
}

#[test]
fn colour_is_for_terminals_and_never_reaches_a_pipe_unasked() {
    let env = TestEnv::new();
    env.write("docs/guide.md", "Open Quick cast.\n");
    env.kept_rule("Quickcast", "Quick cast");
    // Through a pipe (as here): no escape codes, whatever TERM says.
    let plain = env.kapi(&["check", "docs/guide.md"]).code(1);
    // An escape code is one byte, ESC, whose presence is the question.
    assert!(!plain.stdout.contains('\u{1b}'), "{}", plain.stdout);
    let always = env
        .kapi(&["check", "--color", "always", "docs/guide.md"])
        .code(1);
    // rustc's colours: the level bold bright red, the message bold, the
    // gutter bold bright blue, the carets as the level.
    let lines: Vec<&str> = always.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "\u{1b}[1m\u{1b}[91merror[term]\u{1b}[0m\u{1b}[1m: use \"Quickcast\", not \"Quick cast\"\u{1b}[0m"
    );
    assert_eq!(
        lines[1],
        " \u{1b}[1m\u{1b}[94m--> \u{1b}[0mdocs/guide.md:1:6"
    );
    assert_eq!(
        lines[4],
        "  \u{1b}[1m\u{1b}[94m|\u{1b}[0m      \u{1b}[1m\u{1b}[91m^^^^^^^^^^\u{1b}[0m"
    );
    // Without the codes, the same report.
    let stripped: String = always
        .stdout
        .split('\u{1b}')
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part
            } else {
                &part[part.find('m').map_or(0, |m| m + 1)..]
            }
        })
        .collect();
    assert_eq!(stripped, plain.stdout);
    let never = env
        .kapi_cmd(&["check", "--color", "never", "docs/guide.md"])
        .env("TERM", "xterm-256color")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&never.stdout), plain.stdout);
}
