//! Vale's files: vocabularies (`accept.txt`, `reject.txt`), substitution
//! styles, and the `StylesPath` of `.vale.ini`.

use super::{
    ImportedFile, ImportedRule, MAX_EXPANSION, ParseError, RuleStatus, check_len, err, numbered,
};

/// A Vale vocabulary entry: a term or a regular expression, one a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VocabTerm {
    pub line: usize,
    /// As written.
    pub pattern: String,
    /// The literal forms it stands for (empty when it cannot be expanded).
    pub forms: Vec<String>,
    /// `(?i)` at its start: Vale matches it ignoring case.
    pub ignore_case: bool,
}

/// A Vale vocabulary: `accept.txt` and `reject.txt`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vocabulary {
    pub accept: Vec<VocabTerm>,
    pub reject: Vec<VocabTerm>,
    pub skipped: Vec<(usize, String)>,
}

fn vocab_terms(
    text: &str,
    skipped: &mut Vec<(usize, String)>,
) -> Result<Vec<VocabTerm>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in numbered(text) {
        check_len(n, line)?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (ignore_case, body) = match t.strip_prefix("(?i)") {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        match expand(body) {
            Ok(forms) => out.push(VocabTerm {
                line: n,
                pattern: t.to_string(),
                forms,
                ignore_case,
            }),
            Err(reason) => skipped.push((n, format!("{t:?}: {reason}"))),
        }
    }
    Ok(out)
}

impl Vocabulary {
    /// Parse a vocabulary's two files (either may be absent).
    pub fn parse(accept: Option<&str>, reject: Option<&str>) -> Result<Self, ParseError> {
        let mut v = Vocabulary::default();
        v.accept = vocab_terms(accept.unwrap_or(""), &mut v.skipped)?;
        v.reject = vocab_terms(reject.unwrap_or(""), &mut v.skipped)?;
        Ok(v)
    }

    /// As rules: each accepted form is a preferred form with no avoided
    /// forms (kapi derives variants elsewhere); each rejected form is an
    /// avoided form with no preferred one, matched exactly as written unless
    /// the entry starts with `(?i)`. An accepted entry starting with `(?i)`
    /// gives no rule: Vale accepts it in any case, so no spelling of it is
    /// wrong.
    pub fn rules(&self) -> ImportedFile {
        let mut file = ImportedFile {
            skipped: self.skipped.clone(),
            ..Default::default()
        };
        for t in self.accept.iter().filter(|t| !t.ignore_case) {
            for f in &t.forms {
                file.rules.push(ImportedRule {
                    preferred: Some(f.clone()),
                    avoided: Vec::new(),
                    line: t.line,
                    id: None,
                    status: RuleStatus::Established,
                    exact: false,
                });
            }
        }
        for t in &self.reject {
            file.rules.push(ImportedRule {
                preferred: None,
                avoided: t.forms.clone(),
                line: t.line,
                id: None,
                status: RuleStatus::Established,
                exact: !t.ignore_case,
            });
        }
        file
    }
}

