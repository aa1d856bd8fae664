//! The hybrid ranker: BM25 plus bounded typed-graph proximity.
//!
//! The graph's nodes are the documents the caller offers (the permitted,
//! as-of-eligible corpus, in the fixed (id, path) order); its edges are
//! typed relations the records already state, each type with a fixed
//! weight. Nothing outside the offered documents can be a node, so hidden,
//! denied or ineligible records are never on a path, in a count or in a
//! score.
//!
//! Every number after BM25 is an integer in millionths, so the order and
//! the printed scores are the same on every machine:
//!
//! - `lexical` = BM25 score / best BM25 score (0 for a non-match);
//! - `proximity` = the best, over the top [`MAX_SEEDS`] matches `s` and the
//!   paths from `s` of 1 to [`MAX_DEPTH`] edges (each node expanding at most
//!   [`MAX_FANOUT`] edges, heaviest first), of `lexical(s)` times the
//!   product of the edge weights (per mille);
//! - `total` = (`LEXICAL_WEIGHT` × lexical + `PROXIMITY_WEIGHT` × proximity)
//!   / 1000.
//!
//! A corpus with more than [`MAX_NODES`] nodes or [`MAX_EDGES`] edges is
//! refused (`scope_too_large`), never ranked some other way.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::{Doc, RankError, bm25};

/// Nodes the graph may hold: the eligible corpus.
pub const MAX_NODES: usize = 20_000;
/// Distinct edges (node pairs) the graph may hold.
pub const MAX_EDGES: usize = 100_000;
/// Edges on a path from a query match.
pub const MAX_DEPTH: usize = 2;
/// Edges one node expands while traversing, heaviest first.
pub const MAX_FANOUT: usize = 32;
/// Query matches traversal starts from, best first.
pub const MAX_SEEDS: usize = 16;
/// The weights of the two components in the total, per mille.
pub const LEXICAL_WEIGHT: u64 = 700;
pub const PROXIMITY_WEIGHT: u64 = 300;
/// Scores are integers in millionths.
const SCALE: u64 = 1_000_000;

/// The edge types, each with its fixed weight (per mille).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Edge {
    /// A decision's `supersedes` (either direction), or an evidence row's
    /// `replaced_by`.
    Supersedes,
    /// A note's `cites: E-NNN` (or `evidence:`) link to an evidence row.
    Evidence,
    /// A `source:`, `depends_on:` or `cites:` link to a note: a required input.
    Input,
    /// Any other typed link to a note.
    Link,
    /// Two notes next to each other among one day's review-log rows.
    ReviewedWith,
}

impl Edge {
    pub const ALL: [Edge; 5] = [
        Edge::Supersedes,
        Edge::Evidence,
        Edge::Input,
        Edge::Link,
        Edge::ReviewedWith,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Supersedes => "supersedes",
            Self::Evidence => "evidence",
            Self::Input => "input",
            Self::Link => "link",
            Self::ReviewedWith => "reviewed_with",
        }
    }

    /// The weight, per mille.
    pub fn weight(self) -> u64 {
        match self {
            Self::Supersedes => 900,
            Self::Evidence => 800,
            Self::Input => 700,
            Self::Link => 500,
            Self::ReviewedWith => 300,
        }
    }
}

/// The fixed parameters, bound into the manifest's recipe.
pub fn parameters() -> Value {
    let weights: serde_json::Map<String, Value> = Edge::ALL
        .iter()
        .map(|e| (e.as_str().to_string(), json!(e.weight())))
        .collect();
    json!({
        "edge_weights_per_mille": weights,
        "lexical_weight_per_mille": LEXICAL_WEIGHT,
        "limits": limits(),
        "proximity_weight_per_mille": PROXIMITY_WEIGHT,
        "score_scale": SCALE,
    })
}

/// The construction and traversal bounds.
pub fn limits() -> Value {
    json!({
        "max_depth": MAX_DEPTH,
        "max_edges": MAX_EDGES,
        "max_fanout": MAX_FANOUT,
        "max_nodes": MAX_NODES,
        "max_seeds": MAX_SEEDS,
    })
}

/// Why a graph cannot be ranked.
#[derive(Debug, PartialEq, Eq)]
pub enum Scope {
    Nodes(usize),
    Edges(usize),
}

/// The typed graph over the offered documents: undirected, one edge per
/// node pair (the heaviest type stated), adjacency sorted heaviest first,
/// then by document order.
#[derive(Debug)]
pub struct Graph {
    adjacency: Vec<Vec<(usize, Edge)>>,
    pub edges: usize,
}

