//! Vale's files: vocabularies (`accept.txt`, `reject.txt`), substitution
//! styles, and the `StylesPath` of `.vale.ini`.

use super::{
    ImportedFile, ImportedRule, ParseError, RuleStatus, check_len, err, numbered, pattern, yaml,
};
use crate::ops::record::Bounds;

/// Vale's built-in style. A vocabulary's entries are two of its rules, not
/// a style of their own: `accept.txt` is `Vale.Terms`, `reject.txt`
/// `Vale.Avoid`, so a vocabulary that `Vocab` names applies only to the
/// files whose section names `Vale` in `BasedOnStyles` (or turns the rule
/// on), as Vale applies it.
pub(crate) const BUILTIN_STYLE: &str = "Vale";

/// The rules of [`BUILTIN_STYLE`] a vocabulary's two files become:
/// `(accept.txt's, reject.txt's)`.
pub(crate) const VOCABULARY_RULES: (&str, &str) = ("Terms", "Avoid");

/// A Vale vocabulary entry: a term or a regular expression, one a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VocabTerm {
    pub line: usize,
    /// As written.
    pub pattern: String,
    /// The literal forms it stands for.
    pub forms: Vec<String>,
    /// What stays a regular expression (see [`pattern::expand_key`]).
    pub regex: Option<String>,
    /// `(?i)` at its start: Vale matches it ignoring case.
    pub ignore_case: bool,
}

/// A Vale vocabulary: `accept.txt` and `reject.txt`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vocabulary {
    pub accept: Vec<VocabTerm>,
    pub reject: Vec<VocabTerm>,
    pub skipped: Vec<(usize, String)>,
}

fn vocab_terms(
    text: &str,
    skipped: &mut Vec<(usize, String)>,
) -> Result<Vec<VocabTerm>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in numbered(text) {
        check_len(n, line)?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        match pattern::expand_key(t) {
            Ok(e) => out.push(VocabTerm {
                line: n,
                pattern: t.to_string(),
                forms: e.forms,
                regex: e.pattern,
                ignore_case: e.ignore_case,
            }),
            Err(reason) => skipped.push((n, format!("{t:?}: {reason}"))),
        }
    }
    Ok(out)
}

impl Vocabulary {
    /// Parse a vocabulary's two files (either may be absent).
    pub fn parse(accept: Option<&str>, reject: Option<&str>) -> Result<Self, ParseError> {
        let mut v = Vocabulary::default();
        v.accept = vocab_terms(accept.unwrap_or(""), &mut v.skipped)?;
        v.reject = vocab_terms(reject.unwrap_or(""), &mut v.skipped)?;
        Ok(v)
    }

    /// As rules: each accepted form is a preferred form with no avoided
    /// forms (kapi derives variants elsewhere); each rejected form is an
    /// avoided form with no preferred one, matched exactly as written unless
    /// the entry starts with `(?i)`. An accepted entry starting with `(?i)`
    /// gives no rule: Vale accepts it in any case, so no spelling of it is
    /// wrong. Both are at Vale's level for them, `error`: Vale reads
    /// `accept.txt` into its rule `Vale.Terms` and `reject.txt` into
    /// `Vale.Avoid` ([`VOCABULARY_RULES`]), which hold only where
    /// `.vale.ini` enables them ([`ValeIni::enabled`]).
    pub fn rules(&self) -> ImportedFile {
        let mut file = ImportedFile {
            skipped: self.skipped.clone(),
            ..Default::default()
        };
        for t in self.accept.iter().filter(|t| !t.ignore_case) {
            if t.regex.is_some() {
                file.skipped.push((
                    t.line,
                    format!(
                        "{:?}: an accepted regular expression names no single form to prefer",
                        t.pattern
                    ),
                ));
            }
            for f in &t.forms {
                file.rules.push(ImportedRule {
                    preferred: Some(f.clone()),
                    avoided: Vec::new(),
                    pattern: None,
                    bounds: Bounds::Regex,
                    raw: false,
                    level: Some(Level::Error),
                    paths: Vec::new(),
                    line: t.line,
                    id: None,
                    status: RuleStatus::Established,
                    exact: false,
                });
            }
        }
        for t in &self.reject {
            file.rules.push(ImportedRule {
                preferred: None,
                avoided: t.forms.clone(),
                pattern: t.regex.clone(),
                bounds: Bounds::Regex,
                raw: false,
                level: Some(Level::Error),
                paths: Vec::new(),
                line: t.line,
                id: None,
                status: RuleStatus::Established,
                exact: !t.ignore_case,
            });
        }
        file
    }
}

