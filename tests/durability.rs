//! Durability through the real binary: writers killed or stopped at every
//! step of an append, hostile content pushed to `refs/kapi/ops`, export to
//! what a path really is, and actor detection that fails closed.
#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Repo, Run};
use serde_json::Value;

/// The points `KAPI_FAULT` can name, in the order a writer reaches them.
const POINTS: &[&str] = &[
    "journaled",
    "objects-written",
    "ref-locked",
    "ref-moved",
    "compact-written",
    "compacted",
];

/// An agent's note, started in the background, with real clock and seed.
fn spawn_note(repo: &Repo, text: &str, env: &[(&str, &str)]) -> Child {
    let mut cmd = repo.kapi_cmd(&["context", "note", text, "--json"]);
    cmd.env_remove("KAPI_NOW")
        .env_remove("KAPI_SEED")
        .env("KAPI_AGENT", "stress")
        .env("KAPI_SESSION", "s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// The id a finished note printed, if it exited 0 (acknowledged).
fn acknowledged(child: Child) -> (Option<String>, Run) {
    let run: Run = child.wait_with_output().unwrap().into();
    let id = (run.code == 0).then(|| {
        let op: Value = serde_json::from_str(run.stdout.trim()).expect("a JSON record");
        op["id"].as_str().unwrap().to_owned()
    });
    (id, run)
}

fn signal(pid: u32, sig: &str) {
    Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
}

/// Wait until a process is stopped (state T) at its fault point.
fn wait_stopped(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        if state == Some("T") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} never stopped: {stat}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn ids_in_log(repo: &Repo) -> BTreeSet<String> {
    repo.kapi(&["context", "log", "--json"])
        .ok()
        .json_lines()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

fn fsck_clean(repo: &Repo) {
    let out = Command::new("git")
        .args(["fsck", "--no-dangling", "--no-progress"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git fsck: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_writer_stopped_then_killed_at_any_step_loses_no_acknowledged_note() {
    for point in POINTS {
        let repo = Repo::new();
        repo.kapi(&["context", "note", "A first note"]).ok();
        // The victim stops at the point, holding whatever it holds there;
        // others append meanwhile, then the victim is killed.
        let victim = spawn_note(
            &repo,
            "the victim",
            &[("KAPI_FAULT", &format!("{point}:stop"))],
        );
        wait_stopped(victim.id());
        let others: Vec<Child> = (0..4)
            .map(|n| {
                spawn_note(
                    &repo,
                    &format!("note {n} beside {point}"),
                    &[("KAPI_LOCK_TIMEOUT_MS", "60000")],
                )
            })
            .collect();
        std::thread::sleep(Duration::from_millis(400));
        signal(victim.id(), "-KILL");
        let (victim_id, _) = acknowledged(victim);
        assert_eq!(victim_id, None, "a killed writer acknowledged nothing");
        let mut acked = Vec::new();
        for child in others {
            let (id, run) = acknowledged(child);
            acked.push(id.unwrap_or_else(|| panic!("at {point}: {}", run.stderr)));
        }
        let held = ids_in_log(&repo);
        for id in &acked {
            assert!(
                held.contains(id),
                "at {point}: acknowledged {id} is missing"
            );
        }
        // The next write succeeds, nothing is left wedged, git agrees.
        repo.kapi(&["context", "note", "After the crash"]).ok();
        assert_eq!(ids_in_log(&repo).len(), held.len() + 1, "at {point}");
        fsck_clean(&repo);
        assert!(
            !repo.path().join(".git/refs/kapi/ops.lock").exists(),
            "at {point}: the abandoned ref lock was recovered"
        );
    }
}

#[test]
fn concurrent_writers_killed_at_random_keep_every_acknowledged_note() {
    let writers: usize = std::env::var("KAPI_STRESS_WRITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let rounds: usize = std::env::var("KAPI_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let repo = Repo::new();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut acked, mut kills, mut started) = (Vec::new(), 0usize, 0usize);
    for round in 0..rounds {
        let mut children = Vec::new();
        for w in 0..writers {
            // Some writers die while compacting or moving the ref; the rest
            // may be killed from outside at a random moment.
            let point = POINTS[(random() % POINTS.len() as u64) as usize];
            let fault = (random() % 4 == 0).then(|| point.to_owned());
            let mut env = vec![("KAPI_LOCK_TIMEOUT_MS", "60000".to_owned())];
            if let Some(p) = &fault {
                env.push(("KAPI_FAULT", p.clone()));
            }
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            children.push(spawn_note(
                &repo,
                &format!("round {round} writer {w}"),
                &env,
            ));
            started += 1;
        }
        std::thread::sleep(Duration::from_millis(random() % 30));
        let victim = (random() % writers as u64) as usize;
        signal(children[victim].id(), "-KILL");
        for child in children {
            let (id, run) = acknowledged(child);
            match id {
                Some(id) => acked.push(id),
                None => {
                    kills += 1;
                    assert!(
                        run.code == -1 || run.stderr.is_empty(),
                        "a writer that was not killed failed: {}",
                        run.stderr
                    );
                }
            }
        }
    }
    let held = ids_in_log(&repo);
    let present = acked.iter().filter(|id| held.contains(*id)).count();
    eprintln!(
        "stress: {writers} writers x {rounds} rounds: {started} started, {kills} killed, {} acknowledged, {present} present",
        acked.len()
    );
    assert_eq!(present, acked.len(), "every acknowledged note is present");
    assert!(!acked.is_empty());
    repo.kapi(&["context", "note", "After the storm"]).ok();
    fsck_clean(&repo);
}

#[test]
fn a_stopped_writer_holding_the_journal_lock_makes_others_give_up_within_the_bound() {
    let repo = Repo::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    // compact-written is reached under the journal lock.
    let victim = spawn_note(&repo, "victim", &[("KAPI_FAULT", "compact-written:stop")]);
    wait_stopped(victim.id());
    let start = Instant::now();
    let run: Run = repo
        .kapi_cmd(&["context", "note", "blocked"])
        .env("KAPI_LOCK_TIMEOUT_MS", "300")
        .output()
        .unwrap()
        .into();
    assert!(start.elapsed() < Duration::from_secs(20));
    let run = run.code(5);
    assert!(
        run.stderr.contains("journal.lock")
            && run
                .stderr
                .contains(&format!("held by process {}", victim.id()))
            && run.stderr.contains("nothing was recorded"),
        "{}",
        run.stderr
    );
    signal(victim.id(), "-KILL");
    acknowledged(victim);
    assert!(
        !repo
            .kapi(&["context", "log"])
            .ok()
            .stdout
            .contains("blocked")
    );
    repo.kapi(&["context", "note", "after"]).ok();
}

#[test]
fn a_stopped_writer_holding_the_commit_lock_leaves_others_journaled_and_saying_so() {
    let repo = Repo::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let victim = spawn_note(&repo, "victim", &[("KAPI_FAULT", "ref-moved:stop")]);
    wait_stopped(victim.id());
    let run: Run = repo
        .kapi_cmd(&["context", "note", "waiting"])
        .env("KAPI_LOCK_TIMEOUT_MS", "300")
        .output()
        .unwrap()
        .into();
    let run = run.code(5);
    assert!(
        run.stderr.contains("is in the journal")
            && run.stderr.contains("must not be recorded again")
            && run.stderr.contains(&format!("by process {}", victim.id())),
        "{}",
        run.stderr
    );
    // A reader sees the journaled note although it cannot commit it.
    let log = repo.kapi(&["context", "log"]).ok().stdout;
    assert!(log.contains("waiting"), "{log}");
    signal(victim.id(), "-KILL");
    acknowledged(victim);
    repo.kapi(&["context", "note", "after"]).ok();
    let log = repo.kapi(&["context", "log"]).ok().stdout;
    assert!(log.contains("waiting") && log.contains("after"), "{log}");
    let on_ref = repo.git(&["log", "--format=%s", "refs/kapi/ops"]);
    assert!(on_ref.lines().count() >= 2, "{on_ref}");
}

#[test]
fn a_foreign_ref_lock_is_never_removed_and_is_named() {
    let repo = Repo::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let lock = repo.path().join(".git/refs/kapi/ops.lock");
    std::fs::write(&lock, "0123456789012345678901234567890123456789\n").unwrap();
    let run = repo
        .kapi_cmd(&["context", "note", "second"])
        .env("KAPI_LOCK_TIMEOUT_MS", "200")
        .output()
        .unwrap();
    let run = Run::from(run).code(5);
    assert!(
        run.stderr.contains("ops.lock exists") && run.stderr.contains("is in the journal"),
        "{}",
        run.stderr
    );
    assert!(lock.exists(), "another program's lock stays");
    let doctor = repo.kapi(&["store", "doctor"]).code(1);
    assert!(
        doctor.stdout.contains("a ref lock kapi did not write"),
        "{}",
        doctor.stdout
    );
    std::fs::remove_file(&lock).unwrap();
    repo.kapi(&["context", "note", "third"]).ok();
    let log = repo.kapi(&["context", "log"]).ok().stdout;
    assert!(log.contains("second") && log.contains("third"), "{log}");
}

#[test]
fn temporary_files_of_killed_writers_are_swept_and_fresh_ones_kept() {
    let repo = Repo::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let objects = repo.path().join(".git/objects");
    let old = objects.join(".tmpKILLED");
    let fresh = objects.join(".tmpLIVE");
    std::fs::write(&old, b"half an object").unwrap();
    std::fs::write(&fresh, b"a live writer's object").unwrap();
    Command::new("touch")
        .args(["-d", "1 hour ago"])
        .arg(&old)
        .status()
        .unwrap();
    let doctor = repo.kapi(&["store", "doctor"]).code(1);
    assert!(doctor.stdout.contains(".tmpKILLED"), "{}", doctor.stdout);
    assert!(!doctor.stdout.contains(".tmpLIVE"), "{}", doctor.stdout);
    let repaired = repo.kapi(&["store", "doctor", "--repair"]).ok();
    assert!(repaired.stdout.contains("removed"), "{}", repaired.stdout);
    assert!(!old.exists() && fresh.exists());
    // The next committing writer sweeps too (once the last sweep is old).
    std::fs::write(&old, b"again").unwrap();
    for f in [&old, &repo.path().join(".git/kapi/swept")] {
        Command::new("touch")
            .args(["-d", "1 hour ago"])
            .arg(f)
            .status()
            .unwrap();
    }
    repo.kapi(&["context", "note", "sweeps"]).ok();
    assert!(!old.exists() && fresh.exists());
}
