//! The end-of-log passes that compare term rules by their forms.
//! Disagreements: two rules that answer and can apply at one point and
//! instant ([`meet`]) disagree ([`disagree`]) when a form one avoids is the
//! other's preferred form, or when, preferring different forms, they avoid
//! one form; each is then contested by the other, but for the exceptions
//! [`mark_disagreements`] names. Standing: how many parties recorded the
//! same rule ([`count_sessions`]). Settling (`fold/settle.rs`) and the
//! readers' rules (`ops/rules.rs`) tell a disagreement by the same
//! [`disagree`].

use std::collections::{BTreeMap, BTreeSet};

use super::state::{State, Status};
use crate::ops::axes::Axes;
use crate::ops::forms::{case_key, form_matches, is_case_only};
use crate::ops::op::{Op, Stated};
use crate::ops::record::{ActorKind, Kind, Record};

/// Whether the rules at `a` and `b` can apply at one point and instant:
/// rules of one project compare on its typed axes; rules of two projects
/// never meet (a rule widened to the workspace is compared by its
/// widening, not here).
pub(in crate::ops) fn meet(
    records: &[Record],
    states: &[Option<Box<State>>],
    axes: &Axes,
    a: usize,
    b: usize,
) -> bool {
    let (Some(sa), Some(sb)) = (states[a].as_ref(), states[b].as_ref()) else {
        return false;
    };
    let project = &records[a].project;
    project == records[b].project && sa.scope.overlaps_in(axes.space(project), &sb.scope)
}

/// A term rule's forms, for disagreement checks.
pub(in crate::ops) struct TermView<'a> {
    pub(in crate::ops) at: usize,
    pub(in crate::ops) preferred: &'a str,
    pub(in crate::ops) avoid: &'a [String],
    /// An entry of an imported file: its import is never contested by it.
    pub(in crate::ops) imported: bool,
}

fn avoids(rule: &TermView<'_>, text: &str) -> bool {
    rule.avoid
        .iter()
        .any(|a| form_matches(a, rule.preferred, text))
}

pub(in crate::ops) fn disagree(a: &TermView<'_>, b: &TermView<'_>) -> bool {
    if avoids(a, b.preferred) || avoids(b, a.preferred) {
        return true;
    }
    if a.preferred == b.preferred {
        return false;
    }
    a.avoid.iter().any(|x| {
        b.avoid.iter().any(|y| {
            let exact = is_case_only(x, a.preferred) || is_case_only(y, b.preferred);
            if exact {
                x == y
            } else {
                case_key(x) == case_key(y)
            }
        })
    })
}

/// The term rules that answer (suggested or established), each entry of an
/// imported file its own rule, and a correction that states no rule as the
/// wording it prefers.
pub(in crate::ops) fn term_views<'r>(
    records: &'r [Record],
    states: &[Option<Box<State>>],
) -> Vec<TermView<'r>> {
    let mut rules: Vec<TermView<'_>> = Vec::new();
    for (at, r) in records.iter().enumerate() {
        let live = states[at]
            .as_ref()
            .is_some_and(|s| matches!(s.status, Status::Suggested | Status::Established));
        if !live {
            continue;
        }
        match Op::of(r).map_or(Stated::Nothing, |op| op.stated()) {
            Stated::Term { preferred, avoid } => rules.push(TermView {
                at,
                preferred,
                avoid,
                imported: false,
            }),
            Stated::Terms(terms) => {
                for t in terms.iter().filter(|t| !t.suggested) {
                    let preferred = t.preferred.as_deref().unwrap_or("");
                    rules.push(TermView {
                        at,
                        preferred,
                        avoid: &t.avoid,
                        imported: true,
                    });
                }
            }
            Stated::Wording(c) => rules.push(TermView {
                at,
                preferred: &c.to,
                avoid: std::slice::from_ref(&c.from),
                imported: false,
            }),
            Stated::Nothing => {}
        }
    }
    rules
}

