//! The shell door: what Claude Code's PreToolUse hook for `Bash` refuses
//! before the command runs (`kapi hook claude-pre-bash`, docs/hooks.md).
//!
//! A command is refused when it runs a kapi person verb, sets or unsets
//! `CLAUDECODE` or a `KAPI_*` variable, or writes under `.git/kapi` or to
//! `refs/kapi/*`. The command is read as sh reads it: cut at its unquoted
//! operators (`;`, `&&`, `||`, `|`, `&`, newlines, parentheses,
//! redirections) by a scan that only tracks quoting, and each piece split
//! into words by `shlex`. `sh -c`, `bash -c`, `eval` and command
//! substitutions are read as commands in turn, a few levels deep. A command
//! that cannot be read (an unbalanced quote) is let through and said so,
//! never guessed at.
//!
//! This is a guard against an agent's slip, not a sandbox: an agent that
//! runs arbitrary code as the user (a script, `python -c`, a variable
//! holding a path) can do anything the user can (docs/security.md).

use std::fmt;

/// How many levels of `sh -c`, `eval` and `$(…)` are read inside each other.
const MAX_DEPTH: usize = 3;

/// What the guard decided about one Bash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing the guard stops.
    Allow,
    /// The command does something only a person does.
    Refuse(Refusal),
    /// The command could not be read as shell words: let through, and the
    /// reason said, never guessed at.
    Unparsed(String),
}

/// A refused command: the simple command that was refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The refused simple command, its words as sh would read them.
    pub command: String,
    pub rule: Rule,
}

/// Why a command is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// A kapi verb that records or undoes a person's decision, or moves the
    /// ledger between machines: `context review --keep`, `context reset`.
    PersonVerb(String),
    /// Sets or unsets a variable that tells kapi who is calling.
    Variable(String),
    /// Writes kapi's ledger behind kapi's back: a path under `.git/kapi`,
    /// a ref under `refs/kapi/`.
    Ledger(String),
    /// Writes the file `CLAUDE_ENV_FILE` names: Claude Code exports what
    /// it holds into every later command (kapi's SessionStart hook puts
    /// `KAPI_SESSION` there).
    EnvFile,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::PersonVerb(verb) => {
                let what = match verb.as_str() {
                    "context review" => "decides on suggestions",
                    "context reset" => "sets the ledger back",
                    "context sync" => "pushes the ledger, or merges what only a person vouches for",
                    "store import" => "adds operations to the ledger",
                    "workspace add" | "workspace forget" => {
                        "changes which repositories share rules"
                    }
                    "hooks uninstall" => "removes kapi's hooks, this guard among them",
                    _ => "records a decision",
                };
                write!(f, "`kapi {verb}` {what}, a person's act")
            }
            Rule::Variable(name) => write!(
                f,
                "it sets or unsets {name}, which tells kapi who is calling"
            ),
            Rule::EnvFile => write!(
                f,
                "it writes the file CLAUDE_ENV_FILE names, whose exports tell kapi who is calling"
            ),
            Rule::Ledger(what) => write!(
                f,
                "it writes {what}, kapi's ledger, which only kapi itself writes"
            ),
        }
    }
}

/// Decide about one Bash command (the `command` of a Bash tool call).
pub fn judge(command: &str) -> Verdict {
    match script(command, 0) {
        Ok(None) => Verdict::Allow,
        Ok(Some(refusal)) => Verdict::Refuse(refusal),
        Err(why) => Verdict::Unparsed(why),
    }
}

/// `CLAUDECODE` and `KAPI_*`: the variables kapi reads to tell who calls.
pub fn guarded_variable(name: &str) -> bool {
    name == "CLAUDECODE" || name.starts_with("KAPI_")
}

type Judged = Result<Option<Refusal>, String>;

/// A script: every simple command in it, and every script inside it.
fn script(text: &str, depth: usize) -> Judged {
    if depth > MAX_DEPTH {
        return Err(format!(
            "commands nested more than {MAX_DEPTH} levels deep (sh -c, eval, $(…))"
        ));
    }
    let scanned = scan(text)?;
    for inner in &scanned.substitutions {
        if let Some(refusal) = script(inner, depth + 1)? {
            return Ok(Some(refusal));
        }
    }
    for segment in &scanned.segments {
        let simple = split(segment)?;
        if let Some(rule) = simple_command(&simple, depth)? {
            return Ok(Some(Refusal {
                command: shown(&simple),
                rule,
            }));
        }
    }
    Ok(None)
}

// ---------------------------------------------------------------------------
// Reading the command