/// A Vale substitution style (`extends: substitution`, `swap:` a map of
/// avoided pattern to preferred form), read by a YAML library. Keys whose
/// language is finite and small expand to literal forms; the rest become
/// pattern rules (see [`super::pattern`]). A file Vale would refuse (not
/// YAML, a duplicate key, `swap` not a mapping) is an error with its line;
/// an entry kapi cannot read is skipped with its line and reason.
pub fn parse_vale_substitution(text: &str) -> Result<ImportedFile, ParseError> {
    let doc = yaml::parse(text).map_err(|e| err(e.line, e.message))?;
    if !matches!(doc.value, yaml::Value::Mapping(_)) {
        return Err(ParseError::NotSubstitution(format!(
            "it is {}, not a mapping",
            doc.kind()
        )));
    }
    match doc.get("extends").and_then(yaml::Node::as_str) {
        Some("substitution") => {}
        Some(other) => return Err(ParseError::NotSubstitution(format!("it extends {other:?}"))),
        None => return Err(ParseError::NotSubstitution("no `extends` key".into())),
    }
    let mut file = ImportedFile::default();
    // Vale compiles the keys ignoring case only with `ignorecase: true`,
    // and between word boundaries unless `nonword: true`.
    let flag = |key: &str| match doc.get(key) {
        None => Ok(false),
        Some(n) if n.is_null() => Ok(false),
        Some(n) => n.as_bool().ok_or_else(|| {
            err(
                n.line,
                format!(
                    "`{key}` must be true or false, not {}",
                    n.as_str().unwrap_or(n.kind())
                ),
            )
        }),
    };
    let ignorecase = flag("ignorecase")?;
    let nonword = flag("nonword")?;
    // Vale's default level for a rule that sets none is `warning`.
    let level = match doc.get("level") {
        None => Level::Warning,
        Some(n) => n.as_str().and_then(Level::parse).ok_or_else(|| {
            err(
                n.line,
                "`level` must be suggestion, warning or error; Vale refuses the file",
            )
        })?,
    };
    for unsupported in ["exceptions", "vocab", "capitalize"] {
        if let Some(n) = doc.get(unsupported)
            && !n.is_null()
        {
            file.skipped.push((
                n.line,
                format!("`{unsupported}` is not supported by kapi and is ignored"),
            ));
        }
    }
    // kapi checks every rule in all prose, which is what Vale's default
    // scope for a substitution (`text`) reads; `raw` is the file's text as
    // it is, markup and code included; a narrower scope is named.
    let raw = doc
        .get("scope")
        .is_some_and(|n| n.as_str().map(str::trim) == Some("raw"));
    if let Some(n) = doc.get("scope")
        && !n.is_null()
        && !matches!(
            n.as_str().map(str::trim),
            Some("text" | "sentence" | "paragraph" | "raw")
        )
    {
        let what = n
            .as_str()
            .map_or_else(|| n.kind().to_string(), |s| format!("`{s}`"));
        file.skipped.push((
            n.line,
            format!("`scope` {what} is not supported: kapi checks the rule in all prose"),
        ));
    }
    // A finding says what to write, which is Vale's `replace` action.
    if let Some(n) = doc.get("action")
        && !n.is_null()
    {
        let name = n.get("name").and_then(yaml::Node::as_str);
        if !matches!(name, None | Some("replace")) {
            file.skipped.push((
                n.line,
                format!(
                    "the action `{}` is not supported: kapi's finding says what to write instead",
                    name.unwrap_or_default()
                ),
            ));
        }
    }
    let Some(swap) = doc.get("swap") else {
        return Ok(file);
    };
    let pairs = match &swap.value {
        yaml::Value::Mapping(pairs) => pairs,
        _ if swap.is_null() => return Ok(file),
        _ => {
            return Err(err(
                swap.line,
                format!(
                    "`swap` must be a mapping, not {}; Vale refuses the file",
                    swap.kind()
                ),
            ));
        }
    };
    for (k, v) in pairs {
        let n = k.line;
        let Some(key) = k.as_str() else {
            file.skipped
                .push((n, format!("a key that is {}, not text", k.kind())));
            continue;
        };
        let Some(value) = v.as_str() else {
            file.skipped.push((
                n,
                format!("{key:?}: the replacement is {}, not text", v.kind()),
            ));
            continue;
        };
        // Vale offers every `|`-separated replacement and flags nothing
        // written as one of them; kapi's rule prefers the first.
        let replacements: Vec<&str> = value
            .split('|')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let Some(&preferred) = replacements.first() else {
            file.skipped.push((n, format!("{key:?}: no replacement")));
            continue;
        };
        // Without word boundaries a key is matched as Vale matches it, as a
        // pattern: its literal forms would be matched on word boundaries.
        let read = if nonword {
            pattern::whole_key(key)
        } else {
            pattern::expand_key(key)
        };
        match read {
            Ok(expanded) => {
                let avoided: Vec<String> = expanded
                    .forms
                    .into_iter()
                    .filter(|f| !replacements.contains(&f.as_str()))
                    .collect();
                if avoided.is_empty() && expanded.pattern.is_none() {
                    file.skipped
                        .push((n, format!("{key:?}: only the preferred form itself")));
                    continue;
                }
                file.rules.push(ImportedRule {
                    preferred: Some(preferred.to_string()),
                    avoided,
                    pattern: expanded.pattern,
                    bounds: if nonword { Bounds::None } else { Bounds::Regex },
                    raw,
                    level: Some(level),
                    paths: Vec::new(),
                    line: n,
                    id: None,
                    status: level.status(),
                    exact: !(ignorecase || expanded.ignore_case),
                });
            }
            Err(reason) => file.skipped.push((n, format!("{key:?}: {reason}"))),
        }
    }
    Ok(file)
}

