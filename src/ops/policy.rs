//! The permission policy, `PersonDecides`: one function every writer calls
//! before anything is appended, and the fold calls again for every
//! operation it reads (a remote can push anything).
//!
//! An agent or a tool may observe and record a correction, each taking
//! effect as a suggestion, and withdraw its own suggestion in the session
//! that recorded it. Only a tool records evidence (`signal`) and the
//! establishments settling derives from it. Any actor records a check run.
//! Everything that turns advice into a rule, or sets another actor's advice
//! aside, belongs to a person: keep, edit, import, drop, widen, reset.

use super::op::Op;
use super::record::{Actor, ActorKind, Kind, Record};

/// One proposed change, as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Transition<'a> {
    pub actor: &'a Actor,
    pub kind: Kind,
    /// The operation acted on, for kinds that name one.
    pub target: Option<&'a Record>,
    /// The change applies a rule more widely than its evidence (a widen, or a
    /// keep or note that widens its scope).
    pub widening: bool,
    /// The change edits what another actor suggested.
    pub editing: bool,
}

impl Transition<'_> {
    /// Kinds only a person records whatever else they do: their refusal
    /// names the review command rather than the widening.
    fn kind_is_person_only(&self) -> bool {
        matches!(
            self.kind,
            Kind::Import | Kind::Edit | Kind::Keep | Kind::Drop | Kind::Widen | Kind::Reset
        )
    }
}

impl<'a> Transition<'a> {
    /// The transition a recorded operation makes, with widening and editing
    /// derived from the operation itself (callers pass no flags).
    pub fn of(actor: &'a Actor, op: &Op<'_>, target: Option<&'a Record>) -> Self {
        Self {
            actor,
            kind: op.kind(),
            target,
            widening: op.widens(),
            editing: false,
        }
    }

