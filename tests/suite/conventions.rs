//! The command line's conventions, through the real binary: colour
//! (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`, `TERM=dumb`, a pipe or a
//! terminal) for findings, help, usage errors and kapi's own errors, and
//! the global `-q` and `-v`.

use std::process::Command;

use crate::common::{Run, TestEnv, kapi_bin};

/// ESC: the byte every colour code starts with; its presence is the
/// question.
const ESC: char = '\u{1b}';

fn coloured(text: &str) -> bool {
    text.contains(ESC)
}

/// A repository where `docs/guide.md` breaks a kept rule once.
fn failing() -> TestEnv {
    let env = TestEnv::new();
    env.write("docs/guide.md", "Open Quick cast.\n");
    env.kept_rule("Quickcast", "Quick cast");
    env
}

/// `kapi ARGS` with `vars` set, stdout and stderr pipes.
fn kapi_with(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut cmd = env.kapi_cmd(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap().into()
}

/// `kapi ARGS` on a terminal (a pseudo-terminal `script` opens for both
/// stdout and stderr), with `vars` set: what the terminal showed.
fn on_a_terminal(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> String {
    let mut line = shell_quote(kapi_bin().to_str().unwrap());
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    let mut cmd = Command::new("script");
    env.isolate(&mut cmd);
    // CI (set by CI runners) would colour even a dumb terminal, as cargo's
    // and clap's rules have it: the terminal here is not CI's.
    cmd.args(["-qec", &line, "/dev/null"])
        .env("TERM", "xterm")
        .env_remove("CI");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .expect("script (util-linux) runs a command on a terminal");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn a_pipe_gets_no_escape_codes_from_check_help_or_a_usage_error_unless_asked() {
    let env = failing();
    // Findings, help, clap's usage error, kapi's own error: into a pipe,
    // plain, whatever TERM says.
    let term = [("TERM", "xterm-256color")];
    let check = kapi_with(&env, &["check"], &term).code(1);
    let help = kapi_with(&env, &["--help"], &term).ok();
    let check_help = kapi_with(&env, &["check", "--help"], &term).ok();
    let usage = kapi_with(&env, &["check", "--bogus"], &term).code(2);
    let own = kapi_with(&env, &["context", "review", "--keep", "zzzz"], &term).code(2);
    for (what, text) in [
        ("check", &check.stdout),
        ("--help", &help.stdout),
        ("check --help", &check_help.stdout),
        ("a usage error", &usage.stderr),
        ("kapi's own error", &own.stderr),
    ] {
        assert!(!coloured(text), "{what}: {text}");
    }
    assert!(
        usage
            .stderr
            .starts_with("error: unexpected argument '--bogus'")
    );
    assert!(own.stderr.starts_with("error: "), "{}", own.stderr);

    // --color always, before the command or after it: each gets colour.
    for args in [
        &["--color", "always", "check"][..],
        &["check", "--color", "always"],
        &["check", "--color=always"],
    ] {
        let run = env.kapi(args).code(1);
        assert!(coloured(&run.stdout), "{args:?}: {}", run.stdout);
    }
    let help = env.kapi(&["--color", "always", "--help"]).ok();
    assert!(coloured(&help.stdout), "{}", help.stdout);
    // Read ahead of the parse, so help asked after it is coloured too,
    // and a usage error anywhere after --color.
    let help = env.kapi(&["check", "--help", "--color", "always"]).ok();
    assert!(coloured(&help.stdout), "{}", help.stdout);
    let usage = env.kapi(&["--color", "always", "check", "--bogus"]).code(2);
    assert!(coloured(&usage.stderr), "{}", usage.stderr);
    let own = env
        .kapi(&["--color", "always", "context", "review", "--keep", "zzzz"])
        .code(2);
    assert!(
        own.stderr
            .starts_with("\u{1b}[1m\u{1b}[91merror\u{1b}[0m: "),
        "{}",
        own.stderr
    );
    // Without its codes, the coloured report reads as the plain one.
    let always = env.kapi(&["check", "--color", "always"]).code(1);
    assert_eq!(strip(&always.stdout), check.stdout);
    // A bad --color is a usage error, and says which values it takes.
    let bad = env.kapi(&["--color", "sometimes", "check"]).code(2);
    assert!(
        bad.stderr
            .contains("[possible values: auto, always, never]"),
        "{}",
        bad.stderr
    );
}

#[test]
fn no_color_clicolor_force_and_the_flag_decide_in_that_order() {
    let env = failing();
    let check = |vars: &[(&str, &str)], args: &[&str]| {
        let mut all = vec!["check"];
        all.extend_from_slice(args);
        coloured(&kapi_with(&env, &all, vars).code(1).stdout)
    };
    // CLICOLOR_FORCE colours a pipe; NO_COLOR (any value but empty) wins
    // over it; an empty NO_COLOR is no NO_COLOR (no-color.org).
    assert!(check(&[("CLICOLOR_FORCE", "1")], &[]));
    assert!(!check(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")], &[]));
    assert!(!check(
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "false")],
        &[]
    ));
    assert!(check(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "")], &[]));
    // The flag wins over the environment, both ways.
    assert!(check(&[("NO_COLOR", "1")], &["--color", "always"]));
    assert!(!check(&[("CLICOLOR_FORCE", "1")], &["--color", "never"]));
    // Help follows the same rules.
    let help = kapi_with(&env, &["--help"], &[("CLICOLOR_FORCE", "1")]).ok();
    assert!(coloured(&help.stdout));
    let help = kapi_with(
        &env,
        &["--help"],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    )
    .ok();
    assert!(!coloured(&help.stdout));
}

#[test]
fn on_a_terminal_auto_colours_unless_no_color_or_a_dumb_terminal() {
    let env = failing();
    let shown = on_a_terminal(&env, &["check"], &[]);
    assert!(shown.contains("error[term]"), "{shown}");
    assert!(coloured(&shown), "{shown}");
    let help = on_a_terminal(&env, &["--help"], &[]);
    assert!(coloured(&help), "{help}");
    let usage = on_a_terminal(&env, &["check", "--bogus"], &[]);
    assert!(coloured(&usage), "{usage}");
    for vars in [
        &[("NO_COLOR", "1")][..],
        &[("TERM", "dumb")],
        &[("CLICOLOR", "0")],
    ] {
        for args in [&["check"][..], &["--help"], &["check", "--bogus"]] {
            let shown = on_a_terminal(&env, args, vars);
            assert!(!shown.is_empty());
            assert!(!coloured(&shown), "{vars:?} {args:?}: {shown}");
        }
    }
    assert!(coloured(&on_a_terminal(
        &env,
        &["check"],
        &[("NO_COLOR", "")]
    )));
    assert!(!coloured(&on_a_terminal(
        &env,
        &["--color", "never", "check"],
        &[]
    )));
}

#[test]
fn the_demo_colours_only_where_kapi_would() {
    let env = TestEnv::plain();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/demo");
    let demo = |vars: &[(&str, &str)]| -> Run {
        let mut cmd = Command::new("bash");
        env.isolate(&mut cmd);
        cmd.arg(&script)
            .env("KAPI", kapi_bin())
            .env("TMPDIR", env.root());
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap().into()
    };
    // Into a pipe: plain (new_user_ux has the whole transcript).
    let plain = demo(&[]).ok();
    assert!(!coloured(&plain.stdout) && !coloured(&plain.stderr));
    // CLICOLOR_FORCE: its headings and kapi's findings both coloured.
    let forced = demo(&[("CLICOLOR_FORCE", "1")]).ok();
    assert!(
        forced
            .stdout
            .contains("\u{1b}[1m== kapi check: the established rule binds")
    );
    assert!(
        forced.stdout.contains("\u{1b}[91merror"),
        "{}",
        forced.stdout
    );
    // NO_COLOR wins, as it does for kapi.
    let both = demo(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).ok();
    assert!(!coloured(&both.stdout), "{}", both.stdout);
}

/// `text` without its SGR codes (`ESC [ ... m`).
fn strip(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(ESC) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        rest = &tail[tail.find('m').map_or(tail.len(), |m| m + 1)..];
    }
    out.push_str(rest);
    out
}