/// Mark disagreements between rules that answer and can apply at one point
/// and instant. Only rules sharing a form are compared: `Ledger::alone`
/// (fold/checkpoint.rs) takes a new suggestion into the reader's view
/// without this pass when it shares no form, by case key, with any
/// subject; comparing rules by anything more must be added there too.
pub(super) fn mark_disagreements(
    records: &[Record],
    states: &mut [Option<Box<State>>],
    kept_at: &[Option<usize>],
    axes: &Axes,
) {
    let rules = term_views(records, states);
    // Rules that state one term (the same form to use and the same forms to
    // avoid) never disagree with one another, and disagree with any other
    // rule alike: terms are compared once each, so a log where thousands
    // of sessions suggested one rule costs their number, not its square.
    let mut term_of: std::collections::HashMap<(&str, &[String]), usize> =
        std::collections::HashMap::new();
    let mut terms: Vec<Vec<usize>> = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let t = *term_of
            .entry((rule.preferred, rule.avoid))
            .or_insert_with(|| {
                terms.push(Vec::new());
                terms.len() - 1
            });
        terms[t].push(i);
    }
    let mut by_form: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (t, members) in terms.iter().enumerate() {
        let rule = &rules[members[0]];
        let mut keys: BTreeSet<String> = rule.avoid.iter().map(|a| case_key(a)).collect();
        keys.insert(case_key(rule.preferred));
        for key in keys {
            by_form.entry(key).or_default().push(t);
        }
    }
    let mut term_pairs = BTreeSet::new();
    for members in by_form.values() {
        for (x, &s) in members.iter().enumerate() {
            for &t in &members[x + 1..] {
                term_pairs.insert((s.min(t), s.max(t)));
            }
        }
    }
    let mut pairs = Vec::new();
    for (s, t) in term_pairs {
        if !disagree(&rules[terms[s][0]], &rules[terms[t][0]]) {
            continue;
        }
        for &i in &terms[s] {
            for &j in &terms[t] {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    // Statuses before any contest is marked, so the result does not depend
    // on the order pairs are visited in.
    let established: Vec<bool> = rules
        .iter()
        .map(|r| {
            states[r.at]
                .as_ref()
                .is_some_and(|s| s.status == Status::Established)
        })
        .collect();
    let mut named: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i, j) in pairs {
        let (a, b) = (&rules[i], &rules[j]);
        if a.at == b.at {
            continue;
        }
        if !disagree(a, b) || !meet(records, states, axes, a.at, b.at) {
            continue;
        }
        // A person's correction reverses an established rule unless a person
        // kept the rule again after it.
        let reverses = |rule: usize, other: usize| {
            let o = &records[other];
            o.kind == Kind::Correct
                && o.actor.kind == ActorKind::Person
                && kept_at[rule].unwrap_or(0) < other
        };
        let (contest_a, contest_b) = match (established[i], established[j]) {
            (true, false) => (reverses(a.at, b.at), true),
            (false, true) => (true, reverses(b.at, a.at)),
            _ => (true, true),
        };
        // A file a person imported stays in force as a whole; what disagrees
        // with one of its rules is contested by it.
        let (contest_a, contest_b) = (contest_a && !a.imported, contest_b && !b.imported);
        if contest_a {
            named.entry(a.at).or_default().insert(b.at);
        }
        if contest_b {
            named.entry(b.at).or_default().insert(a.at);
        }
    }
    for (at, others) in named {
        let s = states[at].as_mut().expect("rules have states");
        s.contested_by = others.into_iter().map(|o| records[o].op_id()).collect();
        s.status = Status::Contested;
    }
}

/// Standing: how many parties recorded the same rule (same form to use and
/// a form to avoid in common) while it answers.
pub(super) fn count_sessions(records: &[Record], states: &mut [Option<Box<State>>]) {
    fn term(r: &Record) -> Option<(&str, &[String])> {
        match Op::of(r).map_or(Stated::Nothing, |op| op.stated()) {
            Stated::Term { preferred, avoid } => Some((preferred, avoid)),
            Stated::Terms(_) | Stated::Wording(_) | Stated::Nothing => None,
        }
    }
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (at, r) in records.iter().enumerate() {
        if let (Some((preferred, _)), Some(s)) = (term(r), &states[at])
            && s.status.answers()
        {
            groups.entry(preferred).or_default().push(at);
        }
    }
    for (preferred, members) in &groups {
        // Members with the same forms to avoid count the same parties:
        // each set of forms is compared with each other set once, so many
        // sessions suggesting one rule cost their number, not its square.
        let mut by_avoid: BTreeMap<&[String], Vec<usize>> = BTreeMap::new();
        for &at in members {
            if let Some((_, avoid)) = term(&records[at]) {
                by_avoid.entry(avoid).or_default().push(at);
            }
        }
        for (avoid, ats) in &by_avoid {
            let mut parties: BTreeSet<(ActorKind, &str, Option<&str>)> = BTreeSet::new();
            for (other, others) in &by_avoid {
                let shares = other
                    .iter()
                    .any(|x| avoid.iter().any(|y| form_matches(y, preferred, x)));
                if shares {
                    parties.extend(others.iter().map(|&o| {
                        let o = &records[o];
                        (
                            o.actor.kind,
                            o.actor.name.as_str(),
                            o.actor.session.as_deref(),
                        )
                    }));
                }
            }
            for &at in ats {
                if let Some(s) = states[at].as_mut() {
                    s.standing.sessions = parties.len().max(1);
                }
            }
        }
    }
}
