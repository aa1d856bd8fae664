//! Snapshots of the human formats: stdout, stderr and exit code of a run,
//! with the temporary root written `[ROOT]`. A changed message shows as a
//! diff of a `.snap` file under `tests/suite/snapshots/`, read by a person
//! before it is accepted (`INSTA_UPDATE=always cargo test`, then read
//! `git diff`).

use serde_json::Value;

use crate::common::{Run, TestEnv};

/// The first term rules of `kapi check`'s own suite.
const TERMS: &str = "# id\tstatus\tpreferred\tavoided\n\
1\testablished\tQuickcast\tQuick cast|Quick-cast|QuickCast\n\
2\testablished\tGitHub\tGithub|Git Hub|github\n\
3\tsuggested\truntime\trun time|run-time\n\
4\tadvisory\tbackend\tback end|back-end\n";

/// Snapshot a run of `env` under `name`.
fn snap(env: &TestEnv, name: &str, run: &Run) {
    insta::assert_snapshot!(name, env.transcript(run));
}

/// The id an operation printed with `--json`.
fn id_of(run: Run) -> String {
    let op: Value = serde_json::from_str(run.ok().stdout.trim()).unwrap();
    op["id"].as_str().unwrap().to_owned()
}

/// A scripted repository: a committed page, an agent's two suggestions
/// (the first kept by Ada), and Ada's note. Returns the ids in that order.
fn scripted() -> (TestEnv, [String; 3]) {
    let repo = TestEnv::new();
    repo.write(
        "docs/intro.md",
        "# Intro\n\nTry Quick cast today.\nHosted on Supa base.\n",
    );
    repo.write("terms.tsv", TERMS);
    repo.git(&["add", "."]);
    repo.git(&["commit", "-qm", "init"]);
    let quickcast = id_of(repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &[
            "--path",
            "docs/intro.md",
            "--quote",
            "It is Quickcast",
            "--json",
        ],
    ));
    let supabase = id_of(repo.agent_term(
        "s1",
        "Supabase",
        "Supa base",
        &["--path", "docs/intro.md", "--json"],
    ));
    let note = id_of(repo.kapi(&[
        "context",
        "note",
        "The docs address the administrator",
        "--path",
        "docs/**",
        "--json",
    ]));
    repo.kapi(&["context", "review", "--keep", &quickcast[..10]])
        .ok();
    (repo, [quickcast, supabase, note])
}

#[test]
fn context_log() {
    let (repo, _) = scripted();
    snap(&repo, "context_log", &repo.kapi(&["context", "log"]));
}

#[test]
fn context_at_a_path() {
    let (repo, _) = scripted();
    snap(
        &repo,
        "context_at_a_path",
        &repo.kapi(&["context", "docs/intro.md"]),
    );
}

#[test]
fn context_review_lists_what_awaits_a_decision() {
    let (repo, _) = scripted();
    snap(&repo, "context_review", &repo.kapi(&["context", "review"]));
}

const GUIDE: &str = "# Guide\n\nQuick cast runs on Github.\nThe run time and the back end.\n";

#[test]
fn check_human_and_github_on_a_failing_file() {
    let repo = TestEnv::new();
    repo.write("terms.tsv", TERMS);
    repo.write("docs/guide.md", GUIDE);
    snap(
        &repo,
        "check_human",
        &repo.kapi(&["check", "--rules", "terms.tsv", "docs/guide.md"]),
    );
    snap(
        &repo,
        "check_github",
        &repo.kapi(&[
            "check",
            "--rules",
            "terms.tsv",
            "--format",
            "github",
            "docs/guide.md",
        ]),
    );
}

#[test]
fn check_with_the_rules_of_the_log() {
    let (repo, _) = scripted();
    repo.write("docs/guide.md", GUIDE);
    // The kept Quickcast rule and the suggested Supabase one.
    snap(&repo, "check_log_rules", &repo.kapi(&["check"]));
    // A term list stating a rule the log also states: today each source
    // reports its own finding, so "Quick cast" is reported twice.
    snap(
        &repo,
        "check_log_and_term_list",
        &repo.kapi(&["check", "--rules", "terms.tsv", "docs/guide.md"]),
    );
}