// -q and -v.

/// A repository with a kept rule broken once and a suggestion written
/// once, in two files.
fn mixed() -> TestEnv {
    let env = failing();
    env.suggested_rule("Flowkit", "Flow kit");
    env.write("docs/b.md", "Try Flow kit.\n");
    env
}

#[test]
fn quiet_check_prints_only_failing_findings_and_keeps_codes_and_machine_formats() {
    let env = mixed();
    let full = env.kapi(&["check"]).code(1);
    assert!(
        full.stdout.contains("warning[suggested]"),
        "{}",
        full.stdout
    );
    for quiet in [
        &["-q", "check"][..],
        &["check", "-q"],
        &["check", "--quiet"],
    ] {
        let run = env.kapi(quiet).code(1);
        assert_eq!(
            run.stdout,
            "error[term]: use \"Quickcast\", not \"Quick cast\"\n \
             --> docs/guide.md:1:6\n  \
             |\n\
             1 | Open Quick cast.\n  \
             |      ^^^^^^^^^^\n  \
             |\n  \
             = help: write \"Quickcast\"\n\n",
            "{quiet:?}"
        );
        assert_eq!(run.stderr, "");
    }
    // Nothing fails: nothing to say, and the code is still 0.
    env.write("docs/guide.md", "Open Quickcast.\n");
    let run = env.kapi(&["-q", "check"]).ok();
    assert_eq!(run.stdout, "");
    // Machine formats are the same with -q and -v.
    env.write("docs/guide.md", "Open Quick cast.\n");
    for format in ["json", "sarif", "github"] {
        let plain = env.kapi(&["check", "--format", format]).code(1).stdout;
        assert_eq!(
            env.kapi(&["-q", "check", "--format", format])
                .code(1)
                .stdout,
            plain
        );
        assert_eq!(
            env.kapi(&["-vv", "check", "--format", format])
                .code(1)
                .stdout,
            plain
        );
    }
    // -q and -v together are a usage error.
    let both = env.kapi(&["-q", "-v", "check"]).code(2);
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );
}

