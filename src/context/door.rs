//! The one door every write goes through. A writer states what it asks
//! to record as [`Draft`]s; the door turns each into a record (in one
//! place, `Draft::into_record`), checks it against the documented limits,
//! and admits it only where the fold would apply it: the operation parses,
//! the policy allows it for this actor ([`person_decides`], the same call
//! on the same `Op` the fold makes for every operation it reads), the
//! operation it acts on holds a subject in the log, a withdraw takes back
//! a suggestion, and no operation the log holds has its content address.
//! Then it appends them (one commit per log), registers the checkout, and
//! refreshes the rules files when what is in force changed. Nothing else
//! appends.
//!
//! A person's decision (and the CI's merge signals and establishments) is
//! signed here, with git's SSH signing key, as the store mints it
//! ([`crate::ops::trust`], docs/security.md); with `[trust] decisions =
//! "signed"` and no key, a person's decision is refused. Later, a
//! surface's allow-list of kinds (the MCP server's: no person verbs)
//! attaches here too.

use std::path::PathBuf;

use super::{ContextError, Session};
use crate::git::sign::Signer;
use crate::ops::policy::person_decides;
use crate::ops::record::{Actor, ActorKind, Kind, SignalSource};
use crate::ops::trust;
use crate::ops::{Draft, Ledger, Op, Record, Status};
use crate::store::StoreError;

/// What the door recorded.
#[derive(Debug)]
pub struct Recorded {
    /// The records, with the ids and instants the store minted, in the
    /// order of the drafts.
    pub records: Vec<Record>,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    /// Why refreshing them failed; the records stand either way.
    pub refresh_error: Option<ContextError>,
}

/// Whether the fold would apply `record`, appended now to the log `view`
/// holds (when no draft acts on another operation or carries an address,
/// no view is needed): `Ok`, or the reason the fold would ignore it.
pub fn admit(view: Option<&Ledger>, record: &Record) -> Result<(), ContextError> {
    let invalid = |e| ContextError::Store(StoreError::Invalid(e));
    record.validate_unminted().map_err(invalid)?;
    let op = Op::of(record).map_err(invalid)?;
    let target = match (op.target(), view) {
        (Some(id), Some(view)) => Some(view.get(&id).ok_or_else(|| {
            ContextError::Refused(format!(
                "#{} is not an operation this log holds",
                id.short()
            ))
        })?),
        _ => None,
    };
    person_decides(&record.actor, &op, target)?;
    let Some(view) = view else {
        return Ok(());
    };
    if let Some(address) = &record.address
        && view.holds_address(address)
    {
        return Err(ContextError::Refused(format!(
            "the log already holds an operation with content address {address}"
        )));
    }
    // A reset's `before` may be any operation; everything else it names
    // must hold a subject.
    let Some(id) = op.target().filter(|_| !matches!(op, Op::Reset { .. })) else {
        return Ok(());
    };
    let state = view.state(&id);
    if let Op::Withdraw { .. } = op {
        // Only a suggestion is taken back: the fold ignores a withdraw of
        // anything else, and one evidence settled is a rule a person drops.
        let refused = |why: String| {
            Err(ContextError::Refused(format!(
                "refusing to withdraw #{}: {why}",
                id.short()
            )))
        };
        let drop = format!(
            "a person drops it with `kapi context review --drop {}`",
            id.short()
        );
        return match state.map(|s| (s.status, s.kept)) {
            Some((_, true)) => refused(format!(
                "a person kept it, so it is no longer a suggestion; {drop}"
            )),
            Some((Status::Suggested | Status::Contested, false)) => Ok(()),
            Some((status, false)) => refused(format!(
                "it is {} and no longer a suggestion; {drop}",
                status.as_str()
            )),
            None => refused("it states no rule or note".into()),
        };
    }
    if state.is_none() {
        return Err(ContextError::Refused(format!(
            "#{} holds no rule or note to act on",
            id.short()
        )));
    }
    Ok(())
}

/// Whether recording `record` can change what is in force (and so the
/// rules files): a person's decision, an import or edit, an
/// establishment, a person's correction, or a merge signal (a person
/// signal, which settling reads).
fn changes_in_force(record: &Record) -> bool {
    match record.kind {
        Kind::Keep
        | Kind::Drop
        | Kind::Widen
        | Kind::Reset
        | Kind::Import
        | Kind::Edit
        | Kind::Establish => true,
        Kind::Correct => record.actor.kind == ActorKind::Person,
        Kind::Signal => record
            .signal
            .as_ref()
            .is_some_and(|s| s.source == SignalSource::Merge),
        Kind::Observe | Kind::Withdraw | Kind::Check => false,
    }
}

