//! Avoided forms: from the form a project uses and the forms a person or an
//! agent named, derive every form a term rule avoids, deterministically and
//! with no model: the `--instead-of` forms, then the spacing, hyphen and
//! capitalisation variants of a compound.
//!
//! - `Quickcast` instead of `Quick cast` avoids Quick cast, Quick-cast, QuickCast.
//! - `content memory` (a lower-case phrase) avoids only content-memory.
//! - A word with no parts avoids only what `--instead-of` lists.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormsError {
    #[error("the form to use is empty")]
    EmptyTerm,
    #[error(
        "\"{0}\" has no parts to vary and no other form to avoid: name the form the project avoids with --instead-of"
    )]
    NothingToAvoid(String),
}

/// Every form a rule preferring `term` avoids, in a stable order.
pub fn avoided_forms(term: &str, instead_of: &[String]) -> Result<Vec<String>, FormsError> {
    let term = normalize(term);
    if term.is_empty() {
        return Err(FormsError::EmptyTerm);
    }
    let given: Vec<String> = instead_of
        .iter()
        .map(|f| normalize(f))
        .filter(|f| !f.is_empty())
        .collect();

    let mut parts = split_parts(&term);
    if parts.len() < 2 {
        // A closed word takes its parts from a given form that breaks it.
        let folded = case_key(&term);
        if let Some(p) = given
            .iter()
            .map(|g| split_parts(g))
            .find(|p| p.len() >= 2 && case_key(&p.concat()) == folded)
        {
            parts = p;
        }
    }

    let mut forms = given.clone();
    if parts.len() >= 2 {
        let open = term.contains([' ', '-']);
        forms.push(parts.join(" "));
        forms.push(parts.join("-"));
        let has_capital = term.chars().any(char::is_uppercase);
        if !open || has_capital {
            forms.push(parts.iter().map(|p| capitalize(p)).collect());
            if open {
                forms.push(parts.concat());
            }
        }
    }

    let mut out: Vec<String> = Vec::new();
    for form in forms {
        if form == term || out.iter().any(|o| same_match(o, &form, &term)) {
            continue;
        }
        out.push(form);
    }
    if out.is_empty() {
        return Err(FormsError::NothingToAvoid(term));
    }
    Ok(out)
}

/// Whether an avoided form differs from the form to use only in case; such a
/// form matches exactly as written, every other form case-insensitively.
pub fn is_case_only(avoided: &str, preferred: &str) -> bool {
    avoided != preferred && same_case_key(avoided, preferred)
}

/// Whether `text` is a use of `avoided` under the rule's case logic.
pub fn form_matches(avoided: &str, preferred: &str, text: &str) -> bool {
    if is_case_only(avoided, preferred) {
        avoided == text
    } else {
        same_case_key(avoided, text)
    }
}

/// `case_key(a) == case_key(b)`, without building either key when both are
/// ASCII (settling compares every pair of a rule's forms: most are).
fn same_case_key(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        case_key(a) == case_key(b)
    }
}

