//! The project's folders: a rules file in a sub-folder lists what holds
//! at that folder's point, and a profile (`.kapi/profiles/<name>/`) scopes
//! its own term list to the paths `[[points]]` names for it — through the
//! real binary on a real git repository (seed: "the rules file of each
//! folder", "kapi store import scopes the word rules in a profile's own
//! voice or terms file").

use crate::common::TestEnv;
use serde_json::Value;

fn read(repo: &TestEnv, rel: &str) -> String {
    std::fs::read_to_string(repo.join(rel)).unwrap()
}

fn keep(repo: &TestEnv, id: &str) {
    repo.kapi(&["context", "review", "--keep", &id[..10]]).ok();
}

fn id(run: crate::common::Run) -> String {
    run.ok().json()["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_rules_file_in_a_folder_lists_what_holds_at_the_folders_point() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"quickcast\" }\n",
    );
    repo.write(".gitignore", "vendor/\n");
    repo.write("AGENTS.md", "# Agents\n");
    repo.write("docs/app/AGENTS.md", "# The app's pages\n\nHand-written.\n");
    repo.write("docs/web/CLAUDE.md", "# The website\n");
    repo.write("docs/app/guide/a.md", "Open Quick cast.\n");
    repo.write("docs/web/a.md", "Quick cast\n");
    // Ignored by git: a vendored tree's rules file is not the project's.
    repo.write("vendor/lib/AGENTS.md", "# Vendored\n");

    // A rule seen in the app's pages, kept there; a note kept for the
    // whole project.
    let rule = id(repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &["--path", "docs/app/guide/a.md", "--json"],
    ));
    keep(&repo, &rule);
    let note = id(repo.kapi(&[
        "context",
        "note",
        "Address the administrator",
        "--quote",
        "q",
        "--json",
    ]));
    keep(&repo, &note);

    // The root lists every rule, with where it holds.
    let root = read(&repo, "AGENTS.md");
    assert!(
        root.contains("- Write **Quickcast**, not `Quick cast`, `Quick-cast`, `QuickCast` (product=quickcast)\n"),
        "{root}"
    );
    assert!(root.contains("### Notes a person kept\n\n- Address the administrator\n"));
    // The app's folder: what holds there, under the seed's headings, and
    // the hand-written text above the block stays.
    let app = read(&repo, "docs/app/AGENTS.md");
    insta::assert_snapshot!("folder_rules_file_app", app);
    assert!(app.starts_with("# The app's pages\n\nHand-written.\n"));
    // The website's folder: the note holds there, the app's rule does not.
    let web = read(&repo, "docs/web/CLAUDE.md");
    assert!(web.contains("## Context in `docs/web/` (kapi)"), "{web}");
    assert!(web.contains("- Address the administrator\n"), "{web}");
    assert!(!web.contains("Quickcast"), "{web}");
    // No rules file is created unasked, and an ignored one is left alone.
    assert!(!repo.join("docs/app/guide/AGENTS.md").exists());
    assert!(!repo.join("docs/web/AGENTS.md").exists());
    assert_eq!(read(&repo, "vendor/lib/AGENTS.md"), "# Vendored\n");
    // `kapi check` reads none of the blocks as prose.
    let run = repo.kapi(&["check", "docs/app/AGENTS.md", "--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    // A drop updates the folder's file like the root's.
    repo.kapi(&["context", "review", "--drop", &rule[..10]])
        .ok();
    let app = read(&repo, "docs/app/AGENTS.md");
    assert!(!app.contains("Quickcast"), "{app}");
    assert!(app.contains("- Address the administrator\n"), "{app}");

    // Named by its path in `rules_files`, a folder's file is created.
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"quickcast\" }\n\n[context]\nrules_files = [\"AGENTS.md\", \"docs/app/guide/AGENTS.md\"]\n",
    );
    let again = id(repo.agent_term(
        "s2",
        "Flowkit",
        "Flow kit",
        &["--path", "docs/app/guide/a.md", "--json"],
    ));
    keep(&repo, &again);
    let guide = read(&repo, "docs/app/guide/AGENTS.md");
    assert!(
        guide.contains("## Context in `docs/app/guide/` (kapi)"),
        "{guide}"
    );
    assert!(guide.contains("(product=quickcast)"), "{guide}");
    assert!(
        guide.contains("- Write **Flowkit**, not `Flow kit`, "),
        "{guide}"
    );
    // Folders git lists under a named file's name are refreshed too.
    assert!(read(&repo, "docs/app/AGENTS.md").contains("Flowkit"));
    // CLAUDE.md is no longer a rules file's name: left as it was.
    assert!(!read(&repo, "docs/web/CLAUDE.md").contains("Flowkit"));
}

#[test]
fn a_profiles_own_term_list_holds_only_where_points_name_the_profile() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"handbook/**\"]\nprofile = \"handbook\"\n",
    );
    repo.write(
        ".kapi/profiles/handbook/terms.tsv",
        "1\testablished\tcolleague\temployee\n",
    );
    repo.write("handbook/leave.md", "Every employee may take leave.\n");
    repo.write("docs/hr.md", "Every employee may take leave.\n");

    // `kapi check` names the profile's file as never imported.
    let run = repo.kapi(&["check", "--format", "json"]);
    assert!(
        run.stdout.contains(".kapi/profiles/handbook/terms.tsv"),
        "{}",
        run.stdout
    );
    let imported = repo.kapi(&["store", "import"]).ok();
    assert!(
        imported
            .stdout
            .contains("imported .kapi/profiles/handbook/terms.tsv as #")
            && imported
                .stdout
                .contains(": 1 term rule, for the profile handbook\n"),
        "{}",
        imported.stdout
    );

    // The import's rules hold at the profile.
    let import = repo
        .log()
        .into_iter()
        .find(|l| l["kind"] == "import")
        .unwrap();
    assert_eq!(import["scope"]["point"]["profile"], "handbook", "{import}");

    // The handbook fails, the rest of the project does not.
    let handbook = repo.kapi(&["check", "handbook/leave.md", "--format", "json"]);
    assert_eq!(handbook.code, 1, "{}", handbook.stdout);
    let findings: Value = handbook.json();
    assert_eq!(findings["findings"][0]["matched"], "employee", "{findings}");
    let docs = repo.kapi(&["check", "docs/hr.md", "--format", "json"]);
    assert_eq!(docs.code, 0, "{}", docs.stdout);
    let here = repo
        .kapi(&["context", "handbook/leave.md", "--json"])
        .ok()
        .json();
    assert_eq!(here["point"]["profile"], "handbook");
    assert_eq!(here["rules"][0]["use"], "colleague");
    let there = repo.kapi(&["context", "docs/hr.md", "--json"]).ok().json();
    assert_eq!(there["rules"], serde_json::json!([]));

    // A profile the project has no folder for, or a name that cannot be
    // one, is refused with the entry named.
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"handbook/**\"]\nprofile = \"handbok\"\n",
    );
    let run = repo.kapi(&["check", "handbook/leave.md"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("[[points]] entry 1") && run.stderr.contains(".kapi/profiles/handbok/"),
        "{}",
        run.stderr
    );
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"handbook/**\"]\nprofile = \"../x\"\n",
    );
    let run = repo.kapi(&["check", "handbook/leave.md"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("[[points]] entry 1"), "{}", run.stderr);
}
