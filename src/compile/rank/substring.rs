//! The substring ranker: the whole query, trimmed, matched ASCII
//! case-insensitively in the id, title and text.
//!
//! Key, best first: exact id match, then title match, then the number of
//! non-overlapping occurrences in title and text; ties in document order.

use aho_corasick::AhoCorasick;

use super::Doc;

pub fn rank(docs: &[Doc<'_>], query: &str) -> Vec<usize> {
    let needle = query.trim();
    if needle.is_empty() {
        return Vec::new();
    }
    let Ok(matcher) = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build([needle])
    else {
        return Vec::new();
    };
    let mut hits: Vec<(bool, bool, usize, usize)> = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let id_match = doc.id.eq_ignore_ascii_case(needle);
        let in_title = matcher.find_iter(doc.title).count();
        let in_text = matcher.find_iter(doc.text).count();
        if id_match || in_title + in_text > 0 {
            hits.push((id_match, in_title > 0, in_title + in_text, i));
        }
    }
    hits.sort_by(|a, b| (b.0, b.1, b.2).cmp(&(a.0, a.1, a.2)).then(a.3.cmp(&b.3)));
    hits.into_iter().map(|h| h.3).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_id_title_then_count() {
        let docs = [
            Doc {
                id: "A",
                title: "x",
                text: "review review review",
            },
            Doc {
                id: "B",
                title: "Review",
                text: "",
            },
            Doc {
                id: "review",
                title: "x",
                text: "",
            },
            Doc {
                id: "C",
                title: "x",
                text: "nothing",
            },
            Doc {
                id: "D",
                title: "x",
                text: "REVIEW",
            },
        ];
        assert_eq!(rank(&docs, " review "), [2, 1, 0, 4]);
        assert!(rank(&docs, "  ").is_empty());
    }
}
