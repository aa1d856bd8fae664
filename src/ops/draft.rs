//! Operations not yet recorded. Reading is typed ([`Op`](super::op::Op),
//! borrowed from a [`Record`]); so is writing: every writer states what it
//! asks to record as a [`Draft`], one variant per kind with exactly the
//! fields that kind carries (targets as [`OpId`]), and the one door
//! (`context::door`) turns drafts into records here, in one place, asks
//! the policy of each through the same [`Op`] the fold reads, and appends.
//! No writer builds a `Record` by hand.

use super::id::OpId;
use super::record::{
    Actor, Basis, CheckRun, Correction, Evidence, Kind, Record, Scope, Signal, Subject,
};

/// What one operation of each kind carries, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Drafted {
    /// A suggestion: a term rule, a note or a pair, where it was seen.
    Observe {
        subject: Subject,
        scope: Scope,
        evidence: Vec<Evidence>,
    },
    /// A change of wording, and optionally the rule it implies.
    Correct {
        correction: Correction,
        rule: Option<Subject>,
        scope: Scope,
        evidence: Vec<Evidence>,
    },
    /// A person put a context file's rules in force (no subject for a file
    /// that held none).
    Import {
        subject: Option<Subject>,
        scope: Scope,
        evidence: Vec<Evidence>,
    },
    /// A person wrote a rule directly; naming `target`, a rule in force
    /// it replaces.
    Edit {
        target: Option<OpId>,
        subject: Subject,
        scope: Scope,
        advisory: bool,
    },
    /// A person kept a suggestion, optionally for a window, optionally as
    /// advice only.
    Keep {
        target: OpId,
        window: Scope,
        advisory: bool,
    },
    Drop {
        target: OpId,
    },
    Withdraw {
        target: OpId,
    },
    /// A person applied a rule at a wider scope.
    Widen {
        target: OpId,
        scope: Scope,
    },
    /// A person set aside everything from `before` on.
    Reset {
        before: OpId,
    },
    /// Evidence a tool counted.
    Signal {
        target: OpId,
        signal: Signal,
    },
    /// Settling established a suggestion on this evidence.
    Establish {
        target: OpId,
        because: Vec<OpId>,
    },
    /// One run of the checks.
    Check {
        run: CheckRun,
    },
}

/// One operation to record: its kind's fields, why (in the recorder's
/// words) and, for kinds a log holds once per content, its address.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub what: Drafted,
    pub note: Option<String>,
    pub address: Option<String>,
}

impl From<Drafted> for Draft {
    fn from(what: Drafted) -> Self {
        Draft {
            what,
            note: None,
            address: None,
        }
    }
}

impl Draft {
    /// With `note`, why in the recorder's words.
    pub fn noting(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }

    /// With a content address: a log holds one operation per address.
    pub fn addressed(mut self, address: String) -> Self {
        self.address = Some(address);
        self
    }

    pub fn kind(&self) -> Kind {
        match &self.what {
            Drafted::Observe { .. } => Kind::Observe,
            Drafted::Correct { .. } => Kind::Correct,
            Drafted::Import { .. } => Kind::Import,
            Drafted::Edit { .. } => Kind::Edit,
            Drafted::Keep { .. } => Kind::Keep,
            Drafted::Drop { .. } => Kind::Drop,
            Drafted::Withdraw { .. } => Kind::Withdraw,
            Drafted::Widen { .. } => Kind::Widen,
            Drafted::Reset { .. } => Kind::Reset,
            Drafted::Signal { .. } => Kind::Signal,
            Drafted::Establish { .. } => Kind::Establish,
            Drafted::Check { .. } => Kind::Check,
        }
    }

    /// The operation this one acts on, if its kind names one (a reset's
    /// `before` too): what the policy is asked about.
    pub fn target(&self) -> Option<OpId> {
        match &self.what {
            Drafted::Keep { target, .. }
            | Drafted::Drop { target }
            | Drafted::Withdraw { target }
            | Drafted::Widen { target, .. }
            | Drafted::Signal { target, .. }
            | Drafted::Establish { target, .. } => Some(*target),
            Drafted::Reset { before } => Some(*before),
            Drafted::Edit { target, .. } => *target,
            Drafted::Observe { .. }
            | Drafted::Correct { .. }
            | Drafted::Import { .. }
            | Drafted::Check { .. } => None,
        }
    }