impl Graph {
    /// Build the graph of `nodes` documents from stated relations
    /// (self-loops dropped), or the bound it exceeds.
    #[cfg(test)]
    pub fn build(
        nodes: usize,
        stated: impl IntoIterator<Item = (usize, usize, Edge)>,
    ) -> Result<Self, Scope> {
        let mut builder = Builder::new(nodes)?;
        for (a, b, edge) in stated {
            builder.add(a, b, edge)?;
        }
        Ok(builder.finish())
    }

    /// A node's expanded edges (at most [`MAX_FANOUT`]) and whether some
    /// were cut.
    fn expand(&self, node: usize) -> (&[(usize, Edge)], bool) {
        let all = &self.adjacency[node];
        (&all[..all.len().min(MAX_FANOUT)], all.len() > MAX_FANOUT)
    }
}

/// A graph under construction: the node bound is checked first and the
/// edge bound on every edge, so memory stays bounded whatever a vault
/// states (a relation repeated any number of times is one edge).
#[derive(Debug)]
pub struct Builder {
    nodes: usize,
    pairs: BTreeMap<(usize, usize), Edge>,
}

impl Builder {
    pub fn new(nodes: usize) -> Result<Self, Scope> {
        if nodes > MAX_NODES {
            return Err(Scope::Nodes(nodes));
        }
        Ok(Self {
            nodes,
            pairs: BTreeMap::new(),
        })
    }

    /// Add a stated relation (a self-loop is dropped).
    pub fn add(&mut self, a: usize, b: usize, edge: Edge) -> Result<(), Scope> {
        if a == b || a >= self.nodes || b >= self.nodes {
            return Ok(());
        }
        let slot = self.pairs.entry((a.min(b), a.max(b))).or_insert(edge);
        // The heaviest type wins (weights are distinct).
        if edge.weight() > slot.weight() {
            *slot = edge;
        }
        if self.pairs.len() > MAX_EDGES {
            return Err(Scope::Edges(self.pairs.len()));
        }
        Ok(())
    }

    pub fn finish(self) -> Graph {
        let mut adjacency = vec![Vec::new(); self.nodes];
        for (&(a, b), &edge) in &self.pairs {
            adjacency[a].push((b, edge));
            adjacency[b].push((a, edge));
        }
        for list in &mut adjacency {
            list.sort_by(|x, y| y.1.weight().cmp(&x.1.weight()).then(x.0.cmp(&y.0)));
        }
        Graph {
            adjacency,
            edges: self.pairs.len(),
        }
    }
}

/// A path from a query match: `(document, edge into it)`, the first
/// without an edge.
pub type Path = Vec<(usize, Option<Edge>)>;

/// One ranked document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub doc: usize,
    pub lexical: u64,
    pub proximity: u64,
    pub total: u64,
    /// From a query match to this document.
    pub path: Path,
}

/// The ranking and what it used.
#[derive(Debug, Default)]
pub struct Ranked {
    pub scored: Vec<Scored>,
    pub hits: usize,
    pub seeds: usize,
    /// Nodes expanded whose edges were cut at [`MAX_FANOUT`].
    pub fanout_cut_nodes: usize,
}

/// A score in millionths as a fixed-point decimal string.
pub fn decimal(millionths: u64) -> String {
    format!("{}.{:06}", millionths / SCALE, millionths % SCALE)
}

