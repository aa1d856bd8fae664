//! Durability through the real binary: writers killed or stopped at every
//! step of an append, hostile content pushed to `refs/kapi/ops`, export to
//! what a path really is, and actor detection that fails closed.
#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Run, TestEnv, Transcript, mkfifo, shell_words, wait_stopped};
use serde_json::Value;

/// The points `KAPI_FAULT` can name, in the order a writer reaches them.
use kapi::store::fault::POINTS;

/// An agent's note, started in the background, with real clock and seed.
fn spawn_note(repo: &TestEnv, text: &str, env: &[(&str, &str)]) -> Child {
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

/// The note `text` started with `KAPI_FAULT=fault`, once it has stopped
/// at the fault's `:stop` point.
fn stopped_writer(repo: &TestEnv, text: &str, fault: &str) -> Child {
    let writer = spawn_note(repo, text, &[("KAPI_FAULT", fault)]);
    wait_stopped(writer.id());
    writer
}

/// Notes started beside a stopped writer, each waiting up to a minute for
/// the locks it holds.
fn beside(repo: &TestEnv, texts: impl Iterator<Item = String>) -> Vec<Child> {
    texts
        .map(|text| spawn_note(repo, &text, &[("KAPI_LOCK_TIMEOUT_MS", "60000")]))
        .collect()
}

/// The ids the writers acknowledged: each must have (a failure is named
/// with `at`).
fn all_acknowledged(writers: Vec<Child>, at: &str) -> Vec<String> {
    writers
        .into_iter()
        .map(|child| {
            let (id, run) = acknowledged(child);
            id.unwrap_or_else(|| panic!("at {at}: {}", run.stderr))
        })
        .collect()
}

fn signal(pid: u32, sig: &str) {
    Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
}

fn ids_in_log(repo: &TestEnv) -> BTreeSet<String> {
    repo.log()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The ids `refs/kapi/ops` itself holds, read with git (not kapi, whose
/// reads also take lines still in the journal).
fn ids_on_ref(repo: &TestEnv) -> BTreeSet<String> {
    let listing = repo.git(&["ls-tree", "-r", "refs/kapi/ops"]);
    let mut ids = BTreeSet::new();
    for line in listing.lines() {
        let blob = line.split_whitespace().nth(2).unwrap();
        for op in repo.git(&["cat-file", "blob", blob]).lines() {
            if let Ok(v) = serde_json::from_str::<Value>(op)
                && let Some(id) = v["id"].as_str()
            {
                ids.insert(id.to_owned());
            }
        }
    }
    ids
}

/// The texts of the notes the log holds, sorted (a note written on the
/// real clock sorts before or after the pinned ones by the date today).
fn note_texts(repo: &TestEnv) -> Vec<String> {
    let mut texts: Vec<String> = repo
        .log()
        .iter()
        .filter_map(|l| l["subject"]["text"].as_str().map(str::to_owned))
        .collect();
    texts.sort();
    texts
}

/// `kapi ARGS` with the environment `vars` set too, recorded as
/// `VAR=value kapi ARGS`.
fn with_vars(t: &mut Transcript, repo: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = repo.kapi_cmd(args);
    let mut line = String::new();
    for (k, v) in vars {
        cmd.env(k, v);
        line.push_str(&format!("{k}={} ", shell_words(&[v])));
    }
    t.step(
        repo,
        &format!("{line}kapi {}", shell_words(args)),
        cmd.output().unwrap().into(),
    )
}

fn fsck_clean(repo: &TestEnv) {
    let out = repo
        .git_cmd(&["fsck", "--no-dangling", "--no-progress"])
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
        let repo = TestEnv::new();
        repo.kapi(&["context", "note", "A first note"]).ok();
        // The victim stops at the point, holding whatever it holds there;
        // others append meanwhile, then the victim is killed.
        let victim = stopped_writer(&repo, "the victim", &format!("{point}:stop"));
        let others = beside(&repo, (0..4).map(|n| format!("note {n} beside {point}")));
        std::thread::sleep(Duration::from_millis(400));
        signal(victim.id(), "-KILL");
        let (victim_id, _) = acknowledged(victim);
        assert_eq!(victim_id, None, "a killed writer acknowledged nothing");
        let acked = all_acknowledged(others, point);
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
    let repo = TestEnv::new();
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
    let held = ids_on_ref(&repo);
    let present = acked.iter().filter(|id| held.contains(*id)).count();
    eprintln!(
        "stress: {writers} writers x {rounds} rounds: {started} started, {kills} killed, {} acknowledged, {present} present",
        acked.len()
    );
    assert_eq!(present, acked.len(), "every acknowledged note is present");
    assert!(!acked.is_empty());
    // The locks the killed writers held are recovered: the next write,
    // waiting at most 5 s for any lock, succeeds and lands on the ref...
    let next = repo
        .kapi_cmd(&["context", "note", "After the storm", "--json"])
        .env("KAPI_LOCK_TIMEOUT_MS", "5000")
        .output()
        .unwrap();
    assert!(
        next.status.success(),
        "the next write after the storm: {}",
        String::from_utf8_lossy(&next.stderr)
    );
    let next: Value = serde_json::from_slice(&next.stdout).unwrap();
    let next_id = next["id"]
        .as_str()
        .or_else(|| next["record"]["id"].as_str())
        .unwrap()
        .to_owned();
    let held = ids_on_ref(&repo);
    assert!(held.contains(&next_id), "the next write is on the ref");
    assert!(
        acked.iter().all(|id| held.contains(id)),
        "still every acknowledged note"
    );
    // ...no ref lock is left behind, and the journal holds nothing pending.
    assert!(!repo.path().join(".git/refs/kapi/ops.lock").exists());
    let journal = std::fs::read(repo.path().join(".git/kapi/journal")).unwrap_or_default();
    assert!(
        journal.iter().all(u8::is_ascii_whitespace),
        "the journal was committed: {}",
        String::from_utf8_lossy(&journal)
    );
    fsck_clean(&repo);
}

#[test]
fn a_stopped_writer_holding_the_journal_lock_makes_others_give_up_within_the_bound() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    // compact-written is reached under the journal lock.
    let victim = stopped_writer(&repo, "victim", "compact-written:stop");
    let start = Instant::now();
    // The refusal names the lock, the process holding it, and that
    // nothing was recorded.
    let mut t = Transcript::new();
    t.redact(format!("process {}", victim.id()), "process [VICTIM PID]");
    with_vars(
        &mut t,
        &repo,
        &[("KAPI_LOCK_TIMEOUT_MS", "300")],
        &["context", "note", "blocked"],
    )
    .code(5);
    assert!(start.elapsed() < Duration::from_secs(20));
    insta::assert_snapshot!(t.text());
    signal(victim.id(), "-KILL");
    acknowledged(victim);
    assert_eq!(note_texts(&repo), ["A first note", "victim"]);
    repo.kapi(&["context", "note", "after"]).ok();
}

#[test]
fn a_stopped_writer_holding_the_commit_lock_leaves_others_journaled_and_saying_so() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let victim = stopped_writer(&repo, "victim", "ref-moved:stop");
    // The note is journaled, must not be recorded again, and waits for
    // the process named.
    let mut t = Transcript::new();
    t.redact(format!("process {}", victim.id()), "process [VICTIM PID]");
    with_vars(
        &mut t,
        &repo,
        &[("KAPI_LOCK_TIMEOUT_MS", "300")],
        &["context", "note", "waiting"],
    )
    .code(5);
    // A reader sees the journaled note although it cannot commit it. Its
    // id is minted past the victim's, on the real clock.
    assert_eq!(note_texts(&repo), ["A first note", "victim", "waiting"]);
    let log = repo.log();
    let waiting = log.iter().find(|l| l["subject"]["text"] == "waiting");
    t.redact(
        waiting.unwrap()["short"].as_str().unwrap(),
        "[ID ON THE REAL CLOCK]",
    );
    insta::assert_snapshot!(t.text());
    signal(victim.id(), "-KILL");
    acknowledged(victim);
    repo.kapi(&["context", "note", "after"]).ok();
    assert_eq!(
        note_texts(&repo),
        ["A first note", "after", "victim", "waiting"]
    );
    let on_ref = repo.git(&["log", "--format=%s", "refs/kapi/ops"]);
    assert!(on_ref.lines().count() >= 2, "{on_ref}");
}

#[test]
fn a_foreign_ref_lock_is_never_removed_and_is_named() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let lock = repo.path().join(".git/refs/kapi/ops.lock");
    std::fs::write(&lock, "0123456789012345678901234567890123456789\n").unwrap();
    let mut t = Transcript::new();
    with_vars(
        &mut t,
        &repo,
        &[("KAPI_LOCK_TIMEOUT_MS", "200")],
        &["context", "note", "second"],
    )
    .code(5);
    assert!(lock.exists(), "another program's lock stays");
    t.kapi(&repo, &["store", "doctor"]).code(1);
    std::fs::remove_file(&lock).unwrap();
    t.comment("the other program's lock removed");
    t.kapi(&repo, &["context", "note", "third"]).ok();
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn temporary_files_of_killed_writers_are_swept_and_fresh_ones_kept() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let objects = repo.path().join(".git/objects");
    let old = objects.join(".tmpKILLED");
    let fresh = objects.join(".tmpLIVE");
    // A derived cache a killed writer was replacing (`crate::atomic`).
    let cache = repo.path().join(".git/kapi/.newest.kapi-tmp.99999");
    std::fs::write(&old, b"half an object").unwrap();
    std::fs::write(&fresh, b"a live writer's object").unwrap();
    std::fs::write(&cache, b"half a cache").unwrap();
    for f in [&old, &cache] {
        Command::new("touch")
            .args(["-d", "1 hour ago"])
            .arg(f)
            .status()
            .unwrap();
    }
    // The killed writers' files are named and removed, the live one never.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).code(1);
    t.kapi(&repo, &["store", "doctor", "--repair"]).ok();
    insta::assert_snapshot!(t.text());
    assert!(!old.exists() && !cache.exists() && fresh.exists());
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

/// Commit blobs at shard paths (`a/b`) on top of `refs/kapi/ops` with
/// `message`, as another tool pushing to the ref would.
pub(super) fn push_segments(repo: &TestEnv, segments: &[(String, String)], message: &str) {
    let index = repo.path().join(".git/kapi-test-index");
    let git = |args: &[&str]| -> String {
        let out = repo
            .git_cmd(args)
            .env("GIT_INDEX_FILE", &index)
            .env("GIT_AUTHOR_NAME", "mallory")
            .env("GIT_AUTHOR_EMAIL", "m@example.com")
            .env("GIT_COMMITTER_NAME", "mallory")
            .env("GIT_COMMITTER_EMAIL", "m@example.com")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    git(&["read-tree", "refs/kapi/ops"]);
    for (path, blob) in segments {
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{blob},{path}"),
        ]);
    }
    let tree = git(&["write-tree"]);
    let commit = git(&["commit-tree", &tree, "-p", "refs/kapi/ops", "-m", message]);
    git(&["update-ref", "refs/kapi/ops", &commit]);
    std::fs::remove_file(index).unwrap();
}

