//! What git shows of a change an agent says a person made.
//!
//! An agent's `kapi context note --from A --to B` is a person signal for a
//! suggestion of B (docs/operations.md, "Settling"), so it is recorded only
//! when git shows that change in the file it names (`--path`): A in the
//! file as committed (HEAD) or as staged (the index), B in the work tree,
//! and the work tree holding B more often, or A less often, than that copy.
//! Texts are compared with runs of whitespace collapsed, as the wording of
//! a correction is. A person's correction is not checked: a person is
//! trusted for their own words.
//!
//! This shows that the file changed, not who changed it: an agent that
//! edits the file itself and then reports the edit as a person's passes
//! (docs/security.md).

use super::{ContextError, Session};
use crate::check::files::MAX_FILE_BYTES;
use crate::git::Blob;

/// The text of a version of the file, whitespace collapsed; `None` for a
/// blob over the cap (never read).
fn text(blob: &Blob) -> Option<String> {
    match blob {
        Blob::Bytes(bytes) => Some(
            String::from_utf8_lossy(bytes)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        ),
        Blob::TooLarge(_) => None,
    }
}

/// Why git does not back a correction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unshown {
    /// `from` is in neither the committed nor the staged copy.
    NotBefore,
    /// `to` is not in the work tree.
    NotAfter,
    /// Both are there, but the work tree holds `to` no more often and
    /// `from` no less often than any copy holding `from`.
    NoChange,
    /// A copy is larger than the cap: kapi does not read it.
    TooLarge(&'static str),
}

/// Whether a change from `from` to `to` shows between `before` (the
/// committed and the staged copy, where there is one) and `after` (the work
/// tree). `from` and `to` are whitespace-collapsed.
pub fn shows_change(
    before: &[(&'static str, &Blob)],
    after: Option<&Blob>,
    from: &str,
    to: &str,
) -> Result<(), Unshown> {
    let mut holding = Vec::new();
    let mut unread = None;
    for (name, blob) in before {
        match text(blob) {
            Some(t) if t.contains(from) => holding.push(t),
            Some(_) => {}
            None => unread = Some(*name),
        }
    }
    if holding.is_empty() {
        return Err(unread.map_or(Unshown::NotBefore, Unshown::TooLarge));
    }
    let after = match after.map(text) {
        None => return Err(Unshown::NotAfter),
        Some(None) => return Err(Unshown::TooLarge("the work tree")),
        Some(Some(t)) if !t.contains(to) => return Err(Unshown::NotAfter),
        Some(Some(t)) => t,
    };
    let count = |t: &str, needle: &str| t.matches(needle).count();
    let changed = holding
        .iter()
        .any(|b| count(&after, to) > count(b, to) || count(&after, from) < count(b, from));
    if changed {
        Ok(())
    } else {
        Err(Unshown::NoChange)
    }
}

/// Refuse an agent's correction that git does not show in `path`, before
/// anything is recorded (exit 2: the evidence given does not hold).
pub fn corroborate(
    session: &Session,
    path: Option<&str>,
    from: &str,
    to: &str,
) -> Result<(), ContextError> {
    let refuse = |why: String| {
        Err(ContextError::Usage(format!(
            "refusing to record this correction: {why}"
        )))
    };
    let Some(path) = path else {
        return refuse(
            "an agent's account of a person's change needs --path, the file they changed, so kapi can check what git shows (the --from wording committed or staged, the --to wording in the work tree)"
                .into(),
        );
    };
    let versions = session
        .store
        .git()
        .file_versions(path, MAX_FILE_BYTES)
        .map_err(crate::store::git("reading the file a correction names"))?;
    let before: Vec<(&'static str, &Blob)> = [
        ("as committed (HEAD)", versions.head.as_ref()),
        ("as staged (the index)", versions.index.as_ref()),
    ]
    .into_iter()
    .filter_map(|(name, blob)| Some((name, blob?)))
    .collect();
    match shows_change(&before, versions.work_tree.as_ref(), from, to) {
        Ok(()) => Ok(()),
        Err(Unshown::NotBefore) => refuse(format!(
            "\"{from}\" is not in {path} as committed (HEAD) or staged (the index), so git does not show it being changed; record a person's change while it is in the work tree, before it is committed, naming the changed file with --path"
        )),
        Err(Unshown::NotAfter) => refuse(format!(
            "\"{to}\" is not in {path} in the work tree; record a person's change once they have made it there"
        )),
        Err(Unshown::NoChange) => refuse(format!(
            "git shows no change from \"{from}\" to \"{to}\" in {path}: the work tree holds \"{to}\" no more often, and \"{from}\" no less often, than the copy committed or staged"
        )),
        Err(Unshown::TooLarge(which)) => refuse(format!(
            "{path} {which} is larger than the {} MiB kapi reads, so it cannot check what git shows",
            MAX_FILE_BYTES >> 20
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(text: &str) -> Blob {
        Blob::Bytes(text.as_bytes().to_vec())
    }

    #[test]
    fn a_change_shows_when_the_work_tree_gains_the_new_wording_or_loses_the_old() {
        let head = blob("Open Fast cast\nfrom the menu.\n");
        let shows = |before: &[(&'static str, &Blob)], after: &str, from: &str, to: &str| {
            shows_change(before, Some(&blob(after)), from, to)
        };
        // Line breaks are whitespace like any other.
        assert_eq!(
            shows(
                &[("HEAD", &head)],
                "Open Fastcast from\nthe menu.",
                "Fast cast from",
                "Fastcast from"
            ),
            Ok(())
        );
        assert_eq!(
            shows(
                &[("HEAD", &head)],
                "Open Fast cast",
                "Slow cast",
                "Fastcast"
            ),
            Err(Unshown::NotBefore)
        );
        assert_eq!(
            shows(
                &[("HEAD", &head)],
                "Open Fast cast",
                "Fast cast",
                "Fastcast"
            ),
            Err(Unshown::NotAfter)
        );
        assert_eq!(
            shows_change(&[("HEAD", &head)], None, "Fast cast", "Fastcast"),
            Err(Unshown::NotAfter)
        );
        // Both wordings were there and still are: no change.
        let both = blob("Fast cast. Fastcast.");
        assert_eq!(
            shows(
                &[("HEAD", &both)],
                "Fast cast. Fastcast.",
                "Fast cast",
                "Fastcast"
            ),
            Err(Unshown::NoChange)
        );
        // The new wording inside the old (or the old inside the new) still
        // shows by the count that moved.
        let long = blob("Fast cast too.");
        assert_eq!(
            shows(
                &[("HEAD", &long)],
                "Fast cast.",
                "Fast cast too",
                "Fast cast"
            ),
            Ok(())
        );
        let short = blob("Fast cast.");
        assert_eq!(
            shows(
                &[("HEAD", &short)],
                "Fast cast too.",
                "Fast cast",
                "Fast cast too"
            ),
            Ok(())
        );
        // Staged: the index holds the old wording HEAD never had.
        let staged = blob("Fast cast here.");
        assert_eq!(
            shows(
                &[("the index", &staged)],
                "Fastcast here.",
                "Fast cast here",
                "Fastcast here"
            ),
            Ok(())
        );
        assert_eq!(
            shows(&[("HEAD", &Blob::TooLarge(1 << 30))], "x", "a", "b"),
            Err(Unshown::TooLarge("HEAD"))
        );
    }
}
