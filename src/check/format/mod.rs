//! Rendering a check's outcome: for people (rustc style), for tools (JSON),
//! for code scanning (SARIF 2.1.0) and for GitHub Actions (annotations).

pub mod github;
pub mod human;
pub mod json;
pub mod sarif;

/// The output formats of `kapi check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Sarif,
    Github,
}
