//! `kapi context atlas --html`: the atlas as one self-contained web page,
//! through the real binary on a real git repository, then opened in
//! headless Chromium by tests/atlas/test_atlas_page.py (issue 29): the
//! rules table, its filters, a rule's chain on the timeline, the places
//! tree and the digest against the fixture log; no request leaves the
//! file, no console error, nothing from a hostile log runs; a screenshot
//! of each view.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::axes::{at, typed_repo};
use crate::common::TestEnv;

fn id(run: crate::common::Run) -> String {
    run.ok().json()["id"].as_str().unwrap().to_owned()
}

/// A rule text that would run if the page put it in as markup.
const HOSTILE_USE: &str = "</script><script>window.pwned=1</script><!--";
const HOSTILE_AVOID: &str = "<img src=x onerror=\"window.pwned=2\">";
const NOTE: &str =
    "The Nordic pages address the administrator\u{2028}and nobody else & <b>no</b> one";

/// The fixture log: a rule kept in the Oslo pages for December, a note in
/// the Nordic pages, a rival rule dropped in Bergen, a hostile suggestion,
/// and two suggestions that disagree.
struct Fixture {
    repo: TestEnv,
    quick: String,
    note: String,
    rival: String,
    hostile: String,
    sign_in: String,
    log_in: String,
}

fn fixture() -> Fixture {
    let repo = typed_repo();
    let quick = id(repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &[
            "--path",
            "docs/oslo/a.md",
            "--valid-from",
            "2026-12-01",
            "--valid-to",
            "2027-01-01",
            "--json",
        ],
    ));
    at(
        &repo,
        "2026-11-30T10:00:00Z",
        &["context", "review", "--keep", &quick[..10]],
    )
    .ok();
    let note = id(repo.agent(
        "s1",
        &[
            "context",
            "note",
            NOTE,
            "--path",
            "docs/nordics/a.md",
            "--json",
        ],
    ));
    let rival = id(repo.agent_term(
        "s2",
        "Fastcast",
        "Quick cast",
        &["--path", "docs/bergen/a.md", "--json"],
    ));
    at(
        &repo,
        "2026-11-30T11:00:00Z",
        &["context", "review", "--drop", &rival[..10]],
    )
    .ok();
    let plain = ["--path", "docs/plain/a.md", "--json"];
    let hostile = id(repo.agent_term("s3", HOSTILE_USE, HOSTILE_AVOID, &plain));
    let sign_in = id(repo.agent_term("s4", "sign in", "login", &plain));
    let log_in = id(repo.agent_term("s5", "log in", "login", &plain));
    Fixture {
        repo,
        quick,
        note,
        rival,
        hostile,
        sign_in,
        log_in,
    }
}

