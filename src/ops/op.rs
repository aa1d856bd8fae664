//! Typed operations. [`Record`] is the canonical wire format, flat and
//! forgiving of absent fields; after validation every record is parsed once
//! into an [`Op`], whose variants carry exactly what their kind needs, with
//! typed ids. The fold matches on `Op` exhaustively, so adding a kind is a
//! compiler error at every place that must decide what it means.

use super::id::OpId;
use super::record::{
    CheckRun, Correction, Evidence, Kind, Record, RecordError, Scope, Signal, Subject, TermEntry,
};
use compact_str::CompactString;

/// The wording an operation states, as the fold compares rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stated<'r> {
    /// One term rule: the form to use and the forms to avoid.
    Term {
        preferred: &'r str,
        avoid: &'r [String],
    },
    /// The term rules of an imported file.
    Terms(&'r [TermEntry]),
    /// A correction that states no rule still states one wording over another.
    Wording(&'r Correction),
    /// A note, a pair, or an operation that states no wording.
    Nothing,
}

fn stated_by(subject: &Subject) -> Stated<'_> {
    match subject {
        Subject::Term { preferred, avoid } => Stated::Term { preferred, avoid },
        Subject::Terms { terms, .. } => Stated::Terms(terms),
        Subject::Note { .. } | Subject::Pair { .. } => Stated::Nothing,
    }
}

/// What one operation does, borrowed from its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'r> {
    /// A suggestion: a term rule, a note or a pair, where it was seen.
    Observe {
        subject: &'r Subject,
        scope: &'r Scope,
        evidence: &'r [Evidence],
    },
    /// A change of wording, and optionally the rule it implies.
    Correct {
        correction: &'r Correction,
        rule: Option<&'r Subject>,
        scope: &'r Scope,
        evidence: &'r [Evidence],
    },
    /// A person put a context file's rules in force (subject absent for a
    /// file that held none).
    Import {
        subject: Option<&'r Subject>,
        scope: &'r Scope,
        evidence: &'r [Evidence],
    },
    /// A person wrote a rule directly: a new one, or, when it names
    /// `target`, a rule that was in force, which it replaces (its
    /// preferred or avoided forms, scope, window or advice).
    Edit {
        target: Option<OpId>,
        subject: &'r Subject,
        scope: &'r Scope,
        advisory: bool,
    },
    /// A person kept a suggestion, optionally for a window, optionally as
    /// advice only.
    Keep {
        target: OpId,
        window: &'r Scope,
        advisory: bool,
    },
    Drop {
        target: OpId,
    },
    Withdraw {
        target: OpId,
    },
    /// A person applied a rule at a wider point.
    Widen {
        target: OpId,
        scope: &'r Scope,
    },
    /// A person set aside everything from `before` on.
    Reset {
        before: OpId,
    },
    /// Evidence a tool counted.
    Signal {
        target: OpId,
        signal: &'r Signal,
    },
    /// Settling established a suggestion on this evidence.
    Establish {
        target: OpId,
        because: &'r [String],
    },
    /// One run of the checks.
    Check {
        run: &'r CheckRun,
    },
}

fn id(text: Option<&CompactString>, what: &str, kind: Kind) -> Result<OpId, RecordError> {
    let text = text.ok_or_else(|| {
        RecordError::Invalid(format!(
            "a {} names the operation it acts on in `{what}`",
            kind.as_str()
        ))
    })?;
    OpId::parse(text).map_err(|e| RecordError::Invalid(e.to_string()))
}

