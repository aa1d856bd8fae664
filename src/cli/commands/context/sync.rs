//! `kapi context sync`

use crate::cli::commands::{Ctx, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{Out, detail, stderr_line};
use crate::context::sync::{PushOutcome, SyncRequest, Synced, sync};
use crate::store::Joined;
use crate::wording::{count, noun};

/// Share the context with another repository: fetch its refs/kapi/ops,
/// merge it into yours by union (two machines merging the same two tips
/// write the same commit), settle what the evidence now supports, and push
/// fast-forward only, fetching and merging again when the remote moved
/// meanwhile. refs/kapi/local (check runs) never leaves this machine.
///
/// An agent may only read (`--no-push`); pushing and `--merged` are a
/// person's or a tool's act. See docs/sync.md for the refspec a clone
/// needs and the CI step.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote to sync with: a remote name or a URL (default: origin;
    /// with --no-push in a repository without origin, settle locally).
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// Fetch and merge only; push nothing.
    #[arg(long)]
    pub no_push: bool,
    /// A merged commit range (A..B, e.g. ORIG_HEAD..HEAD, both ends a
    /// commit): count how its changes write each suggestion and record
    /// merge signals.
    #[arg(long, value_name = "RANGE")]
    pub merged: Option<String>,
    /// With --merged: the pull request the range came from (read from
    /// merge and squash commit subjects when not given).
    #[arg(long, value_name = "NUMBER", requires = "merged")]
    pub pr: Option<String>,
    /// Merge the remote's log even when its operations name only other
    /// projects (refused by default: a remote of another project would
    /// otherwise mix its rules into this one for good). A person's act.
    #[arg(long)]
    pub allow_other_project: bool,
    /// Give up a fetch or push that takes longer than this many seconds
    /// (exit 6, naming the remote); default: `timeout` under [sync] in
    /// kapi.toml, else 120.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Print what happened as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let req = SyncRequest {
        remote: args.remote,
        push: !args.no_push,
        merged: args.merged,
        pr: args.pr,
        allow_other_project: args.allow_other_project,
        timeout: args.timeout.map(std::time::Duration::from_secs),
    };
    let before = shared_tip(&session);
    let synced = sync(&session, &req)?;
    moved(&session, before, &synced);
    report(&session, synced, args.json)
}

/// Where `refs/kapi/ops` points now, if anywhere (for `-v`).
pub(crate) fn shared_tip(session: &crate::context::Session) -> Option<String> {
    let [shared, _] = session.store.tips().ok()?;
    shared.map(|id| id.to_string())
}

/// `-v`: the refs a sync moved, as `git fetch -v` names them: this
/// repository's `refs/kapi/ops` (from its tip `before`) and, when it
/// pushed, the remote's. On stderr, so the report stays as it is.
pub(crate) fn moved(session: &crate::context::Session, before: Option<String>, synced: &Synced) {
    if crate::cli::global::Settings::get().verbose == 0 {
        return;
    }
    let after = shared_tip(session);
    let short = |id: &Option<String>| match id {
        Some(id) => id[..id.len().min(10)].to_owned(),
        None => "(none)".to_owned(),
    };
    if before == after {
        detail(1, format!("refs/kapi/ops: unchanged at {}", short(&after)));
    } else {
        detail(
            1,
            format!("refs/kapi/ops: {} -> {}", short(&before), short(&after)),
        );
    }
    if synced.push == PushOutcome::Pushed {
        detail(
            1,
            format!(
                "{}: refs/kapi/ops -> {} (pushed)",
                synced.remote,
                short(&after)
            ),
        );
    }
}