/// A Vale alert level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Suggestion,
    Warning,
    Error,
}

impl Level {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "suggestion" => Some(Level::Suggestion),
            "warning" => Some(Level::Warning),
            "error" => Some(Level::Error),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Suggestion => "suggestion",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }

    /// How a rule of this level binds in kapi: an error fails the check, a
    /// warning or a suggestion reports only.
    pub(crate) fn status(self) -> RuleStatus {
        match self {
            Level::Error => RuleStatus::Established,
            Level::Warning | Level::Suggestion => RuleStatus::Advisory,
        }
    }
}

/// `Style.Rule = ...` in a section of `.vale.ini`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleSetting {
    /// `NO`
    Off,
    /// `YES`
    On,
    /// `suggestion`, `warning` or `error`: on, at that level.
    At(Level),
}

/// A glob section of `.vale.ini` (`[*.md]`, `[docs/**/*.adoc]`,
/// `[*.{md,adoc}]`): it applies to the files whose path the glob matches
/// (globset; `*` crosses folders, as Vale's glob library reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IniSection {
    pub glob: String,
    /// `BasedOnStyles`, when the section sets it (even empty): for a file
    /// it matches, the last such section's list replaces the global one,
    /// as Vale reads it.
    pub styles: Option<Vec<String>>,
    /// `Style.Rule = ...`, in order.
    pub rules: Vec<(String, RuleSetting)>,
    /// `TokenIgnores`: regular expressions whose matches are not prose.
    pub token_ignores: Vec<String>,
    /// `BlockIgnores`: the same, for blocks.
    pub block_ignores: Vec<String>,
}

