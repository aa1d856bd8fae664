//! kapi term lists (`terms.tsv`): one rule a line, tab-separated.

use super::{ImportedFile, ImportedRule, ParseError, RuleStatus, check_len, err, numbered};
use crate::ops::record::Bounds;

/// A kapi term list: `id<TAB>status<TAB>preferred<TAB>avoided|avoided`, with
/// `#` comments and blank lines. Status: established, suggested, contested
/// or advisory.
pub fn parse_term_list(text: &str) -> Result<ImportedFile, ParseError> {
    let mut file = ImportedFile::default();
    for (n, line) in numbered(text) {
        if let Some(rule) = parse_term_line(n, line)? {
            file.rules.push(rule);
        }
    }
    Ok(file)
}

/// Whether line `line` of a term list holds a rule (it is neither blank
/// nor a comment): [`parse_term_line`] reads it, and no other line.
pub fn holds_rule(line: &str) -> bool {
    let trimmed = line.trim();
    !(trimmed.is_empty() || trimmed.starts_with('#'))
}

/// The rule on line `n` of a term list, `None` for a blank line or a
/// comment. A line is read alone: its rule does not depend on any other.
pub fn parse_term_line(n: usize, line: &str) -> Result<Option<ImportedRule>, ParseError> {
    check_len(n, line)?;
    if !holds_rule(line) {
        return Ok(None);
    }
    // The columns without a vector per line (a list of 5,000 rules).
    let mut split = line.split('\t');
    let mut cols = [""; 4];
    let mut found = 0;
    for col in split.by_ref().take(4) {
        cols[found] = col;
        found += 1;
    }
    let found = found + split.count();
    if found != 4 {
        return Err(err(
            n,
            format!(
                "expected 4 tab-separated columns (id, status, preferred, avoided forms), found {found}"
            ),
        ));
    }
    let status = RuleStatus::parse(cols[1]).ok_or_else(|| {
        err(
            n,
            format!(
                "unknown status {:?}: use established, suggested, contested or advisory",
                cols[1].trim()
            ),
        )
    })?;
    let preferred = cols[2].trim();
    if preferred.is_empty() {
        return Err(err(n, "the preferred form is empty"));
    }
    let avoided: Vec<String> = cols[3]
        .split('|')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if avoided.is_empty() {
        return Err(err(n, "no avoided forms"));
    }
    let id = cols[0].trim();
    Ok(Some(ImportedRule {
        preferred: Some(preferred.to_string()),
        avoided,
        pattern: None,
        bounds: Bounds::Words,
        raw: false,
        level: None,
        paths: Vec::new(),
        line: n,
        id: (!id.is_empty()).then(|| id.to_string()),
        status,
        exact: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_list() {
        let t = "# id\tstatus\n1\testablished\tGitHub\tGithub|Git Hub\n\n2\tsuggested\truntime\trun time\n";
        let f = parse_term_list(t).unwrap();
        assert_eq!(f.rules.len(), 2);
        assert_eq!(f.rules[0].avoided, vec!["Github", "Git Hub"]);
        assert_eq!(f.rules[1].status, RuleStatus::Suggested);
        assert_eq!(f.rules[1].line, 4);
        let e = parse_term_list("1\tsettled\tA\tb\n").unwrap_err();
        assert!(e.to_string().starts_with("line 1: unknown status"), "{e}");
        assert!(
            parse_term_list("1\testablished\tA\n")
                .unwrap_err()
                .to_string()
                .contains("4 tab-separated")
        );
        for (line, found) in [
            ("1\testablished\tA\n", 3),
            ("1\te\tA\tb\tc\td\n", 6),
            ("x\n", 1),
        ] {
            let e = parse_term_list(line).unwrap_err().to_string();
            assert!(e.ends_with(&format!("found {found}")), "{e}");
        }
    }
}