/// Rank `docs` for `query` over `graph` (built over the same documents).
pub fn rank(docs: &[Doc<'_>], graph: &Graph, query: &str) -> Result<Ranked, RankError> {
    let hits = bm25::scores(docs, query)?;
    let best = hits.first().map_or(0.0, |h| f64::from(h.1));
    let mut lexical: BTreeMap<usize, u64> = BTreeMap::new();
    for &(doc, score) in &hits {
        let q = if best > 0.0 {
            ((f64::from(score) / best) * SCALE as f64).round() as u64
        } else {
            0
        };
        lexical.insert(doc, q.min(SCALE));
    }
    // The best proximity found for each node and its path, first found
    // wins ties (seeds in rank order, edges in adjacency order).
    let mut proximity: BTreeMap<usize, (u64, Path)> = BTreeMap::new();
    let mut cut: BTreeSet<usize> = BTreeSet::new();
    let seeds: Vec<usize> = hits.iter().take(MAX_SEEDS).map(|h| h.0).collect();
    let mut offer = |node: usize, value: u64, path: Path| {
        if value == 0 {
            return;
        }
        match proximity.get(&node) {
            Some((have, _)) if *have >= value => {}
            _ => {
                proximity.insert(node, (value, path));
            }
        }
    };
    for &seed in &seeds {
        let start = lexical[&seed];
        let (first, cut_here) = graph.expand(seed);
        if cut_here {
            cut.insert(seed);
        }
        for &(u, e1) in first {
            let v1 = start * e1.weight() / 1000;
            offer(u, v1, vec![(seed, None), (u, Some(e1))]);
            if MAX_DEPTH < 2 {
                continue;
            }
            let (second, cut_there) = graph.expand(u);
            if cut_there {
                cut.insert(u);
            }
            for &(x, e2) in second {
                if x == seed {
                    continue;
                }
                let v2 = v1 * e2.weight() / 1000;
                offer(x, v2, vec![(seed, None), (u, Some(e1)), (x, Some(e2))]);
            }
        }
    }
    let mut nodes: BTreeSet<usize> = lexical.keys().copied().collect();
    nodes.extend(proximity.keys().copied());
    let mut scored: Vec<Scored> = nodes
        .into_iter()
        .map(|doc| {
            let lex = lexical.get(&doc).copied().unwrap_or(0);
            let (prox, path) = match proximity.remove(&doc) {
                Some((p, path)) => (p, path),
                None => (0, vec![(doc, None)]),
            };
            Scored {
                doc,
                lexical: lex,
                proximity: prox,
                total: (LEXICAL_WEIGHT * lex + PROXIMITY_WEIGHT * prox) / 1000,
                path,
            }
        })
        .collect();
    // A match whose best proximity path is no better than itself shows
    // itself as its path; best total first, ties in document order.
    scored.sort_by(|a, b| b.total.cmp(&a.total).then(a.doc.cmp(&b.doc)));
    Ok(Ranked {
        scored,
        hits: hits.len(),
        seeds: seeds.len(),
        fanout_cut_nodes: cut.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> Vec<Doc<'static>> {
        vec![
            Doc {
                id: "D-001",
                title: "Review policy",
                text: "Every change gets a review.",
            },
            Doc {
                id: "E-001",
                title: "Study",
                text: "numbers",
            },
            Doc {
                id: "S-001",
                title: "Background",
                text: "history",
            },
            Doc {
                id: "S-002",
                title: "Unrelated",
                text: "nothing",
            },
        ]
    }

    #[test]
    fn proximity_reaches_neighbours_within_the_depth() {
        let graph = Graph::build(
            4,
            [
                (0, 1, Edge::Evidence),
                (1, 2, Edge::Input),
                (2, 3, Edge::Link),
            ],
        )
        .unwrap();
        let ranked = rank(&docs(), &graph, "review").unwrap();
        let ids: Vec<usize> = ranked.scored.iter().map(|s| s.doc).collect();
        assert_eq!(ids, [0, 1, 2], "depth 2 stops before S-002");
        assert_eq!(ranked.scored[0].lexical, SCALE);
        assert_eq!(ranked.scored[0].total, 700_000);
        assert_eq!(ranked.scored[1].proximity, 800_000);
        assert_eq!(ranked.scored[1].total, 240_000);
        assert_eq!(ranked.scored[2].proximity, 560_000);
        assert_eq!(
            ranked.scored[2].path,
            [(0, None), (1, Some(Edge::Evidence)), (2, Some(Edge::Input))]
        );
        assert_eq!(decimal(ranked.scored[2].total), "0.168000");
    }

    #[test]
    fn the_heaviest_type_of_a_pair_wins_and_self_loops_are_dropped() {
        let graph = Graph::build(
            2,
            [
                (0, 1, Edge::Link),
                (1, 0, Edge::Supersedes),
                (0, 0, Edge::Input),
            ],
        )
        .unwrap();
        assert_eq!(graph.edges, 1);
        assert_eq!(graph.adjacency[0], [(1, Edge::Supersedes)]);
    }

    #[test]
    fn bounds_are_refused() {
        assert_eq!(
            Graph::build(MAX_NODES + 1, []).unwrap_err(),
            Scope::Nodes(MAX_NODES + 1)
        );
        let n = 1000;
        let many = (0..n).flat_map(|a| (0..n).map(move |b| (a, b, Edge::Link)));
        assert!(matches!(
            Graph::build(n, many).unwrap_err(),
            Scope::Edges(_)
        ));
    }

    #[test]
    fn a_relation_stated_again_and_again_is_one_edge() {
        let mut builder = Builder::new(3).unwrap();
        for _ in 0..200_000 {
            builder.add(0, 1, Edge::Link).unwrap();
            builder.add(2, 1, Edge::Input).unwrap();
        }
        // Out-of-range ends are dropped, never indexed.
        builder.add(0, 7, Edge::Link).unwrap();
        assert_eq!(builder.finish().edges, 2);
    }

    #[test]
    fn fan_out_is_cut_heaviest_first() {
        let n = MAX_FANOUT + 3;
        let graph = Graph::build(n, (1..n).map(|b| (0, b, Edge::Link))).unwrap();
        let (kept, cut) = graph.expand(0);
        assert!(cut);
        assert_eq!(kept.len(), MAX_FANOUT);
        assert_eq!(kept[0].0, 1);
    }
}