impl Session {
    /// The key that signs `records` (git's SSH signing key), when any of
    /// them wants a signature ([`trust::wanted`]) and git names one. With
    /// `[trust] decisions = "signed"`, a person's decision with no key is
    /// refused: the fold would not count it.
    fn signer_for(
        &self,
        kind: ActorKind,
        records: &[Record],
    ) -> Result<Option<Signer>, ContextError> {
        let Some(wanted) = records.iter().find_map(trust::wanted) else {
            return Ok(None);
        };
        let home = self.env().var_os("HOME").map(PathBuf::from);
        let signer = self.store.git().ssh_signer(home.as_deref());
        let signed_mode = self
            .config
            .trust
            .as_ref()
            .is_some_and(|t| t.decisions == trust::Mode::Signed);
        if signer.is_none() && signed_mode && kind == ActorKind::Person {
            return Err(ContextError::Refused(format!(
                "this project counts a person's decision only when it is signed ([trust] decisions = \"signed\" in kapi.toml), and git names no SSH signing key for {}: set one with `git config gpg.format ssh` and `git config user.signingkey ~/.ssh/id_ed25519.pub`, and list it with `kapi trust add {} ~/.ssh/id_ed25519.pub` (docs/security.md). Nothing was recorded",
                wanted.principal(),
                wanted.principal()
            )));
        }
        if let (Some(signer), true, ActorKind::Person) = (&signer, signed_mode, kind) {
            self.signer_listed(signer, wanted, self.write_ms(kind)?)?;
        }
        Ok(signer)
    }

    /// With `[trust] decisions = "signed"`, refuse a person's decision
    /// signed by a key the allowed-signers file (as the default branch
    /// holds it) does not list for them, valid at `at_ms`, in the
    /// namespace `kapi`: the fold would ignore it. A private key file with
    /// no `.pub` beside it is judged by the public half `ssh-keygen -y`
    /// derives ([`Signer::public_key`]); a key whose public half cannot be
    /// found at all is not judged here: doctor names what the fold ignores.
    fn signer_listed(
        &self,
        signer: &Signer,
        wanted: trust::Vouch<'_>,
        at_ms: u64,
    ) -> Result<(), ContextError> {
        let (Some(key), Some(trust)) = (signer.public_key(), self.trust()) else {
            return Ok(());
        };
        let principal = wanted.principal();
        let listed = trust.listed(key.key_data(), principal);
        if listed.iter().any(|s| s.valid_at(at_ms)) {
            return Ok(());
        }
        let file = self
            .config
            .trust
            .as_ref()
            .map_or(crate::config::DEFAULT_ALLOWED_SIGNERS, |t| {
                t.allowed_signers()
            });
        // A private key file with no `.pub` beside it: write that first.
        let (public, derive) = match (signer.public_file(), signer.key_file()) {
            (Some(public), _) => (public.display().to_string(), String::new()),
            (None, Some(key)) => (
                format!("{}.pub", key.display()),
                format!(
                    "write its public half with `ssh-keygen -y -f {} > {}.pub`, ",
                    key.display(),
                    key.display()
                ),
            ),
            (None, None) => ("<your public key file>".to_owned(), String::new()),
        };
        let why = if listed.is_empty() {
            format!("is not listed for {principal} in {file} as the default branch holds it")
        } else {
            format!(
                "is listed for {principal} in {file}, but not valid now (valid-after, valid-before)"
            )
        };
        Err(ContextError::Refused(format!(
            "this project counts a person's decision only when it is signed by a key listed for them ([trust] decisions = \"signed\" in kapi.toml), and the key git signs with ({}) {why}, so the decision would be ignored: {derive}list it with `kapi trust add {principal} {public}`, commit {file} and bring that commit to the default branch (docs/security.md). Nothing was recorded",
            signer.describe()
        )))
    }

    /// Whether this session's actor may record operations of `kind` at
    /// all: asked before work a refusal would waste (the door asks the
    /// whole policy again of every draft).
    pub fn permits(&self, kind: Kind) -> Result<(), ContextError> {
        Ok(crate::ops::policy::permits(self.actor(), kind)?)
    }

    /// The records `drafts` would be, admitted as [`Session::record`]
    /// admits them, without appending anything (a dry run).
    pub fn admit_all(
        &self,
        drafts: Vec<Draft>,
        view: Option<&Ledger>,
    ) -> Result<Vec<Record>, ContextError> {
        self.admit_by(self.actor(), drafts, view)
    }

    fn admit_by(
        &self,
        actor: &Actor,
        drafts: Vec<Draft>,
        view: Option<&Ledger>,
    ) -> Result<Vec<Record>, ContextError> {
        // One batch, one checkout: HEAD is read once, not once a draft.
        let basis = self.basis();
        let records: Vec<Record> = drafts
            .into_iter()
            .map(|d| d.into_record(&self.project, actor.clone(), basis.clone()))
            .collect();
        for record in &records {
            admit(view, record)?;
        }
        Ok(records)
    }

