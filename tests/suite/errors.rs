//! Errors as the command line reports them: the code an I/O error's kind
//! has in the table (docs/exit-codes.md), and a hint on a line of its own.

use std::process::Stdio;

use crate::common::TestEnv;

/// stdin that is a folder: reading it fails with "Is a directory".
fn stdin_a_folder(repo: &TestEnv) -> Stdio {
    Stdio::from(std::fs::File::open(repo.path()).unwrap())
}

#[test]
fn an_io_error_reading_what_kapi_was_given_is_bad_usage_not_a_bug() {
    let repo = TestEnv::new();
    // Exit 70 ("a bug in kapi") before.
    let out = repo
        .kapi_cmd(&["verify-context", "-", "--today", "2026-03-01"])
        .stdin(stdin_a_folder(&repo))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: I/O error: Is a directory"),
        "{stderr}"
    );
    // A file named on the command line that is a folder: the same code.
    std::fs::create_dir(repo.join("ops.jsonl")).unwrap();
    let run = repo.kapi(&["store", "import", "ops.jsonl"]).code(2);
    assert!(
        run.stderr
            .starts_with("error: cannot read ops.jsonl: Is a directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_hint_is_a_line_of_its_own_after_the_message() {
    let repo = TestEnv::new();
    let run = repo.kapi(&["context", "reveiw"]).code(2);
    assert_eq!(
        run.stderr,
        "error: `reveiw` is neither a file here nor a subcommand of kapi context\n\
         hint: did you mean `kapi context review`?\n"
    );
    let run = repo.kapi(&["context", "session", "this"]).code(2);
    assert_eq!(
        run.stderr,
        "error: `this` reads KAPI_SESSION, which is not set\n\
         hint: name the session: `kapi context session <id>`\n"
    );
    // A hint quoting what it was given never steers the terminal.
    let run = repo.kapi(&["context", "revie\u{1b}w"]).code(2);
    assert!(!run.stderr.contains('\u{1b}'), "{}", run.stderr);
}