#[cfg(target_os = "linux")]
#[test]
fn store_doctor_on_a_log_with_a_bad_line() {
    use super::durability::{blob, push_segments, segment_of};
    let (repo, [quickcast, ..]) = scripted();
    let (path, old) = segment_of(&repo, &quickcast);
    let mut bytes = old.into_bytes();
    bytes.extend_from_slice(b"{\"v\":1,\"note\":\"\xff\xfe\"}\n");
    bytes.extend_from_slice(b"not json at all\n");
    let b = blob(&repo, &bytes);
    push_segments(&repo, &[(path, b)], "bad lines");
    snap(&repo, "store_doctor", &repo.kapi(&["store", "doctor"]));
}

#[test]
fn verify_context_stale() {
    use super::compiled_context::{TODAY, compile_readme, project};
    let dir = project();
    let artifact = compile_readme(&dir);
    std::fs::write(dir.join("ctx.json"), &artifact).unwrap();
    let public = dir.join("decisions/D-004-draft-freeze.md");
    std::fs::write(
        &public,
        std::fs::read_to_string(&public).unwrap() + "More.\n",
    )
    .unwrap();
    snap(
        &dir,
        "verify_context_stale",
        &dir.kapi(&["verify-context", "ctx.json", "--today", TODAY]),
    );
}

#[test]
fn errors_naming_operations() {
    let (repo, [quickcast, supabase, _]) = scripted();
    assert_eq!(quickcast[..7], supabase[..7]);
    snap(
        &repo,
        "error_unknown_id",
        &repo.kapi(&["context", "review", "--keep", "zzzzzzzz"]),
    );
    snap(
        &repo,
        "error_not_an_id",
        &repo.kapi(&["context", "review", "--keep", "not-an-id"]),
    );
    snap(
        &repo,
        "error_ambiguous_prefix",
        &repo.kapi(&["context", "review", "--keep", &supabase[..7]]),
    );
    snap(
        &repo,
        "error_agent_keeps",
        &repo.agent("s1", &["context", "review", "--keep", &supabase[..10]]),
    );
    snap(
        &repo,
        "error_agent_drops",
        &repo.agent("s1", &["context", "review", "--drop", &supabase[..10]]),
    );
}

#[test]
fn outside_a_repository() {
    let env = TestEnv::plain();
    snap(
        &env,
        "error_outside_a_repository",
        &env.kapi(&["context", "log"]),
    );
}

#[test]
fn notes_as_a_person_and_as_an_agent() {
    let repo = TestEnv::new();
    snap(
        &repo,
        "note_person",
        &repo.kapi(&["context", "note", "The docs address the administrator"]),
    );
    snap(
        &repo,
        "note_agent_term",
        &repo.agent_term(
            "s1",
            "Quickcast",
            "Quick cast",
            &["--path", "docs/intro.md"],
        ),
    );
}

#[test]
fn check_without_rules_and_with_a_bad_term_list() {
    let repo = TestEnv::new();
    repo.write("a.md", "Github\n");
    snap(&repo, "check_no_rules", &repo.kapi(&["check"]));
    repo.write("bad.tsv", "# x\n1\tmaybe\tA\tb\n");
    snap(
        &repo,
        "check_bad_term_list",
        &repo.kapi(&["check", "--rules", "bad.tsv"]),
    );
}

#[test]
fn store_doctor_on_a_sound_log() {
    let (repo, _) = scripted();
    snap(
        &repo,
        "store_doctor_sound",
        &repo.kapi(&["store", "doctor"]),
    );
}

#[test]
fn compile_context_all() {
    use super::compiled_context::{TODAY, project};
    let dir = project();
    std::fs::create_dir(dir.join(".git")).unwrap();
    dir.write(
        "kapi.toml",
        "[vault]\nroot = \"decisions\"\n\n[[compile]]\noutput = \"context/review.json\"\ntargets = [\"D-001\"]\nquery = \"review policy\"\nranking = \"bm25\"\nmax_bytes = 32768\n\n[[compile]]\noutput = \"context/all.json\"\nquery = \"review\"\nmax_sensitivity = \"restricted\"\n",
    );
    snap(
        &dir,
        "compile_context_all",
        &dir.kapi(&["compile-context", "--all", "--today", TODAY]),
    );
}
