//! The first Markdown table of a log or register body: a header row, a
//! separator row, then data rows. Cells are trimmed; `\|` is a literal bar.

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

fn parse_capped(
    body: &str,
    cap: usize,
    mut keep: impl FnMut(&[String], &[String]) -> bool,
) -> Table {
    let mut lines = body
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with('|'));
    let Some(header) = lines.next() else {
        return Table::default();
    };
    let columns: Vec<String> = cells(header)
        .into_iter()
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if columns.len() > MAX_COLUMNS {
        return Table::default();
    }
    match lines.next() {
        Some(sep)
            if sep.starts_with('|') && sep.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')) => {}
        _ => {
            return Table {
                columns,
                rows: Vec::new(),
            };
        }
    }
    let mut rows = Vec::new();
    for line in lines.take_while(|l| l.starts_with('|')) {
        let row = cells(line);
        if row.len() == columns.len() && keep(&columns, &row) {
            if rows.len() == cap {
                break;
            }
            rows.push(row);
        }
    }
    Table { columns, rows }
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.strip_prefix('|').unwrap_or(line);
    let inner = if inner.ends_with('|') && !inner.ends_with("\\|") {
        &inner[..inner.len() - 1]
    } else {
        inner
    };
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cell).trim().to_string()),
            c => cell.push(c),
        }
    }
    out.push(cell.trim().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_first_table() {
        let t = parse(
            "intro\n\n| ID | Title |\n|---|:-:|\n| E-1 | a \\| b |\n| bad |\n| E-2 | c |\n\n| x |\n",
        );
        assert_eq!(t.columns, ["id", "title"]);
        assert_eq!(t.rows, [vec!["E-1", "a | b"], vec!["E-2", "c"]]);
        assert_eq!(t.column("title"), Some(1));
    }

    #[test]
    fn hidden_rows_do_not_count_toward_the_cap() {
        let text = "| id | sensitivity |\n|-|-|\n| E-1 | restricted |\n| E-2 | restricted |\n| E-3 | public |\n| E-4 | public |\n| E-5 | public |\n";
        let t = parse_capped(text, 2, |_, row| row[1] == "public");
        assert_eq!(t.rows, [vec!["E-3", "public"], vec!["E-4", "public"]]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "([|a-z\\\\ -]{0,20}\n){0,8}") {
            let t = parse(&text);
            proptest::prop_assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
        }
    }
}
