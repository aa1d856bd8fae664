//! What a hostile remote, a damaged cache or a remote of another project
//! can do to a machine's log, and what they cannot: each test is one
//! attack, through the real binary on real repositories and a bare remote.

use std::path::PathBuf;

use crate::common::{Run, TestEnv, Transcript};

/// A bare remote beside the checkout `env`, named `origin`, holding the
/// checkout's first commit.
fn with_remote(env: &TestEnv) -> PathBuf {
    let remote = env.bare_remote();
    env.write(
        "docs/intro.md",
        "# Intro\n\nOpen Quickcast from the menu.\n",
    );
    env.publish(&remote);
    remote
}

/// git in the bare remote, as someone who can push there.
fn in_remote(env: &TestEnv, remote: &std::path::Path, args: &[&str]) -> String {
    let mut full = vec![
        "-c",
        "user.name=Mallory",
        "-c",
        "user.email=mallory@example.com",
        "--git-dir",
        remote.to_str().unwrap(),
    ];
    full.extend_from_slice(args);
    env.git(&full)
}

fn note(env: &TestEnv, term: &str) -> Run {
    let avoided = format!("{} {}", &term[..term.len() - 1], &term[term.len() - 1..]);
    env.kapi(&[
        "context",
        "note",
        "--term",
        term,
        "--instead-of",
        &avoided,
        "--quote",
        &avoided,
    ])
}

fn operations(env: &TestEnv) -> usize {
    env.log().len()
}

/// Push a tree to the remote's refs/kapi/ops, on top of its tip: the
/// remote's tree with `blob` added at `<outer>/<inner>` for every pair
/// given (an existing leaf is replaced).
fn push_segments(env: &TestEnv, remote: &std::path::Path, blob: &str, at: &[(char, char)]) {
    let git = |args: &[&str], input: Option<&str>| -> String {
        match input {
            Some(input) => {
                let mut full = vec!["--git-dir", remote.to_str().unwrap()];
                full.extend_from_slice(args);
                env.git_stdin(&full, input.as_bytes())
            }
            None => in_remote(env, remote, args),
        }
    };
    let parent = git(&["rev-parse", "refs/kapi/ops"], None);
    let mut top: std::collections::BTreeMap<char, String> =
        git(&["ls-tree", &format!("{parent}^{{tree}}")], None)
            .lines()
            .map(|l| {
                let (meta, name) = l.split_once('\t').unwrap();
                (
                    name.chars().next().unwrap(),
                    meta.split(' ').nth(2).unwrap().to_owned(),
                )
            })
            .collect();
    let mut by_outer: std::collections::BTreeMap<char, Vec<char>> = Default::default();
    for &(outer, inner) in at {
        by_outer.entry(outer).or_default().push(inner);
    }
    for (outer, inners) in by_outer {
        let mut leaves: std::collections::BTreeMap<char, String> = match top.get(&outer) {
            Some(tree) => git(&["ls-tree", tree], None)
                .lines()
                .map(|l| {
                    let (meta, name) = l.split_once('\t').unwrap();
                    (
                        name.chars().next().unwrap(),
                        meta.split(' ').nth(2).unwrap().to_owned(),
                    )
                })
                .collect(),
            None => Default::default(),
        };
        for inner in inners {
            leaves.insert(inner, blob.to_owned());
        }
        let listing: String = leaves
            .iter()
            .map(|(name, oid)| format!("100644 blob {oid}\t{name}\n"))
            .collect();
        top.insert(outer, git(&["mktree"], Some(&listing)));
    }
    let listing: String = top
        .iter()
        .map(|(name, oid)| format!("040000 tree {oid}\t{name}\n"))
        .collect();
    let tree = git(&["mktree"], Some(&listing));
    let commit = git(&["commit-tree", &tree, "-p", &parent, "-m", "pushed"], None);
    git(&["update-ref", "refs/kapi/ops", &commit], None);
}

/// Shard names (outer, inner) the remote's log does not use.
fn unused_shards(env: &TestEnv, remote: &std::path::Path) -> Vec<(char, char)> {
    let used: Vec<String> = in_remote(
        env,
        remote,
        &["ls-tree", "-r", "--name-only", "refs/kapi/ops"],
    )
    .lines()
    .map(str::to_owned)
    .collect();
    let alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
    let mut out = Vec::new();
    for a in alphabet.chars() {
        for b in alphabet.chars() {
            if !used.contains(&format!("{a}/{b}")) {
                out.push((a, b));
            }
        }
    }
    out
}

