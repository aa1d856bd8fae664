//! Vale's `TokenIgnores` and `BlockIgnores`: regular expressions a
//! `.vale.ini` section gives for the files it names, whose matches are not
//! prose (Vale turns them into code before it reads the file). They mask
//! on top of a file's format ([`Ignoring`]), so they hold for any format
//! the check reads; a section keys on its path glob, not on a format.

use std::sync::Arc;

use super::prose::{Masker, Prose};
use crate::formats::vale::ValeIni;

/// Most patterns read from one `.vale.ini`, and the longest one.
const MAX_PATTERNS: usize = 256;
const MAX_PATTERN_BYTES: usize = 4096;
/// Backtracking allowed to one search of an ignore pattern (a pattern that
/// exceeds it on a file masks nothing more there).
const BACKTRACK_LIMIT: usize = 100_000;

/// The ignore patterns of every section of a `.vale.ini`.
#[derive(Debug, Default)]
pub struct ValeIgnores {
    /// Per section with patterns: its glob, and its patterns.
    sections: Vec<(globset::GlobMatcher, Vec<Arc<fancy_regex::Regex>>)>,
}

impl ValeIgnores {
    /// The ignore patterns of `ini`, and a warning for each that cannot be
    /// used (not a glob, not a regular expression, too many or too long):
    /// it is left out, the others hold.
    pub(crate) fn new(ini: &ValeIni) -> (Self, Vec<String>) {
        let mut out = ValeIgnores::default();
        let mut warnings = Vec::new();
        let mut count = 0;
        for s in &ini.sections {
            let all: Vec<&String> = s.block_ignores.iter().chain(&s.token_ignores).collect();
            if all.is_empty() {
                continue;
            }
            let glob = match globset::Glob::new(&s.glob) {
                Ok(g) => g.compile_matcher(),
                Err(e) => {
                    warnings.push(format!(
                        ".vale.ini: [{}] is not a glob ({}); its TokenIgnores and BlockIgnores are not applied",
                        s.glob,
                        e.kind()
                    ));
                    continue;
                }
            };
            let mut patterns = Vec::new();
            for p in all {
                count += 1;
                if count > MAX_PATTERNS {
                    warnings.push(format!(
                        ".vale.ini: more than {MAX_PATTERNS} TokenIgnores and BlockIgnores; the rest are not applied"
                    ));
                    break;
                }
                if p.len() > MAX_PATTERN_BYTES {
                    warnings.push(format!(
                        ".vale.ini: [{}]: an ignore pattern longer than {MAX_PATTERN_BYTES} bytes is not applied",
                        s.glob
                    ));
                    continue;
                }
                match fancy_regex::RegexBuilder::new(p)
                    .backtrack_limit(BACKTRACK_LIMIT)
                    .build()
                {
                    Ok(re) => patterns.push(Arc::new(re)),
                    Err(e) => warnings.push(format!(
                        ".vale.ini: [{}]: the ignore pattern {p:?} is not a regular expression kapi can read ({e}); it is not applied",
                        s.glob
                    )),
                }
            }
            if !patterns.is_empty() {
                out.sections.push((glob, patterns));
            }
            if count > MAX_PATTERNS {
                break;
            }
        }
        (out, warnings)
    }

    /// The patterns for the file at `path` (repository-relative): those of
    /// every section whose glob matches the path, or its extension as
    /// Vale matches them (`*.md` and `.md`); `None` when there are none.
    pub fn for_path(&self, path: &str) -> Option<Arc<[Arc<fancy_regex::Regex>]>> {
        let ext = path
            .rsplit('/')
            .next()
            .and_then(|name| name.rfind('.').map(|i| &name[i..]));
        let found: Vec<Arc<fancy_regex::Regex>> = self
            .sections
            .iter()
            .filter(|(g, _)| g.is_match(path) || ext.is_some_and(|e| g.is_match(e)))
            .flat_map(|(_, p)| p.iter().cloned())
            .collect();
        (!found.is_empty()).then(|| found.into())
    }
}

/// A file's format, with the ignore patterns of its `.vale.ini` sections
/// masked too: every byte of a match but line ends.
pub struct Ignoring<'a, M> {
    pub format: M,
    pub patterns: Option<&'a [Arc<fancy_regex::Regex>]>,
}

impl<M: Masker> Masker for Ignoring<'_, M> {
    fn prose(&self, text: &str) -> Prose {
        let mut p = self.format.prose(text);
        if let Some(patterns) = self.patterns {
            mask(text, &mut p.text, patterns);
        }
        p
    }

    fn loosened(&self, text: &str) -> Option<String> {
        // Masking more only drops occurrences: the loosened text still
        // holds every one the masked text does.
        self.format.loosened(text)
    }
}

/// Blank in `masked` every match of `patterns` in `text` (the file as
/// written; both the same length). Whole characters are blanked, so the
/// text stays UTF-8.
fn mask(text: &str, masked: &mut String, patterns: &[Arc<fancy_regex::Regex>]) {
    let mut spans = Vec::new();
    for re in patterns {
        for m in re.find_iter(text) {
            let Ok(m) = m else { break };
            if m.start() < m.end() {
                spans.push((m.start(), m.end()));
            }
        }
    }
    if spans.is_empty() {
        return;
    }
    let mut bytes = std::mem::take(masked).into_bytes();
    for (s, e) in spans {
        for b in &mut bytes[s..e] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    *masked = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::markdown::TextKind;

    fn ignores(ini: &str) -> ValeIgnores {
        let (i, w) = ValeIgnores::new(&ValeIni::parse(ini).unwrap());
        assert!(w.is_empty(), "{w:?}");
        i
    }

    #[test]
    fn patterns_mask_the_files_their_section_names() {
        let i = ignores(
            "[*.md]\nTokenIgnores = (\\{\\{[^}]+\\}\\})\n[docs/**/*.md]\nBlockIgnores = (?s)(<x>.*?</x>)\n",
        );
        assert!(i.for_path("a.txt").is_none());
        assert_eq!(i.for_path("a.md").unwrap().len(), 1);
        assert_eq!(i.for_path("docs/a/b.md").unwrap().len(), 2);
        let text = "Github {{ Github }} ü\n<x>\nGithub\n</x> Github\n";
        let p = Ignoring {
            format: TextKind::Markdown,
            patterns: i.for_path("docs/a/b.md").as_deref(),
        }
        .prose(text);
        assert_eq!(p.text.len(), text.len());
        assert_eq!(p.text.matches("Github").count(), 2, "{:?}", p.text);
        assert_eq!(p.text.matches('\n').count(), 4);
    }

    #[test]
    fn a_bad_pattern_or_glob_is_named_and_left_out() {
        let ini =
            ValeIni::parse("[*.md]\nTokenIgnores = (a, (b)\n[a/{b]\nTokenIgnores = (c)\n").unwrap();
        let (i, w) = ValeIgnores::new(&ini);
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(i.for_path("x.md").unwrap().len(), 1);
    }
}
