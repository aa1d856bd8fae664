//! What a new user trips on (issue 22): each test failed before its fix.

use crate::common::TestEnv;

fn ids(env: &TestEnv) -> Vec<String> {
    env.kapi(&["store", "export", "-"])
        .ok()
        .json_lines()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_clock_pinned_earlier_than_the_log_still_mints_past_every_id_it_holds() {
    let a = TestEnv::new();
    a.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    // A day earlier than the log's newest operation.
    let run = a
        .kapi_cmd(&["context", "note", "Dates are ISO 8601"])
        .env("KAPI_NOW", "2026-11-29T09:00:00Z")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ids = ids(&a);
    assert_eq!(ids.len(), 2);
    assert!(ids[0] < ids[1], "{ids:?}");
    let log = a.log();
    assert_eq!(log[1]["subject"]["text"], "Dates are ISO 8601");
}
