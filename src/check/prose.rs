//! Prose as the matcher reads it, whatever the file's format. A masker
//! (one per format: Markdown and plain text in `markdown.rs`, AsciiDoc in
//! `asciidoc.rs`, reStructuredText in `rst.rs`; [`super::markdown::TextKind`]
//! names the format and [`super::files::Formats`] says which format a path
//! is) hands the matcher a file's
//! text with everything that is not prose blanked, and the passages where
//! rules are switched off. The matcher knows no format: it asks a
//! [`Masker`], as ripgrep's matcher knows nothing of what it searches.

/// A passage where some rules are switched off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// Preferred forms or id prefixes, as written in the comment.
    pub selectors: Vec<String>,
    /// Byte span of the passage.
    pub start: usize,
    pub end: usize,
}

/// The prose of a file: the masked text and the per-rule switches.
#[derive(Debug, Clone)]
pub struct Prose {
    pub text: String,
    pub switches: Vec<Switch>,
}

/// What the matcher asks of a file's format.
pub trait Masker {
    /// Mask what is not prose: every byte of it is replaced by a space
    /// (newlines are kept), so offsets, lines and columns in the masked
    /// text are those of the file; and the passages where rules are
    /// switched off.
    fn prose(&self, text: &str) -> Prose;

    /// The text as a scan before masking reads it, for a format that
    /// offers one (`None`: the file is masked, then scanned). A masker may
    /// offer it when what its masking blanks beside or between words of
    /// prose is markup ([`is_markup`]): the loosened text blanks every
    /// markup byte (and may blank more of what masking blanks, such as a
    /// bare URL up to its first markup byte), keeps every other byte
    /// masking keeps, and is case-folded as
    /// [`super::case::case_key_same_len`] folds. Every occurrence of a form
    /// in the masked text, on word boundaries, is then one in the loosened
    /// text, on loosened word boundaries; a file in which the scan finds no
    /// avoided form is never masked.
    fn loosened(&self, _text: &str) -> Option<String> {
        None
    }
}

/// ASCII punctuation that masking may blank on its own beside or between
/// words of prose (everything but the joiners `.`, `/` and `-`), and tabs:
/// what a loosened text ([`Masker::loosened`]) blanks.
pub const fn is_markup(b: u8) -> bool {
    (b.is_ascii_punctuation() && !matches!(b, b'.' | b'/' | b'-')) || b == b'\t'
}

/// The prose spans of a file's text read as `kind`: the byte ranges of the
/// original text that are prose (maximal runs of what masking keeps,
/// whitespace between words included), in order. Passages every rule is
/// switched off in are not prose; single-rule switches are left out.
pub fn spans(text: &str, kind: super::markdown::TextKind) -> Vec<std::ops::Range<usize>> {
    let p = kind.prose(text);
    let (orig, masked) = (text.as_bytes(), p.text.as_bytes());
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start: Option<usize> = None;
    for (k, (&a, &b)) in orig.iter().zip(masked).enumerate() {
        let kept = a == b && !a.is_ascii_whitespace();
        let blanked = a != b;
        match (start, kept, blanked) {
            (None, true, _) => start = Some(k),
            (Some(s), _, true) => {
                let end = s + text[s..k].trim_end().len();
                out.push(s..end);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(s..s + text[s..].trim_end().len());
    }
    out
}
