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
//! Editing (an `edit` that names the rule in force it replaces, whoever
//! recorded that rule) is refused for anyone else by name.

use super::op::Op;
use super::record::{Actor, ActorKind, Kind, Record};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{actor} may not {what}: {why}")]
pub struct PolicyError {
    pub actor: String,
    pub what: String,
    pub why: String,
}

/// The policy kapi ships: whether `actor` may record `op`, which acts on
/// `target` (for kinds that name one). The door asks it of every draft
/// before anything is appended, and the fold asks it again of every
/// operation it reads: the same call, on the same [`Op`], so the writer and
/// the reader cannot disagree.
pub fn person_decides(
    actor: &Actor,
    op: &Op<'_>,
    target: Option<&Record>,
) -> Result<(), PolicyError> {
    let kind = op.kind();
    let refuse = |what: String, why: String| {
        Err(PolicyError {
            actor: actor.label(),
            what,
            why,
        })
    };
    // Editing: a person replaces a rule that was in force, whoever
    // suggested it. Only a person; anyone else records a note.
    if let Op::Edit {
        target: Some(edited),
        ..
    } = op
        && actor.kind != ActorKind::Person
    {
        return refuse(
            format!("edit #{}", edited.short()),
            "only a person edits a rule in force; record a note instead (`kapi context note \"<text>\"`), and a person decides in review".into(),
        );
    }
    if kind != Kind::Withdraw {
        return permits(actor, kind);
    }
    match target {
        Some(target) if target.actor.same_party(actor) => Ok(()),
        Some(target) if target.actor.kind == actor.kind && target.actor.name == actor.name => {
            refuse(
                format!("withdraw #{}", target.short()),
                format!(
                    "it was recorded in another session; a person drops it in review: `kapi context review --drop {}`",
                    target.short()
                ),
            )
        }
        Some(target) => refuse(
            format!("withdraw #{}", target.short()),
            format!(
                "it was recorded by {}; only its author withdraws it, and a person drops it: `kapi context review --drop {}`",
                target.actor.label(),
                target.short()
            ),
        ),
        None => refuse(
            "withdraw".into(),
            "a withdraw names the operation it takes back".into(),
        ),
    }
}

