//! Vale rule sets as Vale reads them: the styles in `fixtures/vale`, each
//! reproducing one way the hand-written reader lost rules silently.

use std::path::Path;

use crate::common::TestEnv;

/// Copy `fixtures/vale` into the repository (styles under `styles/`).
fn with_fixture_styles(repo: &TestEnv) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vale");
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
    repo.write(
        ".vale.ini",
        "StylesPath = styles\n\n[*.md]\nBasedOnStyles = Defects\n",
    );
}

#[test]
fn every_style_vale_reads_is_imported_and_every_file_it_refuses_is_named_with_its_line() {
    let repo = TestEnv::new();
    with_fixture_styles(&repo);
    let run = repo.kapi(&["store", "import"]).code(2);
    for style in [
        "DocMarker",
        "Quoted",
        "Bom",
        "Empty",
        "Classes",
        "Space",
        "Lookaround",
    ] {
        assert!(
            run.stdout
                .contains(&format!("imported styles/Defects/{style}.yml")),
            "{style}: {}",
            run.stdout
        );
    }
    for (style, line, why) in [
        ("Unclosed", 3, "not valid YAML"),
        ("Tabs", 3, "not valid YAML"),
        ("Duplicate", 4, "twice"),
        ("List", 3, "`swap` must be a mapping"),
    ] {
        let at = format!("styles/Defects/{style}.yml: line {line}: ");
        let said = run.stderr.lines().find(|l| l.contains(&at));
        assert!(
            said.is_some_and(|l| l.contains(why)),
            "{style}: {}",
            run.stderr
        );
    }
    assert!(!run.stdout.contains("skipped"), "{}", run.stdout);

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
