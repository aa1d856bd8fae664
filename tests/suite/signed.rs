//! Signed decisions (`[trust]`, docs/security.md): keys made by
//! `ssh-keygen` in the test, signatures made by kapi through
//! `ssh-keygen -Y sign` as git makes them, verified in process.

use std::path::PathBuf;
use std::process::Command;

use crate::common::TestEnv;

/// An Ed25519 key pair made by ssh-keygen under the test's home; the
/// private key's path.
fn keygen(env: &TestEnv, name: &str) -> PathBuf {
    let dir = env.root().join("keys");
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join(name);
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    key
}

fn pub_of(key: &std::path::Path) -> String {
    format!("{}.pub", key.display())
}

/// git signs with `key` (as for commits: gpg.format ssh, user.signingkey).
fn sign_with(env: &TestEnv, key: &std::path::Path) {
    env.git(&["config", "gpg.format", "ssh"]);
    env.git(&["config", "user.signingkey", key.to_str().unwrap()]);
}

const SIGNED: &str =
    "[trust]\nallowed_signers = \".kapi/allowed_signers\"\ndecisions = \"signed\"\n";

/// Ada's key listed for her, signed mode, committed on main.
fn signed_project() -> (TestEnv, PathBuf) {
    let repo = TestEnv::new();
    let key = keygen(&repo, "ada");
    sign_with(&repo, &key);
    let added = repo
        .kapi(&["trust", "add", "ada@example.com", &pub_of(&key)])
        .ok();
    assert!(added.stdout.contains("listed SHA256:"), "{}", added.stdout);
    assert!(repo.join(".kapi/allowed_signers").exists());
    repo.write("kapi.toml", SIGNED);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "trust"]);
    (repo, key)
}

/// Run `f` with signatures shown, not required (`[trust]` without
/// `decisions = "signed"`): how a decision the door would refuse reaches
/// the log (another kapi, another configuration), for the fold to judge.
fn shown<T>(repo: &TestEnv, f: impl FnOnce() -> T) -> T {
    repo.write(
        "kapi.toml",
        "[trust]\nallowed_signers = \".kapi/allowed_signers\"\n",
    );
    let out = f();
    repo.write("kapi.toml", SIGNED);
    out
}

fn entry<'a>(log: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    log.iter()
        .find(|e| e["id"].as_str().unwrap().starts_with(id))
        .unwrap_or_else(|| panic!("{id} not in the log"))
}

fn status_of(env: &TestEnv, id: &str) -> String {
    let log = env.log();
    entry(&log, id)["status"].as_str().unwrap_or("").to_owned()
}

