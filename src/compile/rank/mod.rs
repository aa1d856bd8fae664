//! Ranking a query over the eligible corpus.
//!
//! Both rankers take documents in a fixed order, sorted by (id, path), and
//! return the indices of the matching documents, best first. Ties are
//! broken by that order: ascending id, then ascending path.

pub mod bm25;
pub mod substring;

/// The rankers a recipe may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranking {
    #[default]
    Substring,
    Bm25,
    /// Reserved for the hybrid ranker (BM25 plus typed-graph proximity),
    /// which is not available yet.
    Hybrid,
}

impl Ranking {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "substring" => Some(Self::Substring),
            "bm25" => Some(Self::Bm25),
            "hybrid" => Some(Self::Hybrid),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Substring => "substring",
            Self::Bm25 => "bm25",
            Self::Hybrid => "hybrid",
        }
    }

    /// The engine and its version, bound into the manifest: an upgrade that
    /// may change scores makes old artifacts stale.
    pub fn engine(self) -> String {
        match self {
            Self::Substring => "kapi-substring/1 (ascii-case-insensitive)".to_string(),
            Self::Bm25 => format!(
                "kapi-bm25/1 on {} (k1=1.2, b=0.75)",
                tantivy::version_string()
            ),
            Self::Hybrid => "unavailable".to_string(),
        }
    }
}

/// One document offered to a ranker.
#[derive(Debug, Clone, Copy)]
pub struct Doc<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub text: &'a str,
}

#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error("ranking_failed: the BM25 engine failed: {0}")]
    Engine(String),
}

/// Rank `docs` for `query`: matching indices, best first.
pub fn rank(ranking: Ranking, docs: &[Doc<'_>], query: &str) -> Result<Vec<usize>, RankError> {
    match ranking {
        Ranking::Substring => Ok(substring::rank(docs, query)),
        Ranking::Bm25 => bm25::rank(docs, query),
        Ranking::Hybrid => Ok(Vec::new()),
    }
}
