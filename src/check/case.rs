//! Case folding that keeps byte lengths, for the checker: a character
//! whose lower case has another length in UTF-8 is left as it is, so
//! offsets in folded text are those of the file. The matcher finds forms
//! in folded text, and a masker's loosened text (`prose.rs`) is folded the
//! same way. And the case a fix writes a preferred form in ([`in_shape`]).

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
pub(crate) fn folds_to(span: &str, key: &[u8]) -> bool {
    if span.is_ascii() {
        span.len() == key.len()
            && span
                .bytes()
                .zip(key.iter().copied())
                .all(|(a, b)| a.to_ascii_lowercase() == b)
    } else {
        case_key_same_len(span).as_bytes() == key
    }
}

/// The case a text is written in, as a fix follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Two letters or more, none in lower case: `OPEN-SOURCE`.
    Capitals,
    /// An initial capital: `Open-source` (at the start of a sentence, in
    /// a title).
    Initial,
    /// Anything else.
    AsWritten,
}

/// The shape of `text`.
pub fn shape(text: &str) -> Shape {
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    if letters >= 2 && !text.chars().any(char::is_lowercase) {
        Shape::Capitals
    } else if text.chars().next().is_some_and(char::is_uppercase) {
        Shape::Initial
    } else {
        Shape::AsWritten
    }
}

/// The preferred form in `shape`, for a fix, when the case rules allow
/// one other than the form as written. Only a preferred form written all
/// in lower case (a common word, whose case follows its place in a
/// sentence) takes the shape of the text it replaces: `OPEN SOURCE`,
/// `Open source`. A preferred form holding a capital (`GitHub`, `iOS`) is
/// the term as written, and a rule matched only as written (`exact`) asks
/// for its form as it is: neither has another shape. Nor has a form whose
/// shape would fold otherwise than it does ([`case_key_same_len`]: `ß` in
/// capitals is `SS`). The matcher still has to accept the form in that
/// shape (a shape the rule itself would report is not written).
pub fn in_shape(preferred: &str, shape: Shape, exact: bool) -> Option<String> {
    if exact
        || preferred.chars().any(char::is_uppercase)
        || !preferred.chars().any(char::is_lowercase)
    {
        return None;
    }
    let shaped: String = match shape {
        Shape::AsWritten => return None,
        Shape::Capitals => preferred.to_uppercase(),
        Shape::Initial => {
            let mut chars = preferred.chars();
            let first = chars.next()?;
            first.to_uppercase().chain(chars).collect()
        }
    };
    (shaped != preferred && case_key_same_len(&shaped) == case_key_same_len(preferred))
        .then_some(shaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lower_case_preferred_form_takes_the_shape_of_the_text() {
        assert_eq!(shape("Open-source"), Shape::Initial);
        assert_eq!(shape("OPEN-SOURCE"), Shape::Capitals);
        assert_eq!(shape("open-source"), Shape::AsWritten);
        // One capital letter is an initial, not capitals.
        assert_eq!(shape("U"), Shape::Initial);
        let shaped = |p: &str, s: Shape| in_shape(p, s, false);
        assert_eq!(
            shaped("open source", Shape::Initial).as_deref(),
            Some("Open source")
        );
        assert_eq!(
            shaped("open source", Shape::Capitals).as_deref(),
            Some("OPEN SOURCE")
        );
        assert_eq!(shaped("open source", Shape::AsWritten), None);
        // A term with a capital, or a rule matched as written: as written.
        assert_eq!(shaped("GitHub", Shape::Capitals), None);
        assert_eq!(shaped("iOS", Shape::Initial), None);
        assert_eq!(in_shape("open source", Shape::Initial, true), None);
        // A shape that would change the form's folding is not written:
        // `ß` in capitals is `SS`.
        assert_eq!(shaped("straße", Shape::Capitals), None);
        assert_eq!(shaped("straße", Shape::Initial).as_deref(), Some("Straße"));
        assert_eq!(shaped("1.0", Shape::Initial), None);
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