/// A redirection's direction: only one that writes is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    Write,
    Read,
}

/// One simple command as the scan cut it: its text, then each redirection
/// (its direction and operator) with the text after it, whose first word
/// is the redirection's target.
#[derive(Debug, Default)]
struct Segment {
    head: String,
    redirects: Vec<(Redirect, String, String)>,
}

impl Segment {
    fn current(&mut self) -> &mut String {
        match self.redirects.last_mut() {
            Some((_, _, text)) => text,
            None => &mut self.head,
        }
    }

    fn is_empty(&self) -> bool {
        self.head.trim().is_empty() && self.redirects.is_empty()
    }
}

#[derive(Debug, Default)]
struct Scanned {
    segments: Vec<Segment>,
    /// The scripts of `$(…)` and backquotes, read as commands in turn.
    substitutions: Vec<String>,
}

/// Cut `text` at its unquoted operators. Only quoting is tracked here;
/// the words are shlex's.
fn scan(text: &str) -> Result<Scanned, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Scanned::default();
    let mut seg = Segment::default();
    let mut word_start = true;
    let mut i = 0;
    let end_segment = |seg: &mut Segment, out: &mut Scanned| {
        let done = std::mem::take(seg);
        if !done.is_empty() {
            out.segments.push(done);
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\\' => {
                seg.current().push(c);
                if let Some(n) = next {
                    seg.current().push(n);
                }
                i += 2;
                word_start = false;
                continue;
            }
            '\'' => {
                let close = find(&chars, i + 1, '\'').ok_or("an unbalanced single quote")?;
                seg.current().extend(&chars[i..=close]);
                i = close + 1;
                word_start = false;
                continue;
            }
            '"' => {
                let close = double_quoted(&chars, i + 1, &mut out.substitutions)?;
                seg.current().extend(&chars[i..=close]);
                i = close + 1;
                word_start = false;
                continue;
            }
            '`' => {
                let close = backquoted(&chars, i + 1, &mut out.substitutions)?;
                seg.current().extend(&chars[i..=close]);
                i = close + 1;
                word_start = false;
                continue;
            }
            '$' if next == Some('(') => {
                let close = substitution(&chars, i + 2, &mut out.substitutions)?;
                seg.current().extend(&chars[i..=close]);
                i = close + 1;
                word_start = false;
                continue;
            }
            '#' if word_start => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            ';' | '\n' | '(' | ')' => end_segment(&mut seg, &mut out),
            '&' if next == Some('>') => {
                let len = if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                let op = chars[i..i + len].iter().collect();
                seg.redirects.push((Redirect::Write, op, String::new()));
                i += len;
                word_start = true;
                continue;
            }
            '&' | '|' => {
                end_segment(&mut seg, &mut out);
                if matches!(next, Some('&' | '|')) {
                    i += 1;
                }
            }
            '>' | '<' => {
                // `2>file`: the descriptor is not a word of the command.
                let current = seg.current();
                let digits = current
                    .chars()
                    .rev()
                    .take_while(char::is_ascii_digit)
                    .count();
                if digits > 0 {
                    let before = current.chars().rev().nth(digits);
                    if before.is_none_or(char::is_whitespace) {
                        let keep = current.chars().count() - digits;
                        *current = current.chars().take(keep).collect();
                    }
                }
                let mut len = 1;
                let mut kind = if c == '>' {
                    Redirect::Write
                } else {
                    Redirect::Read
                };
                while let Some(&n) = chars.get(i + len) {
                    match (c, n) {
                        ('>', '>' | '|' | '&') | ('<', '<' | '&' | '-') => len += 1,
                        ('<', '>') => {
                            kind = Redirect::Write;
                            len += 1;
                        }
                        _ => break,
                    }
                }
                // `>(…)` and `<(…)`: the parenthesis starts a command.
                let op = chars[i..i + len].iter().collect();
                seg.redirects.push((kind, op, String::new()));
                i += len;
                word_start = true;
                continue;
            }
            c if c.is_whitespace() => {
                seg.current().push(c);
                word_start = true;
                i += 1;
                continue;
            }
            _ => {
                seg.current().push(c);
                word_start = false;
                i += 1;
                continue;
            }
        }
        // An operator ended the segment.
        word_start = true;
        i += 1;
    }
    end_segment(&mut seg, &mut out);
    Ok(out)
}

fn find(chars: &[char], from: usize, close: char) -> Option<usize> {
    (from..chars.len()).find(|&j| chars[j] == close)
}

