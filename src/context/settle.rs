//! Settling as a use case: record the merge signals a merged range gives
//! (`kapi context sync --merged A..B`), then an `establish` for every
//! suggestion the fold settles on a person's signal that no binding
//! establish names yet. Both are content-addressed, so running either
//! twice, or on two machines over the same log, records one operation.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use serde::Serialize;

use super::{ContextError, PointMap, Session};
use crate::check::files::ProseFilter;
use crate::check::markdown::{TextKind, prose};
use crate::check::{Matcher, TermRule};
use crate::digest::sha256_hex;
use crate::git::{CommitDiff, MergedRange};
use crate::ops::Ledger;
use crate::ops::Status;
use crate::ops::axes::Space;
use crate::ops::policy::{Sharing, may_share};
use crate::ops::record::{Actor, ActorKind, MAX_NAME, Signal, SignalSource};
use crate::ops::{Draft, Drafted, OpId, RuleId};

/// The actor settling records establishments as.
pub fn settler() -> Actor {
    Actor::tool("settle")
}

/// One establishment recorded.
#[derive(Debug, Clone, Serialize)]
pub struct Establishment {
    /// The establish operation.
    pub id: OpId,
    /// The suggestion it establishes.
    pub target: OpId,
    /// The person signals it rests on.
    pub because: Vec<OpId>,
}

/// The establishments the log supports that no binding establish names
/// yet, as drafts for the settler to record.
pub fn due(ledger: &Ledger) -> Vec<Draft> {
    crate::ops::settle::due(ledger)
        .into_iter()
        .map(|d| {
            Draft::from(Drafted::Establish {
                target: d.target,
                because: d.because,
            })
            .addressed(d.address)
        })
        .collect()
}

/// Record the establishments due, over a ledger the caller already
/// folded; returns them.
pub fn settle_in(session: &Session, ledger: Ledger) -> Result<Vec<Establishment>, ContextError> {
    let due = due(&ledger);
    let recorded = session.record_as(&settler(), due, Some(&ledger))?;
    // The next reader takes the view this ledger gives, when nothing else
    // was applied to it since it was read.
    super::checkpointed::after_write(session, ledger);
    Ok(recorded
        .into_iter()
        .filter_map(|r| {
            Some(Establishment {
                id: r.op_id(),
                target: r.target_id()?,
                because: r.because_ids(),
            })
        })
        .collect())
}

/// One merge signal recorded (or already held).
#[derive(Debug, Clone, Serialize)]
pub struct MergeSignal {
    pub target: OpId,
    pub commit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    /// Added lines that write the preferred form.
    pub preferred: u64,
    /// Removed lines that held an avoided form.
    pub avoided: u64,
    /// Whether this run recorded it (false: the log held it already).
    pub recorded: bool,
}

/// What reading a merged range found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MergeSignals {
    pub range: String,
    /// Suggestions that awaited evidence (none: the range was not read).
    pub suggestions: usize,
    /// Commits read (first parents only).
    pub commits: usize,
    /// Changed prose files read.
    pub files: usize,
    pub signals: Vec<MergeSignal>,
    /// Values a commit gave that are over a signal's limits, left out of
    /// its signals (which are recorded without them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedValue>,
}

/// A value of one commit left out of the merge signals: over the limit
/// the operation format sets for a signal's PR or merger
/// (`docs/operations.md`, "Limits"). The commit still counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedValue {
    pub commit: String,
    pub value: SignalValue,
    /// The value's length in bytes (the value itself is not repeated).
    pub bytes: usize,
    pub limit: usize,
}

/// Which value of a merge signal a commit gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignalValue {
    /// The pull request its subject names: left out, the commit counts
    /// with the range's commits that name none.
    Pr,
    /// Its author's name: left out, its signals name no merger.
    Merger,
}