/// What kapi reads of a `.vale.ini`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValeIni {
    /// `StylesPath`, as [`styles_path`] reads it.
    pub styles_path: Option<String>,
    /// `MinAlertLevel` (Vale's default: warning).
    pub min_level: Level,
    /// `Vocab`: the vocabularies in use, when set.
    pub vocab: Option<Vec<String>>,
    /// `BasedOnStyles` outside any section or in `[*]` (every file).
    pub global_styles: Vec<String>,
    /// `Style.Rule = ...` outside any section or in `[*]`.
    pub global_rules: Vec<(String, RuleSetting)>,
    pub sections: Vec<IniSection>,
}

/// Where and how one style rule is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Enabled {
    /// The `.vale.ini` names no styles at all: every style applies
    /// everywhere, at its own level (kapi's reading before `.vale.ini` was
    /// honoured, kept for configurations that only set `StylesPath`).
    Everywhere(Level),
    /// In force for the files these path globs select, at this level: an
    /// empty list is every file; otherwise the last glob matching a path
    /// decides, `!glob` leaving it out (see [`crate::ops::PathGlobs`]).
    Paths(Vec<String>, Level),
    /// No file: nothing enables it.
    Nowhere,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A list of regular expressions as Vale reads `TokenIgnores` and
/// `BlockIgnores`: split on commas, `\,` standing for a comma.
fn patterns(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                cur.push(',');
                chars.next();
            }
            ',' => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `Style.Rule = NO | YES | suggestion | warning | error`; `None` for a
/// key that is not a rule's or a value Vale does not read.
fn rule_setting(k: &str, v: &str) -> Option<RuleSetting> {
    if !k.contains('.') {
        return None;
    }
    Some(match v.trim() {
        "NO" => RuleSetting::Off,
        "YES" => RuleSetting::On,
        other => RuleSetting::At(Level::parse(other)?),
    })
}

