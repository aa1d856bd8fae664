//! Vault front matter is YAML, read by yaml-rust2 within bounds (issue
//! 30): front matter as Jekyll, Hugo, Docusaurus, Obsidian and MADR write
//! it reads as YAML reads it, through the library and the binary; hostile
//! front matter (aliases that would expand a billion times, nesting 10,000
//! deep) is refused in bounded time and memory, failing closed as a note
//! the vault cannot read.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use kapi::vault::frontmatter::{self, Value};

use crate::common::{Run, TestEnv, kapi_bin, within_deadline};

const TODAY: &str = "2026-11-30";

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/front-matter")
}

/// Every real sample's front matter, by file name.
fn samples() -> Vec<(String, frontmatter::FrontMatter)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let fm = frontmatter::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push((name, fm));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn text<'a>(fm: &'a frontmatter::FrontMatter, key: &str) -> &'a str {
    fm.fields
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{key}: {:?}", fm.fields.get(key)))
}

fn list(fm: &frontmatter::FrontMatter, key: &str) -> Vec<String> {
    match fm.fields.get(key) {
        Some(Value::List(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        other => panic!("{key}: {other:?}"),
    }
}

#[test]
fn front_matter_as_projects_write_it_reads_as_yaml_reads_it() {
    let samples = samples();
    let names: Vec<&str> = samples.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "0004-use-postgresql.md",
            "docusaurus-3-0.md",
            "docusaurus-create-doc.md",
            "hugo-front-matter.md",
            "jekyll-security-fixes.md",
            "madr-adr-template.md",
            "obsidian-note.md",
        ]
    );
    let get = |name: &str| &samples.iter().find(|(n, _)| n == name).unwrap().1;

    // Hugo: a comment after a tab, an empty value, quoted flow items, a
    // mapping nested two deep (read, and left out below its first level).
    let hugo = get("hugo-front-matter.md");
    assert_eq!(text(hugo, "weight"), "30");
    assert_eq!(text(hugo, "linktitle"), "");
    assert_eq!(text(hugo, "draft"), "false");
    assert_eq!(list(hugo, "keywords")[0], "front matter");
    assert_eq!(list(hugo, "aliases"), ["/content/front-matter/"]);
    assert_eq!(hugo.fields["menu"], Value::Map(Default::default()));

    // Jekyll: a quoted title with commas, a time with its offset.
    let jekyll = get("jekyll-security-fixes.md");
    assert_eq!(
        text(jekyll, "title"),
        "Security Fixes for series 3.6, 3.7 and 3.8"
    );
    assert_eq!(text(jekyll, "date"), "2018-09-19 18:00:00 +0530");
    assert_eq!(text(jekyll, "version"), "3.8.4");

    // Docusaurus: block and flow lists, a boolean.
    let docusaurus = get("docusaurus-3-0.md");
    assert_eq!(list(docusaurus, "authors"), ["slorber"]);
    assert_eq!(list(docusaurus, "tags"), ["release"]);
    assert_eq!(text(docusaurus, "unlisted"), "true");
    assert_eq!(text(get("docusaurus-create-doc.md"), "slug"), "/create-doc");

    // MADR: comment lines (holding braces and bars) between keys; a
    // trailing `#eng` after a space is a comment.
    let template = get("madr-adr-template.md");
    assert_eq!(text(template, "nav_order"), "100");
    assert!(!template.fields.contains_key("status"));
    let madr = get("0004-use-postgresql.md");
    assert_eq!(list(madr, "decision-makers"), ["Ana Lima", "Bo Chen"]);
    assert_eq!(text(madr, "informed"), "everyone in");

    // Obsidian: quoted wiki links, a quoted alias holding `: `, numbers.
    let obsidian = get("obsidian-note.md");
    assert_eq!(text(obsidian, "related"), "[[D-001-review-policy]]");
    assert_eq!(
        list(obsidian, "aliases"),
        ["Deploy policy", "Deploys: when and why"]
    );
    assert_eq!(text(obsidian, "rating"), "4.5");
    assert_eq!(text(obsidian, "created"), "2024-05-02T09:30:00");
}

/// Copy the real samples into `decisions/` of a plain project.
fn samples_vault(env: &TestEnv) {
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        env.write(
            &format!("decisions/{name}"),
            &std::fs::read_to_string(&path).unwrap(),
        );
    }
}

#[test]
fn a_vault_of_real_front_matter_compiles_under_a_grant_that_permits_every_file() {
    let env = TestEnv::plain();
    samples_vault(&env);
    // Hugo's menu nests two deep: the old subset could not read it, so a
    // grant that permits `restricted` failed closed (vault_unreadable).
    let run = env
        .kapi(&[
            "compile-context",
            "ADR-0004",
            "--max-sensitivity",
            "restricted",
            "--today",
            TODAY,
        ])
        .ok();
    let ctx = run.json();
    let c = &ctx["contexts"][0];
    assert_eq!(c["id"], "ADR-0004", "{ctx}");
    assert_eq!(c["status"], "approved", "{ctx}");
    assert_eq!(c["sensitivity"], "public", "{ctx}");
    assert_eq!(c["created"], "2024-03-11", "{ctx}");
    assert_eq!(c["title"], "Use PostgreSQL for the ledger store", "{ctx}");
}