pub(super) fn blob(repo: &TestEnv, bytes: &[u8]) -> String {
    repo.git_stdin(&["hash-object", "-w", "--stdin"], bytes)
}

/// The segment path and current bytes of the shard an id belongs in.
pub(super) fn segment_of(repo: &TestEnv, id: &str) -> (String, String) {
    let path = format!("{}/{}", &id[8..9], &id[9..10]);
    let bytes = repo
        .git_cmd(&["show", &format!("refs/kapi/ops:{path}")])
        .output()
        .unwrap()
        .stdout;
    (path, String::from_utf8(bytes).unwrap())
}

/// A note's record as JSON, re-dated to `ms` with `tail` as its random part.
fn redated(template: &str, ms: u64, tail: u128) -> (String, String) {
    let id = kapi::ops::OpId::mint(ms, tail, None).unwrap();
    let mut op: Value = serde_json::from_str(template.trim()).unwrap();
    op["id"] = Value::from(id.to_string());
    op["at"] = Value::from(id.instant());
    (id.to_string(), op.to_string())
}

fn noted(repo: &TestEnv, text: &str) -> Value {
    let run = repo.kapi(&["context", "note", text, "--json"]).ok();
    serde_json::from_str(run.stdout.trim()).unwrap()
}

/// KAPI_NOW in the harness: 2026-11-30T09:00:00Z.
const NOW_MS: u64 = 1_796_029_200_000;