/// The part of the policy that depends on the kind alone: whether `actor`
/// may record operations of `kind` at all (a withdraw depends on whose
/// suggestion it takes back, which [`person_decides`] asks). A writer asks
/// it before doing work a refusal would waste.
pub fn permits(actor: &Actor, kind: Kind) -> Result<(), PolicyError> {
    let refuse = |what: &str, why: &str| {
        Err(PolicyError {
            actor: actor.label(),
            what: what.to_owned(),
            why: why.to_owned(),
        })
    };
    let person = actor.kind == ActorKind::Person;
    match kind {
        Kind::Observe | Kind::Correct | Kind::Check | Kind::Withdraw => Ok(()),
        Kind::Signal | Kind::Establish if actor.kind == ActorKind::Tool => Ok(()),
        Kind::Signal | Kind::Establish => refuse(
            &format!("record a {}", kind.as_str()),
            "evidence and the establishments it settles are recorded by kapi's own tools; a statement is a suggestion, never evidence for one",
        ),
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
            &format!("{} a rule", kind.as_str()),
            "a person decides in review: `kapi context review`",
        ),
        Kind::Edit | Kind::Reset => refuse(
            &format!("{} the context", kind.as_str()),
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
    use crate::ops::draft::{Draft, Drafted};
    use crate::ops::id::OpId;
    use crate::ops::record::Basis;

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

    /// A draft of `kind` acting on `target` (for kinds that name one).
    pub(crate) fn draft_of(kind: Kind, target: OpId) -> Draft {
        Draft::from(Drafted::sample(kind, target, 0))
    }

    /// Every cell of actor kind × operation kind × (own / other's target,
    /// same / other session). Each string lists four cells in the order:
    /// own+same, own+other-session, other's+same, other's+other-session.
    /// `Y` is allowed, `n` refused.
    const MATRIX: &[(ActorKind, Kind, &str)] = &[
        (ActorKind::Person, Kind::Observe, "YYYY"),
        (ActorKind::Person, Kind::Correct, "YYYY"),
        (ActorKind::Person, Kind::Import, "YYYY"),
        (ActorKind::Person, Kind::Edit, "YYYY"),
        (ActorKind::Person, Kind::Keep, "YYYY"),
        (ActorKind::Person, Kind::Drop, "YYYY"),
        (ActorKind::Person, Kind::Withdraw, "YYnn"),
        (ActorKind::Person, Kind::Reset, "YYYY"),
        (ActorKind::Person, Kind::Widen, "YYYY"),
        (ActorKind::Person, Kind::Signal, "nnnn"),
        (ActorKind::Person, Kind::Establish, "nnnn"),
        (ActorKind::Person, Kind::Check, "YYYY"),
        (ActorKind::Agent, Kind::Observe, "YYYY"),
        (ActorKind::Agent, Kind::Correct, "YYYY"),
        (ActorKind::Agent, Kind::Import, "nnnn"),
        (ActorKind::Agent, Kind::Edit, "nnnn"),
        (ActorKind::Agent, Kind::Keep, "nnnn"),
        (ActorKind::Agent, Kind::Drop, "nnnn"),
        (ActorKind::Agent, Kind::Withdraw, "Ynnn"),
        (ActorKind::Agent, Kind::Reset, "nnnn"),
        (ActorKind::Agent, Kind::Widen, "nnnn"),
        (ActorKind::Agent, Kind::Signal, "nnnn"),
        (ActorKind::Agent, Kind::Establish, "nnnn"),
        (ActorKind::Agent, Kind::Check, "YYYY"),
        (ActorKind::Tool, Kind::Observe, "YYYY"),
        (ActorKind::Tool, Kind::Correct, "YYYY"),
        (ActorKind::Tool, Kind::Import, "nnnn"),
        (ActorKind::Tool, Kind::Edit, "nnnn"),
        (ActorKind::Tool, Kind::Keep, "nnnn"),
        (ActorKind::Tool, Kind::Drop, "nnnn"),
        (ActorKind::Tool, Kind::Withdraw, "Ynnn"),
        (ActorKind::Tool, Kind::Reset, "nnnn"),
        (ActorKind::Tool, Kind::Widen, "nnnn"),
        (ActorKind::Tool, Kind::Signal, "YYYY"),
        (ActorKind::Tool, Kind::Establish, "YYYY"),
        (ActorKind::Tool, Kind::Check, "YYYY"),
    ];

    #[test]
    fn every_cell_of_the_matrix() {
        assert_eq!(MATRIX.len(), 3 * Kind::ALL.len());
        let target_id = OpId::parse("0n79tw5k9s00000000000000").unwrap();
        for &(actor_kind, kind, cells) in MATRIX {
            let me = actor(actor_kind, "me", "s1");
            let record = draft_of(kind, target_id).into_record("p", me.clone(), Basis::default());
            let op = crate::ops::op::Op::of(&record).unwrap();
            let mut i = 0;
            for own in [true, false] {
                for same_session in [true, false] {
                    let author = actor(
                        actor_kind,
                        if own { "me" } else { "someone-else" },
                        if same_session { "s1" } else { "s2" },
                    );
                    let target = target_by(author);
                    let expected = cells.as_bytes()[i] == b'Y';
                    let decided = person_decides(&me, &op, Some(&target));
                    assert_eq!(
                        decided.is_ok(),
                        expected,
                        "{actor_kind:?} {kind:?} own={own} same_session={same_session}: {decided:?}"
                    );
                    i += 1;
                }
            }
        }
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
        let target_id = OpId::parse("0n79tw5k9s00000000000000").unwrap();
        let record =
            draft_of(Kind::Import, target_id).into_record("p", agent.clone(), Basis::default());
        let op = crate::ops::op::Op::of(&record).unwrap();
        let err = person_decides(&agent, &op, None).unwrap_err().to_string();
        assert!(err.contains("kapi store import"), "{err}");
    }
}