impl SkippedValue {
    /// `commit 1a2b3c4: its subject names a pull request of 300 bytes, …`
    pub fn describe(&self) -> String {
        let short = &self.commit[..self.commit.len().min(7)];
        let (what, field, then) = match self.value {
            SignalValue::Pr => (
                "its subject names a pull request of",
                "PR",
                "the commit counts with those that name none",
            ),
            SignalValue::Merger => (
                "its author's name has",
                "merger",
                "its merge signals name no merger",
            ),
        };
        format!(
            "commit {short}: {what} {} bytes, over the {}-byte limit of a merge signal's {field}: left out ({then})",
            self.bytes, self.limit
        )
    }
}

/// `value` when a signal may hold it; otherwise `None`, with the commit
/// and the value named in `skipped`.
fn within_limit(
    value: Option<String>,
    what: SignalValue,
    commit: &crate::git::CommitDiff,
    skipped: &mut Vec<SkippedValue>,
) -> Option<String> {
    let value = value?;
    if value.len() <= MAX_NAME {
        return Some(value);
    }
    let skip = SkippedValue {
        commit: commit.id.to_string(),
        value: what,
        bytes: value.len(),
        limit: MAX_NAME,
    };
    if !skipped.contains(&skip) {
        skipped.push(skip);
    }
    None
}

/// The pull request a merge or squash commit's subject names:
/// "Merge pull request #412 from …", "Fix wording (#412)", "… (!412)".
pub fn pull_request_of(subject: &str) -> Option<String> {
    let digits = |s: &str| {
        let n: String = s.chars().take_while(char::is_ascii_digit).collect();
        (!n.is_empty()).then_some(n)
    };
    if let Some(rest) = subject.strip_prefix("Merge pull request #") {
        return digits(rest);
    }
    let trimmed = subject.trim_end();
    let inner = trimmed.strip_suffix(')')?;
    let open = inner.rfind('(')?;
    let tag = &inner[open + 1..];
    let number = tag.strip_prefix('#').or_else(|| tag.strip_prefix('!'))?;
    digits(number).filter(|n| n.len() == number.len())
}

/// Count, for every suggestion whose scope covers a changed prose file of
/// each commit in `range` (first parents), the added lines that write its
/// preferred form and the removed lines that held an avoided one, and
/// record a merge signal for each suggestion with either count above zero:
/// one per pull request the range merged (and one for its commits that
/// name none), naming the newest commit of each. `pr` overrides the pull
/// request read from commit subjects.
///
/// Over a ledger the caller already folded; the signals recorded are
/// applied to it, so the caller can settle without folding the log again.
/// By step: the suggestions awaiting evidence, the range walk, the hits in
/// each changed file, the signals, their records.
pub fn merge_signals_in(
    session: &Session,
    ledger: &mut Ledger,
    range: &str,
    pr: Option<&str>,
) -> Result<MergeSignals, ContextError> {
    may_share(session.actor(), Sharing::MergeSignals)?;
    // A range that is none is refused before anything is read, whether
    // or not a suggestion awaits evidence.
    let merged = merged_range(session, range)?;
    let pr = pr.map(|p| p.trim_start_matches('#'));
    if let Some(pr) = pr.filter(|p| p.len() > MAX_NAME) {
        return Err(ContextError::Usage(format!(
            "the pull request given has {} bytes, over the {MAX_NAME}-byte limit of a merge signal's PR",
            pr.len()
        )));
    }
    let mut report = MergeSignals {
        range: range.to_owned(),
        ..MergeSignals::default()
    };
    let signals = found_in(session, ledger, &merged, pr, &mut report)?;
    record_signals(session, ledger, signals, &mut report)?;
    Ok(report)
}

