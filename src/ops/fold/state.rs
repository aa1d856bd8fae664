//! What the fold says of each subject: its [`Status`], the [`State`] it
//! holds (scope in force, contests, standing, what decided it), the
//! [`Event`] emitted when a status changes, and each operation the fold
//! [`Ignored`], with why.

use serde::{Deserialize, Serialize};

use crate::ops::id::OpId;
use crate::ops::record::Scope;

/// What became of a subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing has acted on it: it advises.
    Suggested,
    /// A person kept, imported or wrote it, or settling established it: it binds.
    Established,
    /// It disagrees with another rule, named in `contested_by`: it advises.
    Contested,
    /// Its author took it back in the session that recorded it.
    Withdrawn,
    /// A person set it aside.
    Dropped,
    /// A reset set it aside.
    Reset,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Suggested,
        Status::Established,
        Status::Contested,
        Status::Withdrawn,
        Status::Dropped,
        Status::Reset,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Suggested => "suggested",
            Status::Established => "established",
            Status::Contested => "contested",
            Status::Withdrawn => "withdrawn",
            Status::Dropped => "dropped",
            Status::Reset => "reset",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether a rule with this status answers (binds or advises).
    pub fn answers(self) -> bool {
        matches!(
            self,
            Status::Suggested | Status::Established | Status::Contested
        )
    }
}

/// The counts behind a suggestion, shown as counts, never as a score.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Standing {
    /// Sessions (or people) that recorded the same rule.
    pub sessions: usize,
    /// The latest usage counts: uses of the preferred and of avoided forms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<(u64, u64)>,
    /// Merge signals recorded for it.
    pub merges: usize,
    /// Edits an agent applied through kapi that wrote its preferred form
    /// (`applied` signals): standing only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub applied: usize,
    /// Person signals settling read for it: corrections toward it seen
    /// where it holds, and merges that wrote it.
    #[serde(skip_serializing_if = "is_zero")]
    pub toward: usize,
    /// Evidence against it: corrections away, its group's withdrawals,
    /// usage moving to an avoided form.
    #[serde(skip_serializing_if = "is_zero")]
    pub against: usize,
    /// The pull requests (or commits) whose merges wrote it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged_in: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Standing {
    /// `seen in 2 sessions · 14 of 15 uses · merged 1×`
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "seen in {} session{}",
            self.sessions,
            if self.sessions == 1 { "" } else { "s" }
        )];
        if let Some((preferred, avoided)) = self.usage {
            let uses = crate::wording::count(preferred + avoided, "use", "uses");
            parts.push(format!("{preferred} of {uses}"));
        }
        if !self.merged_in.is_empty() {
            parts.push(format!("merged in {}", self.merged_in.join(", ")));
        } else if self.merges > 0 {
            parts.push(format!("merged {}×", self.merges));
        }
        if self.applied > 0 {
            parts.push(format!("applied {}×", self.applied));
        }
        let corrections = self.toward.saturating_sub(self.merged_in.len());
        if corrections > 0 {
            parts.push(format!(
                "{corrections} correction{} toward it",
                if corrections == 1 { "" } else { "s" }
            ));
        }
        if self.against > 0 {
            parts.push(format!("{} against", self.against));
        }
        parts.join(" · ")
    }
}

/// The folded state of one subject-bearing operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub status: Status,
    pub contested_by: Vec<OpId>,
    /// The scope in force: the record's, or the one a later keep or widen set.
    pub scope: Scope,
    pub advisory: bool,
    pub standing: Standing,
    /// A person kept, imported or wrote it (or settling established it) at
    /// some point: it is no longer only a suggestion, even while contested.
    pub kept: bool,
    /// The operation that last decided it (keep, drop, withdraw, establish, reset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<OpId>,
    /// The person signals settling established it on (empty unless
    /// settled): an `establish` naming them is `decided_by`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub because: Vec<OpId>,
    /// An established rule whose avoided forms are written more often than
    /// when it came into force: (uses then, uses now).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<(u64, u64)>,
}

impl State {
    /// The counts every surface shows beside a subject, never a score: a
    /// suggestion's standing (`seen in 2 sessions · merged in #412 · 1
    /// against`), a settled rule's evidence, an established rule's drift.
    pub fn standing_text(&self) -> Option<String> {
        let mut parts = Vec::new();
        match self.status {
            Status::Suggested | Status::Contested if self.standing.sessions > 0 => {
                parts.push(self.standing.describe())
            }
            Status::Established if !self.because.is_empty() => parts.push(format!(
                "settled on {} · {}",
                self.because
                    .iter()
                    .map(|b| format!("#{}", b.short()))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.standing.describe()
            )),
            _ => {}
        }
        if let Some((then, now)) = self.drift {
            parts.push(format!(
                "drift: avoided forms written {now}× now, {then}× when it came into force"
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" · "))
    }
}

/// An operation the fold read but did not apply, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignored {
    pub id: OpId,
    pub reason: String,
}

/// A subject's status changed: which subject, by which operation, from
/// what to what. The reducer emits one per change, so histories and the
/// atlas read the log once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Event {
    /// The operation that states the subject.
    pub subject: OpId,
    /// The operation whose arrival changed it (for a disagreement, the
    /// later of the two rules).
    pub by: OpId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Status>,
    pub to: Status,
}