/// Where the screenshots go: `KAPI_ATLAS_SHOTS`, else `dir`.
fn shots_dir(dir: &Path) -> PathBuf {
    std::env::var_os("KAPI_ATLAS_SHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("shots"))
}

/// The Python that has Playwright and Pillow (`KAPI_ATLAS_PYTHON`, else the
/// virtual environment ci/run makes, else `python3`) and Chromium
/// (`CHROMIUM`, else /usr/bin/chromium); why not, when either is missing.
fn browser() -> Result<(PathBuf, PathBuf), String> {
    let chromium: PathBuf = std::env::var_os("CHROMIUM")
        .map(Into::into)
        .unwrap_or_else(|| "/usr/bin/chromium".into());
    if !chromium.exists() {
        return Err(format!(
            "no Chromium at {} (ci/run installs it: apt-get install chromium)",
            chromium.display()
        ));
    }
    let venv =
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/kapi-venv/bin/python3"));
    let candidates: Vec<PathBuf> = std::env::var_os("KAPI_ATLAS_PYTHON")
        .map(Into::into)
        .into_iter()
        .chain(venv.filter(|p| p.exists()))
        .chain(std::iter::once("python3".into()))
        .collect();
    for python in &candidates {
        let imports = Command::new(python)
            .args(["-c", "import playwright.sync_api, PIL"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if imports.is_ok_and(|s| s.success()) {
            return Ok((python.clone(), chromium));
        }
    }
    Err(format!(
        "none of {candidates:?} can import Playwright and Pillow (ci/run installs them: ~/.cache/kapi-venv/bin/pip install playwright pillow)"
    ))
}

#[test]
fn the_atlas_page_draws_the_log_in_headless_chromium() {
    let f = fixture();
    let repo = &f.repo;
    let page = repo.root().join("atlas.html");
    let made = "2026-11-30T12:00:00Z";
    let run = at(
        repo,
        made,
        &["context", "atlas", "--html", page.to_str().unwrap()],
    )
    .ok();
    assert!(
        run.stdout.contains("wrote the atlas page to"),
        "{}",
        run.stdout
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // One file: its script and style inline, nothing it would fetch.
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..200]);
    assert!(html.contains("Content-Security-Policy"));
    for fetch in [
        "<link",
        "<img",
        "<iframe",
        "src=\"",
        "href=\"http",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(fetch), "the page names {fetch}");
    }
    // The hostile text never appears raw: the data block escapes it.
    assert!(!html.contains(HOSTILE_USE));
    assert!(!html.contains("<img"));
    assert!(!html.contains('\u{2028}'));
    assert_eq!(html.matches("</script>").count(), 2, "two script blocks");
    // The same page on stdout.
    let stdout = at(repo, made, &["context", "atlas", "--html", "-"]).ok();
    assert_eq!(stdout.stdout, html);

    let tip = repo.git(&["rev-parse", "refs/kapi/ops"]);
    let short = |id: &str| id[..10].to_owned();
    let expect = json!({
        "subjects": [&f.quick, &f.note, &f.rival, &f.hostile, &f.sign_in, &f.log_in],
        "status": {
            &f.quick: "established", &f.note: "suggested", &f.rival: "dropped",
            &f.hostile: "suggested", &f.sign_in: "contested", &f.log_in: "contested",
        },
        "established": [&f.quick],
        "quick": &f.quick,
        "rival": &f.rival,
        "within_no": [&f.quick, &f.rival],
        "by_ada": [&f.quick, &f.rival],
        "hostile": {"id": &f.hostile, "use": HOSTILE_USE, "avoid": HOSTILE_AVOID},
        "note": {"id": &f.note, "text": NOTE},
        "tip": tip,
        "made_at": "2026-11-30 12:00Z",
        "awaiting": [&f.note, &f.hostile, &f.sign_in, &f.log_in],
        "commands": [
            format!("kapi context review --keep {}", short(&f.hostile)),
            format!("kapi context review --keep {} --replace-use FORM", short(&f.hostile)),
            format!("kapi context review --drop {}", short(&f.hostile)),
            format!("kapi context review --keep {} --widen-to project", short(&f.note)),
            format!("kapi context review --choose {}", short(&f.sign_in)),
            format!("kapi context review --choose {}", short(&f.log_in)),
        ],
    });
    let (python, chromium) = match browser() {
        Ok(found) => found,
        Err(why) => {
            println!("skipped the browser checks: {why}");
            return;
        }
    };
    let shots = shots_dir(repo.root());
    std::fs::create_dir_all(&shots).unwrap();
    let expect_path = repo.root().join("expect.json");
    std::fs::write(&expect_path, expect.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/atlas/test_atlas_page.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .arg(&page)
        .arg(&expect_path)
        .arg(&shots)
        .env("CHROMIUM", &chromium);
    let run = crate::common::within_deadline(cmd, b"");
    assert_eq!(
        run.code, 0,
        "the browser checks failed\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    for view in ["rules", "history", "where", "review"] {
        assert!(shots.join(format!("{view}.png")).exists(), "{view}.png");
    }
}

#[test]
fn the_atlas_reads_the_past_with_as_of() {
    let f = fixture();
    // Before the keep at 10:00, the Quickcast rule was a suggestion.
    let past = at(
        &f.repo,
        "2026-11-30T12:00:00Z",
        &[
            "context",
            "atlas",
            "--json",
            "--as-of",
            "2026-11-30T09:30:00Z",
        ],
    )
    .ok()
    .json();
    assert_eq!(past["as_of"], "2026-11-30T09:30:00.000Z");
    let subjects = past["subjects"].as_array().unwrap();
    let quick = subjects
        .iter()
        .find(|s| s["id"] == f.quick.as_str())
        .unwrap();
    assert_eq!(quick["status"], "suggested");
    assert_eq!(quick["history"].as_array().unwrap().len(), 1);
    assert!(
        past["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["at"].as_str().unwrap() <= "2026-11-30T09:30:00.000Z")
    );
    // Now there is no as_of, and the page of the past says which instant.
    let now = f.repo.kapi(&["context", "atlas", "--json"]).ok().json();
    assert_eq!(now.get("as_of"), None::<&Value>);
    let html = at(
        &f.repo,
        "2026-11-30T12:00:00Z",
        &[
            "context",
            "atlas",
            "--html",
            "-",
            "--as-of",
            "2026-11-30T09:30:00Z",
        ],
    )
    .ok()
    .stdout;
    let start = html.find("id=\"atlas-data\">").unwrap() + "id=\"atlas-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data["as_of"], "2026-11-30T09:30:00.000Z");
    assert_eq!(data["made_at"], "2026-11-30T12:00:00.000Z");
    // The digest of then: the Quickcast suggestion awaited a decision.
    let awaiting: Vec<&str> = data["digest"]["awaiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(awaiting.contains(&f.quick.as_str()), "{awaiting:?}");
    assert_eq!(data["atlas"]["as_of"], "2026-11-30T09:30:00.000Z");
}

#[test]
fn a_page_written_to_a_folder_or_with_json_is_refused_and_writes_nothing() {
    let repo = typed_repo();
    std::fs::create_dir(repo.join("out")).unwrap();
    let run = repo.kapi(&["context", "atlas", "--html", "out"]).code(2);
    assert!(run.stderr.contains("is a folder"), "{}", run.stderr);
    repo.kapi(&["context", "atlas", "--html", "x.html", "--json"])
        .code(2);
    assert!(!repo.join("x.html").exists());
    let run = repo
        .kapi(&[
            "context",
            "atlas",
            "--html",
            "x.html",
            "--as-of",
            "yesterday",
        ])
        .code(2);
    assert!(run.stderr.contains("--as-of"), "{}", run.stderr);
    // A page into a folder that is not there: a usage error, nothing left.
    let run = repo
        .kapi(&["context", "atlas", "--html", "missing/atlas.html"])
        .code(2);
    assert!(run.stderr.contains("missing/atlas.html"), "{}", run.stderr);
}

#[test]
fn the_ci_step_publishes_the_atlas_of_the_synced_log() {
    let (p, legal, before, after) = super::sync::pushed_suggestion();
    let ci = TestEnv::clone_of(&p.remote, "Ada", "ada@example.com");
    let site = ci.root().join("site/atlas");
    let run = ci
        .kapi(&[
            "ci",
            "after-push",
            &before,
            &after,
            "--json",
            "--atlas",
            site.to_str().unwrap(),
        ])
        .ok();
    // The step's report stays one JSON document; the page is said on stderr.
    run.json();
    assert!(run.stderr.contains("index.html"), "{}", run.stderr);
    // The page and the document hold the log as the step left it: the
    // suggestion the merge established.
    let doc: Value =
        serde_json::from_slice(&std::fs::read(site.join("atlas.json")).unwrap()).unwrap();
    let rule = doc["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == legal.as_str())
        .unwrap_or_else(|| panic!("{legal} in {doc}"));
    assert_eq!(rule["status"], "established");
    let page = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(page.contains(&legal), "the page holds the rule");
    // A folder the step cannot create is an error, after the sync.
    std::fs::write(ci.root().join("file"), "").unwrap();
    let blocked = ci.root().join("file/atlas");
    let run = ci.kapi(&[
        "ci",
        "after-push",
        &before,
        &after,
        "--atlas",
        blocked.to_str().unwrap(),
    ]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("cannot create"), "{}", run.stderr);
}