/// Whether `text` writes `form` as a whole word or phrase (not inside a
/// longer word): exactly as written when `exact`, else ignoring case. What
/// settling reads in a correction's two wordings.
pub fn writes(text: &str, form: &str, exact: bool) -> bool {
    if form.is_empty() {
        return false;
    }
    let (hay, needle) = if exact {
        (text.to_owned(), form.to_owned())
    } else {
        (case_key(text), case_key(form))
    };
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(found) = hay[from..].find(&needle) {
        let start = from + found;
        let end = start + needle.len();
        if !word(hay[..start].chars().next_back()) && !word(hay[end..].chars().next()) {
            return true;
        }
        from = start + hay[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Whether `text` writes one of a rule's avoided forms, under its case logic.
pub fn writes_avoided(text: &str, preferred: &str, avoid: &[String]) -> bool {
    avoid
        .iter()
        .any(|a| writes(text, a, is_case_only(a, preferred)))
}

/// Whether `text` writes a rule's preferred form: exactly as written when
/// one of the forms it avoids differs from it only in case.
pub fn writes_preferred(text: &str, preferred: &str, avoid: &[String]) -> bool {
    let exact = avoid.iter().any(|a| is_case_only(a, preferred));
    writes(text, preferred, exact)
}

/// Whether two avoided forms of one rule would match the same text.
fn same_match(a: &str, b: &str, term: &str) -> bool {
    if is_case_only(a, term) || is_case_only(b, term) {
        a == b
    } else {
        case_key(a) == case_key(b)
    }
}

/// Unicode lower case, the comparison key for case-insensitive forms.
pub fn case_key(s: &str) -> String {
    s.to_lowercase()
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn capitalize(part: &str) -> String {
    let mut chars = part.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The parts of a compound: split at spaces, hyphens and lower→upper case changes.
pub fn split_parts(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if c == ' ' || c == '-' {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            prev = None;
            continue;
        }
        if c.is_uppercase() && prev.is_some_and(char::is_lowercase) && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        current.push(c);
        prev = Some(c);
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms(term: &str, instead: &[&str]) -> Vec<String> {
        let instead: Vec<String> = instead.iter().map(|s| s.to_string()).collect();
        avoided_forms(term, &instead).unwrap()
    }

    #[test]
    fn a_closed_word_takes_parts_from_the_form_that_breaks_it() {
        assert_eq!(
            forms("Quickcast", &["Quick cast"]),
            ["Quick cast", "Quick-cast", "QuickCast"]
        );
    }

    #[test]
    fn a_lower_case_phrase_yields_only_its_hyphenated_form() {
        assert_eq!(forms("content memory", &[]), ["content-memory"]);
        assert_eq!(forms("content-memory", &[]), ["content memory"]);
    }

    #[test]
    fn a_word_with_no_parts_avoids_only_what_is_listed() {
        assert_eq!(forms("utilize", &["utilise"]), ["utilise"]);
        assert_eq!(
            avoided_forms("utilize", &[]),
            Err(FormsError::NothingToAvoid("utilize".into()))
        );
    }

    #[test]
    fn a_camel_case_term_varies_its_spacing() {
        assert_eq!(
            forms("OpenTelemetry", &[]),
            ["Open Telemetry", "Open-Telemetry"]
        );
        assert_eq!(
            forms("OpenTelemetry", &["Opentelemetry", "opentelemetry"]),
            [
                "Opentelemetry",
                "opentelemetry",
                "Open Telemetry",
                "Open-Telemetry"
            ]
        );
    }

    #[test]
    fn case_only_forms_match_as_written() {
        assert!(is_case_only("QuickCast", "Quickcast"));
        assert!(form_matches("QuickCast", "Quickcast", "QuickCast"));
        assert!(!form_matches("QuickCast", "Quickcast", "quickcast"));
        assert!(!form_matches("quickcast", "Quickcast", "Quickcast"));
        assert!(form_matches("Quick cast", "Quickcast", "quick CAST"));
    }

    #[test]
    fn forms_compare_by_their_case_keys() {
        let pairs = [
            ("Quick cast", "quick CAST"),
            ("Quick cast", "Quick-cast"),
            ("Straße", "STRASSE"),
            ("Straße", "straße"),
            ("ΣΟΦΟΣ", "σοφος"),
            ("ΣΟΦΟΣ", "σοφος "),
            ("\u{212A}elvin", "kelvin"),
            ("İstanbul", "istanbul"),
            ("", ""),
        ];
        for (a, b) in pairs {
            assert_eq!(
                same_case_key(a, b),
                case_key(a) == case_key(b),
                "{a:?} {b:?}"
            );
            assert_eq!(same_case_key(b, a), same_case_key(a, b), "{a:?} {b:?}");
        }
    }

    #[test]
    fn duplicates_are_dropped_by_how_they_match() {
        assert_eq!(
            forms("Quickcast", &["quick cast", "Quick cast"]),
            ["quick cast", "quick-cast", "QuickCast"]
        );
    }
}
