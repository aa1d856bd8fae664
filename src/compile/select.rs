//! Selection: explicit targets first, then query matches, up to max_docs.
//!
//! Targets resolve by id (notes and evidence rows) or by a note's relative
//! path, only inside the permitted view: a denied target is reported
//! exactly like an absent one. Query selection excludes decisions that are
//! not current premises before ranking and before the record limit.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::applicability::Applicability;
use super::rank::{self, Doc, RankError, Ranking};
use crate::vault::{Kind, Vault};

/// A selectable record of the permitted view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rec {
    Note(usize),
    Evidence(usize),
}

/// How a record came to be selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectedBy {
    Target,
    Query,
}

impl SelectedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Target => "target",
            Self::Query => "query",
        }
    }
}

#[derive(Debug, Default)]
pub struct Selection {
    pub selected: Vec<(Rec, SelectedBy)>,
    pub omissions: Vec<Value>,
}

/// Select records for the recipe. `applicability[i]` is note `i`'s.
pub fn select(
    vault: &Vault,
    applicability: &[Applicability],
    targets: &[String],
    query: Option<&str>,
    ranking: Ranking,
    max_docs: usize,
) -> Result<Selection, RankError> {
    let mut by_id: HashMap<&str, Vec<Rec>> = HashMap::new();
    let mut by_path: HashMap<&str, Rec> = HashMap::new();
    for (i, note) in vault.notes.iter().enumerate() {
        if let Some(id) = &note.meta.id {
            by_id.entry(id).or_default().push(Rec::Note(i));
        }
        by_path.insert(&note.path, Rec::Note(i));
    }
    for (i, row) in vault.evidence.iter().enumerate() {
        by_id.entry(&row.id).or_default().push(Rec::Evidence(i));
    }
    let mut out = Selection::default();
    let mut chosen: HashSet<Rec> = HashSet::new();
    for target in targets {
        let t = target.as_str();
        let rec = match by_id.get(t).map(Vec::as_slice) {
            Some([one]) => *one,
            Some(_) => {
                out.omissions
                    .push(json!({ "reason": "ambiguous", "target": t }));
                continue;
            }
            None => match by_path.get(t) {
                Some(rec) => *rec,
                None if vault.log_paths.iter().any(|p| p == t) => {
                    out.omissions
                        .push(json!({ "reason": "withheld_log", "target": t }));
                    continue;
                }
                None => {
                    out.omissions
                        .push(json!({ "reason": "not_found", "target": t }));
                    continue;
                }
            },
        };
        if !chosen.insert(rec) {
            continue;
        }
        if out.selected.len() >= max_docs {
            out.omissions
                .push(json!({ "reason": "max_docs", "target": t }));
            continue;
        }
        out.selected.push((rec, SelectedBy::Target));
    }
    let Some(query) = query.filter(|q| !q.trim().is_empty()) else {
        return Ok(out);
    };
    // The eligible corpus, in the fixed order (id, then path).
    let mut corpus: Vec<(Rec, &str, &str)> = Vec::new();
    for (i, note) in vault.notes.iter().enumerate() {
        let Some(id) = &note.meta.id else { continue };
        let eligible = match note.meta.kind {
            Kind::Decision => applicability[i].premise(),
            Kind::Source | Kind::Note => true,
            _ => false,
        };
        if eligible && by_id.get(id.as_str()).is_some_and(|v| v.len() == 1) {
            corpus.push((Rec::Note(i), id, &note.path));
        }
    }
    for (i, row) in vault.evidence.iter().enumerate() {
        if by_id.get(row.id.as_str()).is_some_and(|v| v.len() == 1) {
            corpus.push((Rec::Evidence(i), &row.id, &row.register));
        }
    }
    corpus.sort_by(|a, b| (a.1, a.2).cmp(&(b.1, b.2)));
    let titles: Vec<String> = corpus
        .iter()
        .map(|(rec, _, _)| title(vault, *rec))
        .collect();
    let texts: Vec<std::borrow::Cow<'_, str>> = corpus
        .iter()
        .map(|(rec, _, _)| match rec {
            Rec::Note(i) => vault.notes[*i].body_text(),
            Rec::Evidence(i) => vault.evidence[*i].text().into(),
        })
        .collect();
    let docs: Vec<Doc<'_>> = corpus
        .iter()
        .zip(titles.iter().zip(texts.iter()))
        .map(|((_, id, _), (title, text))| Doc { id, title, text })
        .collect();
    let ranked = rank::rank(ranking, &docs, query)?;
    let mut left_out = 0usize;
    for i in ranked {
        let rec = corpus[i].0;
        if chosen.contains(&rec) {
            continue;
        }
        if out.selected.len() >= max_docs {
            left_out += 1;
            continue;
        }
        chosen.insert(rec);
        out.selected.push((rec, SelectedBy::Query));
    }
    if left_out > 0 {
        out.omissions
            .push(json!({ "count": left_out, "reason": "max_docs", "selected_by": "query" }));
    }
    Ok(out)
}

/// The title a record shows.
pub fn title(vault: &Vault, rec: Rec) -> String {
    match rec {
        Rec::Note(i) => vault.notes[i].title(),
        Rec::Evidence(i) => vault.evidence[i].title.clone(),
    }
}