/// A Vale substitution style (`extends: substitution`, `swap:` a map of
/// avoided pattern to preferred form). Keys that are simple patterns
/// (alternations, optional characters or groups, small character classes,
/// escaped punctuation) expand to literal forms; the rest are skipped with a
/// reason.
pub fn parse_vale_substitution(text: &str) -> Result<ImportedFile, ParseError> {
    let mut file = ImportedFile::default();
    let mut extends: Option<String> = None;
    let mut ignorecase = false;
    let mut in_swap = false;
    let mut swap_indent: Option<usize> = None;
    for (n, raw) in numbered(text) {
        check_len(n, raw)?;
        let line = strip_comment(raw);
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent == 0 {
            in_swap = false;
            let (key, value) = split_pair(line).ok_or_else(|| err(n, "expected `key: value`"))?;
            match key.as_str() {
                "extends" => extends = Some(value.clone()),
                "ignorecase" => ignorecase = value.eq_ignore_ascii_case("true"),
                "swap" => {
                    if !value.is_empty() {
                        return Err(err(
                            n,
                            "`swap` must be a block mapping on the following lines",
                        ));
                    }
                    in_swap = true;
                    swap_indent = None;
                }
                _ => {}
            }
            continue;
        }
        if !in_swap {
            continue; // nested value of another key (tokens, exceptions, ...)
        }
        match swap_indent {
            None => swap_indent = Some(indent),
            Some(i) if i != indent => return Err(err(n, "inconsistent indentation in `swap`")),
            _ => {}
        }
        let (key, value) =
            split_pair(line.trim_start()).ok_or_else(|| err(n, "expected `avoided: preferred`"))?;
        if value.is_empty() {
            file.skipped.push((n, format!("{key:?}: no replacement")));
            continue;
        }
        // Vale offers the first of several `|`-separated replacements.
        let preferred = value.split('|').next().unwrap_or("").trim().to_string();
        let (key_ignores_case, body) = match key.strip_prefix("(?i)") {
            Some(rest) => (true, rest),
            None => (false, key.as_str()),
        };
        match expand(body) {
            Ok(forms) => {
                let avoided: Vec<String> = forms.into_iter().filter(|f| *f != preferred).collect();
                if avoided.is_empty() {
                    file.skipped
                        .push((n, format!("{key:?}: only the preferred form itself")));
                } else {
                    file.rules.push(ImportedRule {
                        preferred: Some(preferred),
                        avoided,
                        line: n,
                        id: None,
                        status: RuleStatus::Established,
                        exact: !key_ignores_case,
                    });
                }
            }
            Err(reason) => file.skipped.push((n, format!("{key:?}: {reason}"))),
        }
    }
    // `ignorecase` may come after `swap`.
    if ignorecase {
        for r in &mut file.rules {
            r.exact = false;
        }
    }
    match extends.as_deref() {
        Some("substitution") => Ok(file),
        Some(other) => Err(ParseError::NotSubstitution(format!("it extends {other:?}"))),
        None => Err(ParseError::NotSubstitution("no `extends` key".into())),
    }
}

/// A line without a YAML `#` comment (outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && (prev == ' ' || prev == '\t' || i == 0) => return &line[..i],
            None => {}
        }
        prev = c;
    }
    line
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')))
    {
        let inner = &s[1..s.len() - 1];
        if s.starts_with('\'') {
            inner.replace("''", "'")
        } else {
            inner.replace("\\\\", "\\").replace("\\\"", "\"")
        }
    } else {
        s.to_string()
    }
}

/// `key: value`, where the key may be quoted and contain `:`.
fn split_pair(line: &str) -> Option<(String, String)> {
    let t = line.trim();
    let first = t.chars().next()?;
    let colon = if first == '"' || first == '\'' {
        let close = t[1..].find(first)? + 1;
        close + 1 + t[close + 1..].find(':')?
    } else {
        // The first `: ` (or a trailing `:`); regex keys may hold `(?:`.
        let mut found = None;
        for (i, _) in t.match_indices(':') {
            let after = t[i + 1..].chars().next();
            if after.is_none() || after == Some(' ') || after == Some('\t') {
                found = Some(i);
                break;
            }
        }
        found?
    };
    Some((unquote(&t[..colon]), unquote(&t[colon + 1..])))
}

/// Expand a simple pattern to its literal forms: `a|b` at the top level,
/// groups `( )` and `(?: )` holding alternatives, `?` after a character or
/// group, character classes of plain characters (`[Qq]`), and escaped
/// punctuation (`\.`, `\-`, `\ `). Word boundaries `\b` are dropped (kapi
/// matches on word boundaries anyway). Anything else is a real regular
/// expression and is refused with a reason.
pub fn expand(pattern: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pos = 0;
    let forms = alternation(&chars, &mut pos, 0)?;
    if pos != chars.len() {
        return Err("unbalanced `)`".into());
    }
    let mut out: Vec<String> = Vec::new();
    for f in forms {
        let f = f.trim().to_string();
        if !f.is_empty() && !out.contains(&f) {
            out.push(f);
        }
    }
    if out.is_empty() {
        return Err("expands to nothing".into());
    }
    Ok(out)
}

