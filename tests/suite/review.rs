//! The review round, the terminal walk, widening and the workspace,
//! through the real binary on real repositories.

use crate::common::{TestEnv, Transcript, kapi_bin};
use serde_json::Value;

/// The short id of the operation stating `term` (its form to use).
fn id_of(repo: &TestEnv, term: &str) -> String {
    repo.log()
        .iter()
        .find(|o| o["subject"]["use"] == term || o["subject"]["text"] == term)
        .unwrap_or_else(|| panic!("no operation states {term}"))["short"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn status_of(repo: &TestEnv, term: &str) -> String {
    repo.log()
        .iter()
        .find(|o| o["subject"]["use"] == term || o["subject"]["text"] == term)
        .unwrap()["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// (kind, target short id) of every decision, in log order.
fn decisions(repo: &TestEnv) -> Vec<(String, String)> {
    repo.log()
        .iter()
        .filter(|o| o["target"].is_string())
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_owned(),
                o["target"].as_str().unwrap()[..10].to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_digest_says_what_a_person_may_do_and_lists_rules_in_force() {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    let flow = id_of(&repo, "Flowkit");
    repo.kapi(&["context", "review", "--keep", &flow]).ok();
    // A person's plain correction implies no rule: nothing to decide.
    repo.kapi(&[
        "context",
        "note",
        "--from",
        "the users",
        "--to",
        "our readers",
        "--quote",
        "q",
    ])
    .ok();

    let digest = repo.kapi(&["context", "review", "--json"]).ok().json();
    let awaiting = digest["awaiting"].as_array().unwrap();
    assert_eq!(awaiting.len(), 1, "{digest}");
    assert_eq!(awaiting[0]["status"], "suggested");
    assert_eq!(
        awaiting[0]["subject"],
        r#""Quickcast", not "Quick cast", "Quick-cast", "QuickCast""#
    );
    assert_eq!(awaiting[0]["keepable"], true);
    assert_eq!(awaiting[0]["droppable"], true);
    assert_eq!(awaiting[0]["widenable"], false);
    let in_force = digest["in_force"].as_array().unwrap();
    assert_eq!(in_force.len(), 1, "{digest}");
    assert_eq!(in_force[0]["short"], flow.as_str());
    assert_eq!(in_force[0]["droppable"], true);
    assert_eq!(in_force[0]["widenable"], true);
    assert_eq!(
        digest.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["awaiting", "in_force"],
        "the correction is nowhere: {digest}"
    );

    // The same in words: what awaits, what is in force and what a person
    // may do with each; not the correction.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "review"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_contested_rule_is_kept_only_by_choosing_and_a_round_records_in_order() {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    repo.agent_term("s2", "Quick Cast", "Quickcast", &["--quote", "q"])
        .ok();
    repo.agent_term("s2", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    repo.agent_term("s2", "Supabase", "Supa base", &["--quote", "q"])
        .ok();
    let (one, other) = (id_of(&repo, "Quickcast"), id_of(&repo, "Quick Cast"));
    let (flow, supa) = (id_of(&repo, "Flowkit"), id_of(&repo, "Supabase"));

    // Keeping a contested rule without choosing is refused, naming the
    // other side, and records nothing.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "review", "--keep", &one])
        .code(3);
    assert!(decisions(&repo).is_empty());

    // One round: the flags in any order, recorded as choice, drops, keeps.
    repo.kapi(&[
        "context", "review", "--keep", &flow, "--drop", &supa, "--choose", &one,
    ])
    .ok();
    assert_eq!(
        decisions(&repo),
        [
            ("drop".to_owned(), other.clone()),
            ("keep".to_owned(), one.clone()),
            ("drop".to_owned(), supa.clone()),
            ("keep".to_owned(), flow.clone()),
        ]
    );
    assert_eq!(status_of(&repo, "Quickcast"), "established");
    assert_eq!(status_of(&repo, "Quick Cast"), "dropped");
    // A window or advice shapes a keep; alone with a drop it is a mistake.
    repo.kapi(&["context", "review", "--drop", &flow, "--advisory"])
        .code(2);
    assert_eq!(status_of(&repo, "Flowkit"), "established");
    // Choosing what nothing contests is refused.
    t.kapi(&repo, &["context", "review", "--choose", &flow])
        .code(3);
    // An agent decides nothing.
    t.agent(&repo, "s1", &["context", "review", "--drop", &flow])
        .code(4);
    t.agent(&repo, "s1", &["context", "review", "--choose", &other])
        .code(4);
    insta::assert_snapshot!(t.text());
}

#[test]
fn keep_all_keeps_a_sessions_suggestions_and_leaves_the_contested_ones() {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    repo.agent_term("s2", "Quick Cast", "Quickcast", &["--quote", "q"])
        .ok();
    repo.agent_term("s2", "Supabase", "Supa base", &["--quote", "q"])
        .ok();
    // The contested one is left for later, naming its rival.
    let mut t = Transcript::new();
    t.kapi(
        &repo,
        &["context", "review", "--session", "s1", "--keep", "all"],
    )
    .ok();
    assert_eq!(status_of(&repo, "Flowkit"), "established");
    assert_eq!(status_of(&repo, "Quickcast"), "contested");
    // Another session's suggestion is untouched.
    assert_eq!(status_of(&repo, "Supabase"), "suggested");
    // `all` needs a session; a session that recorded nothing is named.
    t.kapi(&repo, &["context", "review", "--keep", "all"])
        .code(2);
    t.kapi(
        &repo,
        &["context", "review", "--session", "nobody", "--keep", "all"],
    )
    .code(2);
    insta::assert_snapshot!(t.text());
}

/// Two suggestions, one uncontested and one contested, for a walk.
fn walk_repo() -> TestEnv {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    repo.agent_term("s1", "Supabase", "Supa base", &["--quote", "q"])
        .ok();
    repo
}

/// `kapi context review --interactive` answering `answers`, recorded.
fn walk(t: &mut Transcript, repo: &TestEnv, answers: &[u8]) -> crate::common::Run {
    t.kapi_stdin(repo, &["context", "review", "--interactive"], answers)
}

#[test]
fn the_walk_records_what_the_flags_record() {
    let walked = walk_repo();
    let mut t = Transcript::new();
    walk(&mut t, &walked, b"keep\nd\n").ok();
    insta::assert_snapshot!(t.text());

    let flagged = walk_repo();
    let (flow, supa) = (id_of(&flagged, "Flowkit"), id_of(&flagged, "Supabase"));
    flagged
        .kapi(&["context", "review", "--keep", &flow, "--drop", &supa])
        .ok();
    // The same operations, the same outcome (ids differ only by when).
    let kinds = |repo: &TestEnv| -> Vec<(String, String)> {
        decisions(repo)
            .into_iter()
            .map(|(kind, target)| {
                let subject = repo
                    .log()
                    .iter()
                    .find(|o| o["short"] == target.as_str())
                    .unwrap()["subject"]["use"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                (kind, subject)
            })
            .collect()
    };
    let mut a = kinds(&walked);
    let mut b = kinds(&flagged);
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(status_of(&walked, "Flowkit"), "established");
    assert_eq!(status_of(&walked, "Supabase"), "dropped");
}

#[test]
fn the_walk_asks_again_after_a_refusal_and_stops_on_quit() {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    repo.agent_term("s2", "Quick Cast", "Quickcast", &["--quote", "q"])
        .ok();
    repo.agent_term("s2", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    // The first item is contested: `keep` is refused (the walk says why and
    // asks again), `choose` settles it, the rival no longer waits, and
    // `quit` leaves the rest.
    let mut t = Transcript::new();
    walk(&mut t, &repo, b"keep\nchoose\nq\n").ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(status_of(&repo, "Quickcast"), "established");
    assert_eq!(status_of(&repo, "Quick Cast"), "dropped");
    assert_eq!(status_of(&repo, "Flowkit"), "suggested");
}

#[test]
fn in_a_terminal_review_walks_and_elsewhere_it_prints_the_digest() {
    let repo = walk_repo();
    // Piped: the digest, no question.
    let mut t = Transcript::new();
    t.kapi_stdin(&repo, &["context", "review"], b"keep\n").ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(status_of(&repo, "Flowkit"), "suggested");
    // In a pseudo-terminal (util-linux `script`): the walk.
    if cfg!(target_os = "linux") {
        in_a_pseudo_terminal(&repo);
    }
}

/// `kapi context review` with stdin and stdout on a pseudo-terminal that
/// util-linux's `script` opens: it walks and asks.
fn in_a_pseudo_terminal(repo: &TestEnv) {
    let command = format!("{} context review", kapi_bin().display());
    let mut script = std::process::Command::new("script");
    repo.isolate(&mut script);
    script
        .env("KAPI_NOW", crate::common::NOW)
        .env("KAPI_SEED", crate::common::SEED)
        .args(["-qec", &command, "/dev/null"]);
    let out = crate::common::piped_output(script, b"keep\nskip\n");
    // What a terminal shows (the answers echoed, CRLF, timing) is no
    // snapshot's business: only that it asked.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[k]eep / [r]eplace / [d]rop"), "{stdout}");
    assert_eq!(status_of(repo, "Flowkit"), "established");
    assert_eq!(status_of(repo, "Supabase"), "suggested");
}

/// A project whose `[[points]]` set product and channel, with the same
/// wrong wording in three places.
fn points_repo() -> TestEnv {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[points]]\npaths = [\"docs/app/**\"]\naxes = { product = \"quickcast\", channel = \"app\" }\n\n\
         [[points]]\npaths = [\"docs/web/**\"]\naxes = { product = \"quickcast\", channel = \"web\" }\n\n\
         [[points]]\npaths = [\"docs/other/**\"]\naxes = { product = \"other\", channel = \"app\" }\n",
    );
    for file in ["docs/app/a.md", "docs/web/b.md", "docs/other/c.md"] {
        repo.write(file, "Open Quick cast.\n");
    }
    repo.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &["--path", "docs/app/a.md"],
    )
    .ok();
    repo
}

fn failing_paths(repo: &TestEnv) -> Vec<String> {
    let run = repo.kapi(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let mut paths: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["suggested"] != true)
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn widening_nests_from_an_axis_to_the_project() {
    let repo = points_repo();
    let id = id_of(&repo, "Quickcast");
    // An agent widens nothing: a person does.
    let mut t = Transcript::new();
    t.agent(
        &repo,
        "s1",
        &["context", "review", "--keep", &id, "--widen-to", "channel"],
    )
    .code(4);
    // A widen names a rule in force; a suggestion is kept and widened in
    // one step (--keep).
    let widen = ["context", "review", "--widen", &id, "--widen-to", "channel"];
    t.kapi(&repo, &widen).code(3);
    t.kapi(
        &repo,
        &["context", "review", "--keep", &id, "--widen-to", "channel"],
    )
    .ok();
    assert_eq!(failing_paths(&repo), ["docs/app/a.md", "docs/web/b.md"]);
    // Widening on an axis the rule no longer holds at is refused.
    t.kapi(&repo, &widen).code(3);
    insta::assert_snapshot!(t.text());

    // A rule in force widens to the project: every product.
    repo.kapi(&["context", "review", "--widen", &id, "--widen-to", "project"])
        .ok();
    assert_eq!(
        failing_paths(&repo),
        ["docs/app/a.md", "docs/other/c.md", "docs/web/b.md"]
    );
    assert_eq!(
        decisions(&repo)
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| *k != "signal")
            .collect::<Vec<_>>(),
        ["keep", "widen", "widen"]
    );
    let web = repo
        .kapi(&["context", "docs/web/b.md", "--json"])
        .ok()
        .json();
    assert_eq!(web["rules"][0]["use"], "Quickcast", "{web}");
}

#[test]
fn a_note_widens_at_most_to_its_project() {
    let repo = points_repo();
    repo.kapi(&[
        "context",
        "note",
        "The app pages address the administrator",
        "--path",
        "docs/app/a.md",
    ])
    .ok();
    let note = id_of(&repo, "The app pages address the administrator");
    let before = repo.log().len();
    let mut t = Transcript::new();
    let keep = |to| ["context", "review", "--keep", &note, "--widen-to", to];
    t.kapi(&repo, &keep("workspace")).code(3);
    assert_eq!(repo.log().len(), before, "nothing recorded");
    t.kapi(&repo, &keep("project")).ok();
    insta::assert_snapshot!(t.text());
    let other = repo
        .kapi(&["context", "docs/other/c.md", "--json"])
        .ok()
        .json();
    assert_eq!(
        other["notes"][0]["note"],
        "The app pages address the administrator"
    );
}

#[test]
fn a_rule_widened_to_the_workspace_holds_in_every_registered_repository() {
    let deciding = TestEnv::new();
    let other = deciding.sibling("other");
    other.write("guide.md", "Open Quick cast.\n");
    // Recording from a checkout registers it (in HOME's data directory).
    other
        .kapi(&["context", "note", "The guide addresses operators"])
        .ok();
    let registry = deciding
        .root()
        .join("home/.local/share/kapi/repositories.jsonl");
    let registered = |env: &TestEnv| {
        std::fs::read_to_string(&registry)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .any(|r| r["path"] == env.path().to_str().unwrap())
    };
    assert!(registered(&other));
    other.kapi(&["check"]).ok();

    deciding.write("a.md", "Quickcast\n");
    deciding
        .agent_term("s1", "Quickcast", "Quick cast", &["--path", "a.md"])
        .ok();
    let id = id_of(&deciding, "Quickcast");
    // A person's widening to the workspace in this checkout is their
    // choice that it shares its workspace rules on this machine: it says
    // so.
    let mut t = Transcript::new();
    t.kapi(
        &deciding,
        &[
            "context",
            "review",
            "--keep",
            &id,
            "--widen-to",
            "workspace",
        ],
    )
    .ok();
    // The widened rule is in the deciding project's log, and the other
    // repository's check reads it from there.
    let widen = deciding
        .log()
        .into_iter()
        .find(|o| o["kind"] == "widen")
        .unwrap();
    assert_eq!(widen["scope"]["workspace"], true, "{widen}");
    // The check fails on "Quick cast"; what applies and the search name
    // where the rule came from: the project and its checkout.
    t.kapi(&other, &["check"]).code(1);
    t.kapi(&other, &["context", "guide.md"]).ok();
    t.kapi(&other, &["context", "search", "quick cast"]).ok();

    // A project rule takes precedence over a workspace rule for the same term.
    other
        .agent_term("s9", "Quickcast", "Quick cast", &["--path", "guide.md"])
        .ok();
    let mine = id_of(&other, "Quickcast");
    other
        .kapi(&["context", "review", "--keep", &mine, "--advisory"])
        .ok();
    other.kapi(&["check"]).ok();
    t.comment("other keeps its own Quickcast rule, advisory");
    t.kapi(&other, &["context", "guide.md"]).ok();
    insta::assert_snapshot!(t.text());

    // A checkout that only merged the deciding project's log (an export
    // imported) is registered too, and carries the rule to the others once
    // a person shares it.
    let copy = deciding.sibling("copy");
    let exported = deciding.root().join("ops.jsonl");
    deciding
        .kapi(&["store", "export", exported.to_str().unwrap()])
        .ok();
    copy.kapi(&["store", "import", exported.to_str().unwrap()])
        .ok();
    assert!(registered(&copy));
    copy.kapi(&["workspace", "add"]).ok();
    let found = other
        .kapi(&["context", "search", "quick cast", "--json"])
        .ok()
        .json();
    assert_eq!(
        found["workspace"].as_array().unwrap().len(),
        1,
        "once: {found}"
    );

    // A person drops the widened rule, and the drop travels to the copy:
    // the other checkouts stop reading it (what each log widens is cached
    // until that log changes).
    deciding.kapi(&["context", "review", "--drop", &id]).ok();
    deciding
        .kapi(&["store", "export", exported.to_str().unwrap()])
        .ok();
    copy.kapi(&["store", "import", exported.to_str().unwrap()])
        .ok();
    let found = other
        .kapi(&["context", "search", "quick cast", "--json"])
        .ok()
        .json();
    assert_eq!(found["workspace"], serde_json::json!([]), "{found}");
    assert!(
        deciding
            .root()
            .join("home/.cache/kapi/workspace")
            .read_dir()
            .unwrap()
            .next()
            .is_some()
    );

    // XDG_DATA_HOME, when set, is where the registry lives.
    let elsewhere = deciding.root().join("data");
    let run = deciding
        .kapi_cmd(&["context", "note", "Another note"])
        .env("XDG_DATA_HOME", &elsewhere)
        .output()
        .unwrap();
    assert!(run.status.success());
    assert!(elsewhere.join("kapi/repositories.jsonl").is_file());
}

#[test]
fn context_help_lists_a_persons_verbs_and_the_assistants_under_their_own_heading() {
    let repo = TestEnv::new();
    // Commands: search, review, reset, sync…; For assistants: note, log.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "--help"]).ok();
    insta::assert_snapshot!(t.text());
    // Hidden from the list, they still run.
    repo.kapi(&["context", "log"]).ok();
    repo.kapi(&["context", "note", "--help"]).ok();
}

#[test]
fn search_lists_the_rules_and_notes_that_mention_a_text() {
    let repo = TestEnv::new();
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "q"])
        .ok();
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    repo.kapi(&["context", "note", "Say Quickcast in titles too"])
        .ok();
    let found = repo
        .kapi(&["context", "search", "QUICK CAST", "--json"])
        .ok()
        .json();
    assert_eq!(found["rules"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["rules"][0]["use"], "Quickcast");
    assert_eq!(found["notes"], serde_json::json!([]));
    // The rule and the note, not Flowkit; a text nothing mentions; a blank
    // one is a usage error.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "search", "quickcast"]).ok();
    t.kapi(&repo, &["context", "search", "zebra"]).ok();
    t.kapi(&repo, &["context", "search", " "]).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn the_walk_widens_as_the_flags_do() {
    let repo = points_repo();
    let mut t = Transcript::new();
    walk(&mut t, &repo, b"w\nchannel\n").ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(failing_paths(&repo), ["docs/app/a.md", "docs/web/b.md"]);
}

#[test]
fn keep_all_widens_what_it_can_and_leaves_the_rest_where_it_holds() {
    let repo = points_repo();
    repo.agent_term("s1", "Flowkit", "Flow kit", &["--quote", "q"])
        .ok();
    let run = repo
        .kapi(&[
            "context",
            "review",
            "--session",
            "s1",
            "--keep",
            "all",
            "--widen-to",
            "channel",
        ])
        .ok();
    let kinds: Vec<String> = decisions(&repo).into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["keep", "keep", "widen"], "{}", run.stdout);
    assert_eq!(status_of(&repo, "Flowkit"), "established");
    assert_eq!(failing_paths(&repo), ["docs/app/a.md", "docs/web/b.md"]);
    // Named one by one, a widening that changes nothing is refused.
    let flow = id_of(&repo, "Flowkit");
    repo.kapi(&[
        "context",
        "review",
        "--widen",
        &flow,
        "--widen-to",
        "channel",
    ])
    .code(3);
}
