//! The digest printed: what awaits a decision, what is in force, the
//! imported rules that disagree, and the decisions the items awaiting one
//! take (`context::decisions`).

use crate::cli::commands::{contested_by, disagreement};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::decisions::{Decision, digest};
use crate::context::{Pending, Session};

/// `across the workspace at brand=acme`, `at channel=app`, `across the project`.
pub(super) fn where_(scope: &crate::ops::record::Scope) -> String {
    let axes = crate::ops::scope::pairs(&scope.point);
    let across = if scope.workspace {
        "across the workspace"
    } else {
        "in the project"
    };
    if axes.is_empty() {
        format!("{across}, everywhere")
    } else {
        format!("{across} at {}", axes.join(", "))
    }
}

/// One digest line: `0ttd83m11q suggested "X", not "Y" [contested by #…]
/// · agent claude-code [s1] · seen in 1 session · droppable, widenable`.
pub(super) fn line(p: &Pending) -> String {
    let contest = contested_by(&p.contested_by)
        .map(|c| format!(" {c}"))
        .unwrap_or_default();
    let at = if p.scope.point.is_empty() && !p.scope.workspace {
        String::new()
    } else {
        format!(" [{}]", where_(&p.scope))
    };
    let standing = p
        .standing
        .as_ref()
        .map(|s| format!(" · {s}"))
        .unwrap_or_default();
    let mut may = Vec::new();
    if p.keepable {
        may.push(if p.contested_by.is_empty() {
            "keepable"
        } else {
            "choosable"
        });
    }
    if p.droppable {
        may.push("droppable");
    }
    if p.widenable {
        may.push("widenable");
    }
    // The other operations that state the rule: one item, every member.
    let also: Vec<String> = p
        .members
        .iter()
        .skip(1)
        .map(|m| {
            let at = if m.scope == p.scope {
                String::new()
            } else {
                format!(" [{}]", where_(&m.scope))
            };
            format!("#{} ({}){at}", m.short, who(m.yours, &m.actor))
        })
        .collect();
    let also = if also.is_empty() {
        String::new()
    } else {
        format!(" · also {}", also.join(", "))
    };
    format!(
        "{} {} {}{at}{contest} · {}{also}{standing} · {}",
        p.short,
        p.status.as_str(),
        p.subject,
        who(p.yours, &p.actor),
        may.join(", ")
    )
}

/// Who recorded an item: "you" when the reader did, else the party's
/// label (a teammate by name, an agent with its session).
fn who(yours: bool, label: &str) -> &str {
    if yours { "you" } else { label }
}

/// A decision as the flag that takes it.
fn flag(decision: Decision) -> &'static str {
    match decision {
        Decision::Keep => "--keep <id>",
        Decision::Replace => "--keep <id> --replace-use <form>",
        Decision::Drop => "--drop <id>",
        Decision::Choose => "--choose <id>",
        Decision::Widen => "--widen <id> --widen-to <where>",
    }
}

pub(super) fn print(session: &Session, of: Option<&str>, json: bool) -> Result<Exit, CliError> {
    let digest = digest(session, of)?;
    let mut out = Out::new();
    if json {
        // Through a JSON value: its keys sorted, as the digest has always
        // printed them.
        let value = serde_json::to_value(&digest)
            .map_err(|e| CliError::new(Exit::Internal, format!("cannot write the digest: {e}")))?;
        out.json(&value)?;
        return Ok(Exit::Ok);
    }
    for (title, items) in [
        ("Awaiting a decision:", &digest.awaiting),
        ("In force:", &digest.in_force),
    ] {
        if !items.is_empty() {
            out.line(title)?;
            for p in items {
                out.line(format!("  {}", line(p)))?;
            }
        }
    }
    if !digest.disagreeing.is_empty() {
        out.line(format!(
            "imported rules that disagree ({}; both report until one file changes):",
            digest.disagreeing.len()
        ))?;
        for d in &digest.disagreeing {
            out.line(format!("  {}", disagreement(d)))?;
        }
    }
    if !digest.not_counted.is_empty() {
        out.line(format!(
            "decisions that do not count ({}; [trust] decisions = \"signed\"):",
            digest.not_counted.len()
        ))?;
        for n in &digest.not_counted {
            out.line(format!("  #{}  {}", n.id.short(), n.reason))?;
        }
    }
    if digest.awaiting.is_empty() {
        out.line("nothing awaits a decision")?;
    } else {
        let flags: Vec<&str> = Decision::offered(&digest.awaiting)
            .into_iter()
            .map(flag)
            .collect();
        out.line(format!(
            "{} awaiting a decision: kapi context review {}",
            digest.awaiting.len(),
            flags.join(" | ")
        ))?;
    }
    Ok(Exit::Ok)
}
