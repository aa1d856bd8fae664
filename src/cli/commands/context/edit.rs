//! `kapi context edit`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::context::changeset::{ChangeSet, RuleEdit, apply_change_set};

/// (For people) Edit a rule in force: its preferred form, the forms it
/// avoids, where or when it holds, whether it binds. Recorded as one `edit`
/// operation naming the rule, established from the start: the rule as it
/// now is replaces the one named. `kapi apply` takes many edits at once.
///
/// Examples:
///   kapi context edit 0tt2jb --prefer QuickCast
///   kapi context edit 0tt2jb --avoid "Quick cast" --avoid "Quick-cast"
///   kapi context edit 0tt2jb --point product=quickcast --valid-to 2027-01-01
///   kapi context edit 0tt2jb --advisory yes
///   kapi context edit 0q81ms --target "Jetzt anmelden"     (a pair)
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The rule in force (an id or an unambiguous prefix).
    #[arg(value_name = "ID")]
    pub id: String,
    /// A term rule's form to use.
    #[arg(long, value_name = "FORM")]
    pub prefer: Option<String>,
    /// A form to avoid (repeatable; replaces the forms avoided, variants derived).
    #[arg(long, value_name = "FORM")]
    pub avoid: Vec<String>,
    /// A pair's phrase.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["prefer", "avoid", "text"])]
    pub source: Option<String>,
    /// A pair's rendering.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["prefer", "avoid", "text"])]
    pub target: Option<String>,
    /// A note's text.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["prefer", "avoid"])]
    pub text: Option<String>,
    /// Where it holds: axis=value (repeatable), replacing its point.
    #[arg(long, value_name = "AXIS=VALUE", conflicts_with = "project")]
    pub point: Vec<String>,
    /// It holds at every point of the project (clears its point).
    #[arg(long)]
    pub project: bool,
    /// First instant it holds (date or RFC 3339), inclusive; `none` removes the bound.
    #[arg(long, value_name = "WHEN")]
    pub valid_from: Option<String>,
    /// Instant it stops holding, exclusive; `none` removes the bound.
    #[arg(long, value_name = "WHEN")]
    pub valid_to: Option<String>,
    /// Whether it only advises (yes) or binds (no).
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub advisory: Option<bool>,
    /// Why, in your words.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Print what was recorded as one JSON document.
    #[arg(long)]
    pub json: bool,
}

fn bound(text: Option<String>) -> Option<Option<String>> {
    text.map(|t| (t != "none").then_some(t))
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let point = if args.project {
        Some(Default::default())
    } else if args.point.is_empty() {
        None
    } else {
        Some(
            crate::ops::scope::parse_point(&args.point)
                .map_err(|e| CliError::usage(e.to_string()))?
                .into_iter()
                .collect(),
        )
    };
    let edit = RuleEdit {
        rule: args.id,
        preferred: args.prefer,
        avoid: (!args.avoid.is_empty()).then_some(args.avoid),
        source: args.source,
        target: args.target,
        text: args.text,
        point,
        valid_from: bound(args.valid_from),
        valid_to: bound(args.valid_to),
        advisory: args.advisory,
        note: args.note,
    };
    let session = ctx.session()?;
    let set = ChangeSet {
        edits: vec![edit],
        content: Vec::new(),
    };
    let applied = apply_change_set(&session, set)?;
    crate::cli::commands::apply::report(&session, applied, args.json)
}
