//! `kapi check --fix` and `--diff` end to end: the real binary rewriting
//! a fixture tree in a temporary git repository.

use serde_json::{Value, json};

use crate::common::TestEnv;

const TERMS: &str = "# id\tstatus\tpreferred\tavoided\n\
1\testablished\tQuickcast\tQuick cast|Quick-cast|QuickCast\n\
2\testablished\tGitHub\tGithub|Git Hub|github\n\
3\tsuggested\truntime\trun time|run-time\n\
4\tadvisory\tbackend\tback end|back-end\n\
5\testablished\topen source\topen-source\n";

/// Prose with every kind of text that is not prose holding an avoided
/// form: front matter, a link target, a code span, a fenced block, a
/// passage switched off.
const GUIDE: &str = "---
title: Quick cast guide
---

# Quick cast on github

Quick cast streams video. Try quick-cast, or see
[the Quick cast page](https://example.com/Quick-cast) and `Quick cast --help`.

```sh
quick cast --fast
```

<!-- kapi off -->
Quick cast stays as quoted.
<!-- kapi on -->

OPEN-SOURCE, Open-source and open-source tools.
The run time is short and the back end is ours.
";

/// [`GUIDE`] fixed: the established rules' forms in prose only, in the
/// case each rule allows; the suggestion (run time) and the advisory rule
/// (back end) as they were.
const GUIDE_FIXED: &str = "---
title: Quick cast guide
---

# Quickcast on GitHub

Quickcast streams video. Try Quickcast, or see
[the Quickcast page](https://example.com/Quick-cast) and `Quick cast --help`.

```sh
quick cast --fast
```

<!-- kapi off -->
Quick cast stays as quoted.
<!-- kapi on -->

OPEN SOURCE, Open source and open source tools.
The run time is short and the back end is ours.
";

const NOTES: &str = "Quick cast notes: see github.com/kapi and github.\n";
const NOTES_FIXED: &str = "Quickcast notes: see github.com/kapi and GitHub.\n";
const CODE: &str = "// Quick cast on github\nfn main() {}\n";

/// A repository holding the fixture tree and the term list, committed.
fn tree() -> TestEnv {
    let env = TestEnv::new();
    env.write("terms.tsv", TERMS);
    env.write("docs/guide.md", GUIDE);
    env.write("notes.txt", NOTES);
    env.write("src/main.rs", CODE);
    env.git(&["add", "."]);
    env.git(&["commit", "-qm", "tree"]);
    env
}

fn read(env: &TestEnv, rel: &str) -> String {
    std::fs::read_to_string(env.join(rel)).unwrap()
}

/// The fixture files hold what they held.
fn untouched(env: &TestEnv) {
    assert_eq!(read(env, "docs/guide.md"), GUIDE);
    assert_eq!(read(env, "notes.txt"), NOTES);
    assert_eq!(read(env, "src/main.rs"), CODE);
}

const DIFF: &str = "--- a/docs/guide.md
+++ b/docs/guide.md
@@ -2,10 +2,10 @@
 title: Quick cast guide
 ---
 
-# Quick cast on github
+# Quickcast on GitHub
 
-Quick cast streams video. Try quick-cast, or see
-[the Quick cast page](https://example.com/Quick-cast) and `Quick cast --help`.
+Quickcast streams video. Try Quickcast, or see
+[the Quickcast page](https://example.com/Quick-cast) and `Quick cast --help`.
 
 ```sh
 quick cast --fast
@@ -15,5 +15,5 @@
 Quick cast stays as quoted.
 <!-- kapi on -->
 
-OPEN-SOURCE, Open-source and open-source tools.
+OPEN SOURCE, Open source and open source tools.
 The run time is short and the back end is ours.
--- a/notes.txt
+++ b/notes.txt
@@ -1 +1 @@
-Quick cast notes: see github.com/kapi and github.
+Quickcast notes: see github.com/kapi and GitHub.
";

#[test]
fn diff_shows_what_fix_would_write_and_writes_nothing() {
    let env = tree();
    let run = env
        .kapi(&["check", "--diff", "--rules", "terms.tsv"])
        .code(1);
    assert_eq!(run.stdout, DIFF);
    assert_eq!(
        run.stderr,
        "would fix 8 findings in docs/guide.md\nwould fix 2 findings in notes.txt\n"
    );
    untouched(&env);
    // The diff is a patch git applies, and it gives what --fix writes.
    std::fs::write(env.join("fix.patch"), &run.stdout).unwrap();
    env.git(&["apply", "fix.patch"]);
    assert_eq!(read(&env, "docs/guide.md"), GUIDE_FIXED);
    assert_eq!(read(&env, "notes.txt"), NOTES_FIXED);
    std::fs::remove_file(env.join("fix.patch")).unwrap();
    // Nothing left to fix: no diff, exit 0.
    let run = env.kapi(&["check", "--diff", "--rules", "terms.tsv"]).ok();
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "nothing to fix\n");
}

#[test]
fn fix_rewrites_established_forms_in_prose_only_and_a_second_run_changes_nothing() {
    let env = tree();
    let run = env.kapi(&["check", "--fix", "--rules", "terms.tsv"]).ok();
    assert_eq!(read(&env, "docs/guide.md"), GUIDE_FIXED);
    assert_eq!(read(&env, "notes.txt"), NOTES_FIXED);
    // Code is not prose: never read, never written.
    assert_eq!(read(&env, "src/main.rs"), CODE);
    // What was fixed, then what remains: the suggestion and the advisory
    // rule, which never fail.
    assert!(
        run.stdout.starts_with(
            "fixed 8 findings in docs/guide.md\nfixed 2 findings in notes.txt\nwarning[suggested]: use \"runtime\", not \"run time\"\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .ends_with("checked 2 files: 2 findings, 0 failing, 2 reporting (score 1)\n"),
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr, "");
    // A person's fix records nothing when no suggestion's form is written.
    assert!(env.log().is_empty());

    let again = env.kapi(&["check", "--fix", "--rules", "terms.tsv"]).ok();
    assert!(
        again.stdout.starts_with("nothing to fix\n"),
        "{}",
        again.stdout
    );
    assert_eq!(read(&env, "docs/guide.md"), GUIDE_FIXED);
    assert_eq!(read(&env, "notes.txt"), NOTES_FIXED);
    // The fixed tree passes the check.
    env.kapi(&["check", "--rules", "terms.tsv"]).ok();
}

#[test]
fn fix_of_named_files_writes_only_those() {
    let env = tree();
    env.write("docs/other.md", "Quick cast, twice: Quick cast.\n");
    let run = env
        .kapi(&["check", "--fix", "--rules", "terms.tsv", "docs/other.md"])
        .ok();
    assert_eq!(
        read(&env, "docs/other.md"),
        "Quickcast, twice: Quickcast.\n"
    );
    untouched(&env);
    assert_eq!(
        run.stdout,
        "fixed 2 findings in docs/other.md\nchecked 1 file: 0 findings, 0 failing, 0 reporting (score 0)\n"
    );
    // Named from a folder below the root: the path is the folder's.
    let run = env
        .kapi_in(
            "docs",
            &["check", "--fix", "--rules", "../terms.tsv", "guide.md"],
        )
        .ok();
    assert!(
        run.stdout
            .starts_with("fixed 8 findings in docs/guide.md\n"),
        "{}",
        run.stdout
    );
    assert_eq!(read(&env, "docs/guide.md"), GUIDE_FIXED);
    assert_eq!(read(&env, "notes.txt"), NOTES);
}

#[test]
fn fix_as_json_lists_what_was_fixed_and_what_remains() {
    let env = tree();
    let run = env
        .kapi(&["check", "--fix", "--rules", "terms.tsv", "--format", "json"])
        .ok();
    let doc = run.json();
    assert_eq!(
        doc["fixed"],
        json!([
            {"path": "docs/guide.md", "fixes": 8, "left": 0},
            {"path": "notes.txt", "fixes": 2, "left": 0},
        ])
    );
    assert_eq!(
        doc["summary"],
        json!({"files": 2, "findings": 2, "failing": 0, "reporting": 2, "score": 1})
    );
    // stdout is the one document; people read what was fixed on stderr.
    assert_eq!(
        run.stderr,
        "fixed 8 findings in docs/guide.md\nfixed 2 findings in notes.txt\n"
    );
    // Without --fix the document has no `fixed`.
    let plain = env
        .kapi(&["check", "--rules", "terms.tsv", "--format", "json"])
        .ok()
        .json();
    assert!(plain.get("fixed").is_none(), "{plain}");
}

#[test]
fn overlapping_fixes_and_rules_that_disagree_leave_their_text_and_say_so() {
    let env = TestEnv::new();
    // Two lists: their rules are two groups, so both report, and their
    // matches overlap ("Quick cast" and "cast time") or name the same
    // text with different forms (colour).
    env.write(
        "a.tsv",
        "1\testablished\tQuickcast\tQuick cast\n2\testablished\tcolor\tcolour\n",
    );
    env.write(
        "b.tsv",
        "1\testablished\tcasttime\tcast time\n2\testablished\thue\tcolour\n",
    );
    env.write("page.md", "Quick cast time in colour.\n");
    let args = [
        "check", "--fix", "--rules", "a.tsv", "--rules", "b.tsv", "page.md",
    ];
    let run = env.kapi(&args).code(1);
    // The leftmost fix is written; the one it overlaps is left, and so is
    // the text two rules disagree on.
    assert_eq!(read(&env, "page.md"), "Quickcast time in colour.\n");
    assert!(
        run.stdout.starts_with(
            "fixed 1 finding in page.md\nleft 3 findings in page.md unfixed: each overlaps another fix, or rules disagree on the form to write\n"
        ),
        "{}",
        run.stdout
    );
    // What remains: the disagreement, which a person settles.
    assert!(
        run.stdout
            .ends_with("checked 1 file: 2 findings, 2 failing, 0 reporting (score 2)\n"),
        "{}",
        run.stdout
    );
    let again = env.kapi(&args).code(1);
    assert_eq!(read(&env, "page.md"), "Quickcast time in colour.\n");
    assert!(
        again
            .stdout
            .starts_with("left 2 findings in page.md unfixed: each"),
        "{}",
        again.stdout
    );
}

#[test]
fn fix_records_an_applied_signal_when_it_writes_a_suggestions_preferred_form() {
    let env = tree();
    // An agent suggested the term the term list establishes.
    let suggestion = env
        .agent_term(
            "s1",
            "Quickcast",
            "Quick cast",
            &["--quote", "Quick cast", "--json"],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = env.kapi(&["check", "--fix", "--rules", "terms.tsv"]).ok();
    assert!(
        run.stdout.contains(
            "recorded 1 applied signal: the fixes write the preferred form of 1 suggestion\n"
        ),
        "{}",
        run.stdout
    );
    let signals: Vec<Value> = env
        .log()
        .into_iter()
        .filter(|op| op["kind"] == "signal" && op["signal"]["source"] == "applied")
        .collect();
    assert_eq!(signals.len(), 1, "{signals:?}");
    assert_eq!(signals[0]["target"], json!(suggestion), "{signals:?}");
    // A person ran it: the tool `apply`, in no session.
    assert_eq!(
        signals[0]["actor"],
        json!({"kind": "tool", "name": "apply"})
    );
    let here = env
        .kapi(&["context", "docs/guide.md", "--json"])
        .ok()
        .json();
    assert_eq!(
        // The check after the fix counts the uses it wrote, too.
        here["suggestions"][0]["standing"],
        "seen in 1 session · 5 of 5 uses · applied 1×",
        "{here}"
    );
}

#[test]
fn an_agent_may_fix_and_the_applied_signal_is_its_sessions() {
    let env = tree();
    env.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "Quick cast"])
        .ok();
    let run = env.agent("s2", &["check", "--fix", "--rules", "terms.tsv"]);
    let run = run.ok();
    assert!(
        run.stdout.contains("recorded 1 applied signal"),
        "{}",
        run.stdout
    );
    assert_eq!(read(&env, "docs/guide.md"), GUIDE_FIXED);
    let signal = env
        .log()
        .into_iter()
        .find(|op| op["kind"] == "signal" && op["signal"]["source"] == "applied")
        .unwrap();
    assert_eq!(
        signal["actor"],
        json!({"kind": "tool", "name": "apply", "session": "s2"})
    );
}

#[test]
fn fix_on_standard_input_writes_the_fixed_text_to_stdout_and_the_report_to_stderr() {
    let env = tree();
    let run = env
        .kapi_stdin(
            &[
                "check",
                "--fix",
                "-",
                "--stdin-filename",
                "docs/new.md",
                "--rules",
                "terms.tsv",
            ],
            GUIDE.as_bytes(),
        )
        .ok();
    assert_eq!(run.stdout, GUIDE_FIXED);
    assert!(
        run.stderr.starts_with("fixed 8 findings in docs/new.md\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .ends_with("checked 1 file: 2 findings, 0 failing, 2 reporting (score 1)\n"),
        "{}",
        run.stderr
    );
    assert!(!env.join("docs/new.md").exists());
    untouched(&env);
    // Text two rules disagree on stays, and fails; the text comes
    // through whole, its last line end missing as it was.
    env.write("a.tsv", "1\testablished\tcolor\tcolour\n");
    env.write("b.tsv", "1\testablished\thue\tcolour\n");
    let run = env
        .kapi_stdin(
            &[
                "check", "--fix", "-", "--rules", "a.tsv", "--rules", "b.tsv",
            ],
            b"Quick cast in colour",
        )
        .code(1);
    assert_eq!(run.stdout, "Quick cast in colour");
    assert!(
        run.stderr.starts_with(
            "left 2 findings in - unfixed: each overlaps another fix, or rules disagree on the form to write\n"
        ),
        "{}",
        run.stderr
    );
    // More than 16 MiB is refused, never passed through cut.
    let mut big = b"Quick cast ".repeat((16 << 20) / 11 + 1);
    big.truncate((16 << 20) + 1);
    let run = env
        .kapi_stdin(&["check", "--fix", "-", "--rules", "terms.tsv"], &big)
        .code(2);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "error: standard input is larger than 16 MiB, which kapi does not fix; nothing was written\n"
    );
    // The diff of standard input.
    let run = env
        .kapi_stdin(
            &["check", "--diff", "-", "--rules", "terms.tsv"],
            b"Quick cast\n",
        )
        .code(1);
    assert_eq!(
        run.stdout,
        "--- a/-\n+++ b/-\n@@ -1 +1 @@\n-Quick cast\n+Quickcast\n"
    );
}

#[test]
fn fix_refuses_what_makes_no_sense_and_files_it_may_not_write() {
    let env = tree();
    let refused = |args: &[&str], message: &str| {
        let run = env.kapi(args).code(2);
        assert!(
            run.stderr.starts_with(&format!("error: {message}")),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{args:?}");
    };
    refused(
        &["check", "--fix", "--diff", "--rules", "terms.tsv"],
        "--diff shows what --fix would write and writes nothing: give one of them",
    );
    refused(
        &[
            "check",
            "--diff",
            "--format",
            "json",
            "--rules",
            "terms.tsv",
        ],
        "--diff prints a unified diff, not findings",
    );
    refused(
        &["check", "--fix", "--staged", "--rules", "terms.tsv"],
        "--staged checks the index, and a fix rewrites the work tree",
    );
    refused(
        &["check", "--diff", "--staged", "--rules", "terms.tsv"],
        "--staged checks the index, and a fix rewrites the work tree",
    );
    refused(
        &[
            "check",
            "--fix",
            "--as-of",
            "2026-11-01",
            "--rules",
            "terms.tsv",
        ],
        "--as-of checks by the rules of the past",
    );
    // A file outside the work tree, and one reached through a link.
    let outside = env.sibling("outside");
    outside.write("page.md", "Quick cast\n");
    refused(
        &[
            "check",
            "--fix",
            "--rules",
            "terms.tsv",
            "../outside/page.md",
        ],
        "../outside/page.md is outside the work tree",
    );
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), env.join("linked")).unwrap();
        refused(
            &["check", "--fix", "--rules", "terms.tsv", "linked/page.md"],
            "linked/page.md: it is reached through a symbolic link, which kapi does not write through; nothing was written",
        );
        // All or none: a good file named with it is not written either.
        refused(
            &[
                "check",
                "--fix",
                "--rules",
                "terms.tsv",
                "notes.txt",
                "linked/page.md",
            ],
            "linked/page.md: it is reached through a symbolic link",
        );
    }
    assert_eq!(read(&outside, "page.md"), "Quick cast\n");
    untouched(&env);
}

#[test]
fn outside_a_repository_fix_refuses_files_but_diffs_and_fixes_standard_input() {
    let env = TestEnv::plain();
    env.write("terms.tsv", TERMS);
    env.write("page.md", "Quick cast\n");
    let run = env
        .kapi(&["check", "--fix", "--rules", "terms.tsv", "page.md"])
        .code(2);
    assert!(
        run.stderr.starts_with(
            "error: --fix writes files of a git work tree, and this is not inside one"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(read(&env, "page.md"), "Quick cast\n");
    let run = env
        .kapi(&["check", "--diff", "--rules", "terms.tsv", "page.md"])
        .code(1);
    assert_eq!(
        run.stdout,
        "--- a/page.md\n+++ b/page.md\n@@ -1 +1 @@\n-Quick cast\n+Quickcast\n"
    );
    let run = env
        .kapi_stdin(
            &["check", "--fix", "-", "--rules", "terms.tsv"],
            b"Quick cast\n",
        )
        .ok();
    assert_eq!(run.stdout, "Quickcast\n");
}

#[test]
fn a_vale_pattern_is_reported_not_rewritten_and_a_case_sensitive_rule_writes_its_form() {
    let env = TestEnv::new();
    env.write(
        ".vale.ini",
        "StylesPath = styles\nVocab = House\n\n[*.md]\nBasedOnStyles = Vale, House\n",
    );
    // A rejected term: no form to write instead.
    env.write("styles/config/vocabularies/House/reject.txt", "utilize\n");
    // `open-source` matches only as written (no ignorecase); the
    // look-behind key is a pattern rule.
    env.write(
        "styles/House/Terms.yml",
        "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nlevel: error\nswap:\n  open-source: open source\n  '(?<!very )speedy': fast\n",
    );
    env.write(
        "page.md",
        "Open-source and open-source code, speedy and very speedy. We utilize it.\n",
    );
    env.kapi(&["store", "import"]).ok();
    let run = env.kapi(&["check", "--fix", "page.md"]).code(1);
    assert_eq!(
        read(&env, "page.md"),
        "Open-source and open source code, speedy and very speedy. We utilize it.\n"
    );
    assert!(
        run.stdout
            .starts_with("fixed 1 finding in page.md\nerror[term]: use \"fast\", not \"speedy\"\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("error[term]: avoid \"utilize\"\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .ends_with("checked 1 file: 2 findings, 2 failing, 0 reporting (score 2)\n"),
        "{}",
        run.stdout
    );
}
