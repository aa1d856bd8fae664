//! Content cells for the atlas (`kapi context atlas --content`): the
//! project's prose files — the files `kapi check` reads — counted by
//! collection (their folder, less any language folder), language (front
//! matter `lang`, else a language folder or a `.nb.md` suffix in the path)
//! and state (checked clean, has findings, or not checked: a file the
//! check could not read). The state is the check of the rules in force
//! now, run here and recording nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use serde::Serialize;

use super::Session;
use super::check::{CheckError, CheckRequest, check};
use crate::check::files::{ProseFilter, project_files};
use crate::vault::frontmatter::{self, FRONT_MATTER_LIMIT};

/// One cell: how many prose files share a collection, language and state.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CellDoc {
    /// The folder, less any language folder (`docs/guide` for
    /// `docs/nb-NO/guide/a.md`); `.` for the top of the work tree.
    pub collection: String,
    /// `lang` from the front matter, else the language the path names;
    /// `null` when neither says.
    pub language: Option<String>,
    /// `clean` (checked, no finding), `findings` (checked, at least one
    /// finding, failing or advisory) or `unchecked` (the check could not
    /// read it: binary, too large, not UTF-8).
    pub state: &'static str,
    pub files: usize,
}

/// The longest `lang` value taken from front matter.
const MAX_LANG: usize = 35;

/// Count the project's prose files into cells, in order of collection,
/// language and state.
pub fn cells(session: &Session) -> Result<Vec<CellDoc>, CheckError> {
    let filter =
        ProseFilter::new(&session.config.check)?.with_vale_styles(Some(session.root.as_path()));
    let files = project_files(session.store.git(), &filter)?;
    let report = check(
        Some(session),
        &CheckRequest {
            cwd: session.root.clone(),
            ..CheckRequest::default()
        },
    )?;
    let with_findings: BTreeSet<&str> = report
        .outcome
        .findings
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    let unchecked: BTreeSet<&str> = report
        .outcome
        .warnings
        .iter()
        .filter_map(|w| w.path.as_deref())
        .collect();
    let mut counts: BTreeMap<(String, Option<String>, &'static str), usize> = BTreeMap::new();
    for file in &files {
        let path = file.path.as_str();
        let state = if unchecked.contains(path) {
            "unchecked"
        } else if with_findings.contains(path) {
            "findings"
        } else {
            "clean"
        };
        let language = front_matter_lang(&session.root.join(path)).or_else(|| path_language(path));
        *counts
            .entry((collection(path), language, state))
            .or_default() += 1;
    }
    Ok(counts
        .into_iter()
        .map(|((collection, language, state), files)| CellDoc {
            collection,
            language,
            state,
            files,
        })
        .collect())
}

/// `lang` from the front matter at the top of the file, read within the
/// front matter's bound; `None` when there is none or it cannot be read.
fn front_matter_lang(path: &std::path::Path) -> Option<String> {
    let file = crate::fsutil::open_regular(path, crate::fsutil::Links::Refuse).ok()?;
    let mut head = Vec::new();
    file.take(FRONT_MATTER_LIMIT as u64)
        .read_to_end(&mut head)
        .ok()?;
    let fm = frontmatter::parse(&head).ok()?;
    let lang = fm.str("lang")?.trim();
    (!lang.is_empty()
        && lang.len() <= MAX_LANG
        && lang
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then(|| lang.to_owned())
}

/// The language a path names: a folder that is a language tag
/// (`docs/nb-NO/a.md`, `fr/a.md`), else a file name's last suffix before
/// its extension (`intro.de.md`).
fn path_language(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop()?;
    if let Some(tag) = parts.iter().find(|p| is_language_tag(p)) {
        return Some((*tag).to_owned());
    }
    let mut pieces = name.rsplit('.');
    pieces.next()?;
    let suffix = pieces.next()?;
    pieces.next()?;
    is_language_tag(suffix).then(|| suffix.to_owned())
}

/// The file's folder without its language folders; `.` for the top.
fn collection(path: &str) -> String {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    let kept: Vec<&str> = parts.into_iter().filter(|p| !is_language_tag(p)).collect();
    if kept.is_empty() {
        ".".to_owned()
    } else {
        kept.join("/")
    }
}

/// Whether a folder or suffix is a language tag: an ISO 639-1 code in
/// lower case (`fr`), optionally with a region or script (`nb-NO`,
/// `pt_BR`, `zh-Hans`).
fn is_language_tag(text: &str) -> bool {
    let (language, rest) = match text.split_once(['-', '_']) {
        Some((l, r)) => (l, Some(r)),
        None => (text, None),
    };
    let subtag_ok = match rest {
        None => true,
        Some(r) => {
            (r.len() == 2 && r.chars().all(|c| c.is_ascii_uppercase()))
                || (r.len() == 3 && r.chars().all(|c| c.is_ascii_digit()))
                || (r.len() == 4
                    && r.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                    && r.chars().skip(1).all(|c| c.is_ascii_lowercase()))
        }
    };
    subtag_ok && ISO_639_1.binary_search(&language).is_ok()
}

/// The two-letter language codes of ISO 639-1, sorted.
const ISO_639_1: [&str; 184] = [
    "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh",
    "bi", "bm", "bn", "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da",
    "de", "dv", "dz", "ee", "el", "en", "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr",
    "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he", "hi", "ho", "hr", "ht", "hu", "hy", "hz",
    "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv", "ka", "kg", "ki", "kj",
    "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li", "ln",
    "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb",
    "nd", "ne", "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi",
    "pl", "ps", "pt", "qu", "rm", "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk",
    "sl", "sm", "sn", "so", "sq", "sr", "ss", "st", "su", "sv", "sw", "ta", "te", "tg", "th", "ti",
    "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk", "ur", "uz", "ve", "vi", "vo",
    "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_list_is_sorted() {
        assert!(ISO_639_1.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn languages_and_collections_come_from_the_path() {
        assert_eq!(
            path_language("docs/nb-NO/guide/a.md").as_deref(),
            Some("nb-NO")
        );
        assert_eq!(path_language("fr/a.md").as_deref(), Some("fr"));
        assert_eq!(path_language("docs/intro.de.md").as_deref(), Some("de"));
        assert_eq!(path_language("docs/api/a.md"), None);
        assert_eq!(path_language("de.md"), None);
        assert_eq!(collection("docs/nb-NO/guide/a.md"), "docs/guide");
        assert_eq!(collection("README.md"), ".");
        assert_eq!(collection("fr/a.md"), ".");
        assert!(
            is_language_tag("pt_BR") && is_language_tag("zh-Hans") && is_language_tag("es-419")
        );
        assert!(!is_language_tag("ui") && !is_language_tag("en-gb") && !is_language_tag("api"));
    }
}