fn blob(env: &TestEnv, remote: &std::path::Path, bytes: &[u8]) -> String {
    env.git_stdin(
        &[
            "--git-dir",
            remote.to_str().unwrap(),
            "hash-object",
            "-w",
            "--stdin",
        ],
        bytes,
    )
}

#[test]
fn a_pushed_segment_of_junk_lines_is_not_merged_and_the_union_heals_the_remote() {
    let a = TestEnv::new();
    let remote = with_remote(&a);
    for term in ["Quickcast", "Fastcast", "Slowcast"] {
        note(&a, term).ok();
    }
    a.kapi(&["context", "sync"]).ok();
    // A million lines of junk (2 MiB, a few KiB to send) in a shard of its own.
    let junk = blob(&a, &remote, &b"x\n".repeat(1_000_000));
    let shard = unused_shards(&a, &remote)[0];
    push_segments(&a, &remote, &junk, &[shard]);

    // The million lines are counted as not merged; the first are named,
    // the rest counted: not a line per line.
    let mut t = Transcript::new();
    let run = t.kapi(&a, &["context", "sync"]).ok();
    assert!(run.stderr.lines().count() < 40, "{}", run.stderr);
    assert_eq!(operations(&a), 3);
    // Nothing of them is held here.
    t.kapi(&a, &["store", "doctor"]).ok();
    insta::assert_snapshot!(t.text());
    // What this machine pushed back descends from the junk and holds none
    // of it: the remote is healed.
    let listed = in_remote(&a, &remote, &["ls-tree", "-r", "refs/kapi/ops"]);
    assert!(!listed.contains(&junk), "{listed}");
    // A new clone reads a clean log.
    let b = a.sibling("b");
    b.add_origin(&remote);
    b.kapi(&["context", "sync", "--no-push"]).ok();
    assert_eq!(operations(&b), 3);
}

#[test]
fn junk_already_on_the_local_ref_is_named_a_few_lines_a_segment_and_counted() {
    let a = TestEnv::new();
    let remote = with_remote(&a);
    note(&a, "Quickcast").ok();
    a.kapi(&["context", "sync"]).ok();
    let junk = blob(&a, &remote, &b"x\n".repeat(500_000));
    let shard = unused_shards(&a, &remote)[0];
    push_segments(&a, &remote, &junk, &[shard]);
    // Fetched by git itself, past kapi's door.
    a.git(&["fetch", "-q", "origin", "+refs/kapi/ops:refs/kapi/ops"]);

    let mut t = Transcript::new();
    let run = t.kapi(&a, &["context", "log", "--json"]).ok();
    assert_eq!(run.json_lines().len(), 1);
    let doctor = t.kapi(&a, &["store", "doctor"]).code(1);
    assert!(doctor.stdout.lines().count() < 40, "{}", doctor.stdout);
    insta::assert_snapshot!(t.text());
    // Writing goes on; a write to that shard leaves the junk behind.
    for term in ["Fastcast", "Slowcast", "Mostcast"] {
        note(&a, term).ok();
    }
    assert_eq!(operations(&a), 4);
}