/// The closing quote of a double-quoted string opened before `from`.
fn double_quoted(chars: &[char], from: usize, subs: &mut Vec<String>) -> Result<usize, String> {
    let mut j = from;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '"' => return Ok(j),
            '`' => j = backquoted(chars, j + 1, subs)? + 1,
            '$' if chars.get(j + 1) == Some(&'(') => j = substitution(chars, j + 2, subs)? + 1,
            _ => j += 1,
        }
    }
    Err("an unbalanced double quote".into())
}

/// The closing backquote of a substitution opened before `from`.
fn backquoted(chars: &[char], from: usize, subs: &mut Vec<String>) -> Result<usize, String> {
    let mut j = from;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '`' => {
                subs.push(chars[from..j].iter().collect());
                return Ok(j);
            }
            _ => j += 1,
        }
    }
    Err("an unbalanced backquote".into())
}

/// The closing parenthesis of `$(` opened before `from` (`$((…))`, an
/// arithmetic expansion, runs no command).
fn substitution(chars: &[char], from: usize, subs: &mut Vec<String>) -> Result<usize, String> {
    let mut depth = 1;
    let mut j = from;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 1,
            '\'' => j = find(chars, j + 1, '\'').ok_or("an unbalanced single quote")?,
            '"' => j = double_quoted(chars, j + 1, subs)?,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    if chars.get(from) != Some(&'(') {
                        subs.push(chars[from..j].iter().collect());
                    }
                    return Ok(j);
                }
            }
            _ => {}
        }
        j += 1;
    }
    Err("an unbalanced `$(`".into())
}

/// A simple command's words and the files it redirects output to.
#[derive(Debug, Default)]
struct Simple {
    words: Vec<String>,
    /// Each redirection that writes: its operator and target.
    writes: Vec<(String, String)>,
}

fn split(segment: &Segment) -> Result<Simple, String> {
    let words =
        |text: &str| shlex::split(text).ok_or_else(|| String::from("words shlex cannot split"));
    let mut simple = Simple {
        words: words(&segment.head)?,
        writes: Vec::new(),
    };
    for (kind, op, text) in &segment.redirects {
        let mut after = words(text)?.into_iter();
        if let Some(target) = after.next()
            && *kind == Redirect::Write
        {
            simple.writes.push((op.clone(), target));
        }
        simple.words.extend(after);
    }
    Ok(simple)
}

/// A simple command shown back in a refusal, quoted as sh would read it
/// (and cut short: the reason must fit Claude Code's output cap).
fn shown(simple: &Simple) -> String {
    let quoted = |words: &[String]| {
        shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
    };
    let mut text = quoted(&simple.words);
    for (op, target) in &simple.writes {
        text.push_str(&format!(" {op} {}", quoted(std::slice::from_ref(target))));
    }
    let text = text.trim_start().to_owned();
    if text.chars().count() > 200 {
        let cut: String = text.chars().take(200).collect();
        format!("{cut}…")
    } else {
        text
    }
}

// ---------------------------------------------------------------------------
// The rules

fn simple_command(simple: &Simple, depth: usize) -> Result<Option<Rule>, String> {
    for (_, target) in &simple.writes {
        if let Some(rule) = written(target, false) {
            return Ok(Some(rule));
        }
    }
    command(&simple.words, depth)
}