#[test]
fn nothing_pushed_about_the_newest_id_can_stop_or_drag_the_writes_here() {
    let repo = TestEnv::new();
    let first = noted(&repo, "A first note");
    let template = first.to_string();
    // A tip whose message claims an operation no one holds.
    push_segments(&repo, &[], "forged\n\nnewest: zzzzzzzzzzzzzzzzzzzzzzzz\n");
    // The doctor names the claim the log does not hold, then the two
    // operations dated ahead.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).code(1);
    let next = noted(&repo, "after a forged claim");
    assert!(
        next["at"].as_str().unwrap().starts_with("2026-11-30T09:00"),
        "{next}"
    );
    // An operation dated 2059 and one four years ahead, pushed with another tool.
    let year_2059 = 1_767_225_600_000 + 33 * 365 * 86_400_000;
    let (far, far_line) = redated(&template, year_2059, 77);
    // Four years past the pinned clock, so that it stays past this
    // machine's own (which bounds what a writer is dragged to, whatever
    // KAPI_NOW says) for years: two days was passed on 2026-12-02.
    let (near, near_line) = redated(&template, NOW_MS + 1461 * 86_400_000, 78);
    for (id, line) in [(&far, &far_line), (&near, &near_line)] {
        let (path, old) = segment_of(&repo, id);
        let b = blob(&repo, format!("{old}{line}\n").as_bytes());
        push_segments(&repo, &[(path, b)], "pushed ahead");
    }
    let after = noted(&repo, "after operations dated ahead");
    assert!(
        after["at"]
            .as_str()
            .unwrap()
            .starts_with("2026-11-30T09:00"),
        "an id here is not dragged ahead: {after}"
    );
    t.kapi(&repo, &["store", "doctor"]).code(1);
    insta::assert_snapshot!(t.text());
    // A tip that understates the newest: ids still sort after what the log holds.
    let (newer, newer_line) = redated(&template, NOW_MS + 60_000, 79);
    let (path, old) = segment_of(&repo, &newer);
    let b = blob(&repo, format!("{old}{newer_line}\n").as_bytes());
    let older = first["id"].as_str().unwrap();
    push_segments(&repo, &[(path, b)], &format!("x\n\nnewest: {older}\n"));
    let minted = noted(&repo, "after an understated claim");
    assert!(
        minted["id"].as_str().unwrap() > newer.as_str(),
        "{minted} vs {newer}"
    );
}