impl ValeIni {
    /// Read a `.vale.ini` with an INI library. Vale's own keys outside the
    /// ones kapi uses are ignored. A key given twice adds to the first
    /// (Vale reads keys with shadows).
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let conf = load_ini(text).map_err(|e| err(e.line, e.msg.to_string()))?;
        let mut out = ValeIni {
            styles_path: styles_path(text),
            min_level: Level::Warning,
            vocab: None,
            global_styles: Vec::new(),
            global_rules: Vec::new(),
            sections: Vec::new(),
        };
        for (name, props) in conf.iter() {
            match name {
                // `[*]` is the global section, as Vale reads it.
                None | Some("*") => {
                    for (k, v) in props.iter() {
                        match k {
                            "MinAlertLevel" => {
                                out.min_level = Level::parse(v).ok_or_else(|| {
                                    err(
                                        1,
                                        format!(
                                            "MinAlertLevel must be suggestion, warning or error, not {v:?}"
                                        ),
                                    )
                                })?
                            }
                            "Vocab" => out.vocab.get_or_insert_with(Vec::new).extend(list(v)),
                            "BasedOnStyles" => out.global_styles.extend(list(v)),
                            k => {
                                if let Some(s) = rule_setting(k, v) {
                                    out.global_rules.push((k.to_string(), s));
                                }
                            }
                        }
                    }
                }
                // Vale's own sections, not globs.
                Some("formats" | "asciidoctor" | "DEFAULT") => {}
                Some(glob) => {
                    let mut section = IniSection {
                        glob: glob.to_string(),
                        styles: None,
                        rules: Vec::new(),
                        token_ignores: Vec::new(),
                        block_ignores: Vec::new(),
                    };
                    for (k, v) in props.iter() {
                        match k {
                            "BasedOnStyles" => {
                                section.styles.get_or_insert_with(Vec::new).extend(list(v))
                            }
                            "TokenIgnores" => section.token_ignores.extend(patterns(v)),
                            "BlockIgnores" | "IgnorePatterns" => {
                                section.block_ignores.extend(patterns(v))
                            }
                            k => {
                                if let Some(s) = rule_setting(k, v) {
                                    section.rules.push((k.to_string(), s));
                                }
                            }
                        }
                    }
                    out.sections.push(section);
                }
            }
        }
        Ok(out)
    }

    /// Whether the configuration names any style (globally or in a section)
    /// or sets any rule.
    fn names_styles(&self) -> bool {
        !self.global_styles.is_empty()
            || !self.global_rules.is_empty()
            || self
                .sections
                .iter()
                .any(|s| s.styles.as_ref().is_some_and(|v| !v.is_empty()) || !s.rules.is_empty())
    }

    /// Where the rule `style.rule` (its file's level `own`) is in force, as
    /// Vale decides it for each file: a `Style.Rule` setting of the last
    /// section matching the file that sets one; else one outside any
    /// section; else whether the style is among the `BasedOnStyles` of the
    /// last section matching the file that sets them (else the global
    /// ones). Its level is the file's, or the last level `.vale.ini` sets
    /// for the rule anywhere (Vale keeps one level a rule). A configuration
    /// that names no style keeps every style found under `StylesPath` in
    /// force everywhere, but not Vale's built-in style (the
    /// vocabularies): nothing there enables it.
    pub(crate) fn enabled(&self, style: &str, rule: &str, own: Level) -> Enabled {
        if !self.names_styles() && style != BUILTIN_STYLE {
            return Enabled::Everywhere(own);
        }
        let name = format!("{style}.{rule}");
        let mut level = own;
        let settings = |list: &[(String, RuleSetting)]| -> Option<bool> {
            list.iter()
                .filter(|(k, _)| *k == name)
                .map(|(_, s)| !matches!(s, RuleSetting::Off))
                .next_back()
        };
        let every = self
            .global_rules
            .iter()
            .chain(self.sections.iter().flat_map(|s| s.rules.iter()));
        for (k, s) in every {
            if *k == name
                && let RuleSetting::At(l) = s
            {
                level = *l;
            }
        }
        // Last match wins: (glob, on) in order; `on_default` for a file no
        // glob matches.
        let mut decisions: Vec<(&str, bool)> = Vec::new();
        let on_default = match settings(&self.global_rules) {
            Some(on) => on,
            None => {
                for s in &self.sections {
                    if let Some(styles) = &s.styles {
                        decisions.push((&s.glob, styles.iter().any(|x| x == style)));
                    }
                }
                self.global_styles.iter().any(|s| s == style)
            }
        };
        for s in &self.sections {
            if let Some(on) = settings(&s.rules) {
                decisions.push((&s.glob, on));
            }
        }
        // A glob decided again decides alone; what is left out before
        // anything is let in leaves nothing out.
        let mut kept: Vec<(&str, bool)> = Vec::new();
        if on_default {
            kept.push(("*", true));
        }
        for (glob, on) in decisions {
            kept.retain(|(g, _)| *g != glob);
            kept.push((glob, on));
        }
        let paths: Vec<String> = kept
            .into_iter()
            .skip_while(|(_, on)| !on)
            .map(|(g, on)| if on { g.to_string() } else { format!("!{g}") })
            .collect();
        match paths.as_slice() {
            [] => Enabled::Nowhere,
            [every] if every == "*" => Enabled::Paths(Vec::new(), level),
            _ => Enabled::Paths(paths, level),
        }
    }

    /// Whether the vocabulary `name` is in use: `Vocab` names it. Vale
    /// loads no other vocabulary (none when `Vocab` is not set).
    pub(crate) fn uses_vocab(&self, name: &str) -> bool {
        self.vocab
            .as_ref()
            .is_some_and(|v| v.iter().any(|x| x == name))
    }
}

