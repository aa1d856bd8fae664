//! Ranking a query over the eligible corpus.
//!
//! Both rankers take documents in a fixed order, sorted by (id, path), and
//! return the indices of the matching documents, best first. Ties are
//! broken by that order: ascending id, then ascending path.

pub mod bm25;
pub mod hybrid;
pub mod substring;

/// The rankers a recipe may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranking {
    #[default]
    Substring,
    Bm25,
    /// BM25 plus bounded typed-graph proximity (see [`hybrid`]).
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
            Self::Hybrid => format!(
                "kapi-hybrid/1 on {} (bm25 k1=1.2, b=0.75; typed-graph proximity)",
                tantivy::version_string()
            ),
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
    /// The hybrid graph is over its bounds (a bounded refusal, exit 3).
    #[error("scope_too_large: the eligible corpus is over the hybrid ranker's bounds")]
    ScopeTooLarge,
}

/// Rank `docs` for `query`: matching indices, best first. The hybrid
/// ranker needs its graph ([`hybrid::rank`]) and is never answered here
/// by another ranker.
pub fn rank(ranking: Ranking, docs: &[Doc<'_>], query: &str) -> Result<Vec<usize>, RankError> {
    match ranking {
        Ranking::Substring => Ok(substring::rank(docs, query)),
        Ranking::Bm25 => bm25::rank(docs, query),
        Ranking::Hybrid => Err(RankError::Engine(
            "the hybrid ranker needs its graph".to_string(),
        )),
    }
}