#[test]
fn quiet_leaves_out_notes_and_hints_but_never_an_error() {
    let env = TestEnv::new();
    env.write("AGENTS.md", "# Agents\n");
    let id = env.suggested_rule("Quickcast", "Quick cast");
    let other = env.suggested_rule("Flowkit", "Flow kit");
    // A keep refreshes AGENTS.md: said without -q, not with it.
    let loud = env.kapi(&["context", "review", "--keep", &id]).ok();
    assert!(
        loud.stdout
            .contains("updated the rules in force in AGENTS.md"),
        "{}",
        loud.stdout
    );
    let quiet = env
        .kapi(&["-q", "context", "review", "--keep", &other])
        .ok();
    assert!(
        !quiet.stdout.contains("updated the rules"),
        "{}",
        quiet.stdout
    );
    assert!(
        std::fs::read_to_string(env.join("AGENTS.md"))
            .unwrap()
            .contains("Flowkit")
    );
    // An error keeps its message, loses its hint.
    let with_hint = env
        .kapi(&["compile-context", "D-001", "--root", "nowhere"])
        .code(2);
    assert!(
        with_hint.stderr.contains("\nhint: "),
        "{}",
        with_hint.stderr
    );
    let quiet = env
        .kapi(&["-q", "compile-context", "D-001", "--root", "nowhere"])
        .code(2);
    assert_eq!(
        quiet.stderr,
        with_hint
            .stderr
            .split("\nhint: ")
            .next()
            .unwrap()
            .to_owned()
            + "\n"
    );
    // A note on stderr (what an export did) goes; the file is written.
    let loud = env.kapi(&["store", "export", "all.jsonl"]).ok();
    assert!(loud.stderr.starts_with("exported "), "{}", loud.stderr);
    let quiet = env.kapi(&["-q", "store", "export", "again.jsonl"]).ok();
    assert_eq!(quiet.stderr, "");
    assert_eq!(
        std::fs::read(env.join("again.jsonl")).unwrap(),
        std::fs::read(env.join("all.jsonl")).unwrap()
    );
}

