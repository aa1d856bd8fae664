//! The terminal walk of the digest: the prompt, the keys, reading the
//! answers. Which item comes next, which decisions it takes and the round
//! an answer makes are the library's (`context::decisions`); every answer
//! is one round through the same `review` call the flags use.

use std::io::{BufRead, Write};

use super::digest::line;
use super::report;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{Out, stderr_line, stderr_text};
use crate::context::decisions::{Decision, next_item};
use crate::context::{Session, review};
use crate::ops::widen::WidenTo;

/// A decision as the walk offers it.
fn key(decision: Decision) -> &'static str {
    match decision {
        Decision::Keep => "[k]eep",
        Decision::Replace => "[r]eplace",
        Decision::Drop => "[d]rop",
        Decision::Choose => "[c]hoose",
        Decision::Widen => "[w]iden",
    }
}

/// What a person typed.
enum Answer {
    Decide(Decision),
    Skip,
    Quit,
}

fn answer(text: &str) -> Option<Answer> {
    Some(match text.to_lowercase().as_str() {
        "k" | "keep" => Answer::Decide(Decision::Keep),
        "r" | "replace" => Answer::Decide(Decision::Replace),
        "d" | "drop" => Answer::Decide(Decision::Drop),
        "c" | "choose" => Answer::Decide(Decision::Choose),
        "w" | "widen" => Answer::Decide(Decision::Widen),
        "s" | "skip" | "" => Answer::Skip,
        "q" | "quit" => Answer::Quit,
        _ => return None,
    })
}

/// Each item of the digest, awaiting ones first, and a question.
pub(super) fn walk(session: &Session, of: Option<&str>) -> Result<Exit, CliError> {
    let mut seen: Vec<crate::ops::OpId> = Vec::new();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut decided = 0usize;
    while let Some(item) = next_item(session, of, &seen)? {
        seen.push(item.id);
        let mut choices: Vec<&str> = Decision::on(&item).into_iter().map(key).collect();
        choices.extend(["[s]kip", "[q]uit"]);
        let prompt = format!(
            "{}\n  {}? ",
            crate::terminal::escape(&line(&item)),
            choices.join(" / ")
        );
        loop {
            let Some(typed) = ask(&mut input, &prompt)? else {
                return finish(decided);
            };
            let decision = match answer(&typed) {
                Some(Answer::Decide(d)) => d,
                Some(Answer::Skip) => break,
                Some(Answer::Quit) => return finish(decided),
                None => {
                    stderr_line(format!(
                        "error: `{typed}` is not one of {}",
                        choices.join(", ")
                    ));
                    continue;
                }
            };
            let mut to = None;
            if decision == Decision::Widen {
                let Some(text) = ask(&mut input, "  widen to (an axis, project or workspace)? ")?
                else {
                    return finish(decided);
                };
                match WidenTo::parse(&text) {
                    Ok(parsed) => to = Some(parsed),
                    Err(e) => {
                        stderr_text(format!("error: {e}"));
                        continue;
                    }
                }
            }
            let mut round = decision.round(&item, to);
            if decision == Decision::Replace {
                let Some(form) = ask(&mut input, "  form to use (empty: as proposed)? ")? else {
                    return finish(decided);
                };
                let Some(avoid) = ask(
                    &mut input,
                    "  forms to avoid, separated by commas (empty: as proposed)? ",
                )?
                else {
                    return finish(decided);
                };
                round.replace_use = Some(form).filter(|f| !f.is_empty());
                round.replace_avoid = avoid
                    .split(',')
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .map(str::to_owned)
                    .collect();
                if round.replace_use.is_none() && round.replace_avoid.is_empty() {
                    stderr_line("error: nothing replaced: give a form to use or forms to avoid");
                    continue;
                }
            }
            match review(session, round) {
                Ok(reviewed) => {
                    decided += reviewed.recorded.len();
                    let mut out = Out::new();
                    report(session, reviewed, &mut out)?;
                    out.flush()?;
                    break;
                }
                Err(e) => {
                    let e = CliError::from(e);
                    // The store failing ends the walk.
                    if e.exit == Exit::Store {
                        return Err(e);
                    }
                    // A refused or impossible decision: say why and ask again.
                    stderr_text(e.render());
                }
            }
        }
    }
    finish(decided)
}

fn finish(decided: usize) -> Result<Exit, CliError> {
    let mut out = Out::new();
    out.line(format!(
        "review done: {decided} operation{} recorded",
        if decided == 1 { "" } else { "s" }
    ))?;
    Ok(Exit::Ok)
}

/// Print `prompt`, read one answer (trimmed); `None` at the end of input.
fn ask(input: &mut impl BufRead, prompt: &str) -> Result<Option<String>, CliError> {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(prompt.as_bytes());
    let _ = out.flush();
    let mut answer = String::new();
    match input.read_line(&mut answer) {
        Ok(0) => Ok(None),
        Ok(_) => Ok(Some(answer.trim().to_owned())),
        Err(e) => Err(CliError::io("cannot read the answer", &e)),
    }
}
