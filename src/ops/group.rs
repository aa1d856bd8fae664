//! Suggestions that state one rule are one group: the same form to use, a
//! form to avoid in common, at points that meet (as settling groups them,
//! [`super::settle`]). Two agents that noticed the same thing suggested one
//! rule, not two: every surface shows the group once (the review digest,
//! `kapi context <path>`, the rules files), and a person's decision on one
//! member is a decision on the group (`kapi context review`).
//!
//! Only members that stand alike are one group here: the same status and
//! the same advice (binding or advisory). Settling decides each member on
//! the evidence seen where it holds, so a group whose members settled
//! apart (the help pages' suggestion established by a correction there,
//! the legal terms' one still a suggestion) shows as two, each saying what
//! it is.

use std::collections::{BTreeMap, HashMap};

use super::fold::{Ledger, State, Status};
use super::forms::case_key;
use super::id::OpId;
use super::op::{Op, Stated};
use super::record::Scope;

/// The groups of a ledger's term rules, by position in the log.
#[derive(Debug, Default)]
pub struct Groups {
    /// Each grouped rule's group (an index into `members`).
    of: HashMap<OpId, usize>,
    /// Each group's members, in log order.
    members: Vec<Vec<OpId>>,
}

impl Groups {
    /// The members of the group `id` belongs to, in log order (`id` alone
    /// when it shares its rule with no other).
    pub fn of(&self, id: &OpId) -> Vec<OpId> {
        match self.of.get(id) {
            Some(&g) => self.members[g].clone(),
            None => vec![*id],
        }
    }

    /// The first member of `id`'s group, when it shares its rule with
    /// another: the one a surface shows the group by.
    pub fn lead(&self, id: &OpId) -> Option<OpId> {
        self.of
            .get(id)
            .and_then(|&g| self.members[g].first().copied())
    }

    /// Whether `id` is the first member of its group (or in none): the one
    /// a surface shows the group by.
    pub fn leads(&self, id: &OpId) -> bool {
        self.of
            .get(id)
            .is_none_or(|&g| self.members[g].first() == Some(id))
    }

    /// Whether two rules are in one group.
    pub fn together(&self, a: &OpId, b: &OpId) -> bool {
        a == b || matches!((self.of.get(a), self.of.get(b)), (Some(x), Some(y)) if x == y)
    }
}

/// One rule a group may hold.
struct Candidate<'r> {
    id: OpId,
    project: &'r str,
    preferred: &'r str,
    keys: Vec<String>,
    state: &'r State,
}

/// A scope as a key: its point, window and workspace flag.
type ScopeKey<'r> = (
    &'r BTreeMap<String, String>,
    Option<&'r str>,
    Option<&'r str>,
    bool,
);

fn scope_key(scope: &Scope) -> ScopeKey<'_> {
    (
        &scope.point,
        scope.valid_from.as_deref(),
        scope.valid_to.as_deref(),
        scope.workspace,
    )
}

/// Union-find over candidates.
fn find(parent: &mut [usize], mut c: usize) -> usize {
    while parent[c] != c {
        parent[c] = parent[parent[c]];
        c = parent[c];
    }
    c
}