#[test]
fn an_oversized_pushed_segment_is_never_inflated_nor_written_into() {
    let repo = TestEnv::new();
    noted(&repo, "A first note");
    // 65 MiB of one line, under half of the shard names.
    let huge = "x".repeat(65 * 1024 * 1024);
    let b = blob(&repo, huge.as_bytes());
    let alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
    let mut segments = Vec::new();
    for (i, a) in alphabet.chars().enumerate() {
        for (j, c) in alphabet.chars().enumerate() {
            if (i + j) % 2 == 0 {
                segments.push((format!("{a}/{c}"), b.clone()));
            }
        }
    }
    push_segments(&repo, &segments, "huge");
    for n in 0..4 {
        let op = noted(&repo, &format!("note {n} beside huge segments"));
        let id = op["id"].as_str().unwrap().to_owned();
        let log = repo.log();
        assert!(
            log.iter().any(|l| l["id"] == id.as_str()),
            "{id} reads back"
        );
    }
    // Each oversized segment named (511 lines alike: no snapshot).
    let doctor = repo.kapi(&["store", "doctor"]).code(1).stdout;
    let (named, summary) = doctor.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(
        summary,
        "4 operations read, 511 unreadable, 0 ignored by the fold"
    );
    assert_eq!(named.lines().count(), 511);
    for line in named.lines() {
        let (at, said) = line.split_once(": oversized segment: ").unwrap();
        assert!(at.starts_with("unreadable: refs/kapi/ops:"), "{line}");
        assert_eq!(
            said,
            "68157440 bytes, the limit is 67108864; its operations are not read. \
             Someone wrote it with another tool: new operations are minted into other segments"
        );
    }
}

#[test]
fn a_segment_near_the_limit_takes_no_line_it_could_not_read_back() {
    // Where would the pinned seed put the next note? Ask a twin repository.
    let twin = TestEnv::new();
    noted(&twin, "A first note");
    let probe = noted(&twin, "the note");
    let id = probe["id"].as_str().unwrap();
    let path = format!("{}/{}", &id[8..9], &id[9..10]);
    let repo = TestEnv::new();
    noted(&repo, "A first note");
    let nearly = format!("{}\n", "y".repeat(64 * 1024 * 1024 - 10));
    let b = blob(&repo, nearly.as_bytes());
    push_segments(&repo, &[(path.clone(), b)], "nearly full");
    let op = noted(&repo, "the note");
    let landed = op["id"].as_str().unwrap();
    assert_ne!(format!("{}/{}", &landed[8..9], &landed[9..10]), path);
    let log = repo.log();
    assert!(log.iter().any(|l| l["id"] == landed), "{landed} reads back");
}

