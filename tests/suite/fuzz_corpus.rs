//! The fuzz targets' seed corpora (`fuzz/corpus/<target>/`), and any input
//! a fuzzer found to crash, replayed through the same entry points in the
//! normal suite: what the fuzzers start from must hold on every build, not
//! only under `cargo fuzz`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kapi::ops::Record;
use kapi::store::segment;
use kapi::vault::note::Meta;
use kapi::vault::{Grant, Sensitivity, evidence, frontmatter, review, table};

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no seeds", dir.display());
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

#[test]
fn operation_seeds_are_accepted_and_survive_their_canonical_form() {
    for (path, bytes) in corpus("op_record") {
        let record =
            Record::from_untrusted(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = Record::from_untrusted(record.to_canonical_json().as_bytes()).unwrap();
        assert_eq!(again, record, "{}", path.display());
        let _ = kapi::ops::fold(vec![record]);
    }
}

#[test]
fn segment_and_journal_seeds_read_their_good_lines_and_name_the_bad() {
    let mut good = 0;
    for (path, bytes) in corpus("segment") {
        let (mut records, mut problems) = (Vec::new(), Vec::new());
        segment::parse(&bytes, None, "seed", &mut records, &mut problems);
        if path.ends_with("bad-lines.jsonl") {
            assert_eq!(problems.len(), 3, "{problems:?}");
        }
        good += records.len();
        let _ = kapi::ops::fold::fold_with_history(records);
    }
    assert!(good > 0);
    for (path, bytes) in corpus("journal") {
        let parsed = kapi::store::parse_journal(&bytes);
        assert!(
            parsed.records.windows(2).all(|w| w[0].id < w[1].id),
            "{}",
            path.display()
        );
        if path.ends_with("torn.jsonl") {
            assert_eq!(parsed.torn.len(), 3, "{}", path.display());
        }
        let _ = kapi::ops::fold(parsed.records);
    }
}

#[test]
fn context_file_seeds_parse() {
    for (path, bytes) in corpus("term_list") {
        let text = String::from_utf8(bytes).unwrap();
        let file = kapi::formats::parse_term_list(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!file.rules.is_empty());
    }
    for (path, bytes) in corpus("vale_style") {
        let text = String::from_utf8(bytes).unwrap();
        if path.extension().is_some_and(|e| e == "yml") {
            let file = kapi::formats::parse_vale_substitution(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!file.rules.is_empty());
        } else {
            let (accept, reject) = text.split_once('\0').unwrap();
            kapi::formats::Vocabulary::parse(Some(accept), Some(reject)).unwrap();
        }
    }
    let paths: Vec<Option<String>> = corpus("vale_ini")
        .into_iter()
        .map(|(_, b)| kapi::formats::vale::styles_path(&String::from_utf8(b).unwrap()))
        .collect();
    assert_eq!(paths, [Some("styles".to_string()), Some("b".to_string())]);
    for (path, bytes) in corpus("kapi_toml") {
        let text = String::from_utf8(bytes).unwrap();
        let config = kapi::config::Config::parse(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        kapi::context::PointMap::from_config(&config.points)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let _ = config.check.prose_globs();
        // The fuzz target reads the same bytes as a gazetteer too.
        let space = kapi::ops::axes::Space::build(&config.axes, |_| {
            Ok(include_str!("../../fixtures/axes/places.toml").to_owned())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (_, axis) in space.axes() {
            for (a, _) in axis.values() {
                assert!(axis.contains(a, a) && axis.overlaps(a, a));
            }
        }
    }
}

#[test]
fn vault_note_seeds_read_as_notes_and_tables() {
    let mut rows = 0;
    for (_, bytes) in corpus("vault_note") {
        let fm = frontmatter::parse(&bytes).unwrap();
        let meta = Meta::from_front_matter(&fm, "seed.md");
        let body = String::from_utf8_lossy(&bytes[fm.body_offset..]);
        let grant = Grant::up_to(Sensitivity::Restricted);
        let t = table::parse(&body);
        rows += evidence::project(&t, meta.sensitivity, "evidence.md", &grant, None).len();
        let notes = BTreeSet::from(["a.md".to_string()]);
        let _ = review::finish(review::select(
            &t,
            meta.sensitivity,
            &grant,
            "outcome",
            &review::OUTCOMES,
            &notes,
        ));
    }
    assert!(rows > 0, "the evidence register seed holds rows");
}

#[test]
fn compiled_artifact_seeds_verify_as_current_against_the_fuzzers_vault() {
    use kapi::compile::verify::{Input, VerifyOptions, VerifyStatus, verify_compiled};
    // The vault the `compiled_verify` target builds.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("D-001.md"),
        "---\nid: D-001\ntype: decision\nstatus: accepted\nsensitivity: public\n---\n# One\n\nBody.\n",
    )
    .unwrap();
    let options = VerifyOptions {
        today: kapi::vault::date::parse("2026-03-01").unwrap(),
        grant: Grant::public(),
        expected: Default::default(),
        scope: Default::default(),
        layout: Default::default(),
    };
    for (path, bytes) in corpus("compiled_verify") {
        let v = verify_compiled(dir.path(), Input::Bytes(&bytes), &options).unwrap();
        assert_eq!(v.status, VerifyStatus::Current, "{}: {v:?}", path.display());
    }
}

#[test]
fn hook_input_seeds_parse_and_name_their_edited_file() {
    use kapi::context::hook::{AgentInput, edited_file, transcript_last_entry};
    let mut edited = Vec::new();
    for (path, bytes) in corpus("hook_input") {
        if path.extension().is_some_and(|e| e == "jsonl") {
            assert_eq!(
                transcript_last_entry(&path).unwrap().as_deref(),
                Some("u-2")
            );
            continue;
        }
        let input = AgentInput::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        edited.extend(edited_file(&input));
    }
    assert_eq!(
        edited,
        [std::path::PathBuf::from("a.md"), "docs/intro.md".into()]
    );
}

#[test]
fn workspace_registry_seeds_read_each_path_once_the_latest_line_winning() {
    use kapi::context::workspace::registry::parse;
    for (path, bytes) in corpus("workspace_registry") {
        let (entries, skipped) = parse(&bytes);
        let shares: Vec<(String, bool)> = entries
            .iter()
            .map(|e| (e.path.display().to_string(), e.shares))
            .collect();
        if path.ends_with("registry.jsonl") {
            assert_eq!(skipped, 1);
            assert_eq!(
                shares,
                [
                    ("/home/ada/src/quickcast".to_owned(), true),
                    ("/home/ada/src/brand".to_owned(), true),
                    ("/home/ada/src/gone".to_owned(), false),
                ]
            );
        } else {
            // A line that is no entry never replaces the one before it; a
            // field kapi does not know is ignored.
            assert_eq!(skipped, 2, "{}", path.display());
            assert_eq!(shares, [("/a".to_owned(), false), ("/b".to_owned(), true)]);
        }
    }
}
