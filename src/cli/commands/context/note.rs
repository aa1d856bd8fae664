//! `kapi context note`

use crate::cli::commands::{Ctx, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::{NoteRequest, NoteWhat, note};

/// Record what you noticed. A term rule, a pair or a correction needs evidence:
/// the file it was seen in (--path) or a quotation (--quote). An agent
/// recording a person's change names the file they changed (--path): git
/// must show it, the --from wording committed or staged, the --to wording
/// in the work tree.
///
/// Examples:
///   kapi context note --term Quickcast --instead-of "Quick cast" --path docs/intro.md --quote "Open Quick cast"
///   kapi context note "The docs address the administrator" --path docs/admin.md
///   kapi context note --from "Quick cast" --to Quickcast --suggest --path docs/intro.md
///   kapi context note --pair "Sign in" --target Anmelden --path docs/de/login.md
///   kapi context note --withdraw 0n79tw5k9s
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// A note in prose (when no --term, --from/--to or --withdraw is given).
    #[arg(value_name = "TEXT")]
    pub text: Option<String>,
    /// The form the project uses (a term rule).
    #[arg(long, value_name = "FORM", conflicts_with_all = ["text", "from", "withdraw", "pair"])]
    pub term: Option<String>,
    /// A content-memory pair: the phrase (with --target, its rendering
    /// kept, e.g. at a locale's point: --point locale=de).
    #[arg(long, value_name = "SOURCE", requires = "target", conflicts_with_all = ["text", "from", "withdraw"])]
    pub pair: Option<String>,
    /// With --pair: the rendering kept for the phrase.
    #[arg(long, value_name = "TEXT", requires = "pair")]
    pub target: Option<String>,
    /// A form the project avoids instead of --term (repeatable); spacing, hyphen and capitalisation variants are derived.
    #[arg(long = "instead-of", value_name = "FORM", requires = "term")]
    pub instead_of: Vec<String>,
    /// The wording a person changed (a correction).
    #[arg(long, value_name = "WORDING", requires = "to", conflicts_with_all = ["text", "withdraw"])]
    pub from: Option<String>,
    /// The wording the person changed it to.
    #[arg(long, value_name = "WORDING", requires = "from")]
    pub to: Option<String>,
    /// With --from/--to: also suggest the term rule the change implies.
    #[arg(long, requires = "from")]
    pub suggest: bool,
    /// Withdraw one of your own suggestions (an id or an unambiguous prefix).
    #[arg(long, value_name = "ID", conflicts_with_all = ["text", "path", "quote"])]
    pub withdraw: Option<String>,
    /// The file the evidence was seen in (relative to the work tree).
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// A quotation of the evidence.
    #[arg(long, value_name = "TEXT")]
    pub quote: Option<String>,
    /// The unit within the file (a line, a heading, a string key).
    #[arg(long, value_name = "UNIT")]
    pub unit: Option<String>,
    /// Narrow where it holds: axis=value (repeatable). Only narrows the evidence's point.
    #[arg(long, value_name = "AXIS=VALUE")]
    pub point: Vec<String>,
    /// First instant it holds (a date or an RFC 3339 instant), inclusive.
    #[arg(long, value_name = "WHEN")]
    pub valid_from: Option<String>,
    /// Instant it stops holding, exclusive (a date excludes that whole day).
    #[arg(long, value_name = "WHEN")]
    pub valid_to: Option<String>,
    /// Why, in your words.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Print the recorded operation as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let what = if let Some(term) = args.term {
        NoteWhat::Term {
            term,
            instead_of: args.instead_of,
        }
    } else if let (Some(source), Some(target)) = (args.pair, args.target) {
        NoteWhat::Pair { source, target }
    } else if let (Some(from), Some(to)) = (args.from, args.to) {
        NoteWhat::Correction {
            from,
            to,
            suggest: args.suggest,
        }
    } else if let Some(target) = args.withdraw {
        NoteWhat::Withdraw { target }
    } else if let Some(text) = args.text {
        NoteWhat::Prose { text }
    } else {
        return Err(CliError::usage("nothing to record").with_hint(
            "say what: a note in prose, --term with --instead-of, --pair with --target, --from with --to, or --withdraw <id>",
        ));
    };
    let session = ctx.session()?;
    let request = NoteRequest {
        what,
        path: args.path,
        quote: args.quote,
        unit: args.unit,
        point: args.point,
        valid_from: args.valid_from,
        valid_to: args.valid_to,
        note: args.note,
    };
    let mut noted = note(&session, request)?;
    let mut out = Out::new();
    if args.json {
        out.exact(noted.record.to_canonical_json())?;
        return Ok(Exit::Ok);
    }
    let record = &noted.record;
    out.line(format!(
        "recorded #{} {} {}",
        record.short(),
        record.kind.as_str(),
        noted.describe()
    ))?;
    report_rules_files(
        &session,
        &noted.refreshed,
        noted.refresh_error.take(),
        &mut out,
    )?;
    if noted.suggests() {
        let next = match record.actor.kind {
            // A person recording a note is the person who decides it: the
            // decision its state takes (a suggestion that disagrees with
            // a rule is contested at once, and only a choice settles it).
            // The reader's view answers for a rule's state as the whole
            // ledger does, and a new suggestion is taken into it without
            // reading the rest of a long log.
            crate::ops::ActorKind::Person => {
                let ledger = session.rules_ledger()?;
                let contested = ledger
                    .state(&record.op_id())
                    .is_some_and(|s| s.status == crate::ops::Status::Contested);
                session.release(ledger);
                if contested {
                    format!(
                        "until you choose a side: kapi context review --choose {}",
                        record.short()
                    )
                } else {
                    format!(
                        "until you keep it: kapi context review --keep {}",
                        record.short()
                    )
                }
            }
            // An agent's note is not folded again here (noting stays one
            // append); the digest says what a person may do with it.
            crate::ops::ActorKind::Agent | crate::ops::ActorKind::Tool => {
                "until a person decides in review: kapi context review".to_owned()
            }
        };
        out.line(format!("it advises as a suggestion {next}"))?;
    }
    Ok(Exit::Ok)
}
