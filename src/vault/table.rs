//! The first Markdown table of a log or register body, read as GitHub
//! Flavored Markdown reads it, by pulldown-cmark (`ENABLE_TABLES`): a header
//! row, a delimiter row, then data rows. A table may sit inside a block
//! quote or a list item; one inside a code block, an HTML block or an
//! indented code block is not a table. A cell's text is what a reader sees:
//! inline code without its backticks, emphasis without its markers, entities
//! and backslash escapes resolved (`\|` is a literal bar), inline HTML left
//! out; then trimmed.
//!
//! Kept by hand, around the library: GFM pads a row with fewer cells than
//! the header and drops the excess of a longer one; a register row whose
//! cells do not line up with its header could put a label or a state in the
//! wrong column, so such a row is dropped instead (fail closed), told from
//! the event offsets. The row cap and the column cap are kapi's bounds.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

const MAX_ROWS: usize = 200_000;
const MAX_COLUMNS: usize = 32;

/// A table: lowercase column names and rows of cells, in file order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// Parse the first table in `body`. Rows whose cell count differs from the
/// header's are dropped (fail closed: a malformed row is never guessed at).
pub fn parse(body: &str) -> Table {
    parse_kept(body, |_, _| true)
}

/// Parse the first table in `body`, keeping only the rows `keep` accepts
/// (given the column names and the row). Rows are filtered before the row
/// cap, so rejected (hidden) rows never crowd out kept ones.
pub fn parse_kept(body: &str, keep: impl FnMut(&[String], &[String]) -> bool) -> Table {
    parse_capped(body, MAX_ROWS, keep)
}

/// One row while its cells are read.
#[derive(Default)]
struct Row {
    cells: Vec<String>,
    /// The row's source bytes (its line).
    span: Range<usize>,
    /// Where the last written cell's text ended.
    last_end: usize,
    /// A cell the parser filled in: the row was shorter than the header.
    padded: bool,
}

impl Row {
    /// The cells, when the row wrote exactly as many as the parser gave:
    /// none filled in, and nothing after the last but its closing `|`.
    fn written(self, text: &str) -> Option<Vec<String>> {
        let rest = text.get(self.last_end..self.span.end).unwrap_or_default();
        let rest = rest.trim();
        (!self.padded && (rest.is_empty() || rest == "|")).then_some(self.cells)
    }
}

