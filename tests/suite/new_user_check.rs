//! What a new user trips on (issue 22), the checker's side: one rule that
//! several agents suggest, Vale vocabularies without the Vale style, drift
//! after a widening, carets under wide text. Each test failed before its
//! fix.

use crate::common::TestEnv;

/// The carets stand under the match as a terminal shows the line: a
/// Japanese character takes two columns, a combining mark none, a tab is
/// shown as one space and an escaped control as its escape.
#[test]
fn carets_stand_under_a_match_in_japanese_text() {
    let env = TestEnv::new();
    env.write(
        "terms.tsv",
        "1\testablished\tQuickcast\tQuick cast\n2\testablished\tクイックキャスト\tクイック キャスト\n",
    );
    env.write(
        "docs/ja.txt",
        "\t日本語では Quick cast と書かない。\n\u{1b}e\u{301} 漢字の後に クイック キャスト も。\n",
    );
    let run = env
        .kapi(&["check", "--rules", "terms.tsv", "docs/ja.txt"])
        .code(1);
    // Line 1: the tab shown as one space, five wide characters (ten
    // columns) and a space before the match. Line 2: the escape `\u{1b}`
    // (six), `e` with a combining acute (one), a space, five wide
    // characters and a space (nineteen) before a match of seventeen.
    let expected = format!(
        "\
error[term]: use \"Quickcast\", not \"Quick cast\"
 --> docs/ja.txt:1:8
  |
1 |  日本語では Quick cast と書かない。
  | {}^^^^^^^^^^
  = help: write \"Quickcast\"

error[term]: use \"クイックキャスト\", not \"クイック キャスト\"
 --> docs/ja.txt:2:11
  |
2 | \\u{{1b}}e\u{301} 漢字の後に クイック キャスト も。
  | {}^^^^^^^^^^^^^^^^^
  = help: write \"クイックキャスト\"

checked 1 file: 2 findings, 2 failing, 0 reporting (score 2)
",
        " ".repeat(12),
        " ".repeat(19)
    );
    assert_eq!(run.stdout, expected);
}
