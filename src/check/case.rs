//! Case folding that keeps byte lengths, for the checker: a character
//! whose lower case has another length in UTF-8 is left as it is, so
//! offsets in folded text are those of the file. The matcher finds forms
//! in folded text, and a masker's loosened text (`prose.rs`) is folded the
//! same way. And the case a fix writes a preferred form in ([`fitted`]).

/// Lower-case each character whose lower case has the same UTF-8 length.
/// The checker's own case key, beside `ops::forms::case_key` (full Unicode
/// lower case, for comparing forms): matches are found in the folded text
/// and reported at the same byte offsets in the original, so folding here
/// must never change a character's length.
pub fn case_key_same_len(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    let mut out = text.as_bytes().to_vec();
    fold_same_len(&mut out);
    // Only whole characters were replaced by characters of the same length.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`case_key_same_len`] in place, over UTF-8 bytes: ASCII runs are
/// lower-cased at once, other characters one by one.
pub(crate) fn fold_same_len(buf: &mut [u8]) {
    let mut i = 0;
    while i < buf.len() {
        let run = buf[i..]
            .iter()
            .position(|b| !b.is_ascii())
            .unwrap_or(buf.len() - i);
        buf[i..i + run].make_ascii_lowercase();
        i += run;
        if i >= buf.len() {
            break;
        }
        let n = match buf[i] {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            _ => 2,
        }
        .min(buf.len() - i);
        let Some(c) = std::str::from_utf8(&buf[i..i + n])
            .ok()
            .and_then(|s| s.chars().next())
        else {
            i += 1;
            continue;
        };
        let mut lower = c.to_lowercase();
        if let (Some(l), None) = (lower.next(), lower.next())
            && l != c
            && l.len_utf8() == n
        {
            l.encode_utf8(&mut buf[i..i + n]);
        }
        i += n;
    }
}

/// Whether `span` folds ([`case_key_same_len`]) to `key`.
pub(crate) fn folds_to(span: &str, key: &str) -> bool {
    if span.is_ascii() {
        span.len() == key.len()
            && span
                .bytes()
                .zip(key.bytes())
                .all(|(a, b)| a.to_ascii_lowercase() == b)
    } else {
        case_key_same_len(span) == key
    }
}

/// The preferred form in the case of the text it replaces, for a fix:
/// the forms to try, best first, before the preferred form as the rule
/// writes it. Only a preferred form written all in lower case (a common
/// word, whose case follows its place in a sentence) follows the text: in
/// capitals where the text is (`OPEN-SOURCE`, two letters or more, none in
/// lower case: `OPEN SOURCE`), with an initial capital where the text has
/// one (`Open-source` at the start of a sentence or in a title: `Open
/// source`). A preferred form holding a capital (`GitHub`, `iOS`) is the
/// term as written, and a rule matched only as written (`exact`) asks for
/// its form as it is: neither gets a candidate. A candidate must fold as
/// the preferred form does ([`case_key_same_len`]), so `ß` never becomes
/// `SS`; the matcher still has to accept it (a candidate the rule itself
/// would report is not written).
pub fn fitted(preferred: &str, matched: &str, exact: bool) -> Vec<String> {
    let lower = |c: char| c.is_lowercase();
    if exact || preferred.chars().any(char::is_uppercase) || !preferred.chars().any(lower) {
        return Vec::new();
    }
    let key = case_key_same_len(preferred);
    let mut out = Vec::new();
    let letters = matched.chars().filter(|c| c.is_alphabetic()).count();
    if letters >= 2 && !matched.chars().any(lower) {
        out.push(preferred.to_uppercase());
    }
    if matched.chars().next().is_some_and(char::is_uppercase) {
        let mut chars = preferred.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_uppercase().chain(chars).collect());
        }
    }
    out.retain(|c| c != preferred && case_key_same_len(c) == key);
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lower_case_preferred_form_follows_the_case_of_the_text() {
        assert_eq!(fitted("open source", "Open-source", false), ["Open source"]);
        assert_eq!(
            fitted("open source", "OPEN-SOURCE", false),
            ["OPEN SOURCE", "Open source"]
        );
        assert!(fitted("open source", "open-source", false).is_empty());
        // One capital letter is an initial, not capitals.
        assert_eq!(fitted("utilise", "U", false), ["Utilise"]);
        // A term with a capital, or a rule matched as written: as written.
        assert!(fitted("GitHub", "GITHUB", false).is_empty());
        assert!(fitted("iOS", "I-OS", false).is_empty());
        assert!(fitted("open source", "Open-source", true).is_empty());
        // A capital that would change the form's length or folding is not
        // written: `ß` in capitals is `SS`.
        assert_eq!(fitted("straße", "STRASSE", false), ["Straße"]);
        assert!(fitted("1.0", "V1", false).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn folding_keeps_lengths_and_folds_each_character(t in "[a-zA-ZÜüßẞİıΣσςДдĲǅ☃ \u{301}]{0,40}") {
            let char_wise: String = t
                .chars()
                .map(|c| {
                    let mut l = c.to_lowercase();
                    match (l.next(), l.next()) {
                        (Some(x), None) if x.len_utf8() == c.len_utf8() => x,
                        _ => c,
                    }
                })
                .collect();
            proptest::prop_assert_eq!(case_key_same_len(&t), char_wise);
        }
    }
}
