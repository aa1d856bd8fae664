//! The matcher's plans kept across processes (`.git/kapi/rules.cache`):
//! a check with the cache finds byte for byte what one without it finds,
//! and a cache that is forged, cut short, stale or another clone's is
//! never obeyed: it is derived again and written anew.

use std::path::PathBuf;

use crate::common::TestEnv;

const TERMS: &str = "# id\tstatus\tpreferred\tavoided\n\
1\testablished\tQuickcast\tQuick cast|Quick-cast|QuickCast\n\
2\testablished\tGitHub\tGithub|Git Hub|github\n\
3\tsuggested\truntime\trun time|run-time\n";

const PAGE: &str = "# Notes\n\nQuick cast is on Github, with a run time of one Git Hub.\n";

fn repo() -> TestEnv {
    let env = TestEnv::new();
    env.write("terms.tsv", TERMS);
    env.write("page.md", PAGE);
    env
}

fn cache(env: &TestEnv) -> PathBuf {
    env.join(".git/kapi/rules.cache")
}

/// The check's JSON output, exactly as printed.
fn check(env: &TestEnv) -> String {
    env.kapi(&[
        "check",
        "--rules",
        "terms.tsv",
        "--format",
        "json",
        "page.md",
    ])
    .code(1)
    .stdout
}

/// The findings with no cache at all (removed first).
fn without_cache(env: &TestEnv) -> String {
    let _ = std::fs::remove_file(cache(env));
    let out = check(env);
    assert!(cache(env).is_file(), "a check keeps its matcher's plan");
    out
}

#[test]
fn a_check_with_the_cache_finds_what_one_without_it_finds() {
    let env = repo();
    let fresh = without_cache(&env);
    assert!(
        fresh.contains("Quick cast") && fresh.contains("Git Hub"),
        "{fresh}"
    );
    let written = std::fs::read(cache(&env)).unwrap();
    assert_eq!(check(&env), fresh);
    // The plan was found: the file is not written again.
    assert_eq!(std::fs::read(cache(&env)).unwrap(), written);
    // `kapi store rebuild` removes it with the other derived files.
    env.kapi(&["store", "rebuild"]).ok();
    assert!(!cache(&env).exists());
    assert_eq!(check(&env), fresh);
}

/// Replace the cache with `bytes`, check, and see the findings of a
/// check without a cache and a file written anew that checks out.
fn not_obeyed(env: &TestEnv, bytes: &[u8], fresh: &str, good: &[u8]) {
    std::fs::write(cache(env), bytes).unwrap();
    assert_eq!(check(env), fresh);
    assert_eq!(std::fs::read(cache(env)).unwrap(), good, "written anew");
}

#[test]
fn a_forged_cache_is_not_obeyed() {
    let env = repo();
    let fresh = without_cache(&env);
    let good = std::fs::read(cache(&env)).unwrap();
    // A plan that looks for no form at all (no keys, no forms, no
    // selector), put in place of the real one under its key with the old
    // tag: it would silence every finding.
    let magic = b"kapi rules cache 4\n".len();
    let key = &good[magic..magic + 32];
    let silent: &[u8] = &[
        0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // keys: no text, one offset
        0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // forms: no text, one offset
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // no rules, flags, texts
        1, 0, // scans first, no selector
    ];
    let mut forged = good[..magic].to_vec();
    forged.extend_from_slice(key);
    forged.extend_from_slice(&0u32.to_le_bytes());
    forged.extend_from_slice(&(silent.len() as u64).to_le_bytes());
    forged.extend_from_slice(silent);
    forged.extend_from_slice(&good[good.len() - 32..]);
    not_obeyed(&env, &forged, &fresh, &good);
    // The same, naming the term list and its lines (so it would not be
    // read whole): the list's hash, its lines' count of `u32`s, the lines.
    let count = u32::from_le_bytes(good[magic + 68..magic + 72].try_into().unwrap()) as usize;
    let list_end = magic + 72 + 4 * count;
    let list = &good[magic + 36..list_end];
    let mut forged = good[..magic].to_vec();
    forged.extend_from_slice(key);
    forged.extend_from_slice(&1u32.to_le_bytes());
    forged.extend_from_slice(list);
    forged.extend_from_slice(&(silent.len() as u64).to_le_bytes());
    forged.extend_from_slice(silent);
    forged.extend_from_slice(&good[good.len() - 32..]);
    not_obeyed(&env, &forged, &fresh, &good);
    // One byte changed in the plan, or in the list's lines.
    for at in [list_end + 8 + 3, list_end - 2] {
        let mut flipped = good.clone();
        flipped[at] ^= 0x01;
        not_obeyed(&env, &flipped, &fresh, &good);
    }
    // Junk, and a link in its place (never followed).
    not_obeyed(&env, b"kapi rules cache 4\nnonsense", &fresh, &good);
    std::fs::remove_file(cache(&env)).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(env.join("page.md"), cache(&env)).unwrap();
        assert_eq!(check(&env), fresh);
        assert_eq!(std::fs::read(env.join("page.md")).unwrap(), PAGE.as_bytes());
    }
}