    /// Record `drafts` (one commit per log, in the order given) by this
    /// session's actor, each admitted first ([`admit`]) against `view`
    /// (the log as the writer read it; read here when a draft needs it
    /// and none is given). A refused draft refuses the whole batch and
    /// nothing is appended.
    pub fn record(
        &self,
        drafts: Vec<Draft>,
        view: Option<&Ledger>,
    ) -> Result<Recorded, ContextError> {
        self.record_by(self.actor(), drafts, view, true)
    }

    /// [`Session::record`] over the whole ledger the caller read to decide
    /// it, which is handed over: after the append, it gives the next reader
    /// its view ([`super::checkpointed::after_write`]), before the rules
    /// files are refreshed from that view.
    pub fn record_deciding(
        &self,
        drafts: Vec<Draft>,
        ledger: Ledger,
    ) -> Result<Recorded, ContextError> {
        self.record_over(self.actor(), drafts, Over::Whole(Box::new(ledger)), true)
    }

    /// [`Session::record`] by one of kapi's own tools acting in this
    /// session (the checker's usage counts, settling, a merge's signals, a
    /// hook's check run), which the policy judges as that actor. The rules
    /// files are left to the caller: a command that records in several
    /// steps (a sync: signals, then establishments) refreshes once, at its
    /// end.
    pub fn record_as(
        &self,
        actor: &Actor,
        drafts: Vec<Draft>,
        view: Option<&Ledger>,
    ) -> Result<Vec<Record>, ContextError> {
        Ok(self.record_by(actor, drafts, view, false)?.records)
    }

    /// The instant a write by an actor of `kind` is dated at: the call's
    /// clock, except that an agent never dates its own operation by
    /// `KAPI_NOW` in the kapi people install ([`super::write_clock`]).
    fn write_ms(&self, kind: ActorKind) -> Result<u64, ContextError> {
        Ok(super::write_clock(
            kind,
            self.now_ms()?,
            self.env().wall_ms(),
            cfg!(debug_assertions),
        ))
    }

    /// Append admitted records as one commit per log, in the order given
    /// (the store mints their ids and instants), and register the checkout.
    fn append(&self, kind: ActorKind, records: Vec<Record>) -> Result<Vec<Record>, ContextError> {
        let signer = self.signer_for(kind, &records)?;
        let sign = |record: &Record| -> Result<Option<String>, String> {
            let Some(signer) = &signer else {
                return Ok(None);
            };
            if trust::wanted(record).is_none() {
                return Ok(None);
            }
            let armored = signer
                .sign(trust::NAMESPACE, record.signed_bytes().as_bytes())
                .map_err(|e| e.to_string())?;
            trust::from_armored(&armored).map(Some).ok_or_else(|| {
                format!(
                    "signing with {} gave no SSH signature in the namespace `kapi`",
                    signer.describe()
                )
            })
        };
        let recorded =
            self.store
                .append_signed(self.write_ms(kind)?, self.env().random(), records, &sign)?;
        // A whole-project check appends its usage signals, most often
        // none: nothing recorded, nothing to register (and no registry to
        // read a second time).
        if !recorded.is_empty() {
            self.register();
        }
        Ok(recorded)
    }

    fn record_by(
        &self,
        actor: &Actor,
        drafts: Vec<Draft>,
        view: Option<&Ledger>,
        refresh: bool,
    ) -> Result<Recorded, ContextError> {
        self.record_over(actor, drafts, Over::Borrowed(view), refresh)
    }

    fn record_over(
        &self,
        actor: &Actor,
        drafts: Vec<Draft>,
        over: Over<'_>,
        refresh: bool,
    ) -> Result<Recorded, ContextError> {
        let view = match &over {
            Over::Borrowed(view) => *view,
            Over::Whole(ledger) => Some(&**ledger),
        };
        if drafts.is_empty() {
            return Ok(Recorded {
                records: Vec::new(),
                refreshed: Vec::new(),
                refresh_error: None,
            });
        }
        let needs_view = drafts
            .iter()
            .any(|d| d.target().is_some() || d.address.is_some());
        let read;
        let view = match view {
            Some(view) => Some(view),
            None if needs_view => {
                read = self.rules_ledger()?;
                Some(&read)
            }
            None => None,
        };
        let records = self.admit_by(actor, drafts, view)?;
        let in_force = records.iter().any(changes_in_force);
        let recorded = self.append(actor.kind, records)?;
        if let Over::Whole(ledger) = over {
            super::checkpointed::after_write(self, *ledger);
        }
        let (refreshed, refresh_error) = if refresh && in_force {
            super::rulesfiles::refresh_after_change(self)
        } else {
            (Vec::new(), None)
        };
        Ok(Recorded {
            records: recorded,
            refreshed,
            refresh_error,
        })
    }
}