fn bounded(v: &[String]) -> Result<(), String> {
    if v.len() > MAX_EXPANSION {
        return Err(format!("expands to more than {MAX_EXPANSION} forms"));
    }
    Ok(())
}

/// Alternatives up to a `)` at `depth` > 0 or the end.
fn alternation(c: &[char], pos: &mut usize, depth: usize) -> Result<Vec<String>, String> {
    let mut all = Vec::new();
    loop {
        let seq = sequence(c, pos, depth)?;
        all.extend(seq);
        bounded(&all)?;
        if *pos < c.len() && c[*pos] == '|' {
            *pos += 1;
            continue;
        }
        return Ok(all);
    }
}

/// One alternative: a product of atoms.
fn sequence(c: &[char], pos: &mut usize, depth: usize) -> Result<Vec<String>, String> {
    let mut acc = vec![String::new()];
    while *pos < c.len() {
        let ch = c[*pos];
        let atom: Vec<String> = match ch {
            '|' => break,
            ')' if depth > 0 => break,
            ')' => return Err("unbalanced `)`".into()),
            '(' => {
                *pos += 1;
                if c.get(*pos) == Some(&'?') {
                    if c.get(*pos + 1) == Some(&':') {
                        *pos += 2;
                    } else {
                        return Err(
                            "a group with flags or look-around is a regular expression".into()
                        );
                    }
                }
                let inner = alternation(c, pos, depth + 1)?;
                if c.get(*pos) != Some(&')') {
                    return Err("unclosed `(`".into());
                }
                *pos += 1;
                inner
            }
            '[' => {
                let close = c[*pos + 1..]
                    .iter()
                    .position(|&x| x == ']')
                    .ok_or("unclosed `[`")?
                    + *pos
                    + 1;
                let set = &c[*pos + 1..close];
                if set.is_empty() || set.iter().any(|&x| matches!(x, '^' | '-' | '\\' | '[')) {
                    return Err(
                        "a character class with ranges or negation is a regular expression".into(),
                    );
                }
                *pos = close + 1;
                set.iter().map(|x| x.to_string()).collect()
            }
            '\\' => {
                let next = *c.get(*pos + 1).ok_or("a trailing `\\`")?;
                *pos += 2;
                if next == 'b' {
                    continue;
                }
                if next.is_alphanumeric() {
                    return Err(format!("`\\{next}` is a regular expression class"));
                }
                vec![next.to_string()]
            }
            '.' | '*' | '+' | '{' | '^' | '$' => {
                return Err(format!("`{ch}` makes it a regular expression"));
            }
            '?' => return Err("`?` with nothing before it".into()),
            _ => {
                *pos += 1;
                vec![ch.to_string()]
            }
        };
        let mut atom = atom;
        if c.get(*pos) == Some(&'?') {
            *pos += 1;
            atom.push(String::new());
        }
        let mut next = Vec::with_capacity(acc.len() * atom.len());
        for a in &acc {
            for b in &atom {
                next.push(format!("{a}{b}"));
            }
        }
        bounded(&next)?;
        acc = next;
    }
    Ok(acc)
}