fn parse_capped(
    body: &str,
    cap: usize,
    mut keep: impl FnMut(&[String], &[String]) -> bool,
) -> Table {
    let mut events = Parser::new_ext(body, Options::ENABLE_TABLES).into_offset_iter();
    if !events
        .by_ref()
        .any(|(e, _)| matches!(e, Event::Start(Tag::Table(_))))
    {
        return Table::default();
    }
    let mut table = Table::default();
    let mut row = Row::default();
    let mut cell: Option<String> = None;
    for (event, range) in events {
        match event {
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                row = Row {
                    last_end: range.start,
                    span: range,
                    ..Row::default()
                };
            }
            Event::Start(Tag::TableCell) => {
                // A filled-in cell starts where its row ends (past its line).
                row.padded |= range.start >= row.span.end;
                row.last_end = range.end;
                cell = Some(String::new());
            }
            Event::End(TagEnd::TableCell) => {
                if let Some(text) = cell.take() {
                    row.cells.push(text.trim().to_string());
                }
            }
            Event::End(TagEnd::TableHead) => {
                // The header cannot be padded (GFM: its cells and the
                // delimiter row's agree, or it is not a table).
                let row = std::mem::take(&mut row);
                table.columns = row.cells.iter().map(|c| c.to_ascii_lowercase()).collect();
                if table.columns.len() > MAX_COLUMNS {
                    return Table::default();
                }
            }
            Event::End(TagEnd::TableRow) => {
                let Some(cells) = std::mem::take(&mut row).written(body) else {
                    continue;
                };
                if cells.len() == table.columns.len() && keep(&table.columns, &cells) {
                    if table.rows.len() == cap {
                        break;
                    }
                    table.rows.push(cells);
                }
            }
            Event::End(TagEnd::Table) => break,
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(c) = cell.as_mut() {
                    c.push(' ');
                }
            }
            _ => {}
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(t: &Table) -> Vec<Vec<&str>> {
        t.rows
            .iter()
            .map(|r| r.iter().map(String::as_str).collect())
            .collect()
    }

    #[test]
    fn parses_the_first_table() {
        let t = parse(
            "intro\n\n| ID | Title |\n|---|:-:|\n| E-1 | a \\| b |\n| bad |\n| E-2 | c |\n\n| x |\n",
        );
        assert_eq!(t.columns, ["id", "title"]);
        assert_eq!(rows(&t), [["E-1", "a | b"], ["E-2", "c"]]);
        assert_eq!(t.column("title"), Some(1));
    }

    #[test]
    fn cells_are_the_text_a_reader_sees() {
        let t = parse(concat!(
            "| id | title | url |\n",
            "|:---|---:|:-:|\n",
            "| `E-1` | **Bold** and _em_ `a \\| b` | <https://example.org/a> |\n",
            "| E-2 | Tom &amp; Jerry \\* not a list | [link](https://x.example) |\n",
            "| E-3 | a <b>tag</b> | |\n",
        ));
        assert_eq!(
            rows(&t),
            [
                ["E-1", "Bold and em a | b", "https://example.org/a"],
                ["E-2", "Tom & Jerry * not a list", "link"],
                ["E-3", "a tag", ""],
            ]
        );
    }

    #[test]
    fn rows_that_do_not_line_up_are_dropped() {
        let t = parse(concat!(
            "| id | state |\n|---|---|\n",
            "| E-1 |\n",                  // short: GFM pads it
            "| E-2 | active | extra |\n", // long: GFM drops the excess
            "| E-3 | active | |\n",       // an empty third cell is a cell
            "| E-4 | active |   \n",      // trailing blanks after the bar are not
            "E-5 | active\n",             // outer bars are optional
            "| E-6 | a \\| b |\n",        // an escaped bar is text
        ));
        assert_eq!(
            rows(&t),
            [["E-4", "active"], ["E-5", "active"], ["E-6", "a | b"]]
        );
    }

    #[test]
    fn a_table_without_outer_bars_is_a_table() {
        let t = parse("id | state\n-- | --\nE-1 | active\n");
        assert_eq!(t.columns, ["id", "state"]);
        assert_eq!(rows(&t), [["E-1", "active"]]);
    }

    #[test]
    fn tables_in_code_and_html_are_not_tables() {
        let text = concat!(
            "```markdown\n| id | state |\n|---|---|\n| E-9 | fenced |\n```\n\n",
            "    | id | state |\n    |---|---|\n    | E-8 | indented |\n\n",
            "<div>\n| id | state |\n|---|---|\n| E-7 | html |\n</div>\n\n",
            "| id | state |\n|---|---|\n| E-1 | real |\n",
        );
        assert_eq!(rows(&parse(text)), [["E-1", "real"]]);
        assert_eq!(parse("```\n| a |\n|---|\n| b |\n```\n"), Table::default());
    }

    #[test]
    fn tables_inside_other_blocks_are_read() {
        let quoted = parse("> | id | state |\n> |---|---|\n> | E-1 | active |\n");
        assert_eq!(rows(&quoted), [["E-1", "active"]]);
        let listed = parse("- item\n\n  | id | state |\n  |---|---|\n  | E-2 | active |\n");
        assert_eq!(rows(&listed), [["E-2", "active"]]);
    }

    #[test]
    fn a_header_without_a_delimiter_row_is_no_table() {
        assert_eq!(
            parse("| id | state |\n| E-1 | active |\n"),
            Table::default()
        );
        // A delimiter row whose cells differ from the header's: no table.
        assert_eq!(
            parse("| id | state |\n|---|\n| E-1 | a |\n"),
            Table::default()
        );
    }

    #[test]
    fn too_many_columns_is_no_table() {
        let header = format!("|{}\n", " c |".repeat(MAX_COLUMNS + 1));
        let sep = format!("|{}\n", "---|".repeat(MAX_COLUMNS + 1));
        assert_eq!(parse(&(header + &sep)), Table::default());
    }

    #[test]
    fn hidden_rows_do_not_count_toward_the_cap() {
        let text = "| id | sensitivity |\n|-|-|\n| E-1 | restricted |\n| E-2 | restricted |\n| E-3 | public |\n| E-4 | public |\n| E-5 | public |\n";
        let t = parse_capped(text, 2, |_, row| row[1] == "public");
        assert_eq!(rows(&t), [["E-3", "public"], ["E-4", "public"]]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "([|a-z\\\\ `>*:-]{0,20}\n){0,8}") {
            let t = parse(&text);
            proptest::prop_assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
        }
    }
}