/// What a write is admitted over: a ledger the caller keeps (or none),
/// or the whole ledger it read to decide, handed over.
enum Over<'a> {
    Borrowed(Option<&'a Ledger>),
    Whole(Box<Ledger>),
}

#[cfg(test)]
mod tests {
    //! The law that guards the door: every record the door admits, the
    //! fold applies (it is never `ignored`), and every draft the door
    //! refuses is one the fold would ignore, but for one refusal on
    //! purpose: the door does not let an author withdraw a suggestion that
    //! evidence already settled (a rule in force, which a person drops),
    //! where the fold, reading in order, still sees a suggestion.
    use proptest::prelude::*;

    use super::admit;
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{Actor, ActorKind, Basis, Kind};
    use crate::ops::{Draft, Drafted, Ledger, Record, Status};

    /// Who acts: a person, an agent in one of two sessions, a tool.
    fn actor(who: u8) -> Actor {
        match who % 4 {
            0 => Actor {
                kind: ActorKind::Person,
                name: "ada@example.com".into(),
                session: None,
            },
            1 | 2 => Actor {
                kind: ActorKind::Agent,
                name: "claude-code".into(),
                session: Some(format!("s{}", who % 4).into()),
            },
            _ => Actor::tool("check"),
        }
    }

    /// One operation: its kind, its actor, the earlier operation it names
    /// (an index into what came before) and a few bits of content.
    #[derive(Debug, Clone)]
    struct Gen {
        kind: Kind,
        who: u8,
        target: usize,
        term: u8,
        address: Option<u8>,
    }

    fn operation() -> impl Strategy<Value = Gen> {
        (
            proptest::sample::select(Kind::ALL.to_vec()),
            any::<u8>(),
            any::<usize>(),
            0u8..3,
            proptest::option::weighted(0.2, 0u8..3),
        )
            .prop_map(|(kind, who, target, term, address)| Gen {
                kind,
                who,
                target,
                term,
                address,
            })
    }

    fn draft(g: &Gen, ids: &[OpId]) -> Option<Draft> {
        let named = || ids.get(g.target % ids.len().max(1)).copied();
        let needs_target = !matches!(
            g.kind,
            Kind::Observe | Kind::Correct | Kind::Import | Kind::Check
        );
        let target = match needs_target {
            true => named()?,
            // Not used by these kinds.
            false => OpId::mint(EPOCH_MS, 0, None).ok()?,
        };
        let what = Drafted::sample(g.kind, target, g.term);
        let draft = Draft::from(what);
        Some(match g.address {
            Some(a) => draft.addressed(format!("sha256:{a}")),
            None => draft,
        })
    }

    /// The record of `g` at position `n`, its id minted in order.
    fn record(n: usize, g: &Gen, ids: &[OpId]) -> Option<Record> {
        let mut r = draft(g, ids)?.into_record("p", actor(g.who), Basis::default());
        let id = OpId::mint(EPOCH_MS + 1000 * n as u64, n as u128 + 1, None).ok()?;
        r.id = id.as_str().into();
        r.at = id.instant().into();
        Some(r)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn the_door_admits_exactly_what_the_fold_applies(
            log in proptest::collection::vec(operation(), 0..16),
            last in operation(),
        ) {
            let mut records = Vec::new();
            let mut ids = Vec::new();
            for (n, g) in log.iter().enumerate() {
                // The log is any log a remote could push: what the door
                // would refuse is in it too.
                if let Some(r) = record(n, g, &ids) {
                    ids.push(r.op_id());
                    records.push(r);
                }
            }
            let Some(new) = record(log.len(), &last, &ids) else {
                return Ok(());
            };
            let view = Ledger::new(records.clone()).folded();
            let admitted = admit(Some(&view), &new);
            let mut all = records;
            all.push(new.clone());
            let folded = Ledger::new(all).folded();
            let ignored = folded.ignored.iter().find(|i| i.id.as_str() == new.id.as_str());
            match (&admitted, ignored) {
                (Ok(()), Some(i)) => prop_assert!(false, "the door admitted {new:?}, the fold ignored it: {}", i.reason),
                (Err(e), None) => {
                    // The one refusal on purpose: a withdraw of what
                    // evidence settled.
                    let settled = new.kind == Kind::Withdraw
                        && new.target.as_deref().and_then(|t| view.state(&OpId::parse(t).ok()?)).is_some_and(|s| {
                            !s.kept && !matches!(s.status, Status::Suggested | Status::Contested)
                        });
                    prop_assert!(settled, "the door refused {new:?} ({e}), the fold applied it");
                }
                _ => {}
            }
        }
    }
}