#[test]
fn oversized_segments_under_every_unused_shard_name_stop_no_write() {
    let a = TestEnv::new();
    let remote = with_remote(&a);
    note(&a, "Quickcast").ok();
    a.kapi(&["context", "sync"]).ok();
    // One blob just over the 64 MiB limit, under every shard name the log
    // does not use: a few hundred KiB to send.
    let big = blob(&a, &remote, &vec![b'x'; 64 * 1024 * 1024 + 1]);
    let unused = unused_shards(&a, &remote);
    push_segments(&a, &remote, &big, &unused);

    // Through kapi's door: named, not merged.
    let b = a.sibling("b");
    b.add_origin(&remote);
    // Each of the 1023 segments named on stderr (alike: no snapshot).
    let run = b.kapi(&["context", "sync", "--no-push"]).ok();
    assert_eq!(
        run.stdout,
        "took origin's log: 1 operation\n  \
         1023 fetched lines were not merged: not valid operations of their segment, \
         or other copies of operations this log holds (named on stderr)\n\
         not pushed (--no-push)\n"
    );
    assert_eq!(run.stderr.lines().count(), 1023, "{}", run.stderr);
    for line in run.stderr.lines() {
        let (at, said) = line.split_once(": oversized segment: ").unwrap();
        assert!(
            at.starts_with("warning: fetched from origin: fetched:"),
            "{line}"
        );
        assert_eq!(
            said,
            "67108865 bytes, the limit is 67108864; its operations are not read. \
             Someone wrote it with another tool: new operations are minted into other segments \
             (not merged)"
        );
    }
    for term in ["Fastcast", "Slowcast", "Mostcast", "Lastcast"] {
        note(&b, term).ok();
    }
    assert_eq!(operations(&b), 5);

    // Past the door (fetched by git): a write replaces an oversized
    // segment, which no reader ever inflates, so nothing readable is lost.
    a.git(&["fetch", "-q", "origin", "+refs/kapi/ops:refs/kapi/ops"]);
    for term in ["Fastcast", "Slowcast", "Mostcast", "Lastcast"] {
        note(&a, term).ok();
    }
    assert_eq!(operations(&a), 5);
}

#[test]
fn a_rewritten_remote_ref_takes_the_union_back() {
    let a = TestEnv::new();
    let remote = with_remote(&a);
    for term in ["Quickcast", "Fastcast"] {
        note(&a, term).ok();
    }
    a.kapi(&["context", "sync"]).ok();
    // Someone rewrites the remote's log: a new history holding nothing.
    let empty = a.git_stdin(&["--git-dir", remote.to_str().unwrap(), "mktree"], b"");
    let orphan = in_remote(&a, &remote, &["commit-tree", &empty, "-m", "rewritten"]);
    in_remote(&a, &remote, &["update-ref", "refs/kapi/ops", &orphan]);

    let mut t = Transcript::new();
    t.kapi(&a, &["context", "sync"]).ok();
    // The remote's tip descends from the rewritten commit and holds ours.
    let tip = in_remote(&a, &remote, &["rev-parse", "refs/kapi/ops"]);
    in_remote(&a, &remote, &["merge-base", "--is-ancestor", &orphan, &tip]);
    let b = a.sibling("b");
    b.add_origin(&remote);
    b.kapi(&["context", "sync", "--no-push"]).ok();
    assert_eq!(operations(&b), 2);
    // And the next sync finds nothing to do.
    t.kapi(&a, &["context", "sync"]).ok();
    insta::assert_snapshot!(t.text());
}

/// CRC-32 (IEEE), as the derived caches checksum themselves.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn forge_newest(env: &TestEnv, tree: &str, within: &str) {
    let body = format!("kapi newest v1\nrefs/kapi/ops {tree} 1796029200000 {within} 0");
    let text = format!("{body}\ncrc {}\n", crc32(body.as_bytes()));
    std::fs::write(env.join(".git/kapi/newest"), text).unwrap();
}

#[test]
fn a_newest_cache_that_does_not_check_out_is_computed_again() {
    let a = TestEnv::new();
    note(&a, "Quickcast").ok();
    let first_id = a.log()[0]["id"].as_str().unwrap().to_owned();
    // Naming a tree git does not have (the ref moved back, `git gc`).
    forge_newest(&a, "0123456789abcdef0123456789abcdef01234567", &first_id);
    note(&a, "Fastcast").ok();
    // Naming an id dated 2059 with the real tree: obeyed, every id would
    // be dragged there and refused.
    let tree = a.git(&["rev-parse", "refs/kapi/ops^{tree}"]);
    let future = kapi::ops::OpId::mint(
        kapi::ops::id::EPOCH_MS + 33 * 365 * 86_400_000,
        0x1234_5678,
        None,
    )
    .unwrap();
    forge_newest(&a, &tree, future.as_str());
    note(&a, "Slowcast").ok();
    let ids = a.log_ids();
    assert_eq!(ids.len(), 3);
    assert!(
        ids.iter().all(|id| id.as_str() < future.as_str()),
        "{ids:?}"
    );
    a.kapi(&["store", "doctor"]).ok();
}