impl Ledger {
    /// The groups of the term rules the log states (an observe, a
    /// correction that implies a rule, an edit; not the rules of an
    /// imported file, which its file groups) that answer: rules with the
    /// same form to use, a form to avoid in common, the same status and
    /// advice, whose scopes meet (on the project's typed axes), joined
    /// through one another.
    pub fn rule_groups(&self) -> Groups {
        let mut candidates: Vec<Candidate<'_>> = Vec::new();
        for (record, state) in self.iter() {
            let Some(state) = state.filter(|s| s.status.answers()) else {
                continue;
            };
            let Ok(Stated::Term { preferred, avoid }) = Op::of(record).map(|op| op.stated()) else {
                continue;
            };
            let mut keys: Vec<String> = avoid.iter().map(|a| case_key(a)).collect();
            keys.sort_unstable();
            keys.dedup();
            candidates.push(Candidate {
                id: record.op_id(),
                project: &record.project,
                preferred,
                keys,
                state,
            });
        }
        let mut parent: Vec<usize> = (0..candidates.len()).collect();
        // Rules stated alike, at one scope, are one group without comparing
        // scopes: many sessions suggesting one rule in one place cost their
        // number, not its square.
        type Alike<'r> = (
            &'r str,
            &'r str,
            &'r [String],
            ScopeKey<'r>,
            &'static str,
            bool,
        );
        let mut alike: HashMap<Alike<'_>, usize> = HashMap::new();
        let mut classes: Vec<usize> = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            let key = (
                c.project,
                c.preferred,
                c.keys.as_slice(),
                scope_key(&c.state.scope),
                c.state.status.as_str(),
                c.state.advisory,
            );
            match alike.get(&key) {
                Some(&first) => parent[i] = first,
                None => {
                    alike.insert(key, i);
                    classes.push(i);
                }
            }
        }
        // Classes that share a form to avoid and stand alike are compared
        // once each.
        let mut by_form: BTreeMap<(&str, &str, Status, bool, &str), Vec<usize>> = BTreeMap::new();
        for &i in &classes {
            let c = &candidates[i];
            for key in &c.keys {
                by_form
                    .entry((
                        c.project,
                        c.preferred,
                        c.state.status,
                        c.state.advisory,
                        key,
                    ))
                    .or_default()
                    .push(i);
            }
        }
        for same in by_form.values() {
            for (x, &a) in same.iter().enumerate() {
                for &b in &same[x + 1..] {
                    let (ca, cb) = (&candidates[a], &candidates[b]);
                    let space = self.axes().space(ca.project);
                    if ca.state.scope.overlaps_in(space, &cb.state.scope) {
                        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                        parent[ra.max(rb)] = ra.min(rb);
                    }
                }
            }
        }
        let mut groups = Groups::default();
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut members: Vec<Vec<OpId>> = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            let root = find(&mut parent, i);
            let g = *index.entry(root).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            });
            members[g].push(c.id);
        }
        for (g, ids) in members.iter().enumerate() {
            if ids.len() > 1 {
                for id in ids {
                    groups.of.insert(*id, g);
                }
            }
        }
        groups.members = members;
        groups
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::fold::fold;
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{Actor, ActorKind, Kind, Record, Subject};

    fn observe(
        n: u64,
        session: &str,
        preferred: &str,
        avoid: &[&str],
        point: &[(&str, &str)],
    ) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        let mut r = Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            ..Record::new(
                "p",
                Actor {
                    kind: ActorKind::Agent,
                    name: "claude".into(),
                    session: Some(session.into()),
                },
                Kind::Observe,
            )
        };
        r.subject = Some(Box::new(Subject::Term {
            preferred: preferred.into(),
            avoid: avoid.iter().map(|a| a.to_string()).collect(),
        }));
        r.scope.point = point
            .iter()
            .map(|(a, v)| (a.to_string(), v.to_string()))
            .collect();
        r
    }

    #[test]
    fn suggestions_that_state_one_rule_where_they_meet_are_one_group() {
        let records = vec![
            observe(
                1,
                "s1",
                "Quickcast",
                &["Quick cast", "QuickCast"],
                &[("product", "qc")],
            ),
            // Another session, a form in common, another spelling.
            observe(2, "s2", "Quickcast", &["quick cast"], &[("product", "qc")]),
            // The same rule for another product: its points do not meet.
            observe(
                3,
                "s3",
                "Quickcast",
                &["Quick cast"],
                &[("product", "other")],
            ),
            // No coordinates: it meets both products and joins them.
            observe(4, "s4", "Quickcast", &["Quick-cast", "Quick cast"], &[]),
        ];
        let ids: Vec<OpId> = records.iter().map(|r| r.op_id()).collect();
        let groups = fold(records.clone()).rule_groups();
        assert!(groups.leads(&ids[0]) && !groups.leads(&ids[1]));
        assert_eq!(groups.of(&ids[2]), ids);
        // Without the one that joins them, the other product's stands apart.
        let groups = fold(records[..3].to_vec()).rule_groups();
        assert_eq!(groups.of(&ids[0]), vec![ids[0], ids[1]]);
        assert_eq!(groups.of(&ids[2]), vec![ids[2]]);
        assert!(groups.leads(&ids[2]));
    }

    #[test]
    fn rules_apart_or_standing_apart_are_not_one_group() {
        let mut records = vec![
            observe(1, "s1", "Quickcast", &["Quick cast"], &[("product", "qc")]),
            // No form to avoid in common.
            observe(2, "s2", "Quickcast", &["Quikcast"], &[("product", "qc")]),
            observe(3, "s3", "Quickcast", &["Quick cast"], &[("product", "qc")]),
        ];
        // A person keeps the third: in force, it stands apart from the
        // suggestion.
        let mut keep = observe(4, "p", "x", &[], &[]);
        keep.kind = Kind::Keep;
        keep.subject = None;
        keep.actor = Actor {
            kind: ActorKind::Person,
            name: "ada".into(),
            session: None,
        };
        keep.target = Some(records[2].id.clone());
        records.push(keep);
        let ids: Vec<OpId> = records.iter().map(|r| r.op_id()).collect();
        let groups = fold(records).rule_groups();
        for (a, b) in [(0, 1), (0, 2), (1, 2)] {
            assert!(!groups.together(&ids[a], &ids[b]), "{a} {b}");
        }
        assert!(groups.leads(&ids[2]));
    }
}
