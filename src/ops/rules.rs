//! Term rules as the readers need them: every rule that answers at a point
//! and instant, one entry per rule (an imported file contributes one per
//! line it held, a content-memory pair in force one whose preferred form
//! is its target and whose one avoided form is its source), with whether
//! it binds or only advises.

use std::collections::{BTreeSet, HashMap};

use super::fold::disagree::{TermView, disagree};
use super::fold::{Ledger, Status};
use super::forms::case_key;
use super::id::OpId;
use super::record::{Bounds, Scope, Subject};
use super::scope::Point;

/// A term rule's id. Its text (`Display`, and how it serializes) is the
/// operation id, `<import id>:<n>` for the n-th rule of an imported file,
/// or `terms.tsv:3` for the rule on line 3 of a term list `kapi check
/// --rules` read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleId {
    /// The operation that states the rule.
    Op(OpId),
    /// The n-th rule (from 1) of the file an operation imported.
    Imported(OpId, usize),
    /// The rule on a line (from 1) of a term list, by the file's name.
    File(String, usize),
}

impl RuleId {
    /// The operation that states the rule or imported its file.
    pub fn op(&self) -> Option<OpId> {
        match self {
            RuleId::Op(id) | RuleId::Imported(id, _) => Some(*id),
            RuleId::File(..) => None,
        }
    }

    /// The short form a line shows: the first ten characters of the text.
    pub fn short(&self) -> String {
        match self {
            RuleId::Op(id) | RuleId::Imported(id, _) => id.short().to_owned(),
            RuleId::File(..) => super::id::short(&self.to_string()).to_owned(),
        }
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleId::Op(id) => write!(f, "{id}"),
            RuleId::Imported(id, n) => write!(f, "{id}:{n}"),
            RuleId::File(name, line) => write!(f, "{name}:{line}"),
        }
    }
}

impl serde::Serialize for RuleId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One term rule: one the fold says answers, one another repository
/// shares with the workspace, or one a term list `kapi check --rules` read.
/// The checker matches prose against these as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermRule {
    /// The rule's id; [`RuleId::op`] is the operation that states it (none
    /// for a term list's rule).
    pub id: RuleId,
    /// The form to use; `None` for a rejected word with no replacement.
    pub preferred: Option<String>,
    pub avoided: Vec<String>,
    pub status: Status,
    /// Advises only: suggested, contested, or declared a suggestion by its file.
    pub suggested: bool,
    pub advisory: bool,
    /// Every avoided form matches only as written.
    pub exact: bool,
    /// A regular expression for what the rule avoids beyond its forms.
    pub pattern: Option<String>,
    /// How a match's edges must stand in the text.
    pub bounds: Bounds,
    /// Matched in the file's raw text, not its prose (Vale's `scope: raw`).
    pub raw: bool,
    /// A Vale rule's alert level.
    pub level: Option<String>,
    /// Globs of the files the rule holds for; empty for every file.
    pub paths: Vec<String>,
    /// Where and when it holds; a term list's rules hold everywhere (the
    /// empty scope).
    pub scope: Scope,
}

impl TermRule {
    /// Whether a finding of this rule fails a check.
    pub fn binds(&self) -> bool {
        !self.suggested && !self.advisory
    }
}

#[cfg(test)]
impl TermRule {
    /// A binding rule on line `line` of a term list named `file`, holding
    /// everywhere (its id reads `file:line`).
    pub(crate) fn listed(file: &str, line: usize, preferred: &str, avoided: &[&str]) -> Self {
        TermRule {
            id: RuleId::File(file.into(), line),
            preferred: (!preferred.is_empty()).then(|| preferred.into()),
            avoided: avoided.iter().map(|s| s.to_string()).collect(),
            status: Status::Established,
            suggested: false,
            advisory: false,
            exact: false,
            pattern: None,
            bounds: Bounds::Words,
            raw: false,
            level: None,
            paths: Vec::new(),
            scope: Scope::default(),
        }
    }
}