#[test]
fn a_truncated_cache_is_not_obeyed() {
    let env = repo();
    let fresh = without_cache(&env);
    let good = std::fs::read(cache(&env)).unwrap();
    for cut in [0, 10, good.len() / 2, good.len() - 1] {
        not_obeyed(&env, &good[..cut], &fresh, &good);
    }
    let mut grown = good.clone();
    grown.push(0);
    not_obeyed(&env, &grown, &fresh, &good);
}

#[test]
fn a_stale_cache_is_not_obeyed() {
    let env = repo();
    let before = without_cache(&env);
    // The rules change: the plan kept for the old ones is not found.
    env.write(
        "terms.tsv",
        &TERMS.replace("Github|Git Hub|github", "Github|github"),
    );
    let after = check(&env);
    assert_ne!(after, before);
    assert!(!after.contains("Git Hub"), "{after}");
    assert_eq!(without_cache(&env), after);
}

#[test]
fn another_clones_cache_is_not_obeyed() {
    let env = repo();
    let fresh = without_cache(&env);
    let good = std::fs::read(cache(&env)).unwrap();
    // Another clone with the same rules and page keeps the same plan under
    // its own secret: swapped in here, it is not taken.
    let other = env.sibling("other");
    other.write("terms.tsv", TERMS);
    other.write("page.md", PAGE);
    let theirs = without_cache(&other);
    assert_eq!(
        theirs.replace(&other.path().display().to_string(), ""),
        fresh.replace(&env.path().display().to_string(), "")
    );
    let swapped = std::fs::read(cache(&other)).unwrap();
    assert_ne!(swapped, good, "each clone tags with its own secret");
    not_obeyed(&env, &swapped, &fresh, &good);
}

/// A term list of `n` rules made up for the test (line 2 on, after the
/// header): `Zarvo<i> <form>` for each form of each rule of TERMS, in
/// turn, after TERMS' own three.
fn large_terms(n: usize) -> String {
    let mut out = String::from(TERMS);
    let base: Vec<Vec<&str>> = TERMS
        .lines()
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect();
    for i in 0..n {
        let r = &base[i % base.len()];
        let w = format!("Zarvo{i}");
        let avoided: Vec<String> = r[3].split('|').map(|f| format!("{w} {f}")).collect();
        out.push_str(&format!(
            "{}\t{}\t{w} {}\t{}\n",
            i + 4,
            r[1],
            r[2],
            avoided.join("|")
        ));
    }
    out
}