#[test]
fn a_pushed_second_copy_of_a_decision_cannot_undo_it() {
    let repo = TestEnv::new();
    let target = repo.agent_rule_at("s1", "Quickcast", "Quick cast", "docs/a.md");
    repo.kapi(&["context", "review", "--keep", &target[..10]])
        .ok();
    let log = repo.log();
    let keep = log.iter().find(|l| l["kind"] == "keep").unwrap().clone();
    let keep_id = keep["id"].as_str().unwrap().to_owned();
    let status = |repo: &TestEnv| {
        repo.log()
            .into_iter()
            .find(|l| l["id"] == target.as_str())
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(status(&repo), "established");
    // Someone pushes another copy of the keep's id with other bytes.
    let (path, old) = segment_of(&repo, &keep_id);
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let mut forged: Value = exported
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|op| op["id"] == keep_id.as_str())
        .unwrap();
    forged["kind"] = Value::from("context.drop");
    let b = blob(&repo, format!("{old}{forged}\n").as_bytes());
    push_segments(&repo, &[(path, b)], "a second copy");
    assert_eq!(status(&repo), "established", "the copy held first stands");
    // The doctor names the later copy; an import of it is refused as a
    // conflict.
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).code(1);
    repo.write("forged.jsonl", &format!("{forged}\n"));
    t.kapi(&repo, &["store", "import", "forged.jsonl"]).code(5);
    insta::assert_snapshot!(t.text());
    assert_eq!(status(&repo), "established");
}

#[test]
fn a_union_keeps_every_lines_bytes_exactly() {
    let repo = TestEnv::new();
    let op = noted(&repo, "A first note");
    let id = op["id"].as_str().unwrap().to_owned();
    // An unreadable line (a string holding bytes that are not UTF-8) in
    // the note's segment.
    let (path, old) = segment_of(&repo, &id);
    let mut bytes = old.into_bytes();
    bytes.extend_from_slice(b"{\"v\":1,\"note\":\"\xff\xfe\"}\n");
    let b = blob(&repo, &bytes);
    push_segments(&repo, &[(path, b)], "an unreadable line");
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).code(1);
    // Import an operation that lands in the same segment.
    let mut sibling = op.clone();
    let sibling_id = format!("{}{}", &id[..10], "zzzzzzzzzzzzzz");
    sibling["id"] = Value::from(sibling_id.clone());
    repo.write("sibling.jsonl", &format!("{sibling}\n"));
    t.kapi(&repo, &["store", "import", "sibling.jsonl"]).ok();
    // Still 1 unreadable.
    t.kapi(&repo, &["store", "doctor"]).code(1);
    insta::assert_snapshot!(t.text());
    let (_, segment) = {
        let path = format!("{}/{}", &id[8..9], &id[9..10]);
        let raw = repo
            .git_cmd(&["cat-file", "blob", &format!("refs/kapi/ops:{path}")])
            .output()
            .unwrap()
            .stdout;
        (path, raw)
    };
    assert!(
        segment.windows(2).any(|w| w == b"\xff\xfe"),
        "the bytes survive the union"
    );
}