/// The merge signals `merged` gives the suggestions awaiting evidence in
/// `ledger`, each with its content address, filling in `report` all but
/// what was recorded. Only the suggestions and their states are read, so
/// a reader's view answers as the whole ledger.
fn found_in(
    session: &Session,
    ledger: &Ledger,
    merged: &MergedRange,
    pr: Option<&str>,
    report: &mut MergeSignals,
) -> Result<Vec<(OpId, String, Signal)>, ContextError> {
    let awaiting = awaiting_evidence(ledger, Some(session.now_ms()? as i64));
    report.suggestions = awaiting.len();
    if awaiting.is_empty() {
        return Ok(Vec::new());
    }
    let coverage = Coverage::new(session, &awaiting)?;
    let commits = session
        .store
        .git()
        .merged_commits_where(merged, true, &|path| coverage.wanted(path))
        .map_err(|e| {
            ContextError::Usage(format!(
                "cannot read the merged range {}: {e}",
                report.range
            ))
        })?;
    report.commits = commits.len();
    let groups = hits(&commits, pr, &coverage, report)?;
    Ok(signals_of(&groups, &awaiting, &mut report.skipped))
}

/// What a merge of `range` on the default branch leaves to record (the
/// post-merge hook): its merge signals, then the establishments due. The
/// range is read over the reader's view; the whole ledger (a second at a
/// million operations) is read only when there is something to record:
/// a signal the range gives, or an establishment due. The merge signals'
/// outcome comes first, the settling's second: an error in one does not
/// stop the other.
#[allow(clippy::type_complexity)]
pub fn merged_and_settled(
    session: &Session,
    range: &str,
) -> Result<
    (
        Result<MergeSignals, ContextError>,
        Result<Vec<Establishment>, ContextError>,
    ),
    ContextError,
> {
    let view = session.rules_ledger()?;
    let found = may_share(session.actor(), Sharing::MergeSignals)
        .map_err(ContextError::from)
        .and_then(|()| merged_range(session, range))
        .and_then(|merged| {
            let mut report = MergeSignals {
                range: range.to_owned(),
                ..MergeSignals::default()
            };
            let signals = found_in(session, &view, &merged, None, &mut report)?;
            Ok((report, signals))
        });
    let to_record = found.as_ref().is_ok_and(|(_, signals)| !signals.is_empty());
    let due = crate::ops::settle::any_due(&view);
    session.release(view);
    if !to_record && !due {
        return Ok((found.map(|(report, _)| report), Ok(Vec::new())));
    }
    let mut ledger = session.ledger()?;
    let signals = found.and_then(|(mut report, signals)| {
        record_signals(session, &mut ledger, signals, &mut report)?;
        Ok(report)
    });
    Ok((signals, settle_in(session, ledger)))
}

/// The suggestions awaiting evidence at `now`, as usage rules (each holds
/// where its scope covers): term rules an agent or a person suggested (an
/// import's rules are not suggestions of their own).
fn awaiting_evidence(ledger: &Ledger, now: Option<i64>) -> Vec<TermRule> {
    ledger
        .term_rules(None, now)
        .into_iter()
        .filter(|rule| rule.status == Status::Suggested && matches!(rule.id, RuleId::Op(_)))
        .map(|rule| TermRule {
            suggested: true,
            advisory: false,
            ..rule
        })
        .collect()
}

/// Which suggestions hold at a path (their positions in the awaiting
/// list), remembered per path: a range touches the same files again and
/// again.
struct Coverage<'a> {
    awaiting: &'a [TermRule],
    points: PointMap,
    space: &'a Space,
    filter: ProseFilter,
    seen: Mutex<HashMap<String, Vec<usize>>>,
}

impl<'a> Coverage<'a> {
    fn new(session: &'a Session, awaiting: &'a [TermRule]) -> Result<Self, ContextError> {
        Ok(Coverage {
            awaiting,
            points: PointMap::from_config(&session.config.points)?,
            space: &session.space,
            filter: ProseFilter::new(&session.config.check)
                .map_err(|e| ContextError::Usage(format!("kapi.toml [check]: {e}")))?
                .with_vale_styles(Some(&session.root)),
            seen: Mutex::default(),
        })
    }