/// A decision whose front matter the old subset refused: a comment line,
/// quoted escapes (`\u0026`, `\"`), a folded block scalar, a literal one,
/// a link as a flow mapping, comments after values.
fn yaml_decision(body: &str) -> String {
    format!(
        concat!(
            "---\n",
            "# Kept by the platform team.\n",
            "id: D-101\n",
            "type: decision\n",
            "title: \"Deploys: Tuesdays \\u0026 \\\"quiet\\\" Thursdays\"\n",
            "status: approved   # since the January review\n",
            "sensitivity: public\n",
            "valid_from: 2026-01-15\n",
            "summary: >\n",
            "  Deploys happen on Tuesdays\n",
            "  and on quiet Thursdays.\n",
            "notes: |\n",
            "  One line.\n",
            "  Another.\n",
            "links:\n",
            "  - {{source: S-101}}\n",
            "approval:\n",
            "  by: 'Ana Lima'\n",
            "  on: 2026-01-14\n",
            "  sha256: {}\n",
            "---\n",
            "{}",
        ),
        kapi::digest::sha256_hex(body.as_bytes()),
        body
    )
}

#[test]
fn block_scalars_quoted_escapes_and_comments_compile() {
    let env = TestEnv::plain();
    let body = "We deploy on Tuesdays and quiet Thursdays.\n";
    env.write("decisions/D-101-deploys.md", &yaml_decision(body));
    env.write(
        "decisions/S-101-incidents.md",
        "---\nid: S-101\ntype: source\ntitle: >-\n  Incident review\n  2025\nsensitivity: public\n---\nTwo incidents on Fridays.\n",
    );
    let ctx = env
        .kapi(&["compile-context", "D-101", "--today", TODAY])
        .ok()
        .json();
    let c = &ctx["contexts"][0];
    assert_eq!(c["id"], "D-101", "{ctx}");
    assert_eq!(c["title"], "Deploys: Tuesdays & \"quiet\" Thursdays");
    assert_eq!(c["status"], "approved");
    assert_eq!(c["applicability"]["local_approval"], "matched", "{ctx}");
    assert_eq!(c["applicability"]["state"], "applicable", "{ctx}");
    assert_eq!(
        c["links"],
        serde_json::json!([{ "rel": "source", "target": "S-101" }])
    );
    assert_eq!(c["body"], body);
    // The folded title of the source reads as one line.
    let source = env
        .kapi(&["compile-context", "S-101", "--today", TODAY])
        .ok()
        .json();
    assert_eq!(source["contexts"][0]["title"], "Incident review 2025");
}

/// `kapi` with `args`, its address space capped at 4 GiB and killed
/// after the harness deadline: a parser that expanded or recursed without
/// bound would fail here instead of taking the machine down.
fn capped(env: &TestEnv, args: &[&str]) -> Run {
    let mut cmd = Command::new("sh");
    env.isolate(&mut cmd);
    cmd.arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(kapi_bin())
        .args(args);
    within_deadline(cmd, b"")
}

#[test]
fn hostile_front_matter_is_refused_in_bounded_time_and_memory() {
    let env = TestEnv::plain();
    env.write(
        "decisions/D-001-fine.md",
        "---\nid: D-001\ntype: decision\ntitle: Fine\nstatus: proposed\nsensitivity: public\n---\nFine.\n",
    );
    // Billion laughs: ten levels of nine aliases each, 9^10 scalars if
    // expanded; it claims to be public.
    let mut laughs = String::from(
        "---\nid: D-666\ntype: decision\nsensitivity: public\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..10 {
        let refs = vec![format!("*l{}", i - 1); 9].join(", ");
        laughs.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
    }
    laughs.push_str("title: *l9\n---\nLaughs.\n");
    env.write("decisions/D-666-laughs.md", &laughs);
    // Sequences 10,000 deep, in block and in flow style.
    env.write(
        "decisions/D-667-deep.md",
        &format!(
            "---\nid: D-667\ntype: decision\nsensitivity: public\ndeep:\n  {}x\n---\nDeep.\n",
            "- ".repeat(10_000)
        ),
    );
    env.write(
        "decisions/D-668-flow.md",
        &format!(
            "---\nid: D-668\ntype: decision\nsensitivity: public\ndeep: {}{}\n---\nDeep.\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        ),
    );
    let started = Instant::now();
    // A grant that would permit them: the compile fails closed.
    let refused = capped(
        &env,
        &[
            "compile-context",
            "D-001",
            "--max-sensitivity",
            "restricted",
            "--today",
            TODAY,
        ],
    );
    assert_eq!(refused.code, 5, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("vault_unreadable"),
        "{}",
        refused.stderr
    );
    assert_eq!(refused.stdout, "");
    // Their front matter cannot be read, so they are `restricted`, not the
    // `public` they claim: the public grant skips them and compiles the
    // rest; none of them is found by id.
    let public = capped(&env, &["compile-context", "D-001", "--today", TODAY]);
    assert_eq!(public.code, 0, "{}", public.stderr);
    for id in ["D-666", "D-667", "D-668"] {
        let run = capped(&env, &["compile-context", id, "--today", TODAY]);
        assert_eq!(run.code, 0, "{id}: {}", run.stderr);
        let ctx: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(ctx["contexts"], serde_json::json!([]), "{id}: {ctx}");
        assert!(!run.stdout.contains("lol"), "{id}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}