fn assignment(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

fn variable(name: &str) -> Option<Rule> {
    guarded_variable(name).then(|| Rule::Variable(name.to_owned()))
}

/// The command name a word runs (`/usr/bin/git` runs `git`).
fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The words of one command, after its leading assignments and the
/// wrappers that run what follows them.
fn command(words: &[String], depth: usize) -> Result<Option<Rule>, String> {
    let mut rest = words;
    loop {
        // Leading `NAME=value` assignments.
        while let Some(first) = rest.first()
            && let Some(name) = assignment(first)
        {
            if let Some(rule) = variable(name) {
                return Ok(Some(rule));
            }
            rest = &rest[1..];
        }
        let Some(first) = rest.first() else {
            return Ok(None);
        };
        let args = &rest[1..];
        match program(first) {
            // Keywords and wrappers that run the words after them.
            "!" | "{" | "}" | "if" | "then" | "else" | "elif" | "do" | "while" | "until"
            | "time" | "nohup" | "builtin" | "command" | "exec" => {
                rest = skip_options(args, &["-a"]);
            }
            "sudo" | "doas" => {
                rest = skip_options(
                    args,
                    &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
                );
            }
            "nice" => rest = skip_options(args, &["-n"]),
            "timeout" => {
                let after = skip_options(args, &["-s", "-k"]);
                rest = after.get(1..).unwrap_or_default();
            }
            "xargs" => {
                rest = skip_options(
                    args,
                    &["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "-e", "-i"],
                );
            }
            "env" => match env(args, depth)? {
                Env::Refused(rule) => return Ok(Some(rule)),
                Env::Runs(i) => rest = &args[i..],
            },
            "export" | "unset" | "declare" | "typeset" | "local" | "readonly" => {
                let mut named = args
                    .iter()
                    .filter(|a| !a.starts_with('-') && !a.starts_with('+'))
                    .map(|a| assignment(a).unwrap_or(a));
                return Ok(named.find_map(variable));
            }
            "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" => {
                return shell(args, depth);
            }
            "eval" => {
                return Ok(script(&args.join(" "), depth + 1)?.map(|r| r.rule));
            }
            "kapi" | "git-kapi" => return Ok(kapi(args)),
            "git" => return Ok(git(args)),
            other => return Ok(files(other, args)),
        }
    }
}

/// The words after `args`' options; `with_value` take the next word.
fn skip_options<'a>(args: &'a [String], with_value: &[&str]) -> &'a [String] {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            return &args[i + 1..];
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        i += if with_value.contains(&arg.as_str()) {
            2
        } else {
            1
        };
    }
    args.get(i..).unwrap_or_default()
}

enum Env {
    Refused(Rule),
    /// The command runs from this word on.
    Runs(usize),
}

fn env(args: &[String], depth: usize) -> Result<Env, String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let unset = if arg == "-u" || arg == "--unset" {
            i += 1;
            args.get(i).map(String::as_str)
        } else {
            arg.strip_prefix("--unset=")
                .or_else(|| arg.strip_prefix("-u"))
        };
        if let Some(name) = unset {
            if let Some(rule) = variable(name) {
                return Ok(Env::Refused(rule));
            }
        } else if arg == "-i" || arg == "-" || arg == "--ignore-environment" {
            // A cleared environment drops CLAUDECODE.
            return Ok(Env::Refused(Rule::Variable("CLAUDECODE".into())));
        } else if arg == "-S" || arg == "--split-string" || arg.starts_with("--split-string=") {
            let text = match arg.strip_prefix("--split-string=") {
                Some(t) => t.to_owned(),
                None => args.get(i + 1..).unwrap_or_default().join(" "),
            };
            return Ok(match script(&text, depth + 1)? {
                Some(refusal) => Env::Refused(refusal.rule),
                None => Env::Runs(args.len()),
            });
        } else if arg == "-C" || arg == "--chdir" {
            i += 1;
        } else if let Some(name) = assignment(arg) {
            if let Some(rule) = variable(name) {
                return Ok(Env::Refused(rule));
            }
        } else if !arg.starts_with('-') {
            break;
        }
        i += 1;
    }
    Ok(Env::Runs(i.min(args.len())))
}

/// `sh -c '…'`: the script is read as commands in turn.
fn shell(args: &[String], depth: usize) -> Result<Option<Rule>, String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "-o" || arg == "+o" {
            iter.next();
            continue;
        }
        if !arg.starts_with('-') && !arg.starts_with('+') {
            // A script file: not read.
            return Ok(None);
        }
        if !arg.starts_with("--") && arg[1..].contains('c') {
            let Some(text) = iter.find(|a| !a.starts_with('-') && !a.starts_with('+')) else {
                return Ok(None);
            };
            return Ok(script(text, depth + 1)?.map(|r| r.rule));
        }
    }
    Ok(None)
}

/// kapi's verbs that are a person's: they record or undo decisions, or
/// carry the ledger between machines and workspaces.
fn kapi(args: &[String]) -> Option<Rule> {
    // `-C DIR` is global: it may come anywhere.
    let mut words = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "-C" {
            iter.next();
        } else if !arg.starts_with("-C") {
            words.push(arg.as_str());
        }
    }
    if words.iter().any(|w| matches!(*w, "-h" | "--help")) {
        return None;
    }
    let positional: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !w.starts_with('-'))
        .take(2)
        .collect();
    let has = |flag: &str| {
        words
            .iter()
            .any(|w| *w == flag || w.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
    };
    let verb = match positional.as_slice() {
        ["context", "review"]
            // `--interactive` takes its answers from stdin, a pipe here.
            if ["--keep", "--drop", "--choose", "--widen", "--interactive"]
                .iter()
                .any(|f| has(f)) =>
        {
            "context review"
        }
        ["context", "reset"] if !has("--dry-run") => "context reset",
        ["context", "sync"]
            if !has("--no-push") || has("--merged") || has("--allow-other-project") =>
        {
            "context sync"
        }
        ["store", "import"] => "store import",
        ["workspace", "add"] => "workspace add",
        ["workspace", "forget"] => "workspace forget",
        ["hooks", "uninstall"] => "hooks uninstall",
        _ => return None,
    };
    Some(Rule::PersonVerb(verb.to_owned()))
}

