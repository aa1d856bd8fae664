//! What a new user trips on (issue 22): advice that works in the state
//! that gave it, a test suite that runs after `cargo install`, messages
//! that say what to do. Each test failed before its fix.

use std::process::Command;

use crate::common::{Run, TestEnv, Transcript};

fn last_short(repo: &TestEnv) -> String {
    let lines = repo.log();
    lines.last().unwrap()["short"].as_str().unwrap().to_owned()
}

// Item 12: the README's own order, `cargo install --locked --path .` then
// `cargo test --locked`, put an installed `kapi` on PATH that the tests'
// git hooks ran instead of the binary under test.

/// Run by `a_hook_runs_the_binary_under_test_whatever_kapi_is_first_on_path`
/// with a `kapi` that fails loudly first on the test process's PATH.
#[test]
#[ignore = "run by a_hook_runs_the_binary_under_test_whatever_kapi_is_first_on_path"]
fn hooks_run_the_binary_under_test() {
    let repo = TestEnv::new();
    repo.write(
        "decisions/D-001.md",
        "---\nid: D-001\ntitle: Cache\nkind: decision\nstatus: accepted\nsensitivity: public\ndate: 2026-01-01\n---\nWe cache things.\n",
    );
    // An artifact whose evaluation day is the clock's: current on the
    // pinned clock, stale on any other day.
    repo.write(
        "kapi.toml",
        "[[compile]]\noutput = \"ctx/cache.json\"\nquery = \"cache\"\n",
    );
    repo.kapi(&["compile-context", "--all"]).ok();
    repo.kept_rule("Quickcast", "Quick cast");
    repo.kapi(&["hooks", "install", "--git"]).ok();
    repo.git(&["add", "-A"]);
    // The pre-commit hook ran (the binary under test, on the pinned clock).
    let run: Run = repo
        .git_cmd(&["commit", "-qm", "one"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{}", run.stderr);
    // And it refuses a broken rule: it is not skipped.
    repo.write("docs/a.md", "Open Quick cast.\n");
    repo.git(&["add", "docs/a.md"]);
    // The refusal is the real kapi's, never the fake's "FAKE kapi from
    // PATH ran".
    let run: Run = repo
        .git_cmd(&["commit", "-qm", "two"])
        .output()
        .unwrap()
        .into();
    let mut t = Transcript::new();
    t.step(&repo, "git commit -qm two", run).code(1);
    insta::assert_snapshot!(t.text());
}

#[test]
#[cfg(unix)]
fn a_hook_runs_the_binary_under_test_whatever_kapi_is_first_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let fake = tempfile::tempdir().unwrap();
    let kapi = fake.path().join("kapi");
    std::fs::write(
        &kapi,
        "#!/bin/sh\necho \"FAKE kapi from PATH ran: $*\" >&2\nexit 97\n",
    )
    .unwrap();
    std::fs::set_permissions(&kapi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(std::iter::once(fake.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    // The test binary runs the inner test as `cargo test` would, with the
    // fake first on PATH and `KAPI` naming it too.
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::new_user_ux::hooks_run_the_binary_under_test",
            "--ignored",
            "--test-threads=1",
        ])
        .env("PATH", &path)
        .env("KAPI", &kapi)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A substring: the harness's own summary line carries its timing and
    // the count of the tests it filtered out, which change from run to run
    // and suite to suite.
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// Item 13: the demo the README starts with.

/// `ci/demo` run with the binary under test, stdout a pipe; its output and
/// the demo repository it left.
fn run_demo(env: &TestEnv, extra: &[(&str, &str)]) -> (Run, std::path::PathBuf) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/demo");
    let mut cmd = Command::new("bash");
    env.isolate(&mut cmd);
    cmd.arg(&script)
        .env("KAPI", crate::common::kapi_bin())
        .env("TMPDIR", env.root());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let run: Run = cmd.output().unwrap().into();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let demo = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("demo repository: "))
        .expect("the demo names its repository")
        .into();
    (run, demo)
}

/// A run of the demo as a transcript: its folder (made by `mktemp`) reads
/// `[DEMO]` and the binary under test `kapi`.
fn demo_transcript(env: &TestEnv, line: &str, run: Run, demo: &std::path::Path) -> String {
    let mut t = Transcript::new();
    t.knows(env)
        .redact(env.normalize(demo.to_str().unwrap()), "[DEMO]")
        .redact(crate::common::kapi_bin().to_str().unwrap(), "kapi");
    t.step(env, line, run);
    t.text()
}

#[test]
fn the_demo_shows_only_files_it_made_and_no_colour_codes_into_a_pipe() {
    let env = TestEnv::plain();
    let (run, demo) = run_demo(&env, &[]);
    // The whole demo, stdout a pipe: no colour code anywhere; the one
    // rules file it names, AGENTS.md, is one it made, and its `cat` shows
    // the rule listed there.
    let text = demo_transcript(&env, "KAPI=kapi ci/demo", run, &demo);
    insta::assert_snapshot!(text);
    // NO_COLOR is heeded too (here stdout is a pipe anyway): the same
    // demo, byte for byte.
    let (run, demo) = run_demo(&env, &[("NO_COLOR", "1")]);
    assert_eq!(demo_transcript(&env, "KAPI=kapi ci/demo", run, &demo), text);
}

// Item 14: messages.

/// A bare repository `bare.git` inside `env`'s work folder.
fn bare(env: &TestEnv) -> String {
    env.git(&["init", "-q", "--bare", "bare.git"]);
    env.join("bare.git").to_str().unwrap().to_owned()
}

#[test]
fn a_count_of_one_takes_the_singular() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    // 1 operation, 1 note, 1 term rule, 1 of 1 use: never "1 operations".
    let mut t = Transcript::new();
    t.kapi(&repo, &["store", "export", "one.jsonl"]).ok();
    t.kapi(&repo, &["store", "doctor"]).ok();
    let other = repo.sibling("other");
    let from = repo.join("one.jsonl");
    t.kapi(&other, &["store", "import", from.to_str().unwrap()])
        .ok();
    t.kapi(&repo, &["context", "atlas"]).ok();
    // A term list of one rule, and a suggestion counted once.
    repo.write("terms.tsv", "t1\testablished\tQuickcast\tQuick cast\n");
    repo.write("kapi.toml", "[context]\nterms = [\"terms.tsv\"]\n");
    t.kapi(&repo, &["store", "import"]).ok();
    repo.suggested_rule("Flowkit", "Flow kit");
    repo.write("docs/a.md", "Flowkit.\n");
    repo.kapi(&["check"]).ok();
    t.comment("a person's Flowkit suggestion, and a check of docs/a.md writing it once");
    t.kapi(&repo, &["context", "review"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_git_message_that_ends_a_sentence_is_not_ended_twice() {
    let repo = TestEnv::new();
    repo.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    let gone = repo.root().join("gone.git");
    repo.git(&["remote", "add", "origin", gone.to_str().unwrap()]);
    // The message quotes git's own, whose wording is the installed git's:
    // what `git fetch origin` says here reads `[git's message]`, so the
    // snapshot shows what kapi adds around it (its sentence is ended once,
    // by git, not twice).
    let fetch: Run = repo.git_cmd(&["fetch", "origin"]).output().unwrap().into();
    let mut t = Transcript::new();
    t.knows(&repo)
        .redact(repo.normalize(fetch.stderr.trim()), "[git's message]");
    t.kapi(&repo, &["context", "sync"]).code(6);
    insta::assert_snapshot!(t.text());
}

#[test]
fn check_in_a_bare_repository_says_it_is_bare_and_what_to_do() {
    let env = TestEnv::new();
    let bare = bare(&env);
    let mut t = Transcript::new();
    t.kapi(&env, &["-C", &bare, "check"]).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn an_empty_log_says_so_and_its_json_is_empty() {
    let repo = TestEnv::new();
    let bare = bare(&repo);
    for dir in [repo.path().to_str().unwrap(), bare.as_str()] {
        let run = repo.kapi(&["-C", dir, "context", "log"]).ok();
        assert_eq!(
            run.stdout, "the log is empty: nothing is recorded yet\n",
            "{dir}"
        );
        assert_eq!(run.stderr, "", "{dir}");
        let run = repo.kapi(&["-C", dir, "context", "log", "--json"]).ok();
        assert_eq!(
            (run.stdout.as_str(), run.stderr.as_str()),
            ("", ""),
            "{dir}"
        );
    }
    // A filter that leaves nothing says what the log holds.
    repo.kapi(&["context", "note", "The docs address the administrator"])
        .ok();
    let run = repo
        .kapi(&["context", "log", "--status", "established"])
        .ok();
    assert_eq!(
        run.stdout,
        "no operation matches: the log holds 1 operation\n"
    );
    let run = repo.kapi(&["context", "log", "--as-of", "2026-01-01"]).ok();
    assert!(
        run.stdout.starts_with("the log was empty at 2026-01-01"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_missing_decisions_folder_is_configuration_naming_vault_root() {
    let repo = TestEnv::new();
    let mut t = Transcript::new();
    t.kapi(&repo, &["compile-context", "D-001", "--query", "cache"])
        .code(2);
    repo.write(
        "kapi.toml",
        "[vault]\nroot = \"records\"\n\n[[compile]]\noutput = \"ctx/c.json\"\nquery = \"cache\"\n",
    );
    t.comment("kapi.toml: [vault] root = \"records\", which does not exist");
    t.kapi(&repo, &["compile-context", "--all"]).code(2);
    insta::assert_snapshot!(t.text());
}

// Item 15: a misspelt subcommand is not a path.

#[test]
fn a_misspelt_subcommand_is_named_not_read_as_a_path() {
    let repo = TestEnv::new();
    // reveiw, sesion, serach, lgo: "did you mean" review, session, search,
    // log, never "does not exist".
    let mut t = Transcript::new();
    for typed in ["reveiw", "sesion", "serach", "lgo"] {
        t.kapi(&repo, &["context", typed]).code(2);
    }
    // A path far from every name is still a path that does not exist.
    t.kapi(&repo, &["context", "intro.md"]).code(2);
    // And a file that is there is read as a path, whatever its name.
    repo.write("reveiw", "notes\n");
    t.comment("a file named reveiw");
    t.kapi(&repo, &["context", "reveiw"]).ok();
    insta::assert_snapshot!(t.text());
}

// Item 9: every hint kapi prints is a command that works in the state that
// printed it. Each case builds a state, runs the command that prints the
// hints, and checks the hints it printed; then, for each hint, builds the
// state again and runs the hint (its placeholders filled), which must
// succeed.

/// Who runs a hint.
#[derive(Clone, Copy, Debug)]
enum By {
    Person,
    Agent(&'static str),
}

/// A state and what a command printed in it.
struct Printed {
    env: TestEnv,
    /// stdout and stderr of the command that printed the hints.
    text: String,
    /// Named short ids, `{A}` in hints and fillings.
    ids: Vec<(&'static str, String)>,
    /// A hint with placeholders (`<id>`), the command it stands for here,
    /// and who runs it; a hint not listed is run as printed, by a person.
    fill: Vec<(&'static str, &'static str, By)>,
}

impl Printed {
    fn new(env: TestEnv, run: Run) -> Self {
        Printed {
            env,
            text: format!("{}{}", run.stdout, run.stderr),
            ids: Vec::new(),
            fill: Vec::new(),
        }
    }

    fn id(mut self, name: &'static str, short: &str) -> Self {
        self.ids.push((name, short.to_owned()));
        self
    }

    fn fill(mut self, hint: &'static str, command: &'static str, by: By) -> Self {
        self.fill.push((hint, command, by));
        self
    }

    /// `text` with each `{A}` replaced by its id.
    fn sub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (name, id) in &self.ids {
            text = text.replace(&format!("{{{name}}}"), id);
        }
        text
    }
}

/// The `kapi …` commands a text offers: each between backticks, and each
/// that ends a line after `: `; alternatives (`kapi context review --keep
/// <id> | --drop <id>`) are one command each, with the first one's verb.
fn hints(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(start) = rest.find("`kapi ") {
            let after = &rest[start + 1..];
            let Some(end) = after.find('`') else { break };
            found.push(after[..end].to_owned());
            rest = &after[end + 1..];
        }
        if let Some((_, tail)) = line.rsplit_once(": kapi ")
            && !tail.contains('`')
        {
            let mut alternatives = tail.split(" | ");
            let first = format!("kapi {}", alternatives.next().unwrap());
            let verb: Vec<&str> = first
                .split(' ')
                .take_while(|w| !w.starts_with("--"))
                .collect();
            let verb = verb.join(" ");
            found.push(first);
            found.extend(alternatives.map(|a| format!("{verb} {a}")));
        }
    }
    found
}

/// A command's words as a shell splits them (double quotes only).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in command.chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// An agent's suggestion in `session`, quoted as evidence; its short id.
fn agent_rule(env: &TestEnv, session: &str, term: &str, avoided: &str) -> String {
    env.agent_term(session, term, avoided, &["--quote", avoided])
        .ok();
    last_short(env)
}

/// A kept rule whose avoided form is written three times more than when
/// it came into force: it drifts, and awaits a decision again.
fn drifting() -> (TestEnv, String) {
    let env = TestEnv::new();
    env.write("docs/a.md", "Open Quick cast.\n");
    let a = env.suggested_rule("Quickcast", "Quick cast");
    env.kapi(&["check"]).ok();
    env.kapi(&["context", "review", "--keep", &a]).ok();
    env.kapi(&["check"]).code(1);
    env.write(
        "docs/a.md",
        "Open Quick cast.\nQuick cast here.\nQuick cast there.\nQuick cast everywhere.\n",
    );
    env.kapi(&["check"]).code(1);
    (env, a)
}

/// Two agents' suggestions that disagree (A prescribes what B avoids),
/// and, with `with_suggestion`, a third that disagrees with neither (S).
fn contested(with_suggestion: bool) -> (TestEnv, String, String, Option<String>) {
    let env = TestEnv::new();
    let s = with_suggestion.then(|| agent_rule(&env, "s1", "Flowkit", "Flow kit"));
    let a = agent_rule(&env, "s1", "Quickcast", "Quick cast");
    let b = agent_rule(&env, "s2", "Quick Cast", "Quickcast");
    (env, a, b, s)
}

/// A repository with a decision record, an artifact compiled from it and
/// the git hooks installed.
fn with_artifact() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "decisions/D-001.md",
        "---\nid: D-001\ntitle: Cache\nkind: decision\nstatus: accepted\nsensitivity: public\ndate: 2026-01-01\n---\nWe cache things.\n",
    );
    env.write(
        "kapi.toml",
        "[[compile]]\noutput = \"ctx/cache.json\"\nquery = \"cache\"\n",
    );
    env.kapi(&["compile-context", "--all"]).ok();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "start"]);
    env
}

struct Case {
    name: &'static str,
    state: fn() -> Printed,
    /// The hints it prints, with `{A}` for named ids.
    hints: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "a second withdraw",
        state: || {
            let env = TestEnv::new();
            let a = agent_rule(&env, "s1", "Quickcast", "Quick cast");
            env.agent("s1", &["context", "note", "--withdraw", &a]).ok();
            let run = env
                .agent("s1", &["context", "note", "--withdraw", &a])
                .code(3);
            Printed::new(env, run)
        },
        hints: &[],
    },
    Case {
        name: "withdrawing what a person kept",
        state: || {
            let env = TestEnv::new();
            let a = agent_rule(&env, "s1", "Quickcast", "Quick cast");
            env.kapi(&["context", "review", "--keep", &a]).ok();
            let run = env
                .agent("s1", &["context", "note", "--withdraw", &a])
                .code(3);
            Printed::new(env, run).id("A", &a)
        },
        hints: &["kapi context review --drop {A}"],
    },
    Case {
        name: "withdrawing what a person dropped",
        state: || {
            let env = TestEnv::new();
            let a = agent_rule(&env, "s1", "Quickcast", "Quick cast");
            env.kapi(&["context", "review", "--drop", &a]).ok();
            let run = env
                .agent("s1", &["context", "note", "--withdraw", &a])
                .code(3);
            Printed::new(env, run)
        },
        hints: &[],
    },
    Case {
        name: "withdrawing another session's suggestion",
        state: || {
            let env = TestEnv::new();
            let a = agent_rule(&env, "s1", "Quickcast", "Quick cast");
            let run = env
                .agent("s2", &["context", "note", "--withdraw", &a])
                .code(4);
            Printed::new(env, run).id("A", &a)
        },
        hints: &["kapi context review --drop {A}"],
    },
    Case {
        name: "the digest of a drifting rule in force",
        state: || {
            let (env, a) = drifting();
            let run = env.kapi(&["context", "review"]).ok();
            Printed::new(env, run)
                .id("A", &a)
                .fill(
                    "kapi context review --drop <id>",
                    "kapi context review --drop {A}",
                    By::Person,
                )
                .fill(
                    "kapi context review --widen <id> --widen-to <where>",
                    "kapi context review --widen {A} --widen-to workspace",
                    By::Person,
                )
        },
        hints: &[
            "kapi context review --drop <id>",
            "kapi context review --widen <id> --widen-to <where>",
        ],
    },
    Case {
        name: "keeping a drifting rule in force again",
        state: || {
            let (env, a) = drifting();
            let run = env.kapi(&["context", "review", "--keep", &a]).code(3);
            Printed::new(env, run).id("A", &a).fill(
                "kapi context review --widen {A} --widen-to <where>",
                "kapi context review --widen {A} --widen-to workspace",
                By::Person,
            )
        },
        hints: &["kapi context review --widen {A} --widen-to <where>"],
    },
    Case {
        name: "the digest of a suggestion and a disagreement",
        state: || {
            let (env, a, _, s) = contested(true);
            let run = env.kapi(&["context", "review"]).ok();
            Printed::new(env, run)
                .id("A", &a)
                .id("S", &s.unwrap())
                .fill(
                    "kapi context review --keep <id>",
                    "kapi context review --keep {S}",
                    By::Person,
                )
                .fill(
                    "kapi context review --drop <id>",
                    "kapi context review --drop {A}",
                    By::Person,
                )
                .fill(
                    "kapi context review --choose <id>",
                    "kapi context review --choose {A}",
                    By::Person,
                )
        },
        hints: &[
            "kapi context review --keep <id>",
            "kapi context review --drop <id>",
            "kapi context review --choose <id>",
        ],
    },
    Case {
        name: "keeping a contested side",
        state: || {
            let (env, a, _, _) = contested(false);
            let run = env.kapi(&["context", "review", "--keep", &a]).code(3);
            Printed::new(env, run).id("A", &a)
        },
        hints: &["kapi context review --choose {A}"],
    },
    Case {
        name: "choosing a suggestion nothing contests",
        state: || {
            let env = TestEnv::new();
            let s = agent_rule(&env, "s1", "Flowkit", "Flow kit");
            let run = env.kapi(&["context", "review", "--choose", &s]).code(3);
            Printed::new(env, run).id("S", &s)
        },
        hints: &["kapi context review --keep {S}"],
    },
    Case {
        name: "choosing a rule in force",
        state: || {
            let env = TestEnv::new();
            let s = agent_rule(&env, "s1", "Flowkit", "Flow kit");
            env.kapi(&["context", "review", "--keep", &s]).ok();
            let run = env.kapi(&["context", "review", "--choose", &s]).code(3);
            Printed::new(env, run)
        },
        hints: &[],
    },
    Case {
        name: "widening a suggestion",
        state: || {
            let env = TestEnv::new();
            let s = agent_rule(&env, "s1", "Flowkit", "Flow kit");
            let run = env
                .kapi(&[
                    "context",
                    "review",
                    "--widen",
                    &s,
                    "--widen-to",
                    "workspace",
                ])
                .code(3);
            Printed::new(env, run).id("S", &s).fill(
                "kapi context review --keep {S} --widen-to <where>",
                "kapi context review --keep {S} --widen-to workspace",
                By::Person,
            )
        },
        hints: &["kapi context review --keep {S} --widen-to <where>"],
    },
    Case {
        name: "widening a contested side",
        state: || {
            let (env, a, _, _) = contested(false);
            let run = env
                .kapi(&[
                    "context",
                    "review",
                    "--widen",
                    &a,
                    "--widen-to",
                    "workspace",
                ])
                .code(3);
            Printed::new(env, run).id("A", &a).fill(
                "kapi context review --choose {A} --widen-to <where>",
                "kapi context review --choose {A} --widen-to workspace",
                By::Person,
            )
        },
        hints: &["kapi context review --choose {A} --widen-to <where>"],
    },
    Case {
        name: "a person's suggestion",
        state: || {
            let env = TestEnv::new();
            let run = env.kapi(&[
                "context",
                "note",
                "--term",
                "Flowkit",
                "--instead-of",
                "Flow kit",
                "--quote",
                "Flow kit",
            ]);
            let s = last_short(&env);
            Printed::new(env, run.ok()).id("S", &s)
        },
        hints: &["kapi context review --keep {S}"],
    },
    Case {
        name: "a person's suggestion that disagrees with a rule in force",
        state: || {
            let env = TestEnv::new();
            env.kept_rule("Quickcast", "Quick cast");
            let run = env.kapi(&[
                "context",
                "note",
                "--term",
                "Quick Cast",
                "--instead-of",
                "Quickcast",
                "--quote",
                "Quickcast",
            ]);
            let b = last_short(&env);
            Printed::new(env, run.ok()).id("B", &b)
        },
        hints: &["kapi context review --choose {B}"],
    },
    Case {
        name: "an agent's suggestion",
        state: || {
            let env = TestEnv::new();
            let run = env.agent_term("s1", "Flowkit", "Flow kit", &["--quote", "Flow kit"]);
            Printed::new(env, run.ok())
        },
        hints: &["kapi context review"],
    },
    Case {
        name: "an agent keeping",
        state: || {
            let env = TestEnv::new();
            let s = agent_rule(&env, "s1", "Flowkit", "Flow kit");
            let run = env
                .agent("s1", &["context", "review", "--keep", &s])
                .code(4);
            Printed::new(env, run)
        },
        hints: &["kapi context review"],
    },
    Case {
        name: "an agent resetting",
        state: || {
            let env = TestEnv::new();
            let s = agent_rule(&env, "s1", "Flowkit", "Flow kit");
            let run = env
                .agent("s1", &["context", "reset", "--before", &s])
                .code(4);
            Printed::new(env, run).fill(
                "kapi context note \"<text>\"",
                "kapi context note \"The docs address the administrator\"",
                By::Agent("s1"),
            )
        },
        hints: &["kapi context note \"<text>\""],
    },
    Case {
        name: "an agent importing context files",
        state: || {
            let env = TestEnv::new();
            env.write("terms.tsv", "t1\testablished\tQuickcast\tQuick cast\n");
            env.write("kapi.toml", "[context]\nterms = [\"terms.tsv\"]\n");
            let run = env.agent("s1", &["store", "import"]).code(4);
            Printed::new(env, run)
        },
        hints: &["kapi store import"],
    },
    Case {
        name: "an agent pushing",
        state: || {
            let env = TestEnv::new();
            let remote = env.root().join("remote.git");
            env.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
            env.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
            agent_rule(&env, "s1", "Flowkit", "Flow kit");
            let run = env.agent("s1", &["context", "sync"]).code(4);
            Printed::new(env, run).fill(
                "kapi context sync --no-push",
                "kapi context sync --no-push",
                By::Agent("s1"),
            )
        },
        hints: &["kapi context sync --no-push", "kapi context sync"],
    },
    Case {
        name: "a pre-commit refusal for a stale artifact",
        state: || {
            let env = with_artifact();
            env.write(
                "decisions/D-001.md",
                &std::fs::read_to_string(env.join("decisions/D-001.md"))
                    .unwrap()
                    .replace("We cache", "We cache more"),
            );
            env.git(&["add", "-A"]);
            let run = env.kapi(&["hook", "pre-commit"]).code(1);
            Printed::new(env, run)
        },
        hints: &["kapi compile-context --all"],
    },
    Case {
        name: "a pre-commit refusal for a rule",
        state: || {
            let env = with_artifact();
            env.kept_rule("Quickcast", "Quick cast");
            env.write("docs/a.md", "Open Quick cast.\n");
            env.git(&["add", "-A"]);
            let run = env.kapi(&["hook", "pre-commit"]).code(1);
            Printed::new(env, run)
        },
        hints: &["kapi context review"],
    },
    Case {
        name: "an id no operation starts with",
        state: || {
            let env = TestEnv::new();
            agent_rule(&env, "s1", "Flowkit", "Flow kit");
            let run = env.kapi(&["context", "review", "--keep", "0zzzz"]).code(2);
            Printed::new(env, run)
        },
        hints: &["kapi context log"],
    },
    Case {
        name: "a misspelt subcommand",
        state: || {
            let env = TestEnv::new();
            let run = env.kapi(&["context", "reveiw"]).code(2);
            Printed::new(env, run)
        },
        hints: &["kapi context review"],
    },
    Case {
        name: "kapi context without a path",
        state: || {
            let env = TestEnv::new();
            env.write("docs/a.md", "Open Quickcast.\n");
            let run = env.kapi(&["context"]).code(2);
            Printed::new(env, run).fill("kapi context <path>", "kapi context docs/a.md", By::Person)
        },
        hints: &["kapi context <path>", "kapi context --help"],
    },
    Case {
        name: "a search without text",
        state: || {
            let env = TestEnv::new();
            let run = env.kapi(&["context", "search", ""]).code(2);
            Printed::new(env, run)
        },
        hints: &["kapi context search \"quick cast\""],
    },
    Case {
        name: "a check with no rules and a context file never imported",
        state: || {
            let env = TestEnv::new();
            env.write("terms.tsv", "t1\testablished\tQuickcast\tQuick cast\n");
            env.write("kapi.toml", "[context]\nterms = [\"terms.tsv\"]\n");
            env.write("docs/a.md", "Open Quick cast.\n");
            let run = env.kapi(&["check"]).ok();
            Printed::new(env, run).fill(
                "kapi context note --term <term> --instead-of <form> --quote <text>",
                "kapi context note --term Quickcast --instead-of \"Quick cast\" --quote \"Quick cast\"",
                By::Person,
            )
        },
        hints: &[
            "kapi context note --term <term> --instead-of <form> --quote <text>",
            "kapi store import",
        ],
    },
    Case {
        name: "what a session recorded",
        state: || {
            let env = TestEnv::new();
            agent_rule(&env, "s1", "Flowkit", "Flow kit");
            let run = env.kapi(&["context", "session", "s1"]).ok();
            Printed::new(env, run)
        },
        hints: &["kapi context review --session s1"],
    },
];

#[test]
fn every_hint_is_a_command_that_works_in_the_state_that_printed_it() {
    // What each state printed, read whole: the hints in their sentences
    // (a drifting rule says it drifts, a contested keep offers both sides,
    // a stale artifact is named stale).
    let mut said = String::new();
    for case in CASES {
        let printed = (case.state)();
        said.push_str(&format!(
            "## {}\n{}\n",
            case.name,
            printed.env.normalize(&printed.text)
        ));
        let expected: Vec<String> = case.hints.iter().map(|h| printed.sub(h)).collect();
        assert_eq!(
            hints(&printed.text),
            expected,
            "{}: the hints printed\n{}",
            case.name,
            printed.text
        );
        for hint in &expected {
            // The same state again: each hint is run in the state that
            // printed it, not after another hint changed it.
            let state = (case.state)();
            let (command, by) = state
                .fill
                .iter()
                .find(|(h, _, _)| state.sub(h) == *hint)
                .map(|(_, c, by)| (state.sub(c), *by))
                .unwrap_or_else(|| (hint.clone(), By::Person));
            assert!(
                !command.contains('<'),
                "{}: `{hint}` has a placeholder and the case fills none",
                case.name
            );
            let args = words(&command);
            assert_eq!(args[0], "kapi", "{}: {command}", case.name);
            let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
            let run = match by {
                By::Person => state.env.kapi(&args),
                By::Agent(session) => state.env.agent(session, &args),
            };
            assert_eq!(
                run.code, 0,
                "{}: `{command}` ({by:?}), offered by\n{}\nexits {}:\n{}{}",
                case.name, state.text, run.code, run.stdout, run.stderr
            );
        }
    }
    insta::assert_snapshot!(said);
}

#[test]
fn hints_are_read_from_backticks_and_line_ends() {
    assert_eq!(
        hints(
            "refused; use `kapi context review --drop 0abc` now\n3 awaiting: kapi context review --keep <id> | --drop <id>\n"
        ),
        [
            "kapi context review --drop 0abc",
            "kapi context review --keep <id>",
            "kapi context review --drop <id>"
        ]
    );
    assert_eq!(
        words("kapi context note --term Quickcast --instead-of \"Quick cast\""),
        [
            "kapi",
            "context",
            "note",
            "--term",
            "Quickcast",
            "--instead-of",
            "Quick cast"
        ]
    );
    assert_eq!(
        words("kapi context search \"\""),
        ["kapi", "context", "search", ""]
    );
}

/// PATH with the built kapi and git-kapi first.
fn path_with_kapi() -> String {
    let bin_dir = crate::common::kapi_bin().parent().unwrap().to_path_buf();
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn bash_loads_the_completions_and_completes_a_command() {
    let repo = TestEnv::new();
    let script = r#"source <(kapi completions bash) || exit 3
complete -p kapi
COMP_WORDS=(kapi che); COMP_CWORD=1; _kapi kapi che kapi; echo "${COMPREPLY[*]}"
COMP_WORDS=(kapi context rev); COMP_CWORD=2; _kapi kapi rev context; echo "${COMPREPLY[*]}"
"#;
    let out = Command::new("bash")
        .args(["-c", script])
        .current_dir(repo.path())
        .env("PATH", path_with_kapi())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "complete -o bashdefault -o default -o nosort -F _kapi kapi\ncheck\nreview\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every shell clap knows.
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let run = repo.kapi(&["completions", shell]).ok();
        assert!(run.stdout.len() > 1000, "{shell}: {}", run.stdout);
    }
    repo.kapi(&["completions", "tcsh"]).code(2);
}

#[test]
fn git_kapi_help_opens_the_manual_page_kapi_man_installs() {
    if Command::new("man").arg("-w").arg("man").output().is_err() {
        // ci/run installs man-db; a machine without man has no `git help`.
        println!("skipped: no `man` here");
        return;
    }
    let repo = TestEnv::new();
    let home = repo.root().join("home");
    let run = repo
        .kapi_cmd(&["man", "--install"])
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let man1 = home.join(".local/share/man/man1");
    for page in [
        "kapi.1",
        "git-kapi.1",
        "kapi-check.1",
        "kapi-context-note.1",
        "kapi-context-review.1",
        "kapi-mcp.1",
    ] {
        assert!(man1.join(page).is_file(), "{page}");
    }
    let out = repo
        .git_cmd(&["kapi", "--help"])
        .env("PATH", path_with_kapi())
        .env("MANPATH", home.join(".local/share/man"))
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // man justifies its lines: words, not spaces, are compared.
    let first: Vec<String> = text
        .lines()
        .take(4)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(first[0].starts_with("git-kapi(1) "), "{text}");
    assert_eq!(first[2], "NAME", "{text}");
    assert_eq!(
        first[3], "git-kapi - kapi: a git-native context ledger for people and coding",
        "{text}"
    );
}