/// The `StylesPath` of a `.vale.ini` (a core setting, before any section),
/// as a repository-relative folder; `None` when absent, empty, or outside
/// the repository (absolute, or climbing out with `..`).
pub fn styles_path(ini_text: &str) -> Option<String> {
    let conf = load_ini(ini_text).ok()?;
    let value = conf.general_section().get("StylesPath")?.trim();
    let mut parts: Vec<&str> = Vec::new();
    for part in value.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    if value.starts_with('/') || value.contains(':') || parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

/// A `.vale.ini` read by an INI library (quotes around values are taken
/// off; backslashes are kept, as Windows paths hold them).
fn load_ini(text: &str) -> Result<ini::Ini, ini::ParseError> {
    ini::Ini::load_from_str_opt(
        text,
        ini::ParseOption {
            enabled_quote: true,
            enabled_escape: false,
            ..Default::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::parse_term_list;

    #[test]
    fn styles_path_stays_inside_the_repository() {
        assert_eq!(styles_path("StylesPath = a/../b"), Some("b".into()));
        assert_eq!(styles_path("StylesPath = ../x"), None);
        assert_eq!(styles_path("StylesPath = /abs"), None);
        assert_eq!(styles_path("[*]\nStylesPath = x"), None);
    }

    #[test]
    fn vale_substitution() {
        let y = "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nignorecase: true\nlevel: error\nswap:\n  # comment\n  '(?:Quick cast|Quick-cast)': Quickcast\n  Github: GitHub\n  java ?script: JavaScript|JS\n  \"[a-z]+ing\": x\n  colou?r: colour\n";
        let f = parse_vale_substitution(y).unwrap();
        assert_eq!(f.rules.len(), 5);
        assert_eq!(f.rules[0].preferred.as_deref(), Some("Quickcast"));
        assert_eq!(f.rules[0].avoided, vec!["Quick cast", "Quick-cast"]);
        assert_eq!(f.rules[0].line, 7);
        assert_eq!(f.rules[2].avoided, vec!["javascript", "java script"]);
        assert_eq!(f.rules[2].preferred.as_deref(), Some("JavaScript"));
        // A key that lists no finite set of forms is a pattern rule.
        assert_eq!(f.rules[3].pattern.as_deref(), Some("[a-z]+ing"));
        assert!(f.rules[3].avoided.is_empty());
        // The preferred form itself is never avoided.
        assert_eq!(f.rules[4].avoided, vec!["color"]);
        assert!(f.skipped.is_empty(), "{:?}", f.skipped);
        assert!(f.rules.iter().all(|r| !r.exact), "ignorecase: true");
        let exact = parse_vale_substitution(
            "extends: substitution\nswap:\n  Github: GitHub\n  (?i)java ?script: JavaScript\nignorecase: false\n",
        )
        .unwrap();
        assert!(exact.rules[0].exact);
        assert!(!exact.rules[1].exact, "a (?i) key ignores case");
        let late = parse_vale_substitution(
            "extends: substitution\nswap:\n  Github: GitHub\nignorecase: true\n",
        )
        .unwrap();
        assert!(!late.rules[0].exact);
        assert!(!parse_term_list("1\testablished\tA\tb\n").unwrap().rules[0].exact);
        assert!(parse_vale_substitution("extends: existence\n").is_err());
        assert!(parse_vale_substitution("swap:\n  a: b\n").is_err());
    }

    #[test]
    fn a_vocabulary_is_in_use_where_vocab_names_it_and_the_vale_style_is_enabled() {
        let ini = |t: &str| ValeIni::parse(t).unwrap();
        let (terms, avoid) = VOCABULARY_RULES;
        // Only what `Vocab` names; none when it is not set.
        assert!(ini("Vocab = A, B\n").uses_vocab("B"));
        assert!(!ini("Vocab = A\n").uses_vocab("B"));
        assert!(!ini("StylesPath = s\n").uses_vocab("A"));
        // A configuration naming no style keeps found styles everywhere,
        // never Vale's own.
        let bare = ini("StylesPath = s\nVocab = A\n");
        assert_eq!(
            bare.enabled("House", "Terms", Level::Warning),
            Enabled::Everywhere(Level::Warning)
        );
        assert_eq!(
            bare.enabled(BUILTIN_STYLE, terms, Level::Error),
            Enabled::Nowhere
        );
        let sections = ini(
            "Vocab = A\n[*.md]\nBasedOnStyles = House, Vale\nVale.Terms = NO\n[*.txt]\nBasedOnStyles = House\nVale.Avoid = warning\n",
        );
        assert_eq!(
            sections.enabled(BUILTIN_STYLE, terms, Level::Error),
            Enabled::Nowhere
        );
        // Vale keeps one level a rule: the last `.vale.ini` sets.
        assert_eq!(
            sections.enabled(BUILTIN_STYLE, avoid, Level::Error),
            Enabled::Paths(vec!["*.md".into(), "*.txt".into()], Level::Warning)
        );
    }

    #[test]
    fn the_last_section_matching_a_file_decides_as_vale_reads_it() {
        let ini = |t: &str| ValeIni::parse(t).unwrap();
        let on = |t: &str| match ini(t).enabled("House", "Terms", Level::Warning) {
            Enabled::Paths(p, _) => p,
            other => panic!("{other:?}"),
        };
        // A later section's BasedOnStyles replaces an earlier one's.
        assert_eq!(
            on("[*.md]\nBasedOnStyles = House\n[docs/**/*.md]\nBasedOnStyles = Other\n"),
            vec!["*.md", "!docs/**/*.md"]
        );
        // ... and the global list; `[*]` is global.
        assert_eq!(
            on("[*]\nBasedOnStyles = House\n[*.{md,adoc}]\nBasedOnStyles = Other\n"),
            vec!["*", "!*.{md,adoc}"]
        );
        assert_eq!(on("BasedOnStyles = House\n"), Vec::<String>::new());
        // A rule's setting outranks the styles, in any section order.
        assert_eq!(
            on("[docs/*.md]\nHouse.Terms = YES\n[*.md]\nBasedOnStyles = Other\n"),
            vec!["docs/*.md"]
        );
        assert_eq!(
            on(
                "[*.md]\nBasedOnStyles = House\n[b/*.md]\nHouse.Terms = NO\n[a.md]\nHouse.Terms = error\n"
            ),
            vec!["*.md", "!b/*.md", "a.md"]
        );
        assert_eq!(
            ini("[*.md]\nBasedOnStyles = House\nHouse.Terms = NO\n").enabled(
                "House",
                "Terms",
                Level::Warning
            ),
            Enabled::Nowhere
        );
        // A global rule setting outranks every section's styles.
        assert_eq!(
            on("House.Terms = YES\n[*.md]\nBasedOnStyles = Other\n"),
            Vec::<String>::new()
        );
        let s = ini(
            "[*.md]\nBasedOnStyles = House\nTokenIgnores = (\\$+[^\\n$]+\\$+), (x{1\\,3})\nTokenIgnores = (y)\nBlockIgnores = (?s)(<x>.*?</x>)\n",
        );
        assert_eq!(
            s.sections[0].token_ignores,
            vec![r"(\$+[^\n$]+\$+)", "(x{1,3})", "(y)"]
        );
        assert_eq!(s.sections[0].block_ignores, vec!["(?s)(<x>.*?</x>)"]);
    }

    #[test]
    fn vale_vocabulary() {
        let v = Vocabulary::parse(
            Some("Quickcast\n(?i)[Gg]rafana\n[a-z]+ly\n"),
            Some("Quick cast\n"),
        )
        .unwrap();
        assert_eq!(v.accept.len(), 3);
        assert!(v.accept[1].ignore_case);
        assert_eq!(v.accept[2].regex.as_deref(), Some("[a-z]+ly"));
        let r = v.rules();
        assert_eq!(r.skipped.len(), 1, "an accepted pattern names no form");
        // `(?i)[Gg]rafana` is accepted in any case: no rule.
        assert_eq!(r.rules.len(), 2);
        assert_eq!(r.rules[0].preferred.as_deref(), Some("Quickcast"));
        assert_eq!(r.rules[1].preferred, None);
        assert_eq!(r.rules[1].avoided, vec!["Quick cast"]);
        assert!(r.rules[1].exact);
        let ic = Vocabulary::parse(None, Some("(?i)utili[sz]e\n")).unwrap();
        assert!(!ic.rules().rules[0].exact);
    }
}