    fn holding(&self, path: &str) -> Vec<usize> {
        if let Some(found) = self.seen.lock().ok().and_then(|m| m.get(path).cloned()) {
            return found;
        }
        let point = self.points.point(path);
        let holding: Vec<usize> = (0..self.awaiting.len())
            .filter(|&i| self.awaiting[i].scope.covers_in(Some(self.space), &point))
            .collect();
        if let Ok(mut m) = self.seen.lock() {
            m.insert(path.to_owned(), holding.clone());
        }
        holding
    }

    /// Whether the walk reads a changed file: prose some suggestion holds at.
    fn wanted(&self, path: &str) -> bool {
        self.filter.is_prose(path) && !self.holding(path).is_empty()
    }
}

/// One group of the range's commits: those of one pull request (from
/// `--pr` or the merge or squash commit's subject), or those that name
/// none. Each suggestion gets one signal per group, naming the group's
/// newest commit (the walk lists newest first) and its merger.
struct Group<'c> {
    newest: &'c CommitDiff,
    pr: Option<String>,
    /// Per suggestion (its position in the awaiting list): added lines
    /// that write its preferred form, removed lines that held an avoided one.
    counts: BTreeMap<usize, (u64, u64)>,
}

/// The hits in every changed prose file of `commits`, counted per group
/// and suggestion.
fn hits<'c>(
    commits: &'c [CommitDiff],
    pr: Option<&str>,
    coverage: &Coverage<'_>,
    report: &mut MergeSignals,
) -> Result<Vec<Group<'c>>, ContextError> {
    let mut matchers: BTreeMap<Vec<usize>, Matcher> = BTreeMap::new();
    let mut groups: Vec<Group<'c>> = Vec::new();
    for commit in commits {
        let pr = pr.map(str::to_owned).or_else(|| {
            within_limit(
                pull_request_of(&commit.subject),
                SignalValue::Pr,
                commit,
                &mut report.skipped,
            )
        });
        let g = match groups.iter().position(|g| g.pr == pr) {
            Some(g) => g,
            None => {
                groups.push(Group {
                    newest: commit,
                    pr,
                    counts: BTreeMap::new(),
                });
                groups.len() - 1
            }
        };
        for file in commit.files.iter().filter(|f| !f.opaque) {
            report.files += 1;
            let holding = coverage.holding(&file.path);
            if !matchers.contains_key(&holding) {
                let chosen: Vec<TermRule> = holding
                    .iter()
                    .map(|&i| coverage.awaiting[i].clone())
                    .collect();
                let m =
                    Matcher::for_usage(&chosen).map_err(|e| ContextError::Usage(e.to_string()))?;
                matchers.insert(holding.clone(), m);
            }
            let matcher = &matchers[&holding];
            let kind = coverage.filter.format_of(&file.path);
            for (lines, preferred_side) in [(&file.added, true), (&file.removed, false)] {
                for (local, writes) in lines_with_hits(matcher, lines, kind, preferred_side) {
                    let entry = groups[g].counts.entry(holding[local]).or_default();
                    if preferred_side {
                        entry.0 += writes;
                    } else {
                        entry.1 += writes;
                    }
                }
            }
        }
    }
    Ok(groups)
}

