//! The review digest as a person reads it, and the decisions it offers:
//! what awaits a decision and what is in force, which decisions each item
//! takes, the decisions the digest offers as a whole, the item a walk
//! asks about next, and the round ([`ReviewRequest`]) a decision on one
//! item makes. The command line renders the digest and asks the
//! questions; any surface offers the same decisions.

use serde::Serialize;

use super::review::{Pending, ReviewRequest, pending_from};
use super::{ContextError, Disagreement, Session};
use crate::ops::OpId;
use crate::ops::widen::WidenTo;

/// The digest: the items awaiting a decision, the rules and notes in
/// force (each in id order), and the imported rules that disagree.
#[derive(Debug, Serialize)]
pub struct Digest {
    pub awaiting: Vec<Pending>,
    pub in_force: Vec<Pending>,
    /// Imported rules in force that disagree (both report until one file
    /// changes); only in the whole log's digest, not a session's. Not
    /// part of the `--json` document.
    #[serde(skip)]
    pub disagreeing: Vec<Disagreement>,
    /// Decisions the fold set aside for their signature (`[trust]
    /// decisions = "signed"`): the operation and why; only in the whole
    /// log's digest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_counted: Vec<NotCounted>,
}

/// A decision the fold does not count for its signature.
#[derive(Debug, Clone, Serialize)]
pub struct NotCounted {
    pub id: crate::ops::OpId,
    pub reason: String,
}

/// The digest of the log, or of what the session `of` recorded.
/// Everything it shows is in the reader's view: the subjects with their
/// states and rule groups, the imports, and every operation the fold set
/// aside; so it reads the view, not the whole ledger (a long log's usage
/// signals and check runs are most of it).
pub fn digest(session: &Session, of: Option<&str>) -> Result<Digest, ContextError> {
    let (ledger, _) = session.rules_view(None)?;
    let items = pending_from(&ledger, of, Some(session.actor()));
    let disagreeing = match of {
        None => super::disagreements(session, &ledger),
        Some(_) => Ok(Vec::new()),
    };
    let not_counted = match of {
        None => ledger
            .ignored
            .iter()
            .filter(|i| crate::ops::trust::is_signature_reason(&i.reason))
            .map(|i| NotCounted {
                id: i.id,
                reason: i.reason.clone(),
            })
            .collect(),
        Some(_) => Vec::new(),
    };
    session.release(ledger);
    let (awaiting, in_force) = items.into_iter().partition(|p| p.awaiting);
    Ok(Digest {
        awaiting,
        in_force,
        disagreeing: disagreeing?,
        not_counted,
    })
}

/// A decision a person takes on one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Keep a suggestion: it binds.
    Keep,
    /// Keep a term rule with other forms than proposed: keep + edit.
    Replace,
    /// Drop a suggestion or a rule in force: it falls silent.
    Drop,
    /// Settle a disagreement for this side.
    Choose,
    /// Make it hold somewhere more (a rule in force; a suggestion is kept
    /// and widened at once).
    Widen,
}

impl Decision {
    /// The decisions `item` takes, in the order they are offered.
    pub fn on(item: &Pending) -> Vec<Decision> {
        let uncontested = item.contested_by.is_empty();
        let mut out = Vec::new();
        if item.keepable && uncontested {
            out.push(Decision::Keep);
            if item.replaceable {
                out.push(Decision::Replace);
            }
        }
        if item.droppable {
            out.push(Decision::Drop);
        }
        if !uncontested {
            out.push(Decision::Choose);
        }
        if item.widenable || (item.keepable && uncontested) {
            out.push(Decision::Widen);
        }
        out
    }

    /// The decisions some item awaiting one takes, each offered only when
    /// an item takes it as one flag of a round (a drifting rule in force
    /// is dropped or widened, never kept again; a contested side is
    /// chosen, not kept).
    pub fn offered(awaiting: &[Pending]) -> Vec<Decision> {
        let any = |f: &dyn Fn(&Pending) -> bool| awaiting.iter().any(f);
        [
            (
                Decision::Keep,
                any(&|p| p.keepable && p.contested_by.is_empty()),
            ),
            (Decision::Drop, any(&|p| p.droppable)),
            (
                Decision::Choose,
                any(&|p| p.keepable && !p.contested_by.is_empty()),
            ),
            (Decision::Widen, any(&|p| p.widenable)),
        ]
        .into_iter()
        .filter_map(|(d, taken)| taken.then_some(d))
        .collect()
    }