/// git: the ledger's refs written by hand, and `git kapi`.
fn git(args: &[String]) -> Option<Rule> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if matches!(
            arg.as_str(),
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
        ) {
            i += 2;
        } else if arg.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let sub = args.get(i)?;
    let rest = &args[i + 1..];
    let kapi_ref = |w: &String| w.contains("refs/kapi");
    let ledger = || Some(Rule::Ledger("refs/kapi/".into()));
    match sub.as_str() {
        "kapi" => kapi(rest),
        "update-ref" | "symbolic-ref" if rest.iter().any(kapi_ref) => ledger(),
        "push" if rest.iter().any(|w| kapi_ref(w) || w == "--mirror") => ledger(),
        // A refspec whose destination is under refs/kapi/.
        "fetch" | "pull"
            if rest.iter().any(|w| {
                !w.starts_with('-')
                    && w.split_once(':')
                        .is_some_and(|(_, dst)| dst.contains("refs/kapi"))
            }) =>
        {
            ledger()
        }
        _ => None,
    }
}

/// The commands that write, move or remove files, given a path under
/// `.git/kapi` (or, for removing and moving, `.git` itself).
fn files(program: &str, args: &[String]) -> Option<Rule> {
    let operands = || args.iter().filter(|a| !a.starts_with('-'));
    match program {
        "rm" | "rmdir" | "unlink" | "shred" | "mv" => operands().find_map(|p| written(p, true)),
        "touch" | "truncate" | "tee" | "chmod" | "chown" | "mkdir" => {
            operands().find_map(|p| written(p, false))
        }
        "sed" | "perl"
            if args
                .iter()
                .any(|a| a.starts_with("-i") || a.starts_with("--in-place")) =>
        {
            operands().find_map(|p| written(p, false))
        }
        "cp" | "ln" | "install" | "rsync" => {
            let target = args.iter().enumerate().find_map(|(i, a)| {
                if a == "-t" {
                    args.get(i + 1).map(String::as_str)
                } else {
                    a.strip_prefix("--target-directory=")
                }
            });
            target
                .or_else(|| operands().next_back().map(String::as_str))
                .and_then(|p| written(p, true))
        }
        "dd" => args
            .iter()
            .filter_map(|a| a.strip_prefix("of="))
            .find_map(|p| written(p, false)),
        _ => None,
    }
}