/// The merge signals the groups' counts give, each with its content
/// address (what makes a second run, or another machine's, record none).
fn signals_of(
    groups: &[Group<'_>],
    awaiting: &[TermRule],
    skipped: &mut Vec<SkippedValue>,
) -> Vec<(OpId, String, Signal)> {
    let mut signals = Vec::new();
    for group in groups {
        for (&i, &(preferred, avoided)) in &group.counts {
            if preferred == 0 && avoided == 0 {
                continue;
            }
            // Only a rule of the log awaits evidence.
            let RuleId::Op(target) = awaiting[i].id else {
                continue;
            };
            let commit_id = group.newest.id.to_string();
            let merger = Some(group.newest.author.clone()).filter(|a| !a.is_empty());
            let merger = within_limit(merger, SignalValue::Merger, group.newest, skipped);
            let address = format!(
                "sha256:{}",
                sha256_hex(
                    format!("merge\n{target}\n{commit_id}\n{preferred}\n{avoided}\n").as_bytes()
                )
            );
            signals.push((
                target,
                address,
                Signal {
                    source: SignalSource::Merge,
                    preferred,
                    avoided,
                    commit: Some(commit_id),
                    pr: group.pr.clone(),
                    merger,
                },
            ));
        }
    }
    signals
}

/// Record the signals the log does not hold yet, through the door, as the
/// merge actor; each is reported (recorded or already held), and what is
/// recorded is applied to `ledger`.
fn record_signals(
    session: &Session,
    ledger: &mut Ledger,
    signals: Vec<(OpId, String, Signal)>,
    report: &mut MergeSignals,
) -> Result<(), ContextError> {
    let mut to_record = Vec::new();
    for (target, address, signal) in signals {
        let recorded = !ledger.holds_address(&address);
        report.signals.push(MergeSignal {
            target,
            commit: signal.commit.clone().unwrap_or_default(),
            pr: signal.pr.clone(),
            preferred: signal.preferred,
            avoided: signal.avoided,
            recorded,
        });
        if recorded {
            to_record.push(Draft::from(Drafted::Signal { target, signal }).addressed(address));
        }
    }
    let merger = merge_actor(session.actor());
    for r in session.record_as(&merger, to_record, Some(&*ledger))? {
        // A line another writer journaled meanwhile may sort after ours:
        // then fold afresh.
        if ledger.apply(r).is_err() {
            *ledger = session.ledger()?;
            break;
        }
    }
    ledger.finish();
    Ok(())
}

/// The merged range `range` names, resolved; a usage error naming it and
/// what a valid one looks like when it is not `A..B` with both ends
/// commits this repository holds.
pub fn merged_range(session: &Session, range: &str) -> Result<MergedRange, ContextError> {
    session
        .store
        .git()
        .merged_range(range)
        .map_err(|e| ContextError::Usage(e.to_string()))
}

/// Merge signals are kapi's own evidence: recorded as the tool that runs
/// (the CI step's `ci`), or as the tool `merge` when a person runs it.
fn merge_actor(actor: &Actor) -> Actor {
    match actor.kind {
        ActorKind::Tool => actor.clone(),
        ActorKind::Person | ActorKind::Agent => Actor::tool("merge"),
    }
}

/// For the lines of one side of a file's diff, read as one text (so a
/// fence among them masks what it holds), how many lines write each rule's
/// preferred form (`preferred_side`) or an avoided form: (rule, lines).
fn lines_with_hits(
    matcher: &Matcher,
    lines: &[String],
    kind: TextKind,
    preferred_side: bool,
) -> Vec<(usize, u64)> {
    if lines.is_empty() {
        return Vec::new();
    }
    let text = lines.join("\n");
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let p = prose(&text, kind);
    let mut seen: BTreeSet<(usize, usize)> = BTreeSet::new();
    for hit in matcher.hits(&text, &p) {
        if hit.preferred != preferred_side {
            continue;
        }
        let line = starts.partition_point(|&s| s <= hit.start) - 1;
        seen.insert((hit.rule, line));
    }
    let mut out: BTreeMap<usize, u64> = BTreeMap::new();
    for (rule, _) in seen {
        *out.entry(rule).or_default() += 1;
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::pull_request_of;

    #[test]
    fn the_pull_request_comes_from_a_merge_or_squash_subject() {
        assert_eq!(
            pull_request_of("Merge pull request #412 from ada/wording").as_deref(),
            Some("412")
        );
        assert_eq!(
            pull_request_of("Fix wording (#412)").as_deref(),
            Some("412")
        );
        assert_eq!(pull_request_of("Fix wording (!37)").as_deref(), Some("37"));
        assert_eq!(pull_request_of("Fix wording (#41a)"), None);
        assert_eq!(pull_request_of("Fix wording"), None);
        assert_eq!(pull_request_of("Bump (see notes)"), None);
    }
}