#[test]
fn verbose_check_says_which_rules_from_where_and_how_long_on_stderr() {
    let env = mixed();
    env.write("terms.tsv", "t1\testablished\tGitHub\tGithub\n");
    // The first whole-project check records how the files write each
    // rule of the log (a signal for each); -v says so.
    let verbose = env.kapi(&["-v", "check", "--rules", "terms.tsv"]).code(1);
    let plain = env.kapi(&["check", "--rules", "terms.tsv"]).code(1);
    // The findings are the same; what -v adds is on stderr.
    assert_eq!(verbose.stdout, plain.stdout);
    assert_eq!(plain.stderr, "");
    let lines: Vec<&str> = verbose.stderr.lines().collect();
    assert_eq!(lines[0], "rules: 2 rules from the log (refs/kapi/ops)");
    assert_eq!(lines[1], "rules: 1 rule from the term list terms.tsv");
    assert!(
        lines[2].starts_with("checked 2 files in ") && lines[2].ends_with(" ms"),
        "{}",
        verbose.stderr
    );
    assert_eq!(
        lines[3], "recorded 2 usage signals in refs/kapi/local",
        "{}",
        verbose.stderr
    );
    assert_eq!(lines.len(), 4, "{}", verbose.stderr);
    // The counts have not changed since: nothing recorded, nothing said.
    let again = env.kapi(&["-v", "check", "--rules", "terms.tsv"]).code(1);
    assert_eq!(again.stderr.lines().count(), 3, "{}", again.stderr);
    // -vv: every rule, under where it came from.
    let very = env.kapi(&["-vv", "check", "--rules", "terms.tsv"]).code(1);
    assert_eq!(very.stdout, plain.stdout);
    let lines: Vec<&str> = very.stderr.lines().collect();
    assert_eq!(lines[0], "rules: 2 rules from the log (refs/kapi/ops)");
    assert!(
        lines[1].starts_with("  #") && lines[1].contains("\"Quickcast\", not \"Quick cast\""),
        "{}",
        very.stderr
    );
    assert!(
        lines[2].starts_with("  #") && lines[2].contains("\"Flowkit\", not \"Flow kit\""),
        "{}",
        very.stderr
    );
    assert_eq!(lines[3], "rules: 1 rule from the term list terms.tsv");
    assert_eq!(lines[4], "  terms.tsv:1 \"GitHub\", not \"Github\"");
}

#[test]
fn verbose_sync_names_the_refs_it_moved() {
    let a = TestEnv::new();
    let remote = a.bare_remote();
    a.write("docs/a.md", "Quickcast.\n");
    a.publish(&remote);
    a.suggested_rule("Quickcast", "Quick cast");
    let tip = a.git(&["rev-parse", "refs/kapi/ops"]);
    let run = a.kapi(&["-v", "context", "sync"]).ok();
    assert_eq!(
        run.stderr,
        format!(
            "refs/kapi/ops: unchanged at {short}\norigin: refs/kapi/ops -> {short} (pushed)\n",
            short = &tip[..10]
        )
    );
    let plain = a.kapi(&["context", "sync"]).ok();
    assert_eq!(plain.stderr, "");
    // Quiet: nothing at all when all went well.
    let quiet = a.kapi(&["-q", "context", "sync"]).ok();
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    // --json is the same document with -q and -v (-v's lines on stderr).
    let json = a.kapi(&["context", "sync", "--json"]).ok().stdout;
    assert!(json.starts_with('{'), "{json}");
    assert_eq!(
        a.kapi(&["-q", "context", "sync", "--json"]).ok().stdout,
        json
    );
    let verbose = a.kapi(&["-v", "context", "sync", "--json"]).ok();
    assert_eq!(verbose.stdout, json);
    assert!(verbose.stderr.starts_with("refs/kapi/ops: unchanged at "));
    // A clone that fetches the log moves its own ref.
    let b = TestEnv::clone_of(&remote, "Bob", "bob@example.com");
    let run = b.kapi(&["-v", "context", "sync", "--no-push"]).ok();
    assert_eq!(
        run.stderr,
        format!("refs/kapi/ops: (none) -> {}\n", &tip[..10])
    );
}