/// Print what a sync did (as one JSON object with `json`), its warnings on
/// stderr, and the rules files it refreshed.
pub(crate) fn report(
    session: &crate::context::Session,
    mut synced: Synced,
    json: bool,
) -> Result<Exit, CliError> {
    let mut out = Out::new();
    if json {
        out.json(&synced)?;
    } else if !crate::cli::global::Settings::get().quiet {
        describe(&synced, &mut out)?;
    }
    for value in synced.merged.iter().flat_map(|m| &m.skipped) {
        stderr_line(format!("warning: {}", value.describe()));
    }
    for r in &synced.fetched.unreadable {
        stderr_line(format!(
            "warning: fetched from {}: {}: {} (not merged)",
            synced.remote, r.location, r.error
        ));
    }
    if json {
        // The JSON names the rules files refreshed; a failure is the error.
        if let Some(e) = synced.refresh_error.take() {
            out.flush()?;
            return Err(e.into());
        }
    } else {
        report_rules_files(
            session,
            &synced.refreshed,
            synced.refresh_error.take(),
            &mut out,
        )?;
    }
    Ok(Exit::Ok)
}

fn describe(s: &Synced, out: &mut Out) -> Result<(), CliError> {
    let f = &s.fetched;
    let joined = match f.joined {
        _ if f.local_only => {
            "no remote (this repository has no origin): settled what this log holds".to_owned()
        }
        _ if !f.remote_has_log => format!("{} has no refs/kapi/ops yet", s.remote),
        Some(Joined::UpToDate) | None => format!("{} holds nothing new", s.remote),
        Some(Joined::Adopted) => format!(
            "took {}'s log: {}",
            s.remote,
            count(f.added, "operation", "operations")
        ),
        Some(Joined::FastForward) => format!(
            "fetched {} from {} (fast-forward)",
            count(f.added, "new operation", "new operations"),
            s.remote
        ),
        Some(Joined::Merged) => format!(
            "fetched {} from {} (merged by union)",
            count(f.added, "new operation", "new operations"),
            s.remote
        ),
    };
    out.line(joined)?;
    if f.refused > 0 {
        out.line(format!(
            "  {} fetched {} not merged: not valid operations of their segment, or other copies of operations this log holds (named on stderr)",
            f.refused,
            noun(f.refused, "line was", "lines were")
        ))?;
    }
    for id in &f.held_back {
        out.line(format!(
            "  held back #{}: dated more than 10 minutes past this machine's clock; it is not folded until its time comes",
            id.short()
        ))?;
    }
    if let Some(m) = s.merged.as_ref().filter(|m| m.suggestions == 0) {
        out.line(format!(
            "merged range {}: no suggestion awaits evidence, nothing to count",
            m.range
        ))?;
    } else if let Some(m) = &s.merged {
        let recorded = m.signals.iter().filter(|x| x.recorded).count();
        out.line(format!(
            "merged range {}: {}, {} changed, {} recorded ({} already held)",
            m.range,
            count(m.commits, "commit", "commits"),
            count(m.files, "prose file", "prose files"),
            count(recorded, "merge signal", "merge signals"),
            m.signals.len() - recorded
        ))?;
        for x in &m.signals {
            let pr = x.pr.as_ref().map(|p| format!(" #{p}")).unwrap_or_default();
            out.line(format!(
                "  #{} {}{pr}: +{} it, -{} an avoided form{}",
                x.target.short(),
                &x.commit[..x.commit.len().min(7)],
                count(x.preferred, "line writes", "lines write"),
                count(x.avoided, "line held", "lines held"),
                if x.recorded { "" } else { " (held)" }
            ))?;
        }
    }
    for e in &s.established {
        out.line(format!(
            "established #{} on {} (#{})",
            e.target.short(),
            e.because
                .iter()
                .map(|b| format!("#{}", b.short()))
                .collect::<Vec<_>>()
                .join(", "),
            e.id.short()
        ))?;
    }
    match s.push {
        PushOutcome::NotAsked => out.line("not pushed (--no-push)")?,
        PushOutcome::NothingToPush => {
            out.line("nothing to push: this repository holds no log yet")?
        }
        PushOutcome::Pushed if s.attempts > 1 => out.line(format!(
            "pushed refs/kapi/ops to {} ({} rounds: it moved meanwhile)",
            s.remote, s.attempts
        ))?,
        PushOutcome::Pushed => out.line(format!("pushed refs/kapi/ops to {}", s.remote))?,
    }
    Ok(())
}