#[test]
fn export_writes_where_it_is_told_and_reports_failure() {
    let repo = TestEnv::new();
    noted(&repo, "A first note");
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    assert_eq!(exported.lines().count(), 1, "{exported}");
    // A regular file is replaced whole.
    repo.write("out.jsonl", "old contents\n");
    repo.kapi(&["store", "export", "out.jsonl"]).ok();
    let text = std::fs::read_to_string(repo.path().join("out.jsonl")).unwrap();
    assert_eq!(text, exported);
    // A symbolic link is refused and left as it is; a device that fails
    // writes is named.
    std::os::unix::fs::symlink("out.jsonl", repo.path().join("link.jsonl")).unwrap();
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "export", "link.jsonl"]).code(2);
    assert!(
        std::fs::symlink_metadata(repo.path().join("link.jsonl"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A device that fails writes: an error, and the device stays a device.
    let run = t.kapi(&repo, &["store", "export", "/dev/full"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(t.text());
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata("/dev/full")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // A FIFO is written in place.
    let fifo = repo.path().join("pipe");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    repo.kapi(&["store", "export", "pipe"]).ok();
    assert_eq!(reader.join().unwrap(), exported);
    assert!(
        std::fs::metadata(&fifo).unwrap().file_type().is_fifo(),
        "the FIFO is still a FIFO"
    );
}

#[test]
fn an_agent_variable_set_to_nothing_readable_is_an_error_never_a_person() {
    use std::os::unix::ffi::OsStrExt;
    let repo = TestEnv::new();
    let mut t = Transcript::new();
    for (value, shown) in [
        (&b""[..], "''"),
        (b"   ", "'   '"),
        (b"\xff\xfeagent", "$'\\xff\\xfeagent'"),
    ] {
        let run: Run = repo
            .kapi_cmd(&["context", "note", "who am I"])
            .env("KAPI_AGENT", std::ffi::OsStr::from_bytes(value))
            .output()
            .unwrap()
            .into();
        let line = format!("KAPI_AGENT={shown} kapi context note 'who am I'");
        t.step(&repo, &line, run).code(2);
    }
    insta::assert_snapshot!(t.text());
    assert!(
        repo.kapi(&["context", "log", "--json"])
            .ok()
            .stdout
            .is_empty(),
        "nothing was recorded"
    );
}

#[test]
fn doctor_names_an_abandoned_ref_lock_and_repair_removes_it() {
    let a = TestEnv::new();
    noted(&a, "A first note");
    let exported = a.kapi(&["store", "export", "-"]).ok().stdout;
    let b = TestEnv::new();
    let run = b
        .kapi_cmd(&["context", "note", "B's note"])
        .env("KAPI_SEED", "8")
        .output()
        .unwrap();
    assert!(run.status.success());
    b.write("a.jsonl", &exported);
    // An import killed while it holds the ref lock: nothing is journaled,
    // so nothing recovers the lock until the next write.
    let run: Run = b
        .kapi_cmd(&["store", "import", "a.jsonl"])
        .env("KAPI_FAULT", "ref-locked")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, -1, "killed: {}", run.stderr);
    let lock = b.path().join(".git/refs/kapi/ops.lock");
    assert!(lock.exists());
    let mut t = Transcript::new();
    t.kapi(&b, &["store", "doctor"]).code(1);
    t.kapi(&b, &["store", "doctor", "--repair"]).ok();
    insta::assert_snapshot!(t.text());
    assert!(!lock.exists());
    b.kapi(&["store", "import", "a.jsonl"]).ok();
    assert_eq!(ids_in_log(&b).len(), 2);
    fsck_clean(&b);
}

#[test]
fn a_committer_killed_while_compacting_around_later_lines_loses_none() {
    for point in ["compact-written", "compacted"] {
        let repo = TestEnv::new();
        repo.kapi(&["context", "note", "A first note"]).ok();
        // The victim stops after moving the ref, before it compacts; others
        // journal behind it; continued, it dies while compacting around
        // their lines (the rename path).
        let fault = format!("ref-moved:stop,{point}");
        let victim = stopped_writer(&repo, "the victim", &fault);
        let others = beside(&repo, (0..3).map(|n| format!("note {n}")));
        // Wait until all three are journaled.
        let journal = repo.path().join(".git/kapi/journal");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&journal)
            .unwrap_or_default()
            .lines()
            .count()
            < 4
        {
            assert!(Instant::now() < deadline, "the others never journaled");
            std::thread::sleep(Duration::from_millis(10));
        }
        signal(victim.id(), "-CONT");
        let (victim_id, run) = acknowledged(victim);
        assert_eq!(victim_id, None, "at {point}: {}", run.stderr);
        let acked = all_acknowledged(others, point);
        let on_ref = ids_on_ref(&repo);
        for id in &acked {
            assert!(on_ref.contains(id), "at {point}: {id} is not on the ref");
        }
        fsck_clean(&repo);
    }
}

#[test]
fn a_lone_writer_empties_the_journal_in_place_creating_no_file() {
    use std::os::unix::fs::MetadataExt;
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let journal = repo.path().join(".git/kapi/journal");
    let inode = std::fs::metadata(&journal).unwrap().ino();
    for n in 0..3 {
        repo.kapi(&["context", "note", &format!("note {n}")]).ok();
        let meta = std::fs::metadata(&journal).unwrap();
        // Committed, the lines left the journal; the file stayed the same
        // one (a file made and renamed per commit taxes every file any
        // writer creates on ext4 without a journal).
        assert_eq!(meta.len(), 0, "after note {n}");
        assert_eq!(meta.ino(), inode, "after note {n}");
        assert!(!repo.path().join(".git/kapi/journal.new").exists());
    }
    assert_eq!(note_texts(&repo).len(), 4);
}

#[test]
fn a_packed_refs_lock_another_program_holds_does_not_stop_a_note() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    // The log's ref only in packed-refs, and packed-refs locked, as a
    // `git gc` or `git fetch` leaves them while it runs: git updates a ref
    // without that lock, and so does kapi.
    repo.git(&["pack-refs", "--all"]);
    assert!(!repo.join(".git/refs/kapi/ops").exists());
    let packed = repo.git(&["rev-parse", "refs/kapi/ops"]);
    std::fs::write(repo.join(".git/packed-refs.lock"), "").unwrap();
    repo.kapi(&["context", "note", "A second note"]).ok();
    assert!(repo.join(".git/packed-refs.lock").exists());
    std::fs::remove_file(repo.join(".git/packed-refs.lock")).unwrap();
    // It moved on from the packed value: the second note's commit has the
    // first's as its parent.
    assert_eq!(repo.git(&["rev-parse", "refs/kapi/ops~1"]), packed);
    assert_eq!(note_texts(&repo), ["A first note", "A second note"]);
    fsck_clean(&repo);
}

#[test]
fn a_reflog_the_log_has_is_kept_up_to_date() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    // No reflog for refs/kapi/* by default, as git writes none.
    let reflog = repo.join(".git/logs/refs/kapi/ops");
    assert!(!reflog.exists());
    // One made by hand is written to at every move.
    std::fs::create_dir_all(reflog.parent().unwrap()).unwrap();
    std::fs::write(&reflog, "").unwrap();
    repo.kapi(&["context", "note", "A second note"]).ok();
    repo.kapi(&["context", "note", "A third note"]).ok();
    // As git reads it (an entry dated 0 it would skip).
    let moves = || {
        repo.git(&["reflog", "show", "--format=%gs", "refs/kapi/ops"])
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(moves(), ["kapi", "kapi"]);
    // As with core.logAllRefUpdates = always, which makes one.
    std::fs::remove_file(&reflog).unwrap();
    repo.git(&["config", "core.logAllRefUpdates", "always"]);
    repo.kapi(&["context", "note", "A fourth note"]).ok();
    assert_eq!(moves(), ["kapi"]);
    assert_eq!(note_texts(&repo).len(), 4);
    fsck_clean(&repo);
}

#[test]
fn a_killed_import_leaves_no_lock_on_the_local_log_that_wedges_it() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let mut check: Value = serde_json::from_str(exported.trim()).unwrap();
    let (id, _) = redated(exported.trim(), NOW_MS - 1000, 4242);
    check["id"] = Value::from(id.clone());
    check["at"] = Value::from(kapi::ops::OpId::parse(&id).unwrap().instant());
    check["kind"] = Value::from("context.check");
    check.as_object_mut().unwrap().remove("subject");
    check["check"] =
        serde_json::json!({"hook": "manual", "files": [], "failing": [], "clean": true});
    repo.write("check.jsonl", &format!("{check}\n"));
    let run: Run = repo
        .kapi_cmd(&["store", "import", "check.jsonl"])
        .env("KAPI_FAULT", "ref-locked")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, -1, "{}", run.stderr);
    // Another ref moves meanwhile; the local lock is still known as kapi's.
    repo.kapi(&["context", "note", "shared moves on"]).ok();
    let lock = repo.path().join(".git/refs/kapi/local.lock");
    assert!(lock.exists());
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).code(1);
    insta::assert_snapshot!(t.text());
    repo.kapi(&["store", "import", "check.jsonl"]).ok();
    assert!(!lock.exists());
    fsck_clean(&repo);
}