/// The `StylesPath` of a `.vale.ini` (a core setting, before any section),
/// as a repository-relative folder; `None` when absent, empty, or outside
/// the repository (absolute, or climbing out with `..`).
pub fn styles_path(ini: &str) -> Option<String> {
    for line in ini.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            break;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "StylesPath" {
            continue;
        }
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        let mut parts: Vec<&str> = Vec::new();
        for part in value.split(['/', '\\']) {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop()?;
                }
                p => parts.push(p),
            }
        }
        if value.starts_with('/') || value.contains(':') || parts.is_empty() {
            return None;
        }
        return Some(parts.join("/"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::parse_term_list;

    #[test]
    fn styles_path_stays_inside_the_repository() {
        assert_eq!(styles_path("StylesPath = a/../b"), Some("b".into()));
        assert_eq!(styles_path("StylesPath = ../x"), None);
        assert_eq!(styles_path("StylesPath = /abs"), None);
        assert_eq!(styles_path("[*]\nStylesPath = x"), None);
    }

    #[test]
    fn expands_simple_patterns() {
        assert_eq!(
            expand("(?:Quick cast|Quick-cast)").unwrap(),
            ["Quick cast", "Quick-cast"]
        );
        assert_eq!(expand("Quick ?cast").unwrap(), ["Quick cast", "Quickcast"]);
        assert_eq!(
            expand("[Gg]it[Hh]ub").unwrap(),
            ["GitHub", "Github", "gitHub", "github"]
        );
        assert_eq!(expand(r"\bnode\.js\b").unwrap(), ["node.js"]);
        assert_eq!(
            expand("e-?mail|E-mail").unwrap(),
            ["e-mail", "email", "E-mail"]
        );
        assert_eq!(
            expand("web(?: |-)?site").unwrap(),
            ["web site", "web-site", "website"]
        );
        assert!(
            expand("colou?rs.*")
                .unwrap_err()
                .contains("regular expression")
        );
        assert!(expand(r"\w+").is_err());
        assert!(expand("[a-z]x").is_err());
        assert!(expand("(?i)x").is_err());
        assert!(
            expand("(a|b)(c|d)(e|f)(g|h)(i|j)(k|l)(m|n)")
                .unwrap_err()
                .contains("more than")
        );
    }

    #[test]
    fn vale_substitution() {
        let y = "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nignorecase: true\nlevel: error\nswap:\n  # comment\n  '(?:Quick cast|Quick-cast)': Quickcast\n  Github: GitHub\n  java ?script: JavaScript|JS\n  \"[a-z]+ing\": x\n";
        let f = parse_vale_substitution(y).unwrap();
        assert_eq!(f.rules.len(), 3);
        assert_eq!(f.rules[0].preferred.as_deref(), Some("Quickcast"));
        assert_eq!(f.rules[0].avoided, vec!["Quick cast", "Quick-cast"]);
        assert_eq!(f.rules[0].line, 7);
        assert_eq!(f.rules[2].avoided, vec!["java script", "javascript"]);
        assert_eq!(f.rules[2].preferred.as_deref(), Some("JavaScript"));
        assert_eq!(f.skipped.len(), 1);
        assert_eq!(f.skipped[0].0, 10);
        assert!(f.rules.iter().all(|r| !r.exact), "ignorecase: true");
        let exact = parse_vale_substitution(
            "extends: substitution\nswap:\n  Github: GitHub\n  (?i)java ?script: JavaScript\nignorecase: false\n",
        )
        .unwrap();
        assert!(exact.rules[0].exact);
        assert!(!exact.rules[1].exact, "a (?i) key ignores case");
        let late = parse_vale_substitution(
            "extends: substitution\nswap:\n  Github: GitHub\nignorecase: true\n",
        )
        .unwrap();
        assert!(!late.rules[0].exact);
        assert!(!parse_term_list("1\testablished\tA\tb\n").unwrap().rules[0].exact);
        assert!(parse_vale_substitution("extends: existence\n").is_err());
        assert!(parse_vale_substitution("swap:\n  a: b\n").is_err());
    }

    #[test]
    fn vale_vocabulary() {
        let v = Vocabulary::parse(
            Some("Quickcast\n(?i)[Gg]rafana\n[a-z]+ly\n"),
            Some("Quick cast\n"),
        )
        .unwrap();
        assert_eq!(v.accept.len(), 2);
        assert!(v.accept[1].ignore_case);
        assert_eq!(v.skipped.len(), 1);
        let r = v.rules();
        // `(?i)[Gg]rafana` is accepted in any case: no rule.
        assert_eq!(r.rules.len(), 2);
        assert_eq!(r.rules[0].preferred.as_deref(), Some("Quickcast"));
        assert_eq!(r.rules[1].preferred, None);
        assert_eq!(r.rules[1].avoided, vec!["Quick cast"]);
        assert!(r.rules[1].exact);
        let ic = Vocabulary::parse(None, Some("(?i)utili[sz]e\n")).unwrap();
        assert!(!ic.rules().rules[0].exact);
    }
}
