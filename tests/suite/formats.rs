//! AsciiDoc and reStructuredText through the format layer, end to end: the
//! fixture trees under tests/fixtures/formats hold the avoided form
//! `Quick cast` in every construct of each format; `kapi check` reports
//! exactly the ones in prose.

use std::path::Path;

use serde_json::Value;

use crate::common::TestEnv;

const TERMS: &str = "1\testablished\tQuickcast\tQuick cast\n";

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/formats")
            .join(rel),
    )
    .unwrap()
}

fn repo_with(files: &[(&str, &str)]) -> TestEnv {
    let env = TestEnv::new();
    env.write("terms.tsv", TERMS);
    for (path, text) in files {
        env.write(path, text);
    }
    env
}

/// `path:line:column` of each finding of `kapi check --format json ARGS`.
fn findings(env: &TestEnv, args: &[&str]) -> Vec<String> {
    let mut a = vec!["check", "--rules", "terms.tsv", "--format", "json"];
    a.extend(args);
    let out = env.kapi_cmd(&a).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}:{}:{}",
                f["path"].as_str().unwrap(),
                f["line"],
                f["column"]
            )
        })
        .collect()
}

#[test]
fn asciidoc_fixture_reports_exactly_the_prose_findings() {
    let env = repo_with(&[("docs/guide.adoc", &fixture("asciidoc/guide.adoc"))]);
    // Titles (document, section, block), the paragraph, list items, the
    // description list's term and definition, table cells (not the literal
    // and monospace ones), the admonition, the warning, sidebar, quote,
    // example and open blocks, the one-line conditional's text, the
    // cross-reference's and the URL's text, the last line. Nothing from the
    // header's author line, attribute entries, comments, the listing,
    // literal, passthrough and source blocks, the source and indented
    // paragraphs, conditionals, include and image macros, the anchor,
    // inline code and passthroughs, the attribute reference, link targets,
    // `<<id>>`, kbd and inline images. Below the last line: the text of
    // `<<id,text>>` (not its monospace), a table's implicit header and its
    // plain column (not its monospace column), none of the monospace runs
    // and passthroughs inside monospace, nor the literal paragraph of an
    // AsciiDoc cell.
    assert_eq!(
        findings(&env, &[]),
        [
            "docs/guide.adoc:1:3",
            "docs/guide.adoc:8:4",
            "docs/guide.adoc:10:18",
            "docs/guide.adoc:12:2",
            "docs/guide.adoc:13:20",
            "docs/guide.adoc:14:23",
            "docs/guide.adoc:15:24",
            "docs/guide.adoc:17:1",
            "docs/guide.adoc:17:39",
            "docs/guide.adoc:21:2",
            "docs/guide.adoc:23:2",
            "docs/guide.adoc:24:3",
            "docs/guide.adoc:29:26",
            "docs/guide.adoc:33:22",
            "docs/guide.adoc:37:16",
            "docs/guide.adoc:42:14",
            "docs/guide.adoc:46:17",
            "docs/guide.adoc:50:20",
            "docs/guide.adoc:80:17",
            "docs/guide.adoc:88:59",
            "docs/guide.adoc:89:42",
            "docs/guide.adoc:91:20",
            "docs/guide.adoc:93:68",
            "docs/guide.adoc:98:10",
            "docs/guide.adoc:100:2",
        ]
    );
}