    /// The record of this draft by `actor` in `project` on `basis`; the
    /// store mints its id and instant when it is appended.
    pub fn into_record(self, project: &str, actor: Actor, basis: Basis) -> Record {
        let kind = self.kind();
        let mut r = Record {
            basis: basis.into(),
            note: self.note,
            address: self.address,
            ..Record::new(project, actor, kind)
        };
        match self.what {
            Drafted::Observe {
                subject,
                scope,
                evidence,
            } => {
                r.subject = Some(Box::new(subject));
                r.scope = scope.into();
                r.evidence = evidence.into();
            }
            Drafted::Correct {
                correction,
                rule,
                scope,
                evidence,
            } => {
                r.correction = Some(Box::new(correction));
                r.subject = rule.map(Box::new);
                r.scope = scope.into();
                r.evidence = evidence.into();
            }
            Drafted::Import {
                subject,
                scope,
                evidence,
            } => {
                r.subject = subject.map(Box::new);
                r.scope = scope.into();
                r.evidence = evidence.into();
            }
            Drafted::Edit {
                target,
                subject,
                scope,
                advisory,
            } => {
                r.target = target.map(|t| t.as_str().into());
                r.subject = Some(Box::new(subject));
                r.scope = scope.into();
                r.advisory = advisory;
            }
            Drafted::Keep {
                target,
                window,
                advisory,
            } => {
                r.target = Some(target.as_str().into());
                r.scope = window.into();
                r.advisory = advisory;
            }
            Drafted::Drop { target } | Drafted::Withdraw { target } => {
                r.target = Some(target.as_str().into());
            }
            Drafted::Widen { target, scope } => {
                r.target = Some(target.as_str().into());
                r.scope = scope.into();
            }
            Drafted::Reset { before } => r.before = Some(before.as_str().into()),
            Drafted::Signal { target, signal } => {
                r.target = Some(target.as_str().into());
                r.signal = Some(Box::new(signal));
            }
            Drafted::Establish { target, because } => {
                r.target = Some(target.as_str().into());
                r.because = because.iter().map(|id| id.as_str().to_owned()).collect();
            }
            Drafted::Check { run } => r.check = Some(Box::new(run)),
        }
        r
    }
}

#[cfg(test)]
impl Drafted {
    /// A draft of `kind` for tests: acting on `target` (for the kinds that
    /// name one), a term rule `Term<n>` over `Term <n>` where a kind
    /// states one, a usage signal of `n` avoided uses.
    pub(crate) fn sample(kind: Kind, target: OpId, n: u8) -> Drafted {
        use super::record::SignalSource;
        let term = || Subject::Term {
            preferred: format!("Term{n}"),
            avoid: vec![format!("Term {n}")],
        };
        match kind {
            Kind::Observe => Drafted::Observe {
                subject: term(),
                scope: Scope::default(),
                evidence: Vec::new(),
            },
            Kind::Correct => Drafted::Correct {
                correction: Correction {
                    from: format!("Term {n}"),
                    to: format!("Term{n}"),
                },
                rule: None,
                scope: Scope::default(),
                evidence: Vec::new(),
            },
            Kind::Import => Drafted::Import {
                subject: None,
                scope: Scope::default(),
                evidence: Vec::new(),
            },
            Kind::Edit => Drafted::Edit {
                target: Some(target),
                subject: term(),
                scope: Scope::default(),
                advisory: false,
            },
            Kind::Keep => Drafted::Keep {
                target,
                window: Scope::default(),
                advisory: false,
            },
            Kind::Drop => Drafted::Drop { target },
            Kind::Withdraw => Drafted::Withdraw { target },
            Kind::Widen => Drafted::Widen {
                target,
                scope: Scope::default(),
            },
            Kind::Reset => Drafted::Reset { before: target },
            Kind::Signal => Drafted::Signal {
                target,
                signal: Signal {
                    source: SignalSource::Usage,
                    preferred: 1,
                    avoided: u64::from(n),
                    commit: None,
                    pr: None,
                    merger: None,
                },
            },
            Kind::Establish => Drafted::Establish {
                target,
                because: vec![target],
            },
            Kind::Check => Drafted::Check {
                run: CheckRun::default(),
            },
        }
    }
}
