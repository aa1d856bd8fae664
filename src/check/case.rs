//! Case folding that keeps byte lengths, for the checker: a character
//! whose lower case has another length in UTF-8 is left as it is, so
//! offsets in folded text are those of the file. The matcher finds forms
//! in folded text, and a masker's loosened text (`prose.rs`) is folded the
//! same way.

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

#[cfg(test)]
mod tests {
    use super::*;

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
