//! Arrival positions (`kapi context log --since`): a watcher polls one
//! number and sees every operation that reached this clone after it,
//! recorded here or merged in from elsewhere, even one whose id sorts
//! before what the log already held. The record is this clone's own and
//! never obeyed when it does not check out.

use serde_json::Value;

use crate::common::{TestEnv, mkfifo};
use crate::suite::sync::pair;

/// `kapi context log --since POSITION [--generation G] --json`.
fn since(env: &TestEnv, position: u64, generation: Option<&str>) -> Value {
    let position = position.to_string();
    let mut args = vec!["context", "log", "--since", position.as_str(), "--json"];
    if let Some(g) = generation {
        args.extend(["--generation", g]);
    }
    env.kapi(&args).ok().json()
}

fn ids(answer: &Value) -> Vec<String> {
    answer["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["id"].as_str().unwrap().to_owned())
        .collect()
}

fn generation(answer: &Value) -> String {
    answer["generation"].as_str().unwrap().to_owned()
}

#[test]
fn an_operation_merged_in_from_a_remote_moves_the_position_though_its_id_sorts_first() {
    let p = pair();
    // Bob records at 08:00 and pushes; Ada records at 09:00 and has not
    // pulled: Bob's operation sorts before both of hers.
    let bob =
        p.b.kapi_cmd(&[
            "context",
            "note",
            "--term",
            "Bravo",
            "--instead-of",
            "bravo",
            "--quote",
            "bravo",
            "--json",
        ])
        .env("KAPI_NOW", "2026-11-30T08:00:00Z")
        .env("KAPI_SEED", "11")
        .output()
        .unwrap();
    assert!(bob.status.success(), "{bob:?}");
    let bob: Value = serde_json::from_slice(&bob.stdout).unwrap();
    let bob = bob["id"].as_str().unwrap().to_owned();
    p.b.kapi_cmd(&["context", "sync"])
        .env("KAPI_NOW", "2026-11-30T08:00:00Z")
        .status()
        .unwrap();
    p.a.suggested_rule("Alpha", "alpha");
    p.a.suggested_rule("Charlie", "charlie");

    let first = since(&p.a, 0, None);
    assert_eq!(first["position"], 2);
    assert_eq!(first["restarted"], false);
    assert_eq!(ids(&first).len(), 2);
    let g = generation(&first);
    // Nothing new: the same position, nothing listed.
    let idle = since(&p.a, 2, Some(&g));
    assert_eq!((idle["position"].clone(), ids(&idle).len()), (2.into(), 0));

    p.a.kapi(&["context", "sync"]).ok();
    let after = since(&p.a, 2, Some(&g));
    assert_eq!(ids(&after), vec![bob.clone()], "{after}");
    assert_eq!(after["position"], 3);
    assert_eq!(after["restarted"], false);
    assert_eq!(generation(&after), g);
    // In id order Bob's operation is first: a watcher reading ids would
    // have missed it.
    let log = p.a.log();
    assert_eq!(log[0]["id"], bob.as_str());

    // One recorded here moves it the same way, and the human form ends
    // with the command to poll with.
    p.a.suggested_rule("Delta", "delta");
    let text =
        p.a.kapi(&["context", "log", "--since", "3", "--generation", &g])
            .ok()
            .stdout;
    assert!(text.contains("\"Delta\""), "{text}");
    assert!(!text.contains("\"Bravo\""), "{text}");
    assert!(
        text.contains(&format!("kapi context log --since 4 --generation {g}")),
        "{text}"
    );
    // Filters apply to what arrived.
    let kept =
        p.a.kapi(&["context", "log", "--since", "0", "--kind", "keep", "--json"]);
    let kept = kept.ok().json();
    assert_eq!((kept["position"].clone(), ids(&kept).len()), (4.into(), 0));
}

#[test]
fn another_generation_or_a_position_past_the_head_lists_everything_again() {
    let env = TestEnv::new();
    env.suggested_rule("Alpha", "alpha");
    let first = since(&env, 0, None);
    let g = generation(&first);
    for (position, generation) in [(1, Some("elsewhere")), (7, Some(g.as_str())), (7, None)] {
        let again = since(&env, position, generation);
        assert_eq!(again["restarted"], true, "{position} {generation:?}");
        assert_eq!(ids(&again), ids(&first));
        assert_eq!(again["position"], 1);
    }
    let run = env.kapi(&["context", "log", "--since", "9"]).ok();
    assert!(
        run.stderr.contains("everything is listed, from position 0"),
        "{}",
        run.stderr
    );
    // --since is its own reading: not of the past, not with histories.
    for clash in [["--as-of", "2026-11-30"], ["--history", "--json"]] {
        let mut args = vec!["context", "log", "--since", "0"];
        args.extend(clash);
        env.kapi(&args).code(2);
    }
    env.kapi(&["context", "log", "--generation", "x"]).code(2);
}

#[test]
fn a_record_that_does_not_check_out_is_started_again_never_obeyed() {
    let env = TestEnv::new();
    env.suggested_rule("Alpha", "alpha");
    env.suggested_rule("Bravo", "bravo");
    let first = since(&env, 0, None);
    let g = generation(&first);
    let file = env.join(".git/kapi/arrivals");
    let good = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let unknown = "0tzzzzzzzz0000000000zzzz";
    let forged = [
        // An id the log does not hold in place of one it does.
        format!("{}\n{}\n{unknown}\n", lines[0], lines[1]),
        // One id twice.
        format!("{}\n{}\n{}\n", lines[0], lines[1], lines[1]),
        // Not an id.
        format!("{}\n{}\nnot an operation id at all\n", lines[0], lines[1]),
        // Not a header.
        format!("something else\n{}\n{}\n", lines[1], lines[2]),
    ];
    for text in forged {
        std::fs::write(&file, &text).unwrap();
        let _ = std::fs::remove_file(env.join(".git/kapi/arrivals.tips"));
        let again = since(&env, 1, Some(&g));
        assert_eq!(again["restarted"], true, "{text}");
        assert_ne!(generation(&again), g, "{text}");
        assert_eq!(ids(&again), ids(&first), "{text}");
        assert_eq!(again["position"], 2);
        std::fs::write(&file, &good).unwrap();
        std::fs::remove_file(env.join(".git/kapi/arrivals.tips")).unwrap();
    }

    // A torn last line (a writer killed mid-append) is cut off, not a
    // reason to start over: the positions before it stand.
    std::fs::write(&file, format!("{}{}", good, &lines[1][..7])).unwrap();
    env.suggested_rule("Charlie", "charlie");
    let after = since(&env, 2, Some(&g));
    assert_eq!(after["restarted"], false, "{after}");
    assert_eq!(ids(&after).len(), 1);
    assert_eq!(after["position"], 3);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");

    // A FIFO in its place is never opened to block on: started again.
    std::fs::remove_file(&file).unwrap();
    mkfifo(&file);
    let fifo = since(&env, 3, Some(&g));
    assert_eq!(fifo["restarted"], true);
    assert_eq!(fifo["position"], 3);
}

#[test]
fn the_mcp_server_polls_the_same_position_and_sees_a_note_recorded_outside_it() {
    let env = TestEnv::new();
    env.suggested_rule("Alpha", "alpha");
    let mut server = crate::suite::mcp::initialized(&env, "watcher");
    let first = server.call(2, "context_log", serde_json::json!({"since": 0}));
    let first = &first["result"]["structuredContent"];
    assert_eq!(first["position"], 1, "{first}");
    let g = generation(first);
    // A person records from the command line while the server runs: the
    // server's next poll sees it, and only it.
    env.suggested_rule("Bravo", "bravo");
    let next = server.call(
        3,
        "context_log",
        serde_json::json!({"since": 1, "generation": g}),
    );
    let next = &next["result"]["structuredContent"];
    assert_eq!(next["position"], 2, "{next}");
    assert_eq!(next["restarted"], false);
    assert_eq!(next["operations"][0]["subject"]["use"], "Bravo", "{next}");
    assert_eq!(next["operations"].as_array().unwrap().len(), 1);
    // The command line reads the same record: one position for both.
    assert_eq!(since(&env, 2, Some(&g))["position"], 2);
}