/// The findings' (path, line, column, matched text, rule) in a check's JSON.
fn findings(json: &str) -> Vec<(String, u64, u64, String, String)> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["line"].as_u64().unwrap(),
                f["column"].as_u64().unwrap(),
                f["matched"].as_str().unwrap().to_owned(),
                f["rule"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_large_rule_set_finds_in_each_file_what_its_forms_find() {
    // 1,200 rules, some 3,300 forms: past the size from which each file is
    // scanned with only the forms whose words it writes.
    let env = repo();
    env.write("terms.tsv", &large_terms(1200));
    env.write(
        "docs/a.md",
        "Zarvo7 Github and zarvo7 git hub; Zarvo7 and Github apart.\n",
    );
    env.write("docs/b.md", "Nothing here but Zarvo9, zarvo10 and run.\n");
    env.write(
        "docs/c.md",
        "`Zarvo3 Quick cast` in code; Zarvo3 Quick-cast; ZARVO3 QUICKCAST.\n",
    );
    let run = || {
        findings(
            &env.kapi(&[
                "check",
                "--rules",
                "terms.tsv",
                "--format",
                "json",
                "page.md",
                "docs",
            ])
            .code(1)
            .stdout,
        )
    };
    let cold = run();
    let f = |path: &str, line: u64, column: u64, matched: &str, rule: &str| {
        (
            path.to_owned(),
            line,
            column,
            matched.to_owned(),
            format!("terms.tsv:{rule}"),
        )
    };
    assert_eq!(
        cold,
        [
            f("docs/a.md", 1, 1, "Zarvo7 Github", "12"),
            f("docs/a.md", 1, 19, "zarvo7 git hub", "12"),
            f("docs/a.md", 1, 46, "Github", "3"),
            // Only as written: it differs from the preferred form
            // "Zarvo3 Quickcast" in case alone.
            f("docs/c.md", 1, 30, "Zarvo3 Quick-cast", "8"),
            f("page.md", 3, 1, "Quick cast", "2"),
            f("page.md", 3, 18, "Github", "3"),
            f("page.md", 3, 33, "run time", "4"),
            f("page.md", 3, 49, "Git Hub", "3"),
        ]
    );
    // Read back from the cache: the same.
    assert!(cache(&env).is_file());
    assert_eq!(run(), cold);
}

#[test]
fn a_known_term_list_is_read_line_by_line_and_finds_the_same() {
    // 5,000 rules: past the size from which a kept plan carries the
    // selector, and the list is read only for the rules a page writes.
    let env = repo();
    env.write("terms.tsv", &large_terms(5000));
    env.write(
        "docs/a.md",
        "Zarvo4999 Github, zarvo7 git hub and Github; Zarvo4999 GitHub as written.\n",
    );
    let run = |args: &[&str]| {
        let mut all = vec!["check", "--rules", "terms.tsv", "--format", "json"];
        all.extend_from_slice(args);
        env.kapi(&all).stdout
    };
    let _ = std::fs::remove_file(cache(&env));
    let cold = run(&["page.md", "docs"]);
    let written = std::fs::read(cache(&env)).unwrap();
    assert!(findings(&cold).len() >= 5, "{cold}");
    // The plan names the list: the next check reads it line by line, and
    // finds byte for byte the same; listing the rules reads it whole.
    assert_eq!(run(&["page.md", "docs"]), cold);
    assert_eq!(std::fs::read(cache(&env)).unwrap(), written);
    let list = || {
        let out = env
            .kapi(&["check", "-vv", "--rules", "terms.tsv", "page.md"])
            .code(1)
            .stderr;
        // Without the closing line's time.
        out.lines()
            .filter(|l| !l.starts_with("checked "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let listed = list();
    assert!(
        listed.contains("5003 rules from the term list terms.tsv")
            && listed.contains("\"Zarvo4999 GitHub\", not \"Zarvo4999 Github\""),
        "{}",
        &listed[..listed.len().min(2000)]
    );
    let _ = std::fs::remove_file(cache(&env));
    assert!(list() == listed, "a list read whole lists the same rules");
    // The list changes by one line: read whole again, and a bad line in it
    // is named, cache or no cache.
    let edited = large_terms(5000).replace("Zarvo4999 Github", "Zarvo4999 Githubb");
    env.write("terms.tsv", &edited);
    let after = run(&["page.md", "docs"]);
    assert_ne!(after, cold);
    let _ = std::fs::remove_file(cache(&env));
    assert_eq!(run(&["page.md", "docs"]), after);
    env.write("terms.tsv", &format!("{edited}9\tsettled\tA\tb\n"));
    let out = env
        .kapi(&["check", "--rules", "terms.tsv", "page.md"])
        .code(2);
    assert!(out.stderr.contains("unknown status"), "{}", out.stderr);
}

#[test]
fn what_a_check_saw_spares_the_next_its_hashing_and_no_change_gets_past_it() {
    let env = repo();
    let seen = env.join(".git/kapi/rules.seen");
    let fresh = without_cache(&env);
    // Files changed under two seconds before are not vouched for.
    assert_eq!(check(&env), fresh);
    assert!(!seen.exists(), "the list and the cache were just written");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(check(&env), fresh);
    let record = std::fs::read_to_string(&seen).unwrap();
    assert!(
        record.contains("\ncache ") && record.contains("\nentry ") && record.contains("\nlist "),
        "{record}"
    );
    // Taken as it is: the same findings, nothing written again.
    assert_eq!(check(&env), fresh);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), record);
    // The list changed in place, to the same size: found changed.
    env.write("terms.tsv", &TERMS.replace("Git Hub", "Git Hux"));
    let edited = check(&env);
    assert!(!edited.contains("Git Hub") && fresh.contains("Git Hub"));
    assert_eq!(without_cache(&env), edited);
    // A forged plan in the cache the record named: written, so not that
    // file any more, and refused.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(check(&env), edited);
    let record = std::fs::read_to_string(&seen).unwrap();
    let mut forged = std::fs::read(cache(&env)).unwrap();
    let at = forged.len() - 40;
    forged[at] ^= 1;
    std::fs::write(cache(&env), &forged).unwrap();
    assert_eq!(check(&env), edited);
    assert_ne!(std::fs::read(cache(&env)).unwrap(), forged, "derived again");
    // A forged record is not read.
    std::fs::write(&seen, record.replace("\ntag ", "\ntag 0")).unwrap();
    assert_eq!(check(&env), edited);
}