    /// The transition of an operation of `kind` not yet built (a writer
    /// asking before it records): widening and editing follow from the kind.
    pub fn new(actor: &'a Actor, kind: Kind, target: Option<&'a Record>) -> Self {
        Self {
            actor,
            kind,
            target,
            widening: kind == Kind::Widen,
            editing: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{actor} may not {what}: {why}")]
pub struct PolicyError {
    pub actor: String,
    pub what: String,
    pub why: String,
}

/// The policy kapi ships.
pub fn person_decides(t: &Transition<'_>) -> Result<(), PolicyError> {
    let refuse = |what: &str, why: &str| {
        Err(PolicyError {
            actor: t.actor.label(),
            what: what.to_owned(),
            why: why.to_owned(),
        })
    };
    let person = t.actor.kind == ActorKind::Person;
    if t.kind == Kind::Check {
        return Ok(());
    }
    if t.widening && !person && !t.kind_is_person_only() {
        return refuse(
            "apply a rule more widely than where it was seen",
            "only a person widens, in review: `kapi context review --keep <id> --widen-to <where>`",
        );
    }
    if t.editing && !person {
        return refuse(
            "edit what another actor suggested",
            "record a note of your own instead (`kapi context note \"<text>\"`)",
        );
    }
    match t.kind {
        Kind::Observe | Kind::Correct | Kind::Check => Ok(()),
        Kind::Signal | Kind::Establish if t.actor.kind == ActorKind::Tool => Ok(()),
        Kind::Signal | Kind::Establish => refuse(
            &format!("record a {}", t.kind.as_str()),
            "evidence and the establishments it settles are recorded by kapi's own tools; a statement is a suggestion, never evidence for one",
        ),
        Kind::Withdraw => match t.target {
            Some(target) if target.actor.same_party(t.actor) => Ok(()),
            Some(target)
                if target.actor.kind == t.actor.kind && target.actor.name == t.actor.name =>
            {
                refuse(
                    &format!("withdraw #{}", target.short()),
                    &format!(
                        "it was recorded in another session; a person drops it in review: `kapi context review --drop {}`",
                        target.short()
                    ),
                )
            }
            Some(target) => refuse(
                &format!("withdraw #{}", target.short()),
                &format!(
                    "it was recorded by {}; only its author withdraws it, and a person drops it: `kapi context review --drop {}`",
                    target.actor.label(),
                    target.short()
                ),
            ),
            None => refuse("withdraw", "a withdraw names the operation it takes back"),
        },
        Kind::Import | Kind::Edit | Kind::Keep | Kind::Drop | Kind::Widen | Kind::Reset
            if person =>
        {
            Ok(())
        }
        Kind::Import => refuse(
            "import context files",
            "reading a checkout's files puts them in force for everyone; ask a person to run `kapi store import`",
        ),
        Kind::Keep | Kind::Drop | Kind::Widen => refuse(
            &format!("{} a rule", t.kind.as_str()),
            "a person decides in review: `kapi context review`",
        ),
        Kind::Edit | Kind::Reset => refuse(
            &format!("{} the context", t.kind.as_str()),
            "only a person writes rules directly or resets the context; record a note instead (`kapi context note \"<text>\"`)",
        ),
    }
}

/// Acts that move operations between logs or read evidence into one:
/// transport rather than operations of their own, but each can put words
/// in a person's mouth, so an agent may not perform them.
#[derive(Debug, Clone, Copy)]
pub enum Sharing<'a> {
    /// Merge operations from a file (`command` is what a person runs).
    MergeFile { command: &'a str },
    /// Push the shared log (`kapi context sync`).
    Push,
    /// Record what a merge to the default branch says (`--merged`).
    MergeSignals,
    /// Merge a log whose operations name only other projects.
    OtherProject,
}

/// Whether `actor` may perform a sharing act: a person, or a tool such as
/// CI, may; an agent may not. An agent that could merge a hand-written
/// file could establish its own rule under a person's name; one that could
/// push would publish it; one that could record merge signals would be
/// giving itself a person's signal.
pub fn may_share(actor: &Actor, act: Sharing<'_>) -> Result<(), PolicyError> {
    if actor.kind != ActorKind::Agent {
        return Ok(());
    }
    let (what, why) = match act {
        Sharing::MergeFile { command } => (
            format!("run `{command}`"),
            format!(
                "merged operations can claim any author, so an agent may not merge them: ask a person to run `{command}`"
            ),
        ),
        Sharing::Push => (
            "push the shared log".to_owned(),
            "pushing is a person's or a tool's act; an agent may fetch with `kapi context sync --no-push`, and a person runs `kapi context sync`".to_owned(),
        ),
        Sharing::OtherProject => (
            "merge another project's log".to_owned(),
            "whether another project's operations belong in this log is a person's decision: a person runs `kapi context sync --allow-other-project`".to_owned(),
        ),
        Sharing::MergeSignals => (
            "record merge signals".to_owned(),
            "a merge to the default branch is a person's signal; the CI step (`ci/kapi-after-push`) or a person runs `kapi context sync --merged <range>`".to_owned(),
        ),
    };
    Err(PolicyError {
        actor: actor.label(),
        what,
        why,
    })
}

/// A change to which repositories on this machine share the rules their
/// logs widen to the workspace.
#[derive(Debug, Clone, Copy)]
pub enum WorkspaceChoice {
    /// `kapi workspace add`: a repository's workspace rules hold in every
    /// other checkout.
    Add,
    /// `kapi workspace forget`: a repository leaves the registry, and its
    /// workspace rules stop holding elsewhere.
    Forget,
}

/// Whether `actor` may choose which repositories share their workspace
/// rules: a person only. A log holds whatever its clone, sync or import
/// brought, under any author it claims; an agent that could add the
/// repository holding it would put those rules in force in every other
/// checkout, and one that could forget a repository would lift the rules
/// a person chose to hold. A tool acts for no one on this machine.
pub fn may_choose_workspace(actor: &Actor, choice: WorkspaceChoice) -> Result<(), PolicyError> {
    if actor.kind == ActorKind::Person {
        return Ok(());
    }
    let (what, command) = match choice {
        WorkspaceChoice::Add => (
            "share a repository's rules with the workspace",
            "kapi workspace add",
        ),
        WorkspaceChoice::Forget => (
            "forget a repository of the workspace",
            "kapi workspace forget",
        ),
    };
    Err(PolicyError {
        actor: actor.label(),
        what: what.to_owned(),
        why: format!(
            "which repositories' rules hold on this machine is a person's choice: ask a person to run `{command}`"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actor(kind: ActorKind, name: &str, session: &str) -> Actor {
        Actor {
            kind,
            name: name.into(),
            session: Some(session.into()),
        }
    }

    fn target_by(actor: Actor) -> Record {
        Record {
            id: "0n79tw5k9s00000000000000".into(),
            ..Record::new("p", actor, Kind::Observe)
        }
    }

    /// Every cell of actor kind × operation kind × (own / other's target,
    /// same / other session, widening). Each string lists eight cells in the
    /// order: own+same, own+same+widening, own+other-session,
    /// own+other-session+widening, then the same four for another actor's
    /// target. `Y` is allowed, `n` refused.
    const MATRIX: &[(ActorKind, Kind, &str)] = &[
        (ActorKind::Person, Kind::Observe, "YYYYYYYY"),
        (ActorKind::Person, Kind::Correct, "YYYYYYYY"),
        (ActorKind::Person, Kind::Import, "YYYYYYYY"),
        (ActorKind::Person, Kind::Edit, "YYYYYYYY"),
        (ActorKind::Person, Kind::Keep, "YYYYYYYY"),
        (ActorKind::Person, Kind::Drop, "YYYYYYYY"),
        (ActorKind::Person, Kind::Withdraw, "YYYYnnnn"),
        (ActorKind::Person, Kind::Reset, "YYYYYYYY"),
        (ActorKind::Person, Kind::Widen, "YYYYYYYY"),
        (ActorKind::Person, Kind::Signal, "nnnnnnnn"),
        (ActorKind::Person, Kind::Establish, "nnnnnnnn"),
        (ActorKind::Person, Kind::Check, "YYYYYYYY"),
        (ActorKind::Agent, Kind::Observe, "YnYnYnYn"),
        (ActorKind::Agent, Kind::Correct, "YnYnYnYn"),
        (ActorKind::Agent, Kind::Import, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Edit, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Keep, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Drop, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Withdraw, "Ynnnnnnn"),
        (ActorKind::Agent, Kind::Reset, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Widen, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Signal, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Establish, "nnnnnnnn"),
        (ActorKind::Agent, Kind::Check, "YYYYYYYY"),
        (ActorKind::Tool, Kind::Observe, "YnYnYnYn"),
        (ActorKind::Tool, Kind::Correct, "YnYnYnYn"),
        (ActorKind::Tool, Kind::Import, "nnnnnnnn"),
        (ActorKind::Tool, Kind::Edit, "nnnnnnnn"),
        (ActorKind::Tool, Kind::Keep, "nnnnnnnn"),
        (ActorKind::Tool, Kind::Drop, "nnnnnnnn"),
        (ActorKind::Tool, Kind::Withdraw, "Ynnnnnnn"),
        (ActorKind::Tool, Kind::Reset, "nnnnnnnn"),
        (ActorKind::Tool, Kind::Widen, "nnnnnnnn"),
        (ActorKind::Tool, Kind::Signal, "YnYnYnYn"),
        (ActorKind::Tool, Kind::Establish, "YnYnYnYn"),
        (ActorKind::Tool, Kind::Check, "YYYYYYYY"),
    ];

    #[test]
    fn every_cell_of_the_matrix() {
        assert_eq!(MATRIX.len(), 3 * Kind::ALL.len());
        for &(actor_kind, kind, cells) in MATRIX {
            let me = actor(actor_kind, "me", "s1");
            let mut i = 0;
            for own in [true, false] {
                for same_session in [true, false] {
                    for widening in [false, true] {
                        let author = actor(
                            actor_kind,
                            if own { "me" } else { "someone-else" },
                            if same_session { "s1" } else { "s2" },
                        );
                        let target = target_by(author);
                        let t = Transition {
                            actor: &me,
                            kind,
                            target: Some(&target),
                            widening,
                            editing: false,
                        };
                        let expected = cells.as_bytes()[i] == b'Y';
                        assert_eq!(
                            person_decides(&t).is_ok(),
                            expected,
                            "{actor_kind:?} {kind:?} own={own} same_session={same_session} widening={widening}: {:?}",
                            person_decides(&t)
                        );
                        i += 1;
                    }
                }
            }
        }
    }

    #[test]
    fn editing_another_actors_suggestion_is_for_a_person() {
        let agent = actor(ActorKind::Agent, "a", "s");
        let t = Transition {
            actor: &agent,
            kind: Kind::Observe,
            target: None,
            widening: false,
            editing: true,
        };
        assert!(person_decides(&t).is_err());
        let person = Actor {
            kind: ActorKind::Person,
            name: "p@x".into(),
            session: None,
        };
        let t = Transition {
            actor: &person,
            ..t
        };
        assert!(person_decides(&t).is_ok());
    }

    #[test]
    fn only_a_person_chooses_what_the_workspace_shares() {
        for choice in [WorkspaceChoice::Add, WorkspaceChoice::Forget] {
            for (kind, allowed) in [
                (ActorKind::Person, true),
                (ActorKind::Agent, false),
                (ActorKind::Tool, false),
            ] {
                let who = actor(kind, "x", "s");
                assert_eq!(
                    may_choose_workspace(&who, choice).is_ok(),
                    allowed,
                    "{kind:?} {choice:?}"
                );
            }
        }
        let agent = actor(ActorKind::Agent, "claude-code", "s");
        let err = may_choose_workspace(&agent, WorkspaceChoice::Add)
            .unwrap_err()
            .to_string();
        assert!(err.contains("kapi workspace add"), "{err}");
    }

    #[test]
    fn refusals_name_the_command_for_a_person() {
        let agent = actor(ActorKind::Agent, "claude-code", "s");
        let t = Transition {
            actor: &agent,
            kind: Kind::Import,
            target: None,
            widening: false,
            editing: false,
        };
        let err = person_decides(&t).unwrap_err().to_string();
        assert!(err.contains("kapi store import"), "{err}");
    }
}