/// A newest-id cache with a tag line made without this repository's
/// secret, naming an id a few minutes ahead that the log does not hold
/// (within the bound, so only the tag could vouch for it): looked up in
/// the log, not taken, and no id is minted past it.
#[test]
fn a_newest_cache_with_a_tag_made_elsewhere_is_looked_up_in_the_log() {
    let a = TestEnv::new();
    note(&a, "Quickcast").ok();
    let tree = a.git(&["rev-parse", "refs/kapi/ops^{tree}"]);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let ahead = kapi::ops::OpId::mint(clock + 5 * 60_000, 0x5eed, None).unwrap();
    let body = format!(
        "kapi newest v1\nrefs/kapi/ops {tree} {clock} {ahead} 0\ntag {} 0 - 0",
        "ab".repeat(20)
    );
    let text = format!("{body}\ncrc {}\n", crc32(body.as_bytes()));
    std::fs::write(a.join(".git/kapi/newest"), text).unwrap();
    note(&a, "Fastcast").ok();
    let ids = a.log_ids();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| id.as_str() < ahead.as_str()), "{ids:?}");
    // Written anew, tagged by this repository.
    let cache = std::fs::read_to_string(a.join(".git/kapi/newest")).unwrap();
    assert!(!cache.contains(ahead.as_str()), "{cache}");
    assert!(!cache.contains(&"ab".repeat(20)), "{cache}");
}

/// A project cache naming another project, with the tag this repository
/// wrote for the real one (so it no longer matches its bytes), or with no
/// tag at all (an older kapi's file): looked up in the log, not taken.
#[test]
fn a_project_cache_that_does_not_check_out_is_not_taken() {
    let a = TestEnv::new();
    note(&a, "Quickcast").ok();
    let exported = || a.kapi(&["store", "export", "-"]).ok().json_lines();
    let project = exported()[0]["project"].as_str().unwrap().to_owned();
    let path = a.join(".git/kapi/project");
    let written = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), 3, "{written}");
    assert!(
        lines[2].starts_with("held ") && lines[2].contains(" tag "),
        "{written}"
    );
    let (id, _) = lines[1].split_once(' ').unwrap();
    for (forged, term) in [
        (
            format!("{}\n{id} elsewhere\n{}\n", lines[0], lines[2]),
            "Fastcast",
        ),
        (format!("{}\n{id} elsewhere\n", lines[0]), "Slowcast"),
    ] {
        std::fs::write(&path, &forged).unwrap();
        note(&a, term).ok();
        let log = exported();
        assert!(
            log.iter()
                .all(|l| l["project"].as_str() == Some(project.as_str())),
            "{log:?}"
        );
        let now = std::fs::read_to_string(&path).unwrap();
        assert!(now.contains(&format!("{id} {project}\n")), "{now}");
    }
}

#[test]
fn a_checkpoint_claiming_huge_lengths_is_folded_again() {
    let a = TestEnv::new();
    note(&a, "Quickcast").ok();
    operations(&a);
    for name in ["fold.checkpoint", "fold.base"] {
        // A header length of 2^40 bytes, and a header claiming a ledger of
        // 2^40 bytes: neither is allocated.
        let mut huge = b"kapi fold checkpoint\n".to_vec();
        huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
        std::fs::write(a.join(format!(".git/kapi/{name}")), &huge).unwrap();
    }
    assert_eq!(operations(&a), 1);
    let path = a.join(".git/kapi/fold.checkpoint");
    let mut file = b"kapi fold checkpoint\n".to_vec();
    let head = br#"{"fingerprint":"x","tips":[null,null],"unreadable":0,"held":[],"bytes":[1099511627776,0]}"#;
    file.extend_from_slice(head);
    file.extend_from_slice(&(head.len() as u64).to_le_bytes());
    std::fs::write(&path, &file).unwrap();
    assert_eq!(operations(&a), 1);
}