#[test]
fn rst_fixture_reports_exactly_the_prose_findings() {
    let env = repo_with(&[("docs/guide.rst", &fixture("rst/guide.rst"))]);
    // The title, the field body, the section title, the paragraph, list
    // items, the definition list's term and definition, grid and simple
    // table cells, the note's text and body, the warning, the figure's
    // caption, the reference's title and the link's text, the last line.
    // Nothing from the field name, literal blocks, the doctest, directive
    // arguments and options, code-block, literalinclude and math bodies,
    // the substitution definition, the comment, the hyperlink target,
    // inline literals, `:func:`, a bare `:ref:`, the substitution
    // reference, or the link's URL. Below the last line: only the prose
    // between two inline literals ending in a backslash, not an inline
    // literal running on over a line that starts with `--` nor a literal
    // block in a grid table's cell.
    assert_eq!(
        findings(&env, &[]),
        [
            "docs/guide.rst:2:1",
            "docs/guide.rst:5:10",
            "docs/guide.rst:7:1",
            "docs/guide.rst:10:18",
            "docs/guide.rst:12:20",
            "docs/guide.rst:15:28",
            "docs/guide.rst:17:1",
            "docs/guide.rst:18:24",
            "docs/guide.rst:21:3",
            "docs/guide.rst:25:1",
            "docs/guide.rst:28:30",
            "docs/guide.rst:30:18",
            "docs/guide.rst:34:19",
            "docs/guide.rst:61:19",
            "docs/guide.rst:71:15",
            "docs/guide.rst:71:56",
            "docs/guide.rst:72:20",
            "docs/guide.rst:77:25",
        ]
    );
}

#[test]
fn kapi_toml_names_the_format_of_the_files_some_globs_match() {
    let legacy = "Intro with Quick cast.\n\n----\nQuick cast in a listing\n----\n";
    let env = repo_with(&[
        (
            "kapi.toml",
            "[[check.formats]]\nfiles = [\"legacy/**\"]\nformat = \"asciidoc\"\n",
        ),
        ("legacy/notes.txt", legacy),
        ("other/notes.txt", legacy),
    ]);
    // The named file is read as AsciiDoc (its listing is code); the other
    // .txt file is plain text, all prose.
    assert_eq!(
        findings(&env, &[]),
        [
            "legacy/notes.txt:1:12",
            "other/notes.txt:1:12",
            "other/notes.txt:4:1"
        ]
    );
    // A file named on the command line is read by the same rule.
    assert_eq!(
        findings(&env, &["legacy/notes.txt"]),
        ["legacy/notes.txt:1:12"]
    );
}

#[test]
fn an_unknown_format_in_kapi_toml_is_refused_with_the_names_it_takes() {
    let env = repo_with(&[
        (
            "kapi.toml",
            "[[check.formats]]\nfiles = [\"*.txt\"]\nformat = \"docbook\"\n",
        ),
        ("a.md", "Quick cast\n"),
    ]);
    let out = env
        .kapi_cmd(&["check", "--rules", "terms.tsv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kapi.toml"), "{err}");
    assert!(
        err.contains("docbook") && err.contains("asciidoc") && err.contains("rst"),
        "{err}"
    );
}

#[test]
fn standard_input_is_read_in_the_format_its_name_says() {
    let env = repo_with(&[]);
    let text =
        b"Quick cast here.\n\n    Quick cast in a block quote\n\n::\n\n    Quick cast literal\n";
    let run = |name: &str| {
        let out = env
            .kapi_cmd(&[
                "check",
                "--rules",
                "terms.tsv",
                "--format",
                "json",
                "--stdin-filename",
                name,
                "-",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(text)?;
                child.wait_with_output()
            })
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["findings"].as_array().unwrap().len()
    };
    // RST: the indented block is a block quote (prose), the one after `::`
    // a literal block. Markdown: both indented blocks are code.
    assert_eq!(run("notes.rst"), 2);
    assert_eq!(run("notes.md"), 1);
}

#[test]
fn prose_dump_prints_each_files_format_and_prose_spans() {
    let env = repo_with(&[
        ("a.adoc", "Quick cast.\n\n----\ncode\n----\n"),
        ("b.rst", "Title\n=====\n\nText ``code`` end.\n"),
    ]);
    let out = env.kapi(&["check", "--prose-dump"]).ok();
    let dumps = out.json_lines();
    let by_path = |p: &str| dumps.iter().find(|d| d["path"] == p).unwrap().clone();
    let a = by_path("a.adoc");
    assert_eq!(a["format"], "asciidoc");
    assert_eq!(a["spans"], serde_json::json!([[0, 11]]));
    let b = by_path("b.rst");
    assert_eq!(b["format"], "rst");
    assert_eq!(b["spans"], serde_json::json!([[0, 5], [13, 17], [27, 31]]));
}