    /// The round that takes this decision on `item`; a widening holds
    /// `to` (a suggestion widened is kept there at once). A replacement's
    /// forms are set on the round it returns (`replace_use`,
    /// `replace_avoid`).
    pub fn round(self, item: &Pending, to: Option<WidenTo>) -> ReviewRequest {
        let id = item.id.to_string();
        let mut req = ReviewRequest::default();
        match self {
            Decision::Keep | Decision::Replace => req.keep.push(id),
            Decision::Drop => req.drop.push(id),
            Decision::Choose => req.choose = Some(id),
            Decision::Widen => {
                req.widen_to = to;
                if item.keepable {
                    req.keep.push(id);
                } else {
                    req.widen.push(id);
                }
            }
        }
        req
    }
}

/// The item a walk of the digest asks about next: the first awaiting a
/// decision not yet `seen` (ids), else the first in force not yet seen.
/// Read afresh each time: the round before may have changed the log
/// (its decision left the reader's view current, which is read here as
/// the digest reads it).
pub fn next_item(
    session: &Session,
    of: Option<&str>,
    seen: &[OpId],
) -> Result<Option<Pending>, ContextError> {
    let (ledger, _) = session.rules_view(None)?;
    let items = pending_from(&ledger, of, Some(session.actor()));
    session.release(ledger);
    let awaiting = items.iter().filter(|p| p.awaiting);
    let in_force = items.iter().filter(|p| !p.awaiting);
    Ok(awaiting
        .chain(in_force)
        .find(|p| !seen.contains(&p.id))
        .cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Status;

    fn item(keepable: bool, droppable: bool, widenable: bool, contested: bool) -> Pending {
        Pending {
            id: OpId::parse("0n79tw5k9s0000000000000a").unwrap(),
            short: "0n79tw5k9s".into(),
            status: Status::Suggested,
            subject: "\"Quickcast\", not \"Quick cast\"".into(),
            actor: "agent claude-code".into(),
            yours: false,
            contested_by: if contested {
                vec![OpId::parse("0n79tw5k9s0000000000000b").unwrap()]
            } else {
                Vec::new()
            },
            standing: None,
            scope: Default::default(),
            awaiting: true,
            keepable,
            replaceable: keepable,
            droppable,
            widenable,
            members: Vec::new(),
        }
    }

    #[test]
    fn each_item_takes_the_decisions_its_state_allows() {
        use Decision::*;
        // A suggestion: kept (as proposed or with other forms), dropped,
        // or kept wider at once.
        assert_eq!(
            Decision::on(&item(true, true, false, false)),
            [Keep, Replace, Drop, Widen]
        );
        // A contested side: chosen, never kept alone.
        assert_eq!(Decision::on(&item(true, true, false, true)), [Drop, Choose]);
        // A rule in force: dropped or widened.
        assert_eq!(Decision::on(&item(false, true, true, false)), [Drop, Widen]);
    }

    #[test]
    fn the_digest_offers_only_what_some_awaiting_item_takes() {
        use Decision::*;
        let drifting = item(false, true, true, false);
        assert_eq!(
            Decision::offered(std::slice::from_ref(&drifting)),
            [Drop, Widen]
        );
        let contested = item(true, true, false, true);
        assert_eq!(
            Decision::offered(&[contested, drifting]),
            [Drop, Choose, Widen]
        );
        assert_eq!(Decision::offered(&[]), []);
    }

    #[test]
    fn a_decision_on_an_item_is_one_round() {
        let suggestion = item(true, true, false, false);
        let to = Some(WidenTo::Project);
        let kept_wider = Decision::Widen.round(&suggestion, to.clone());
        assert_eq!(kept_wider.keep, [suggestion.id.as_str()]);
        assert!(kept_wider.widen.is_empty());
        assert_eq!(kept_wider.widen_to, to);
        let rule = item(false, true, true, false);
        let widened = Decision::Widen.round(&rule, to.clone());
        assert_eq!(widened.widen, [rule.id.as_str()]);
        assert!(widened.keep.is_empty());
        let chosen = Decision::Choose.round(&suggestion, None);
        assert_eq!(chosen.choose.as_deref(), Some(suggestion.id.as_str()));
        assert_eq!(Decision::Drop.round(&rule, None).drop, [rule.id.as_str()]);
    }
}