impl Ledger {
    /// Term rules that answer at `point` (every point when `None`) and
    /// instant `at` (Unix ms; every window when `None`), in id order.
    pub fn term_rules(&self, point: Option<&Point>, at: Option<i64>) -> Vec<TermRule> {
        let mut out = Vec::new();
        for (record, state) in self.iter() {
            let Some(state) = state else { continue };
            if !state.status.answers()
                || !state.scope.in_force(at)
                || point.is_some_and(|p| !self.covers(record, &state.scope, p))
            {
                continue;
            }
            let advises = state.status != Status::Established;
            match record.subject.as_deref() {
                Some(Subject::Term { preferred, avoid }) => out.push(TermRule {
                    id: RuleId::Op(record.op_id()),
                    preferred: Some(preferred.clone()),
                    avoided: avoid.clone(),
                    status: state.status,
                    suggested: advises,
                    advisory: state.advisory,
                    exact: false,
                    pattern: None,
                    bounds: Bounds::Words,
                    raw: false,
                    level: None,
                    paths: Vec::new(),
                    scope: state.scope.clone(),
                }),
                // A content-memory pair in force: its source is reported
                // where its target is expected. A suggested pair says
                // nothing to a check.
                Some(Subject::Pair { source, target }) if !advises => out.push(TermRule {
                    id: RuleId::Op(record.op_id()),
                    preferred: Some(target.clone()),
                    avoided: vec![source.clone()],
                    status: state.status,
                    suggested: false,
                    advisory: state.advisory,
                    exact: false,
                    pattern: None,
                    bounds: Bounds::Words,
                    raw: false,
                    level: None,
                    paths: Vec::new(),
                    scope: state.scope.clone(),
                }),
                Some(Subject::Terms { terms, .. }) => {
                    for (n, t) in terms.iter().enumerate() {
                        out.push(TermRule {
                            id: RuleId::Imported(record.op_id(), n + 1),
                            preferred: t.preferred.clone(),
                            avoided: t.avoid.clone(),
                            status: state.status,
                            suggested: advises || t.suggested,
                            advisory: state.advisory || t.advisory,
                            exact: t.exact,
                            pattern: t.pattern.clone(),
                            bounds: t.bounds,
                            raw: t.raw,
                            level: t.level.clone(),
                            paths: t.paths.clone(),
                            scope: state.scope.clone(),
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }
}

impl Ledger {
    /// Whether two rules can apply at one point and instant: one project's
    /// rules compare on its typed axes; two projects' never meet.
    fn scopes_meet(&self, a: &TermRule, b: &TermRule) -> bool {
        let (Some(ra), Some(rb)) = (
            a.id.op().and_then(|op| self.get(&op)),
            b.id.op().and_then(|op| self.get(&op)),
        ) else {
            return false;
        };
        ra.project == rb.project
            && a.scope
                .overlaps_in(self.axes().space(&ra.project), &b.scope)
    }

    /// The pairs of imported rules in force at `at` that disagree, as the
    /// fold tells a disagreement (they share a form to avoid and name
    /// different forms to use, or one avoids the form the other prescribes)
    /// and that can apply at one point, instant and file. A file a person
    /// imported stays in force as a whole, so its rules are never contested:
    /// both keep reporting, and this list is where a person sees them.
    pub fn imported_disagreements(&self, at: Option<i64>) -> Vec<(TermRule, TermRule)> {
        let rules: Vec<TermRule> = self
            .term_rules(None, at)
            .into_iter()
            .filter(|r| {
                matches!(r.id, RuleId::Imported(..))
                    && r.status == Status::Established
                    && !r.suggested
            })
            .collect();
        // Only rules that share a form can disagree.
        let mut by_form: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, r) in rules.iter().enumerate() {
            let keys: BTreeSet<String> = r
                .avoided
                .iter()
                .chain(r.preferred.as_ref())
                .map(|f| case_key(f))
                .collect();
            for key in keys {
                by_form.entry(key).or_default().push(i);
            }
        }
        let mut pairs = BTreeSet::new();
        for members in by_form.values() {
            for (x, &i) in members.iter().enumerate() {
                for &j in &members[x + 1..] {
                    pairs.insert((i.min(j), i.max(j)));
                }
            }
        }
        pairs
            .into_iter()
            .filter(|&(i, j)| {
                let (a, b) = (&rules[i], &rules[j]);
                clash(a, b) && self.scopes_meet(a, b) && paths_meet(&a.paths, &b.paths)
            })
            .map(|(i, j)| (rules[i].clone(), rules[j].clone()))
            .collect()
    }
}

/// Whether two rules disagree on their forms. A rule that matches only as
/// written (a Vale style without `ignorecase`) is compared as written.
fn clash(a: &TermRule, b: &TermRule) -> bool {
    if a.exact || b.exact {
        let pa = a.preferred.as_deref().unwrap_or("");
        let pb = b.preferred.as_deref().unwrap_or("");
        let avoids =
            |r: &TermRule, text: &str| !text.is_empty() && r.avoided.iter().any(|f| f == text);
        return avoids(a, pb)
            || avoids(b, pa)
            || (pa != pb && a.avoided.iter().any(|x| b.avoided.contains(x)));
    }
    fn view(r: &TermRule) -> TermView<'_> {
        TermView {
            at: 0,
            preferred: r.preferred.as_deref().unwrap_or(""),
            avoid: &r.avoided,
            imported: true,
        }
    }
    disagree(&view(a), &view(b))
}

/// Whether two lists of file globs can name one file: either is every file,
/// or one glob is the other, or matches the other read as a path
/// (`*.md` and `docs/*.md`). Globs that cannot be read meet everything;
/// the globs a list leaves out (`!glob`) are not weighed.
fn paths_meet(a: &[String], b: &[String]) -> bool {
    let matches = |glob: &str, path: &str| {
        globset::Glob::new(glob).map_or(true, |g| g.compile_matcher().is_match(path))
    };
    let a: Vec<&String> = a.iter().filter(|g| !g.starts_with('!')).collect();
    let b: Vec<&String> = b.iter().filter(|g| !g.starts_with('!')).collect();
    a.is_empty()
        || b.is_empty()
        || a.iter()
            .any(|x| b.iter().any(|y| x == y || matches(x, y) || matches(y, x)))
}

/// The files a rule's `paths` select: every file when there are none;
/// otherwise the last glob matching a path decides, `!glob` leaving it out
/// (as Vale's last `.vale.ini` section matching a file decides; a list
/// with no `!` is any of its globs). Globs are matched against
/// repository-relative paths; `*` crosses folders. A glob that cannot be
/// read matches nothing.
#[derive(Debug, Clone)]
pub(crate) struct PathGlobs {
    globs: Vec<(globset::GlobMatcher, bool)>,
}

impl PathGlobs {
    /// `None` for every file.
    pub(crate) fn new(paths: &[String]) -> Option<Self> {
        if paths.is_empty() {
            return None;
        }
        let globs = paths
            .iter()
            .filter_map(|p| {
                let (glob, on) = match p.strip_prefix('!') {
                    Some(rest) => (rest, false),
                    None => (p.as_str(), true),
                };
                Some((globset::Glob::new(glob).ok()?.compile_matcher(), on))
            })
            .collect();
        Some(PathGlobs { globs })
    }

    pub(crate) fn is_match(&self, path: &str) -> bool {
        self.globs
            .iter()
            .rev()
            .find(|(g, _)| g.is_match(path))
            .is_some_and(|(_, on)| *on)
    }
}