impl<'r> Op<'r> {
    /// Parse a record's fields into its operation: each kind's required
    /// fields present and its ids valid.
    pub fn of(r: &'r Record) -> Result<Op<'r>, RecordError> {
        let invalid = |m: &str| Err(RecordError::Invalid(m.to_owned()));
        Ok(match r.kind {
            Kind::Observe => match r.subject.as_deref() {
                Some(subject) => Op::Observe {
                    subject,
                    scope: &r.scope,
                    evidence: &r.evidence,
                },
                None => return invalid("a observe carries a subject"),
            },
            Kind::Edit => match r.subject.as_deref() {
                Some(Subject::Terms { .. }) => {
                    return invalid("a edit states one term rule, note or pair");
                }
                Some(subject) => Op::Edit {
                    target: r
                        .target
                        .as_ref()
                        .map(|_| id(r.target.as_ref(), "target", r.kind))
                        .transpose()?,
                    subject,
                    scope: &r.scope,
                    advisory: r.advisory,
                },
                None => return invalid("a edit carries a subject"),
            },
            Kind::Correct => match r.correction.as_deref() {
                Some(c) if c.from.trim().is_empty() || c.to.trim().is_empty() || c.from == c.to => {
                    return invalid("a correction has two different, non-empty wordings");
                }
                Some(correction) => Op::Correct {
                    correction,
                    rule: r.subject.as_deref(),
                    scope: &r.scope,
                    evidence: &r.evidence,
                },
                None => return invalid("a correct carries a correction"),
            },
            Kind::Import => Op::Import {
                subject: r.subject.as_deref(),
                scope: &r.scope,
                evidence: &r.evidence,
            },
            Kind::Keep => Op::Keep {
                target: id(r.target.as_ref(), "target", r.kind)?,
                window: &r.scope,
                advisory: r.advisory,
            },
            Kind::Drop => Op::Drop {
                target: id(r.target.as_ref(), "target", r.kind)?,
            },
            Kind::Withdraw => Op::Withdraw {
                target: id(r.target.as_ref(), "target", r.kind)?,
            },
            Kind::Widen => Op::Widen {
                target: id(r.target.as_ref(), "target", r.kind)?,
                scope: &r.scope,
            },
            Kind::Reset => match &r.before {
                Some(_) => Op::Reset {
                    before: id(r.before.as_ref(), "before", r.kind)?,
                },
                None => return invalid("a reset names `before`"),
            },
            Kind::Signal => {
                let target = id(r.target.as_ref(), "target", r.kind)?;
                match r.signal.as_deref() {
                    Some(signal) => Op::Signal { target, signal },
                    None => return invalid("a signal carries `signal`"),
                }
            }
            Kind::Establish => Op::Establish {
                target: id(r.target.as_ref(), "target", r.kind)?,
                because: &r.because,
            },
            Kind::Check => match r.check.as_deref() {
                Some(run) => Op::Check { run },
                None => return invalid("a check carries `check`"),
            },
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            Op::Observe { .. } => Kind::Observe,
            Op::Correct { .. } => Kind::Correct,
            Op::Import { .. } => Kind::Import,
            Op::Edit { .. } => Kind::Edit,
            Op::Keep { .. } => Kind::Keep,
            Op::Drop { .. } => Kind::Drop,
            Op::Withdraw { .. } => Kind::Withdraw,
            Op::Widen { .. } => Kind::Widen,
            Op::Reset { .. } => Kind::Reset,
            Op::Signal { .. } => Kind::Signal,
            Op::Establish { .. } => Kind::Establish,
            Op::Check { .. } => Kind::Check,
        }
    }

    /// The operation this one acts on, if its kind names one.
    pub fn target(&self) -> Option<OpId> {
        match *self {
            Op::Keep { target, .. }
            | Op::Drop { target }
            | Op::Withdraw { target }
            | Op::Widen { target, .. }
            | Op::Signal { target, .. }
            | Op::Establish { target, .. } => Some(target),
            Op::Edit { target, .. } => target,
            Op::Observe { .. }
            | Op::Correct { .. }
            | Op::Import { .. }
            | Op::Reset { .. }
            | Op::Check { .. } => None,
        }
    }

    /// Whether the operation states something a status belongs to.
    pub fn states_a_subject(&self) -> bool {
        match self {
            Op::Observe { .. } | Op::Correct { .. } | Op::Edit { .. } => true,
            Op::Import { subject, .. } => subject.is_some(),
            Op::Keep { .. }
            | Op::Drop { .. }
            | Op::Withdraw { .. }
            | Op::Widen { .. }
            | Op::Reset { .. }
            | Op::Signal { .. }
            | Op::Establish { .. }
            | Op::Check { .. } => false,
        }
    }

    /// The wording the operation states (what disagreements and standing
    /// compare).
    pub fn stated(&self) -> Stated<'r> {
        match *self {
            Op::Observe { subject, .. } | Op::Edit { subject, .. } => stated_by(subject),
            Op::Correct {
                rule: Some(rule), ..
            } => stated_by(rule),
            Op::Correct {
                correction,
                rule: None,
                ..
            } => Stated::Wording(correction),
            Op::Import {
                subject: Some(subject),
                ..
            } => stated_by(subject),
            Op::Import { subject: None, .. }
            | Op::Keep { .. }
            | Op::Drop { .. }
            | Op::Withdraw { .. }
            | Op::Widen { .. }
            | Op::Reset { .. }
            | Op::Signal { .. }
            | Op::Establish { .. }
            | Op::Check { .. } => Stated::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::record::{Actor, ActorKind};

    #[test]
    fn every_kind_parses_into_its_operation_or_says_what_it_lacks() {
        let actor = Actor {
            kind: ActorKind::Person,
            name: "ada".into(),
            session: None,
        };
        for kind in Kind::ALL {
            let bare = Record::new("p", actor.clone(), kind);
            let parsed = Op::of(&bare);
            match kind {
                Kind::Import => assert_eq!(parsed.unwrap().kind(), kind),
                _ => assert!(parsed.is_err(), "{kind:?} without its fields"),
            }
        }
        let keep = Record {
            target: Some("0n79tw5k9s00000000000000".into()),
            ..Record::new("p", actor.clone(), Kind::Keep)
        };
        let op = Op::of(&keep).unwrap();
        assert_eq!(op.kind(), Kind::Keep);
        assert_eq!(op.target().unwrap().as_str(), "0n79tw5k9s00000000000000");
        assert!(!op.states_a_subject());
        let bad = Record {
            target: Some("nope".into()),
            ..keep
        };
        assert!(Op::of(&bad).is_err());
    }
}
