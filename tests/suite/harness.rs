//! The harness itself: what every command of a `TestEnv` sees (read
//! through `env`, hence Unix only).
#![cfg(unix)]

use std::collections::BTreeMap;
use std::process::Command;

use crate::common::{GIT_DATE, NOW, SEED, TestEnv};

/// The environment `env` prints when run as `cmd` would run.
fn environment_of(env: &TestEnv, cmd: &Command) -> BTreeMap<String, String> {
    let mut probe = Command::new("env");
    env.isolate(&mut probe);
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => probe.env(name, value),
            None => probe.env_remove(name),
        };
    }
    let out = probe.output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[test]
fn commands_see_only_the_pinned_kapi_and_git_variables() {
    let env = TestEnv::new();
    let seen = environment_of(&env, &env.kapi_cmd(&[]));
    let kapi: Vec<_> = seen.keys().filter(|k| k.starts_with("KAPI_")).collect();
    assert_eq!(kapi, ["KAPI_NOW", "KAPI_SEED"]);
    assert_eq!(
        (seen["KAPI_NOW"].as_str(), seen["KAPI_SEED"].as_str()),
        (NOW, SEED)
    );
    let git: Vec<_> = seen.keys().filter(|k| k.starts_with("GIT_")).collect();
    assert_eq!(
        git,
        [
            "GIT_AUTHOR_DATE",
            "GIT_CEILING_DIRECTORIES",
            "GIT_COMMITTER_DATE",
            "GIT_CONFIG_NOSYSTEM"
        ]
    );
    assert_eq!(seen["GIT_AUTHOR_DATE"], GIT_DATE);
    assert_eq!(
        seen["GIT_CEILING_DIRECTORIES"],
        env.root().to_str().unwrap()
    );
    assert_eq!(seen["HOME"], env.root().join("home").to_str().unwrap());
    assert_eq!(seen["XDG_CONFIG_HOME"], seen["HOME"]);
    assert!(!seen.contains_key("CLAUDECODE") && !seen.contains_key("EMAIL"));
    assert!(!seen.contains_key("COLUMNS"), "help wraps the same for all");
    // git commands get the same clock and seed, for the hooks they run.
    let seen_by_git = environment_of(&env, &env.git_cmd(&[]));
    for name in ["KAPI_NOW", "KAPI_SEED", "PATH"] {
        assert_eq!(seen_by_git.get(name), seen.get(name), "{name}");
    }
}

#[test]
fn a_plain_folder_is_in_no_repository_and_a_repository_is_its_own() {
    let plain = TestEnv::plain();
    let out = plain.git_cmd(&["rev-parse", "--git-dir"]).output().unwrap();
    assert!(!out.status.success());
    let repo = TestEnv::new();
    assert_eq!(
        repo.git(&["rev-parse", "--show-toplevel"]),
        repo.path().to_str().unwrap()
    );
    assert_eq!(repo.git(&["config", "user.name"]), "Ada");
}