#[test]
fn a_signed_keep_binds_and_shows_its_signer() {
    let (repo, _) = signed_project();
    let rule = repo.kept_rule("Quickcast", "Quick cast");
    let log = repo.log();
    let keep = log.iter().find(|e| e["kind"] == "keep").unwrap();
    assert_eq!(keep["signed_by"], "ada@example.com", "{keep}");
    assert_eq!(status_of(&repo, &rule), "established");
    let human = repo.kapi(&["context", "log"]).ok().stdout;
    assert!(human.contains("✓ ada@example.com"), "{human}");
    // What arrived since a position reads the same way.
    let arrived = repo.kapi(&["context", "log", "--since", "0"]).ok().stdout;
    assert!(arrived.contains("✓ ada@example.com"), "{arrived}");
    repo.write("README.md", "Try Quick cast.\n");
    let check = repo.kapi(&["check", "README.md"]).code(1);
    assert!(
        check.stdout.contains("signed ✓ ada@example.com"),
        "{}",
        check.stdout
    );
    let json = repo
        .kapi(&["check", "README.md", "--format", "json"])
        .code(1)
        .json();
    assert_eq!(
        json["findings"][0]["decision"]["signed_by"], "ada@example.com",
        "{json}"
    );
    let here = repo.kapi(&["context", "README.md"]).ok().stdout;
    assert!(here.contains("✓ ada@example.com"), "{here}");
    // The atlas names the signer of the keep, and its page draws it.
    let atlas = repo.kapi(&["context", "atlas", "--json"]).ok().json();
    let signed: Vec<&serde_json::Value> = atlas["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["signed_by"] == "ada@example.com")
        .collect();
    assert_eq!(signed.len(), 1, "{atlas}");
    assert_eq!(signed[0]["id"], keep["id"]);
    let page = repo.kapi(&["context", "atlas", "--html", "-"]).ok().stdout;
    assert!(page.contains(r#""signed":{"#), "the page packs who signed");
    assert!(page.contains("ada@example.com"));
    let list = repo.kapi(&["trust", "list"]).ok().stdout;
    assert!(
        list.contains("ada@example.com  ssh-ed25519 SHA256:"),
        "{list}"
    );
    assert!(
        repo.kapi(&["store", "doctor"])
            .ok()
            .stdout
            .contains("0 ignored")
    );
}

#[test]
fn forged_altered_and_unlisted_keeps_do_not_bind_and_doctor_names_each() {
    let (repo, _) = signed_project();
    let a = repo.suggested_rule("Quickcast", "Quick cast");
    let b = repo.suggested_rule("Databox", "Data box");
    let c = repo.suggested_rule("Logline", "Log line");
    // A signed keep of `a`, exported: the forger's material.
    repo.kapi(&["context", "review", "--keep", &a]).ok();
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let keep_line = exported
        .lines()
        .find(|l| l.contains("\"context.keep\""))
        .unwrap()
        .to_owned();
    let keep: serde_json::Value = serde_json::from_str(&keep_line).unwrap();
    let full = |short: &str| entry(&repo.log(), short)["id"].as_str().unwrap().to_owned();
    // Another id at the same instant (the tail's last character changed).
    let reid = |v: &mut serde_json::Value, last: char| {
        let mut id = v["id"].as_str().unwrap().to_owned();
        id.pop();
        id.push(last);
        v["id"] = id.into();
    };
    // 1. Unsigned: the keep of `b`, no signature.
    let mut unsigned = keep.clone();
    unsigned.as_object_mut().unwrap().remove("sig");
    unsigned["target"] = full(&b).into();
    reid(&mut unsigned, 'a');
    // 2. Altered: the signed keep with another target.
    let mut altered = keep.clone();
    altered["target"] = full(&c).into();
    reid(&mut altered, 'b');
    let forged = format!("{unsigned}\n{altered}\n");
    repo.write("forged.jsonl", &forged);
    repo.kapi(&["store", "import", "forged.jsonl"]).ok();
    // 3. Unlisted: Eve's key, her git identity claiming Ada's address,
    // keeps `c`. The door refuses it (the file lists no key of hers), so
    // she records it where signatures are only shown: her kapi signs it.
    // (Another rule: with signatures only shown, the forgeries above
    // count, and `c` is established already.)
    let d = repo.suggested_rule("Webhook", "Web hook");
    let eve = keygen(&repo, "eve");
    sign_with(&repo, &eve);
    let refused = repo.kapi(&["context", "review", "--keep", &d]).code(3);
    assert!(
        refused.stderr.contains("kapi trust add ada@example.com"),
        "{}",
        refused.stderr
    );
    shown(&repo, || {
        repo.kapi(&["context", "review", "--keep", &d]).ok()
    });

    assert_eq!(status_of(&repo, &a), "established");
    assert_eq!(status_of(&repo, &b), "suggested");
    assert_eq!(status_of(&repo, &c), "suggested");
    assert_eq!(status_of(&repo, &d), "suggested");
    let doctor = repo.kapi(&["store", "doctor"]).stdout;
    for reason in ["unsigned: ", "bad signature: ", "unknown signer: "] {
        assert!(doctor.contains(reason), "{reason} missing from:\n{doctor}");
    }
    let human = repo.kapi(&["context", "log"]).ok().stdout;
    assert!(human.contains("[ignored: unsigned: "), "{human}");
    let review = repo.kapi(&["context", "review"]).ok().stdout;
    assert!(
        review.contains("decisions that do not count (3;"),
        "{review}"
    );
}

#[test]
fn a_key_past_its_valid_before_and_a_file_changed_only_in_the_work_tree_grant_nothing() {
    let (repo, key) = signed_project();
    // Bob's key listed only in the work tree: his keep does not bind.
    let bob = keygen(&repo, "bob");
    repo.git(&["config", "user.email", "bob@example.com"]);
    repo.kapi(&["trust", "add", "bob@example.com", &pub_of(&bob)])
        .ok();
    let listed = repo.kapi(&["trust", "list"]).ok().stdout;
    assert!(listed.contains("grant nothing until committed"), "{listed}");
    sign_with(&repo, &bob);
    let a = repo.suggested_rule("Quickcast", "Quick cast");
    // The door refuses his keep: the default branch's file is what counts.
    let refused = repo.kapi(&["context", "review", "--keep", &a]).code(3);
    assert!(
        refused
            .stderr
            .contains("is not listed for bob@example.com in .kapi/allowed_signers as the default branch holds it"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("kapi trust add bob@example.com"));
    // Recorded anyway (signatures only shown), it does not bind.
    shown(&repo, || {
        repo.kapi(&["context", "review", "--keep", &a]).ok()
    });
    assert_eq!(status_of(&repo, &a), "suggested");
    let doctor = repo.kapi(&["store", "doctor"]).stdout;
    assert!(doctor.contains("unknown signer: "), "{doctor}");
    // Committed, the same log now folds it bound (the file's bytes are
    // the checkpoint's fingerprint).
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "bob"]);
    assert_eq!(status_of(&repo, &a), "established");
    // Ada's key expired before the clock (2026-11-30): her keep no
    // longer binds.
    let text = std::fs::read_to_string(repo.join(".kapi/allowed_signers")).unwrap();
    let text = text.replace(
        "ada@example.com namespaces=\"kapi\"",
        "ada@example.com namespaces=\"kapi\",valid-before=\"20260101Z\"",
    );
    repo.write(".kapi/allowed_signers", &text);
    repo.git(&["commit", "-qam", "ada's key expires"]);
    repo.git(&["config", "user.email", "ada@example.com"]);
    sign_with(&repo, &key);
    let b = repo.suggested_rule("Databox", "Data box");
    let refused = repo.kapi(&["context", "review", "--keep", &b]).code(3);
    assert!(
        refused.stderr.contains("but not valid now"),
        "{}",
        refused.stderr
    );
    shown(&repo, || {
        repo.kapi(&["context", "review", "--keep", &b]).ok()
    });
    assert_eq!(status_of(&repo, &b), "suggested");
    let doctor = repo.kapi(&["store", "doctor"]).stdout;
    assert!(doctor.contains("signer not allowed then: "), "{doctor}");
}

#[test]
fn a_keep_signed_for_another_project_does_not_bind() {
    let (repo, _) = signed_project();
    let a = repo.suggested_rule("Quickcast", "Quick cast");
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    // The same operations, with Ada's key, in a project named otherwise.
    let other = repo.sibling("other");
    std::fs::create_dir_all(other.join(".kapi")).unwrap();
    std::fs::copy(
        repo.join(".kapi/allowed_signers"),
        other.join(".kapi/allowed_signers"),
    )
    .unwrap();
    other.write("kapi.toml", &format!("project = \"other\"\n{SIGNED}"));
    other.git(&["add", "-A"]);
    other.git(&["commit", "-qm", "trust"]);
    other.git(&["config", "gpg.format", "ssh"]);
    other.git(&[
        "config",
        "user.signingkey",
        &repo.git(&["config", "user.signingkey"]),
    ]);
    // (Another operation first: the pinned clock and seed would mint the
    // same id in both logs.)
    other.suggested_rule("Databox", "Data box");
    let rule = other.suggested_rule("Quickcast", "Quick cast");
    other.kapi(&["context", "review", "--keep", &rule]).ok();
    let theirs = other.kapi(&["store", "export", "-"]).ok().stdout;
    // Replayed here as they are (the suggestion and its signed keep).
    let replayed: String = theirs
        .lines()
        .filter(|l| l.contains("\"context.keep\"") || l.contains("\"use\":\"Quickcast\""))
        .map(|l| format!("{l}\n"))
        .collect();
    repo.write("replayed.jsonl", &replayed);
    let imported = repo.kapi(&["store", "import", "replayed.jsonl"]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let log = repo.log();
    let theirs_rule = entry(&log, &rule);
    assert_eq!(theirs_rule["status"], "suggested", "{theirs_rule}");
    assert_eq!(status_of(&repo, &a), "suggested");
    let doctor = repo.kapi(&["store", "doctor"]).stdout;
    assert!(doctor.contains("signed for another project: "), "{doctor}");
    let _ = exported;
}

/// Bob's clone runs on a later clock and another seed: another machine.
fn on(env: &TestEnv, args: &[&str]) -> crate::common::Run {
    env.kapi_cmd(args)
        .env("KAPI_NOW", "2026-11-30T10:00:00Z")
        .env("KAPI_SEED", "11")
        .output()
        .unwrap()
        .into()
}

#[test]
fn two_clones_syncing_signed_and_unsigned_keeps_reach_the_same_statuses() {
    let (ada, _) = signed_project();
    let remote = ada.bare_remote();
    ada.add_origin(&remote);
    ada.git(&["push", "-q", "origin", "main"]);
    ada.git(&["fetch", "-q", "origin"]);
    let a = ada.suggested_rule("Quickcast", "Quick cast");
    let b = ada.suggested_rule("Databox", "Data box");
    ada.kapi(&["context", "review", "--keep", &a]).ok();
    ada.kapi(&["context", "sync"]).ok();
    let bob = TestEnv::clone_of(&remote, "Bob", "bob@example.com");
    on(&bob, &["context", "sync"]).ok();
    // Bob has no key: the door refuses his keep, naming what to do.
    let refused = on(&bob, &["context", "review", "--keep", &b]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("git config gpg.format ssh"),
        "{}",
        refused.stderr
    );
    // He forges one under Ada's name, unsigned, and pushes it.
    let exported = on(&bob, &["store", "export", "-"]).ok().stdout;
    let mut forged: serde_json::Value = serde_json::from_str(
        exported
            .lines()
            .find(|l| l.contains("\"context.keep\""))
            .unwrap(),
    )
    .unwrap();
    forged.as_object_mut().unwrap().remove("sig");
    let target = entry(&bob.log(), &b)["id"].as_str().unwrap().to_owned();
    forged["target"] = target.into();
    let mut id = forged["id"].as_str().unwrap().to_owned();
    id.pop();
    id.push('z');
    forged["id"] = id.into();
    bob.write("forged.jsonl", &format!("{forged}\n"));
    on(&bob, &["store", "import", "forged.jsonl"]).ok();
    on(&bob, &["context", "sync"]).ok();
    ada.kapi(&["context", "sync"]).ok();
    for env in [&ada, &bob] {
        assert_eq!(status_of(env, &a), "established");
        assert_eq!(status_of(env, &b), "suggested");
        // Each names the keep pushed unsigned.
        let doctor = env.kapi(&["store", "doctor"]).stdout;
        assert!(doctor.contains("unsigned: "), "{doctor}");
    }
    assert_eq!(ada.log().len(), bob.log().len());
}

/// An ssh-agent this test started, ended when dropped (a failed assertion
/// included).
struct Agent(std::process::Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_key_in_the_agent_that_asks_for_confirmation_signs_through_ssh_askpass() {
    let (repo, _) = signed_project();
    let key = keygen(&repo, "touch");
    let asked = repo.root().join("asked");
    let confirm = repo.root().join("confirm.sh");
    std::fs::write(
        &confirm,
        format!("#!/bin/sh\necho \"$1\" >> '{}'\nexit 0\n", asked.display()),
    )
    .unwrap();
    let deny = repo.root().join("deny.sh");
    std::fs::write(&deny, "#!/bin/sh\nexit 1\n").unwrap();
    for script in [&confirm, &deny] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // An agent whose every use of the key asks SSH_ASKPASS (ssh-add -c).
    let agent = |askpass: &std::path::Path, name: &str| {
        let sock = repo.root().join(name);
        let child = Command::new("ssh-agent")
            .args(["-D", "-a"])
            .arg(&sock)
            .env("SSH_ASKPASS", askpass)
            .env("SSH_ASKPASS_REQUIRE", "force")
            .env("DISPLAY", ":0")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if sock.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let added = Command::new("ssh-add")
            .arg("-c")
            .arg(&key)
            .env("SSH_AUTH_SOCK", &sock)
            .output()
            .unwrap();
        assert!(
            added.status.success(),
            "{}",
            String::from_utf8_lossy(&added.stderr)
        );
        (Agent(child), sock)
    };
    // The key is listed for Ada, committed; git names only its public half.
    repo.kapi(&["trust", "add", "ada@example.com", &pub_of(&key)])
        .ok();
    repo.git(&["commit", "-qam", "touch key"]);
    sign_with(&repo, std::path::Path::new(&pub_of(&key)));
    let a = repo.suggested_rule("Quickcast", "Quick cast");
    let (confirming, sock) = agent(&confirm, "agent.sock");
    let kept = repo
        .kapi_cmd(&["context", "review", "--keep", &a])
        .env("SSH_AUTH_SOCK", &sock)
        .output()
        .unwrap();
    drop(confirming);
    assert!(
        kept.status.success(),
        "{}",
        String::from_utf8_lossy(&kept.stderr)
    );
    let prompts = std::fs::read_to_string(&asked).unwrap();
    assert_eq!(prompts.matches("Allow use of key").count(), 1, "{prompts}");
    assert_eq!(status_of(&repo, &a), "established");
    // Refused at the prompt: nothing is recorded.
    let b = repo.suggested_rule("Databox", "Data box");
    let (denying, sock) = agent(&deny, "deny.sock");
    let refused = repo
        .kapi_cmd(&["context", "review", "--keep", &b])
        .env("SSH_AUTH_SOCK", &sock)
        .output()
        .unwrap();
    drop(denying);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("cannot sign with"), "{stderr}");
    assert_eq!(status_of(&repo, &b), "suggested");
    assert!(
        !repo
            .log()
            .iter()
            .any(|e| e["kind"] == "keep" && e["target"].as_str().unwrap().starts_with(&b))
    );
}

#[test]
fn an_agent_may_not_list_a_key_and_junk_in_the_file_or_the_record_is_named() {
    let (repo, key) = signed_project();
    let refused = repo.agent("s1", &["trust", "add", "eve@example.com", &pub_of(&key)]);
    assert_eq!(refused.code, 4, "{}", refused.stderr);
    // A junk line in the committed file is named and skipped; the others stand.
    let text = std::fs::read_to_string(repo.join(".kapi/allowed_signers")).unwrap();
    repo.write(
        ".kapi/allowed_signers",
        &format!("junk \"unterminated\n{text}"),
    );
    repo.git(&["commit", "-qam", "junk"]);
    let list = repo.kapi(&["trust", "list"]).ok().stdout;
    assert!(list.contains("skipped line 1"), "{list}");
    let a = repo.kept_rule("Quickcast", "Quick cast");
    assert_eq!(status_of(&repo, &a), "established");
    // A record whose signature is not base64, or is base64 of nothing, is
    // unreadable or a bad signature, never a panic.
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let keep: serde_json::Value = serde_json::from_str(
        exported
            .lines()
            .find(|l| l.contains("\"context.keep\""))
            .unwrap(),
    )
    .unwrap();
    let mut lines = String::new();
    for (last, sig) in [
        ('c', "not base64!"),
        ('d', "AAAA"),
        ('e', &"A".repeat(5000)[..]),
    ] {
        let mut v = keep.clone();
        v["sig"] = sig.into();
        let mut id = v["id"].as_str().unwrap().to_owned();
        id.pop();
        id.push(last);
        v["id"] = id.into();
        lines.push_str(&format!("{v}\n"));
    }
    repo.write("junk.jsonl", &lines);
    repo.kapi(&["store", "import", "junk.jsonl"]);
    let doctor = repo.kapi(&["store", "doctor"]).stdout;
    assert!(doctor.contains("bad signature: "), "{doctor}");
    assert!(
        doctor.contains("not base64") || doctor.contains("signature"),
        "{doctor}"
    );
}

#[test]
fn an_unsigned_copy_that_arrives_first_does_not_shadow_a_signed_keep() {
    let (ada, _) = signed_project();
    let remote = ada.bare_remote();
    ada.add_origin(&remote);
    ada.git(&["push", "-q", "origin", "main"]);
    ada.git(&["fetch", "-q", "origin"]);
    let a = ada.suggested_rule("Quickcast", "Quick cast");
    ada.kapi(&["context", "sync"]).ok();
    let carol = TestEnv::clone_of(&remote, "Carol", "carol@example.com");
    on(&carol, &["context", "sync"]).ok();
    // Ada keeps the rule, signed, and has not synced yet. A copy of her
    // keep with the same id and no signature (an operation's id does not
    // cover its signature) reaches Carol first, and the remote.
    ada.kapi(&["context", "review", "--keep", &a]).ok();
    let exported = ada.kapi(&["store", "export", "-"]).ok().stdout;
    let mut copy: serde_json::Value = serde_json::from_str(
        exported
            .lines()
            .find(|l| l.contains("\"context.keep\""))
            .unwrap(),
    )
    .unwrap();
    assert!(copy["sig"].is_string());
    copy.as_object_mut().unwrap().remove("sig");
    carol.write("copy.jsonl", &format!("{copy}\n"));
    on(&carol, &["store", "import", "copy.jsonl"]).ok();
    assert_eq!(status_of(&carol, &a), "suggested");
    on(&carol, &["context", "sync"]).ok();
    // Ada's signed copy meets the unsigned one on both sides: each keeps
    // both, and the one that verifies stands, whichever arrived first.
    ada.kapi(&["context", "sync"]).ok();
    on(&carol, &["context", "sync"]).ok();
    for env in [&ada, &carol] {
        assert_eq!(status_of(env, &a), "established");
        let log = env.log();
        let keep = log.iter().find(|e| e["kind"] == "keep").unwrap();
        assert_eq!(keep["signed_by"], "ada@example.com", "{keep}");
    }
    let seen = |env: &TestEnv| {
        env.log()
            .iter()
            .map(|e| {
                (
                    e["id"].to_string(),
                    e["status"].to_string(),
                    e["signed_by"].to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(seen(&ada), seen(&carol));
    // Nothing is named as a conflict: a disputed signature is no problem
    // of the store's. Doctor names the id held in two copies, each copy,
    // and the one the fold takes and why; nothing to do, so it exits 0.
    let doctor = on(&carol, &["store", "doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);
    let doctor = doctor.stdout;
    assert!(doctor.contains("0 ignored"), "{doctor}");
    let keep_id = copy["id"].as_str().unwrap();
    let line = doctor
        .lines()
        .find(|l| l.starts_with(&format!("copies: operation {keep_id}: ")))
        .unwrap_or_else(|| panic!("no copies line in:\n{doctor}"));
    assert!(line.contains("held in 2 copies"), "{line}");
    assert!(
        line.contains(": its signature verifies for ada@example.com"),
        "{line}"
    );
    assert!(line.contains(": unsigned"), "{line}");
    // The copy taken is the signed one, named by its bytes' digest.
    let signed_copy = ada
        .kapi(&["store", "export", "-"])
        .ok()
        .stdout
        .lines()
        .find(|l| l.contains("\"context.keep\""))
        .unwrap()
        .to_owned();
    let canonical = serde_json::from_str::<serde_json::Value>(&signed_copy).unwrap();
    let digest = sha256_hex(&canonical_json(&canonical));
    assert!(
        line.contains(&format!(
            "the fold takes copy {}: its signature verifies",
            &digest[..12]
        )),
        "{line}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&on(&carol, &["store", "doctor", "--json"]).stdout).unwrap();
    assert!(
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["class"] == "copies"),
        "{json}"
    );
}

/// A record's canonical bytes (keys sorted, no spaces), as kapi stores it.
fn canonical_json(v: &serde_json::Value) -> String {
    // serde_json's map is ordered by key (no `preserve_order` here).
    serde_json::to_string(v).unwrap()
}

fn sha256_hex(text: &str) -> String {
    let out = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

#[test]
fn a_private_key_without_its_pub_is_checked_at_the_door() {
    let (repo, ada) = signed_project();
    let a = repo.suggested_rule("Quickcast", "Quick cast");
    let b = repo.suggested_rule("Databox", "Data box");
    // Eve's key, made by ssh-keygen, its .pub removed: git signs with such
    // a key all the same, and the door derives its public half
    // (ssh-keygen -y) to find it unlisted.
    let eve = keygen(&repo, "eve");
    std::fs::remove_file(pub_of(&eve)).unwrap();
    sign_with(&repo, &eve);
    let refused = repo.kapi(&["context", "review", "--keep", &a]).code(3);
    assert!(
        refused
            .stderr
            .contains("is not listed for ada@example.com in .kapi/allowed_signers"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains(&format!(
            "ssh-keygen -y -f {} > {}.pub",
            eve.display(),
            eve.display()
        )),
        "{}",
        refused.stderr
    );
    assert_eq!(status_of(&repo, &a), "suggested");
    assert!(
        !repo
            .kapi(&["store", "export", "-"])
            .ok()
            .stdout
            .contains("\"context.keep\""),
        "nothing recorded"
    );
    // A key with a passphrase and no .pub: its public half is read from
    // the key file without decrypting it (ssh-keygen -y would ask).
    let locked = repo.root().join("keys").join("locked");
    let out = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "a passphrase",
            "-C",
            "locked",
            "-f",
        ])
        .arg(&locked)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::remove_file(pub_of(&locked)).unwrap();
    sign_with(&repo, &locked);
    let refused = repo.kapi(&["context", "review", "--keep", &a]).code(3);
    assert!(
        refused.stderr.contains("is not listed for ada@example.com"),
        "{}",
        refused.stderr
    );
    // Ada's own key, listed, its .pub removed: the door lets her keep
    // through, and the keep binds, signed.
    std::fs::remove_file(pub_of(&ada)).unwrap();
    sign_with(&repo, &ada);
    repo.kapi(&["context", "review", "--keep", &b]).ok();
    assert_eq!(status_of(&repo, &b), "established");
    let log = repo.log();
    assert_eq!(entry(&log, &b)["status"], "established");
    assert!(
        log.iter()
            .any(|e| e["kind"] == "keep" && e["signed_by"] == "ada@example.com"),
        "{log:?}"
    );
}

#[test]
fn rsa_keys_and_cert_authority_lines_are_refused_clearly() {
    let (repo, _) = signed_project();
    let dir = repo.root().join("keys");
    let rsa = dir.join("rsa");
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "rsa", "-b", "2048", "-N", "", "-C", "rsa", "-f"])
        .arg(&rsa)
        .output()
        .unwrap();
    assert!(out.status.success());
    let refused = repo
        .kapi(&["trust", "add", "ada@example.com", &pub_of(&rsa)])
        .code(2);
    assert!(
        refused
            .stderr
            .contains("RSA keys are not supported, use ed25519 or ecdsa"),
        "{}",
        refused.stderr
    );
    // Written into the committed file by hand: each line is named, by
    // `trust list` and by doctor, and grants nothing.
    let rsa_pub = std::fs::read_to_string(pub_of(&rsa)).unwrap();
    let text = std::fs::read_to_string(repo.join(".kapi/allowed_signers")).unwrap();
    let ada_key = text.split_whitespace().nth(2).unwrap().to_owned()
        + " "
        + text.split_whitespace().nth(3).unwrap();
    repo.write(
        ".kapi/allowed_signers",
        &format!(
            "{text}bob@example.com namespaces=\"kapi\" {}\n*@example.com cert-authority,namespaces=\"kapi\" {ada_key}\n",
            rsa_pub.trim()
        ),
    );
    repo.git(&["commit", "-qam", "rsa and a CA"]);
    let list = repo.kapi(&["trust", "list"]).ok().stdout;
    assert!(list.contains("RSA keys are not supported"), "{list}");
    assert!(
        list.contains("cert-authority lines are not supported"),
        "{list}"
    );
    let doctor = repo.kapi(&["store", "doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains(".kapi/allowed_signers line 2"),
        "{}",
        doctor.stdout
    );
    assert!(doctor.stdout.contains("RSA keys are not supported"));
    assert!(
        doctor
            .stdout
            .contains("cert-authority lines are not supported")
    );
    // Ada's own line still stands.
    let a = repo.kept_rule("Quickcast", "Quick cast");
    assert_eq!(status_of(&repo, &a), "established");
}

/// Where the repository keeps what kapi derives.
fn kapi_dir(repo: &TestEnv) -> PathBuf {
    repo.join(".git/kapi")
}

/// Fold from nothing on the next read: the checkpoint removed.
fn cold(repo: &TestEnv) {
    for name in ["fold.checkpoint", "fold.base"] {
        let _ = std::fs::remove_file(kapi_dir(repo).join(name));
    }
}

#[test]
fn signatures_verified_before_are_remembered_and_a_forged_memory_is_never_obeyed() {
    use sha2::Digest;
    let (repo, _) = signed_project();
    let a = repo.kept_rule("Quickcast", "Quick cast");
    // Eve, claiming Ada's address, keeps `c` with her unlisted key.
    let c = repo.suggested_rule("Logline", "Log line");
    let eve = keygen(&repo, "eve");
    sign_with(&repo, &eve);
    shown(&repo, || {
        repo.kapi(&["context", "review", "--keep", &c]).ok()
    });
    // A cold read verifies Ada's keep and remembers it.
    cold(&repo);
    assert_eq!(status_of(&repo, &a), "established");
    assert_eq!(status_of(&repo, &c), "suggested");
    let memory = kapi_dir(&repo).join("trust.verdicts");
    let remembered = std::fs::read(&memory).unwrap();
    assert!(remembered.starts_with(b"kapi trust verdicts 2\n"));
    // The next cold read takes it from there: the same answers.
    cold(&repo);
    assert_eq!(status_of(&repo, &a), "established");

    // A forger (without this repository's secret) writes a memory whose
    // every check passes (magic, the allowed-signers digest, the CRC)
    // and which claims Eve's keep verified for Ada, under every tag a
    // forger could guess.
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let eve_line = exported
        .lines()
        .filter(|l| l.contains("\"context.keep\""))
        .find(|l| l.contains(entry(&repo.log(), &c)["id"].as_str().unwrap()))
        .unwrap()
        .to_owned();
    let committed = repo.git(&["show", "main:.kapi/allowed_signers"]);
    let digest: String = sha2::Sha256::digest(format!("{committed}\n").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        remembered[22..].starts_with(digest.as_bytes()),
        "the digest"
    );
    let guesses: Vec<Vec<u8>> = vec![
        [
            &[0u8; 32][..],
            digest.as_bytes(),
            b"\n",
            eve_line.as_bytes(),
        ]
        .concat(),
        [digest.as_bytes(), b"\n", eve_line.as_bytes()].concat(),
        eve_line.as_bytes().to_vec(),
    ];
    let mut forged = b"kapi trust verdicts 2\n".to_vec();
    forged.extend_from_slice(digest.as_bytes());
    forged.push(b'\n');
    for guess in &guesses {
        forged.extend_from_slice(&sha2::Sha256::digest(guess));
        forged.push(15);
        forged.extend_from_slice(b"ada@example.com");
    }
    let crc = crc32fast::hash(&forged);
    forged.extend_from_slice(&crc.to_le_bytes());
    std::fs::write(&memory, &forged).unwrap();
    cold(&repo);
    assert_eq!(status_of(&repo, &c), "suggested");
    let doctor = repo.kapi(&["store", "doctor"]).stdout;
    assert!(doctor.contains("unknown signer: "), "{doctor}");
    // Ada's keep, verified afresh, still binds.
    assert_eq!(status_of(&repo, &a), "established");
    // A FIFO where the memory was holds nothing up.
    std::fs::remove_file(&memory).unwrap();
    crate::common::mkfifo(&memory);
    cold(&repo);
    assert_eq!(status_of(&repo, &a), "established");
    // `store rebuild` removes the memory (derived), never the secret.
    repo.kapi(&["store", "rebuild"]).ok();
    assert!(kapi_dir(&repo).join("trust.secret").exists());
}

#[test]
fn one_forged_keep_among_many_signed_is_named_alone_on_a_fresh_read() {
    let (repo, _) = signed_project();
    // More signed keeps than one batch of curve checks holds (64), and a
    // rule nobody kept.
    let words = |n: usize| format!("Termq{n:03}");
    let rules: Vec<String> = (0..70)
        .map(|n| repo.suggested_rule(&words(n), &format!("Term q{n:03}")))
        .collect();
    let spare = repo.suggested_rule("Spareword", "Spare word");
    let mut keep = vec!["context", "review"];
    for rule in &rules {
        keep.extend(["--keep", rule.as_str()]);
    }
    repo.kapi(&keep).ok();
    // One keep altered after it was signed (its target made the spare
    // rule), under an id beside the original's: it lands in a batch of
    // valid ones.
    let exported = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let keeps: Vec<&str> = exported
        .lines()
        .filter(|l| l.contains("\"context.keep\""))
        .collect();
    assert_eq!(keeps.len(), 70);
    let mut forged: serde_json::Value = serde_json::from_str(keeps[30]).unwrap();
    forged["target"] = entry(&repo.log(), &spare)["id"].as_str().unwrap().into();
    let mut id = forged["id"].as_str().unwrap().to_owned();
    let last = id.pop().unwrap();
    id.push(if last == 'z' { 'y' } else { 'z' });
    forged["id"] = id.clone().into();
    repo.write("forged.jsonl", &format!("{forged}\n"));
    repo.kapi(&["store", "import", "forged.jsonl"]).ok();
    // A fresh clone's first read: nothing folded, nothing remembered.
    for name in [
        "fold.checkpoint",
        "fold.base",
        "fold.decisions",
        "trust.verdicts",
    ] {
        let _ = std::fs::remove_file(kapi_dir(&repo).join(name));
    }
    let log = repo.log();
    for rule in &rules {
        assert_eq!(entry(&log, rule)["status"], "established", "{rule}");
    }
    assert_eq!(entry(&log, &spare)["status"], "suggested");
    let doctor = repo.kapi(&["store", "doctor"]).stdout;
    let bad: Vec<&str> = doctor
        .lines()
        .filter(|l| l.contains("bad signature: "))
        .collect();
    assert_eq!(bad.len(), 1, "{doctor}");
    assert!(bad[0].contains(&id), "{doctor}");
    assert!(doctor.contains("1 ignored"), "{doctor}");
}

/// The Ed25519 identity point, a small-order key: with it, `s = 0` and a
/// small-order `R` verify for every message under the cofactored equation.
const WEAK_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA mallory";

#[test]
fn a_small_order_ed25519_key_is_refused_when_added_and_when_listed() {
    let (repo, _) = signed_project();
    repo.write("keys/weak.pub", &format!("{WEAK_KEY}\n"));
    let refused = repo
        .kapi(&["trust", "add", "mallory@example.com", "keys/weak.pub"])
        .code(2);
    assert!(
        refused.stderr.contains("small-order (weak) point"),
        "{}",
        refused.stderr
    );
    // Listed by hand on the default branch: the line is named, by `trust
    // list` and by doctor, and grants nothing.
    let text = std::fs::read_to_string(repo.join(".kapi/allowed_signers")).unwrap();
    repo.write(
        ".kapi/allowed_signers",
        &format!("{text}mallory@example.com namespaces=\"kapi\" {WEAK_KEY}\n"),
    );
    repo.git(&["commit", "-qam", "a weak key"]);
    let list = repo.kapi(&["trust", "list"]).ok().stdout;
    assert!(list.contains("small-order (weak) point"), "{list}");
    assert!(!list.contains("mallory@example.com  "), "{list}");
    let doctor = repo.kapi(&["store", "doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains("small-order (weak) point"),
        "{}",
        doctor.stdout
    );
}
