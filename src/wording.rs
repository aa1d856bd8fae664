//! The wording of messages: a count and its noun in agreement ("1
//! operation", "2 operations", "0 operations"), a sentence that ends once
//! when it ends with text from elsewhere (git's "…the repository exists."
//! followed by kapi's ". Nothing local was lost"), and the name a word
//! misspells ("did you mean `kapi context review`?").

use std::fmt::Display;

/// `n` followed by `one` when `n` is 1, else by `many`.
pub fn count<N: Count>(n: N, one: &str, many: &str) -> String {
    format!("{n} {}", noun(n, one, many))
}

/// `one` when `n` is 1, else `many`: a noun or verb that agrees with a
/// count printed elsewhere in the message.
pub fn noun<'a, N: Count>(n: N, one: &'a str, many: &'a str) -> &'a str {
    if n == N::from(1) { one } else { many }
}

/// `text` without the full stop it may end with, so a message can end
/// the sentence itself: `format!("{}. Next", unstopped(git_message))`.
pub fn unstopped(text: &str) -> &str {
    let text = text.trim_end();
    text.strip_suffix('.').unwrap_or(text)
}

/// The one of `names` that `word` most likely misspells: within a
/// Damerau-Levenshtein distance of 2 (a swap of two neighbours counts
/// once), and of less than half the name's length, so a short name needs
/// a close match. `None` when none is that close, or `word` is one of them.
pub fn closest<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    names
        .into_iter()
        .map(|name| (strsim::damerau_levenshtein(&word, name), name))
        .filter(|&(d, name)| d > 0 && d <= 2 && 2 * d < name.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, name)| name)
}

/// An unsigned count (`usize`, `u64`, `u32`).
pub trait Count: Copy + PartialEq + From<u8> + Display {}

impl<N: Copy + PartialEq + From<u8> + Display> Count for N {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_takes_the_singular_and_every_other_count_the_plural() {
        assert_eq!(count(0, "operation", "operations"), "0 operations");
        assert_eq!(count(1, "operation", "operations"), "1 operation");
        assert_eq!(count(2u64, "operation", "operations"), "2 operations");
        assert_eq!(count(1, "entry", "entries"), "1 entry");
        assert_eq!(noun(1, "was", "were"), "was");
        assert_eq!(noun(11, "was", "were"), "were");
    }

    #[test]
    fn a_misspelt_name_finds_the_name_and_anything_else_finds_none() {
        let names = [
            "search", "review", "reset", "sync", "session", "note", "log", "atlas",
        ];
        assert_eq!(closest("reveiw", names), Some("review"));
        assert_eq!(closest("Reveiw", names), Some("review"));
        assert_eq!(closest("reviw", names), Some("review"));
        assert_eq!(closest("sesion", names), Some("session"));
        assert_eq!(closest("lgo", names), Some("log"));
        assert_eq!(closest("snyc", names), Some("sync"));
        // Exact names, paths and distant words are no misspelling.
        assert_eq!(closest("review", names), None);
        assert_eq!(closest("docs/intro.md", names), None);
        assert_eq!(closest("README.md", names), None);
        assert_eq!(closest("x", names), None);
        assert_eq!(closest("", names), None);
    }

    #[test]
    fn a_sentence_from_elsewhere_loses_its_one_full_stop() {
        assert_eq!(
            unstopped("and the repository exists."),
            "and the repository exists"
        );
        assert_eq!(
            unstopped("and the repository exists.\n"),
            "and the repository exists"
        );
        assert_eq!(unstopped("no stop"), "no stop");
        assert_eq!(unstopped("wait..."), "wait..");
    }
}
