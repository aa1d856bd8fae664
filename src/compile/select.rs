//! Selection: explicit targets first, then query matches, up to max_docs.
//!
//! Targets resolve by id (notes and evidence rows) or by a note's relative
//! path, only inside the permitted view: a denied target is reported
//! exactly like an absent one. Query selection excludes decisions that are
//! not current premises before ranking and before the record limit.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{Value, json};

use super::applicability::Applicability;
use super::rank::hybrid::{self, Builder, Edge, Graph, Scope};
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
    /// The hybrid ranker's report (`retrieval`), only for that ranker.
    pub retrieval: Option<Value>,
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
                // A permitted claim whose evidence is not all granted: its
                // payload stays withheld, and it says so.
                None if vault
                    .withheld_claims
                    .iter()
                    .any(|c| c.path == t || c.id.as_deref() == Some(t)) =>
                {
                    out.omissions
                        .push(json!({ "reason": "withheld_claim", "target": t }));
                    continue;
                }
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
        if ranking == Ranking::Hybrid {
            out.retrieval = Some(retrieval(vault, &[], None, &out.selected, &[]));
        }
        return Ok(out);
    };
    // The eligible corpus, in the fixed order (id, then path).
    let mut corpus: Vec<(Rec, &str, &str)> = Vec::new();
    for (i, note) in vault.notes.iter().enumerate() {
        let Some(id) = &note.meta.id else { continue };
        let eligible = match note.meta.kind {
            Kind::Decision => applicability[i].premise(),
            // Only released claims are notes of the view.
            Kind::Source | Kind::Note | Kind::Claim => true,
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
    let mut hybrid_ranked = None;
    let ranked = if ranking == Ranking::Hybrid {
        let corpus_recs: Vec<Rec> = corpus.iter().map(|c| c.0).collect();
        let graph = graph(vault, &corpus_recs).map_err(|_| RankError::ScopeTooLarge)?;
        let ranked = hybrid::rank(&docs, &graph, query)?;
        let order = ranked.scored.iter().map(|s| s.doc).collect();
        hybrid_ranked = Some((corpus_recs, graph, ranked));
        order
    } else {
        rank::rank(ranking, &docs, query)?
    };
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
    if let Some((recs, graph, ranked)) = hybrid_ranked {
        out.retrieval = Some(retrieval(
            vault,
            &recs,
            Some((&graph, &ranked)),
            &out.selected,
            &ranked.scored,
        ));
    }
    Ok(out)
}

/// The graph of the typed relations the eligible records state, as edges
/// between their positions in `corpus`. Only records in the corpus
/// resolve, so a relation to a hidden, denied, ineligible or ambiguous
/// record is dropped before the graph exists. The node bound is checked
/// before anything is read, the edge bound on every edge.
fn graph(vault: &Vault, corpus: &[Rec]) -> Result<Graph, Scope> {
    let mut graph = Builder::new(corpus.len())?;
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut by_path: HashMap<&str, usize> = HashMap::new();
    for (k, rec) in corpus.iter().enumerate() {
        match *rec {
            Rec::Note(i) => {
                let note = &vault.notes[i];
                if let Some(id) = &note.meta.id {
                    by_id.insert(id, k);
                }
                by_path.insert(&note.path, k);
            }
            Rec::Evidence(i) => {
                by_id.insert(&vault.evidence[i].id, k);
            }
        }
    }
    for (k, rec) in corpus.iter().enumerate() {
        match *rec {
            Rec::Note(i) => {
                let meta = &vault.notes[i].meta;
                // A released claim's evidence, as a decision's citation.
                for e in vault
                    .claims
                    .get(&i)
                    .map_or(&[][..], |c| &c.payload.evidence)
                {
                    if let Some(&j) = by_id.get(e.as_str()) {
                        graph.add(k, j, Edge::Evidence)?;
                    }
                }
                for old in &meta.supersedes {
                    if let Some(&j) = by_id.get(old.as_str()) {
                        graph.add(k, j, Edge::Supersedes)?;
                    }
                }
                for link in &meta.links {
                    let Some(&j) = by_id.get(link.target.as_str()) else {
                        continue;
                    };
                    let rel = link.rel.as_str();
                    let edge = match corpus[j] {
                        Rec::Evidence(_) if rel == "cites" => Edge::Evidence,
                        Rec::Note(_) if matches!(rel, "source" | "depends_on" | "cites") => {
                            Edge::Input
                        }
                        _ => Edge::Link,
                    };
                    graph.add(k, j, edge)?;
                }
            }
            Rec::Evidence(i) => {
                if let Some(&j) = vault.evidence[i]
                    .replaced_by
                    .as_deref()
                    .and_then(|id| by_id.get(id))
                {
                    graph.add(k, j, Edge::Supersedes)?;
                }
            }
        }
    }
    // One day's review-log rows, in log order: each reviewed note is
    // joined to the next one (a chain, so a busy day stays linear).
    let mut days: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for row in &vault.reviews {
        if let Some(&k) = by_path.get(row.target.as_str()) {
            days.entry(&row.date).or_default().push((row.ordinal, k));
        }
    }
    for rows in days.values_mut() {
        rows.sort_unstable();
        for pair in rows.windows(2) {
            graph.add(pair[0].1, pair[1].1, Edge::ReviewedWith)?;
        }
    }
    Ok(graph.finish())
}

/// The id, path and digest that cite a record.
fn citation(vault: &Vault, rec: Rec) -> (String, String, String) {
    match rec {
        Rec::Note(i) => {
            let n = &vault.notes[i];
            (
                n.meta.id.clone().unwrap_or_default(),
                n.path.clone(),
                n.sha256.clone(),
            )
        }
        Rec::Evidence(i) => {
            let r = &vault.evidence[i];
            (r.id.clone(), format!("evidence:{}", r.id), r.sha256.clone())
        }
    }
}

/// The hybrid report: the limits, the graph's counts, what was cut, and
/// per query context its scores and its typed path from a query match,
/// every node on a path cited.
fn retrieval(
    vault: &Vault,
    corpus: &[Rec],
    ranked: Option<(&Graph, &hybrid::Ranked)>,
    selected: &[(Rec, SelectedBy)],
    scored: &[hybrid::Scored],
) -> Value {
    let by_rec: HashMap<Rec, &hybrid::Scored> = scored.iter().map(|s| (corpus[s.doc], s)).collect();
    let mut cited: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut contexts = Vec::new();
    for (rec, by) in selected {
        if *by != SelectedBy::Query {
            continue;
        }
        let Some(s) = by_rec.get(rec) else { continue };
        let via: Vec<Value> = s
            .path
            .iter()
            .map(|&(doc, edge)| {
                let (id, path, sha) = citation(vault, corpus[doc]);
                cited.insert((id.clone(), path.clone(), sha));
                json!({ "edge": edge.map(Edge::as_str), "id": id, "path": path })
            })
            .collect();
        let (id, path, _) = citation(vault, *rec);
        contexts.push(json!({
            "id": id,
            "path": path,
            "scores": {
                "lexical": hybrid::decimal(s.lexical),
                "proximity": hybrid::decimal(s.proximity),
                "total": hybrid::decimal(s.total),
            },
            "via": via,
        }));
    }
    let citations: Vec<Value> = cited
        .into_iter()
        .map(|(id, path, sha256)| json!({ "id": id, "path": path, "sha256": sha256 }))
        .collect();
    let (nodes, edges, hits, seeds, cut) = match ranked {
        Some((graph, r)) => (
            corpus.len(),
            graph.edges,
            r.hits,
            r.seeds,
            r.fanout_cut_nodes,
        ),
        None => (0, 0, 0, 0, 0),
    };
    json!({
        "citations": citations,
        "contexts": contexts,
        "graph": { "edges": edges, "hits": hits, "nodes": nodes, "seeds": seeds },
        "limits": hybrid::limits(),
        "truncated": cut > 0 || hits > seeds,
        "truncation": { "fanout_cut_nodes": cut, "seeds_dropped": hits - seeds },
    })
}

/// The title a record shows.
pub fn title(vault: &Vault, rec: Rec) -> String {
    match rec {
        Rec::Note(i) => vault.notes[i].title(),
        Rec::Evidence(i) => vault.evidence[i].title.clone(),
    }
}