#[test]
fn a_ref_pointed_at_a_tag_or_a_blob_does_not_stop_writes() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let tip = repo.git(&["rev-parse", "refs/kapi/ops"]);
    let tag = repo.git_stdin(
        &["mktag"],
        format!(
            "object {tip}\ntype commit\ntag t\ntagger M <m@example.com> 1796029200 +0000\n\nt\n"
        )
        .as_bytes(),
    );
    repo.git(&["update-ref", "refs/kapi/ops", &tag]);
    let mut t = Transcript::new();
    t.comment("refs/kapi/ops points at a tag of its tip");
    t.kapi(&repo, &["context", "note", "after a tag"]).ok();
    t.kapi(&repo, &["context", "log"]).ok();
    let b = blob(&repo, b"not a log");
    repo.git(&["update-ref", "refs/kapi/ops", &b]);
    t.comment("refs/kapi/ops points at a blob");
    t.kapi(&repo, &["store", "doctor"]).code(1);
    t.kapi(&repo, &["context", "note", "after a blob"]).ok();
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn an_operation_a_few_minutes_ahead_still_counts_as_the_newest() {
    let repo = TestEnv::new();
    let first = noted(&repo, "A first note");
    let (ahead, line) = redated(&first.to_string(), NOW_MS + 5 * 60_000, 91);
    let (path, old) = segment_of(&repo, &ahead);
    let b = blob(&repo, format!("{old}{line}\n").as_bytes());
    push_segments(&repo, &[(path, b)], "five minutes ahead");
    let next = noted(&repo, "after it");
    assert!(next["id"].as_str().unwrap() > ahead.as_str(), "{next}");
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "doctor"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_forged_copy_pushed_after_deleting_the_original_does_not_stand() {
    let repo = TestEnv::new();
    let op = noted(&repo, "the original");
    let id = op["id"].as_str().unwrap().to_owned();
    let (path, old) = segment_of(&repo, &id);
    let mut forged = op.clone();
    forged["subject"]["text"] = Value::from("the forgery");
    let without: String = old
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["id"] != id.as_str())
        .map(|l| format!("{l}\n"))
        .collect();
    // Delete the original, push the forgery alone, then both.
    let gap = blob(&repo, without.as_bytes());
    push_segments(&repo, &[(path.clone(), gap)], "gap");
    let alone = blob(&repo, format!("{without}{forged}\n").as_bytes());
    push_segments(&repo, &[(path.clone(), alone)], "forgery");
    let both = blob(&repo, format!("{old}{forged}\n").as_bytes());
    push_segments(&repo, &[(path, both)], "both");
    // The original, not the forgery.
    let mut t = Transcript::new();
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_killed_writer_not_yet_reaped_does_not_hold_its_ref_lock() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    // Killed while holding refs/kapi/ops.lock, and left a zombie: its
    // parent (this test) does not reap it until the next write is done.
    let mut victim = spawn_note(&repo, "the victim", &[("KAPI_FAULT", "ref-locked")]);
    let lock = repo.path().join(".git/refs/kapi/ops.lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lock.exists()
        || std::fs::read_to_string(format!("/proc/{}/stat", victim.id()))
            .map(|s| !s.contains(") Z"))
            .unwrap_or(false)
    {
        assert!(
            Instant::now() < deadline,
            "the victim never died holding the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let run: Run = repo
        .kapi_cmd(&["context", "note", "next"])
        .env("KAPI_LOCK_TIMEOUT_MS", "2000")
        .output()
        .unwrap()
        .into();
    run.ok();
    assert!(!lock.exists());
    assert!(victim.try_wait().unwrap().is_some());
}

#[test]
fn a_writer_killed_after_its_intent_never_disowns_an_earlier_abandoned_lock() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    // One writer dies holding the ref lock; the next dies after writing
    // its intent; the third must still recognise the lock as kapi's.
    for (text, point) in [
        ("first victim", "ref-locked"),
        ("second victim", "intent-written"),
    ] {
        let run: Run = repo
            .kapi_cmd(&["context", "note", text])
            .env("KAPI_FAULT", point)
            .output()
            .unwrap()
            .into();
        assert_eq!(run.code, -1, "{point}: {}", run.stderr);
    }
    let mut t = Transcript::new();
    with_vars(
        &mut t,
        &repo,
        &[("KAPI_LOCK_TIMEOUT_MS", "2000")],
        &["context", "note", "survivor"],
    )
    .ok();
    // Both victims' notes (journaled) and the survivor's.
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
    fsck_clean(&repo);
}

#[test]
fn a_ref_lock_a_killed_writer_left_half_written_is_recognised() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "A first note"]).ok();
    let run: Run = repo
        .kapi_cmd(&["context", "note", "the victim"])
        .env("KAPI_FAULT", "ref-locked")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, -1, "{}", run.stderr);
    // As if the kill came while git was still writing the lock: empty.
    let lock = repo.path().join(".git/refs/kapi/ops.lock");
    std::fs::write(&lock, b"").unwrap();
    let mut t = Transcript::new();
    with_vars(
        &mut t,
        &repo,
        &[("KAPI_LOCK_TIMEOUT_MS", "5000")],
        &["context", "note", "survivor"],
    )
    .ok();
    assert!(!lock.exists());
    t.kapi(&repo, &["context", "log"]).ok();
    insta::assert_snapshot!(t.text());
}