/// Whether writing `path` is refused: the file `CLAUDE_ENV_FILE` names
/// (as the variable: its value is not known here), or kapi's store
/// (`…/.git/kapi`, or what is under it; with `or_parent`, also `…/.git`
/// itself). A glob counts when it could match (`.git/k*`).
fn written(path: &str, or_parent: bool) -> Option<Rule> {
    if path.contains("CLAUDE_ENV_FILE") {
        return Some(Rule::EnvFile);
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let under = parts
        .windows(2)
        .any(|w| component_matches(w[0], ".git") && component_matches(w[1], "kapi"));
    let parent = or_parent && parts.last().is_some_and(|p| component_matches(p, ".git"));
    (under || parent).then(|| Rule::Ledger(".git/kapi".into()))
}

/// Whether one path component (maybe a glob) names `name`. As sh does, a
/// glob matches a name starting with a dot only when it starts with one.
fn component_matches(component: &str, name: &str) -> bool {
    if component == name {
        return true;
    }
    if !component.contains(['*', '?', '['])
        || (name.starts_with('.') && !component.starts_with('.'))
    {
        return false;
    }
    globset::Glob::new(component).is_ok_and(|g| g.compile_matcher().is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(command: &str) -> Rule {
        match judge(command) {
            Verdict::Refuse(r) => r.rule,
            other => panic!("{command:?} was not refused: {other:?}"),
        }
    }

    fn allowed(command: &str) {
        assert_eq!(judge(command), Verdict::Allow, "{command:?}");
    }

    fn verb(v: &str) -> Rule {
        Rule::PersonVerb(v.into())
    }

    fn var(v: &str) -> Rule {
        Rule::Variable(v.into())
    }

    fn dir() -> Rule {
        Rule::Ledger(".git/kapi".into())
    }

    fn refs() -> Rule {
        Rule::Ledger("refs/kapi/".into())
    }

    #[test]
    fn person_verbs_are_refused_and_reading_verbs_allowed() {
        for (command, v) in [
            ("kapi context review --keep 3f2a", "context review"),
            (
                "kapi context review --session s1 --keep all",
                "context review",
            ),
            ("kapi context review --drop=3f2a", "context review"),
            (
                "kapi context review --choose 3f2a --note why",
                "context review",
            ),
            (
                "kapi context review --widen 3f2a --widen-to project",
                "context review",
            ),
            (
                "yes k | kapi context review --interactive",
                "context review",
            ),
            ("kapi context reset --before s1", "context reset"),
            ("kapi context sync", "context sync"),
            ("kapi context sync --remote origin --json", "context sync"),
            ("kapi context sync --no-push --merged A..B", "context sync"),
            (
                "kapi context sync --no-push --allow-other-project",
                "context sync",
            ),
            ("kapi store import ops.jsonl", "store import"),
            ("kapi workspace add ../other", "workspace add"),
            ("kapi workspace forget other", "workspace forget"),
            ("kapi hooks uninstall", "hooks uninstall"),
            ("kapi hooks uninstall --claude", "hooks uninstall"),
            ("kapi -C ../repo context reset --before s1", "context reset"),
            ("kapi context -C ../repo reset --before s1", "context reset"),
            ("kapi -C../repo store import -", "store import"),
            (
                "/usr/local/bin/kapi context review --keep a",
                "context review",
            ),
            ("git kapi context reset --before s1", "context reset"),
            ("git -C ../repo kapi store import x", "store import"),
            ("git-kapi workspace add .", "workspace add"),
            ("\\kapi context sync", "context sync"),
            ("'kapi' context sync", "context sync"),
        ] {
            assert_eq!(refused(command), verb(v), "{command:?}");
        }
        for command in [
            "kapi context review",
            "kapi context review --session s1 --json",
            "kapi context reset --before s1 --dry-run",
            "kapi context sync --no-push",
            "kapi context sync --no-push --json --remote origin",
            "kapi store export -",
            "kapi store doctor",
            "kapi workspace list",
            "kapi hooks install --claude",
            "kapi hooks status",
            "kapi check docs/",
            "kapi context note --term Quickcast --avoid 'Quick cast'",
            "kapi context log --session this",
            "kapi context reset --help",
            "kapi context review --keep x -h",
            "kapi",
            "echo kapi context reset --before s1",
            "grep -r 'kapi context sync' docs",
            "cargo run -- --help",
        ] {
            allowed(command);
        }
    }

    #[test]
    fn every_command_of_a_list_or_pipeline_is_judged() {
        for command in [
            "cargo test && kapi context sync",
            "cargo test || kapi context sync",
            "cargo test; kapi context sync",
            "cargo test;kapi context sync",
            "cargo test&&kapi context sync",
            "echo y | kapi context sync",
            "echo y|kapi context sync",
            "kapi context sync &",
            "sleep 1 & kapi context sync",
            "cargo test\nkapi context sync",
            "(cd .. && kapi context sync)",
            "{ kapi context sync; }",
            "if true; then kapi context sync; fi",
            "for i in 1; do kapi context sync; done",
            "! kapi context sync",
            "echo $(kapi context sync)",
            "echo \"$(kapi context sync)\"",
            "echo `kapi context sync`",
            "diff <(kapi context sync) x",
            "kapi context sync 2>/dev/null",
            "kapi context sync >out.txt 2>&1",
        ] {
            assert_eq!(refused(command), verb("context sync"), "{command:?}");
        }
        for command in [
            "echo 'kapi context sync'",
            "echo \"kapi context sync; kapi store import x\"",
            "echo a\\;kapi context sync",
            "git commit -m 'kapi context sync && kapi store import'",
            "echo hi # kapi context sync",
            "echo $((1 + 2))",
            "cat <<< 'kapi context sync'",
        ] {
            allowed(command);
        }
    }

    #[test]
    fn wrappers_and_nested_shells_are_looked_through() {
        for command in [
            "sh -c 'kapi context sync'",
            "bash -c \"kapi context sync --remote origin\"",
            "bash -lc 'cd /repo && kapi context sync'",
            "bash -o pipefail -c 'kapi context sync | cat'",
            "/bin/sh -ec 'kapi context sync'",
            "eval kapi context sync",
            "eval 'kapi context sync'",
            "sh -c \"bash -c 'kapi context sync'\"",
            "env kapi context sync",
            "env -C /repo kapi context sync",
            "env FOO=1 kapi context sync",
            "env -S 'kapi context sync'",
            "exec kapi context sync",
            "command kapi context sync",
            "nohup kapi context sync",
            "time kapi context sync",
            "nice -n 10 kapi context sync",
            "timeout 30 kapi context sync",
            "timeout -s KILL 30s kapi context sync",
            "sudo -u me kapi context sync",
            "xargs -n 1 kapi context sync",
            "FOO=1 BAR=2 kapi context sync",
        ] {
            assert_eq!(refused(command), verb("context sync"), "{command:?}");
        }
        for command in [
            "sh -c 'kapi context sync --no-push'",
            "bash script.sh",
            "bash -c 'cargo test'",
            "bash -o pipefail -c 'cargo test | tee log'",
            "env",
            "env FOO=1",
            "timeout 30 cargo test",
        ] {
            allowed(command);
        }
        // Deeper than the bound: not read, and said so.
        let deep = "sh -c \"sh -c 'sh -c \\\"sh -c kapi\\\"'\"";
        assert!(matches!(judge(deep), Verdict::Unparsed(_)), "{deep}");
    }

    #[test]
    fn the_variables_that_name_the_caller_are_not_set_or_unset() {
        for (command, name) in [
            (
                "CLAUDECODE= kapi context note --term A --avoid B",
                "CLAUDECODE",
            ),
            ("CLAUDECODE=0 kapi context log", "CLAUDECODE"),
            ("KAPI_SESSION=x kapi context log", "KAPI_SESSION"),
            ("FOO=1 KAPI_ACTOR=me cargo test", "KAPI_ACTOR"),
            ("KAPI_NOW+=1", "KAPI_NOW"),
            ("CLAUDECODE=", "CLAUDECODE"),
            ("env -u CLAUDECODE kapi context log", "CLAUDECODE"),
            ("env -uCLAUDECODE kapi context log", "CLAUDECODE"),
            ("env --unset=KAPI_SESSION kapi context log", "KAPI_SESSION"),
            ("env --unset KAPI_SESSION kapi context log", "KAPI_SESSION"),
            ("env -i kapi context log", "CLAUDECODE"),
            ("env - PATH=/bin kapi context log", "CLAUDECODE"),
            ("env KAPI_ACTOR=me kapi context log", "KAPI_ACTOR"),
            ("export KAPI_ACTOR=me", "KAPI_ACTOR"),
            ("export FOO=1 CLAUDECODE=", "CLAUDECODE"),
            ("export -n CLAUDECODE", "CLAUDECODE"),
            ("unset CLAUDECODE", "CLAUDECODE"),
            ("unset -v KAPI_SESSION", "KAPI_SESSION"),
            ("declare -x KAPI_ACTOR=me", "KAPI_ACTOR"),
            (
                "cd /repo && unset CLAUDECODE && kapi context log",
                "CLAUDECODE",
            ),
            ("sh -c 'unset CLAUDECODE; kapi context log'", "CLAUDECODE"),
            ("sudo CLAUDECODE= kapi context log", "CLAUDECODE"),
        ] {
            assert_eq!(refused(command), var(name), "{command:?}");
        }
        for command in [
            "echo 'export KAPI_SESSION=other' >> \"$CLAUDE_ENV_FILE\"",
            "echo x >$CLAUDE_ENV_FILE",
            "echo x | tee -a ${CLAUDE_ENV_FILE}",
            "cp /tmp/env \"$CLAUDE_ENV_FILE\"",
        ] {
            assert_eq!(refused(command), Rule::EnvFile, "{command:?}");
        }
        allowed("cat \"$CLAUDE_ENV_FILE\"");
        for command in [
            "echo $CLAUDECODE",
            "printenv KAPI_SESSION",
            "FOO=1 cargo test",
            "export PATH=/bin:$PATH",
            "unset FOO",
            "echo KAPI_ACTOR=me",
            "env -u FOO cargo test",
            "RUST_LOG=debug KAPI=1 cargo test",
        ] {
            allowed(command);
        }
    }

    #[test]
    fn the_ledger_is_written_only_by_kapi() {
        for command in [
            "git update-ref refs/kapi/ops HEAD",
            "git update-ref -d refs/kapi/ops",
            "git -C ../repo update-ref refs/kapi/ops abc",
            "git -c core.x=1 symbolic-ref refs/kapi/ops refs/heads/main",
            "git push origin refs/kapi/ops",
            "git push origin :refs/kapi/ops",
            "git push --force origin HEAD:refs/kapi/ops",
            "git push --delete origin refs/kapi/ops",
            "git push --mirror backup",
            "git fetch origin +refs/heads/x:refs/kapi/ops",
        ] {
            assert_eq!(refused(command), refs(), "{command:?}");
        }
        for command in [
            "rm -rf .git/kapi",
            "rm .git/kapi/journal",
            "rm -rf ./.git/kapi/",
            "rm -rf /home/me/repo/.git/kapi",
            "rm -rf .git",
            "rm -r .git/k*",
            "rm -rf .git/*",
            "rmdir .git/kapi",
            "mv .git/kapi /tmp/kapi",
            "mv /tmp/ops .git/kapi/ops",
            "cp /tmp/ops .git/kapi/ops",
            "cp -r /tmp/kapi .git/",
            "cp -t .git/kapi /tmp/ops",
            "echo x > .git/kapi/journal",
            "echo x >.git/kapi/journal",
            "echo x>>.git/kapi/journal",
            "echo x 2> .git/kapi/journal",
            "cat a &> .git/kapi/x",
            "echo x | tee .git/kapi/x",
            "touch .git/kapi/lock",
            "truncate -s 0 .git/kapi/journal",
            "sed -i s/a/b/ .git/kapi/journal",
            "dd if=/dev/zero of=.git/kapi/journal",
            "ln -sf /tmp/x .git/kapi/journal",
            "chmod 000 .git/kapi",
            "bash -c 'rm -rf .git/kapi'",
        ] {
            assert_eq!(refused(command), dir(), "{command:?}");
        }
        for command in [
            "git log refs/kapi/ops",
            "git show refs/kapi/ops:ops",
            "git fetch origin",
            "git fetch origin +refs/kapi/ops:refs/remotes/origin/kapi/ops",
            "git push origin main",
            "git update-ref refs/heads/x HEAD",
            "cat .git/kapi/journal",
            "ls -la .git/kapi",
            "cp .git/kapi/journal /tmp/journal",
            "cat < .git/kapi/journal",
            "rm -rf target",
            "rm -rf build/*",
            "rm -rf * ",
            "rm .gitignore",
            "echo x > /tmp/kapi",
            "sed s/a/b/ .git/kapi/journal",
            "grep -r kapi .git/config",
        ] {
            allowed(command);
        }
    }

    #[test]
    fn a_command_that_cannot_be_read_is_let_through_and_said_so() {
        for command in [
            "echo 'unbalanced",
            "echo \"unbalanced",
            "echo `unbalanced",
            "echo $(unbalanced",
            "kapi context reset --before 'x",
        ] {
            assert!(
                matches!(judge(command), Verdict::Unparsed(_)),
                "{command:?}: {:?}",
                judge(command)
            );
        }
        allowed("");
        allowed("   ");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512, ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any text at all: a verdict, never a panic.
        #[test]
        fn any_command_gets_a_verdict(command in "[ -~\\n]{0,80}") {
            let _ = judge(&command);
        }

        /// Quoted words are an argument, never a command: `echo` of any
        /// words, each quoted as sh reads them, is allowed.
        #[test]
        fn quoted_words_are_never_a_command(
            words in proptest::collection::vec("[ -~\\n]{0,24}", 0..6)
        ) {
            let quoted = shlex::try_join(words.iter().map(String::as_str)).unwrap();
            let command = format!("echo {quoted}");
            proptest::prop_assert_eq!(judge(&command), Verdict::Allow, "{}", command);
        }
    }

    #[test]
    fn a_refusal_names_the_command_and_the_rule() {
        let Verdict::Refuse(r) = judge("cargo test && kapi context reset --before 's 1'") else {
            panic!()
        };
        assert_eq!(r.command, "kapi context reset --before 's 1'");
        assert_eq!(
            r.rule.to_string(),
            "`kapi context reset` sets the ledger back, a person's act"
        );
        let Verdict::Refuse(r) = judge(&format!("kapi store import {}", "x".repeat(500))) else {
            panic!()
        };
        assert!(r.command.chars().count() <= 201);
        let Verdict::Refuse(r) = judge("echo x 2>>.git/kapi/journal >/dev/null") else {
            panic!()
        };
        assert_eq!(r.command, "echo x >> .git/kapi/journal > /dev/null");
        let Verdict::Refuse(r) = judge(">.git/kapi/journal") else {
            panic!()
        };
        assert_eq!(r.command, "> .git/kapi/journal");
    }
}