#[test]
fn sync_gives_up_on_a_remote_that_never_answers() {
    let a = TestEnv::new();
    note(&a, "Quickcast").ok();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept every connection and say nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let url = format!("git://127.0.0.1:{port}/log.git");
    let start = std::time::Instant::now();
    // Each names the remote and the time it waited.
    let mut t = Transcript::new();
    t.redact(format!(":{port}/"), ":[PORT]/");
    let run = t
        .kapi(&a, &["context", "sync", "--remote", &url, "--timeout", "2"])
        .code(6);
    // The remote-tracking ref is named by a hash of the URL, port included.
    let tracking = run
        .stderr
        .split_once("refs/kapi/remotes/")
        .and_then(|(_, rest)| rest.split_once("/ops"))
        .map(|(name, _)| name.to_owned())
        .expect("the git command is named");
    t.redact(
        format!("refs/kapi/remotes/{tracking}/"),
        "refs/kapi/remotes/[URL HASH]/",
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
    // The same from kapi.toml.
    a.write("kapi.toml", "[sync]\ntimeout = 1\n");
    t.comment("kapi.toml: [sync] timeout = 1");
    t.kapi(&a, &["context", "sync", "--remote", &url]).code(6);
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_remote_of_another_project_is_refused_unless_a_person_asks() {
    let a = TestEnv::new();
    a.write("kapi.toml", "project = \"alpha\"\n");
    note(&a, "Quickcast").ok();
    let other = a.sibling("beta-repo");
    other.write("kapi.toml", "project = \"beta\"\n");
    for term in ["Fastcast", "Slowcast"] {
        // Another machine: another seed, so other ids.
        let out = other
            .kapi_cmd(&[
                "context",
                "note",
                "--term",
                term,
                "--instead-of",
                "x y",
                "--quote",
                "x y",
            ])
            .env("KAPI_SEED", "11")
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let path = other.path().to_str().unwrap().to_owned();

    // Refused naming both projects and --allow-other-project.
    let mut t = Transcript::new();
    t.kapi(&a, &["context", "sync", "--remote", &path, "--no-push"])
        .code(6);
    assert_eq!(operations(&a), 1, "nothing was merged");
    // An agent may not decide it.
    t.agent(
        &a,
        "s1",
        &[
            "context",
            "sync",
            "--remote",
            &path,
            "--no-push",
            "--allow-other-project",
        ],
    )
    .code(4);
    insta::assert_snapshot!(t.text());
    assert_eq!(operations(&a), 1);
    // A person may.
    a.kapi(&[
        "context",
        "sync",
        "--remote",
        &path,
        "--no-push",
        "--allow-other-project",
    ])
    .ok();
    assert_eq!(operations(&a), 3);
}

/// The project every stored operation names, in id order.
fn projects(env: &TestEnv) -> Vec<String> {
    env.kapi(&["store", "export", "-"])
        .ok()
        .json_lines()
        .iter()
        .map(|l| l["project"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn without_kapi_toml_the_project_is_the_one_the_log_already_names() {
    let a = TestEnv::new();
    note(&a, "Quickcast").ok();
    // A remote added later would have renamed the project.
    let remote = a.root().join("renamed.git");
    a.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    a.add_origin(&remote);
    note(&a, "Fastcast").ok();
    assert_eq!(projects(&a), ["work", "work"]);
    // A clone under another folder name keeps it too.
    a.kapi(&["context", "sync"]).ok();
    let b = a.sibling("elsewhere");
    b.add_origin(&remote);
    b.kapi(&["context", "sync", "--no-push"]).ok();
    note(&b, "Slowcast").ok();
    assert_eq!(projects(&b), ["work", "work", "work"]);
}

#[test]
fn settling_with_no_push_needs_no_remote() {
    let a = TestEnv::new();
    a.write("docs/intro.md", "# Intro\n\nOpen Quick cast.\n");
    a.git(&["add", "-A"]);
    a.git(&["commit", "-qm", "docs"]);
    let base = a.git(&["rev-parse", "HEAD"]);
    a.agent_term(
        "s1",
        "Quickcast",
        "Quick cast",
        &["--path", "docs/intro.md"],
    )
    .ok();
    a.write("docs/intro.md", "# Intro\n\nOpen Quickcast.\n");
    a.git(&["commit", "-qam", "Fix wording (#7)"]);
    let range = format!("{base}..HEAD");
    // No remote, and the merge signal recorded.
    let mut t = Transcript::new();
    t.kapi(&a, &["context", "sync", "--no-push", "--merged", &range])
        .ok();
    insta::assert_snapshot!(t.text());
}
