//! BM25 through tantivy, reproducibly: an in-RAM index, one indexing
//! thread, documents added in the caller's fixed order, no merges, one
//! commit, a manually reloaded reader. Ids are indexed as raw tokens so
//! `D-001` matches itself; text goes through tantivy's default tokenizer.
//!
//! Every match is collected, then sorted by score (descending) and the
//! document order (ascending id, then path) breaks ties.

use std::collections::BTreeSet;

use tantivy::collector::{Count, TopDocs};
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{FAST, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::TokenStream;
use tantivy::{Index, IndexWriter, ReloadPolicy, TantivyDocument, Term, doc};

use super::{Doc, RankError};

fn engine<E: std::fmt::Display>(e: E) -> RankError {
    RankError::Engine(e.to_string())
}

pub fn rank(docs: &[Doc<'_>], query: &str) -> Result<Vec<usize>, RankError> {
    Ok(scores(docs, query)?.into_iter().map(|(i, _)| i).collect())
}

/// Every match with its BM25 score, best first (ties in document order).
pub fn scores(docs: &[Doc<'_>], query: &str) -> Result<Vec<(usize, f32)>, RankError> {
    if query.trim().is_empty() || docs.is_empty() {
        return Ok(Vec::new());
    }
    let mut builder = Schema::builder();
    let id_f = builder.add_text_field("id", STRING);
    // Frequencies and field norms are all BM25 needs: no positions.
    let indexing = TextFieldIndexing::default()
        .set_tokenizer("default")
        .set_index_option(IndexRecordOption::WithFreqs);
    let text_f = builder.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(indexing),
    );
    let ord_f = builder.add_u64_field("ord", FAST);
    let index = Index::create_in_ram(builder.build());
    let mut writer: IndexWriter<TantivyDocument> = index
        .writer_with_num_threads(1, 15_000_000)
        .map_err(engine)?;
    writer.set_merge_policy(Box::new(NoMergePolicy));
    let mut buf = String::new();
    for (ord, d) in docs.iter().enumerate() {
        buf.clear();
        buf.push_str(d.title);
        buf.push('\n');
        buf.push_str(d.text);
        writer
            .add_document(doc!(id_f => d.id, text_f => buf.as_str(), ord_f => ord as u64))
            .map_err(engine)?;
    }
    writer.commit().map_err(engine)?;
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(engine)?;
    reader.reload().map_err(engine)?;
    let searcher = reader.searcher();

    let mut tokenizer = index.tokenizer_for_field(text_f).map_err(engine)?;
    let mut words = BTreeSet::new();
    let mut stream = tokenizer.token_stream(query);
    while stream.advance() {
        words.insert(stream.token().text.clone());
    }
    let ids: BTreeSet<&str> = query
        .split_whitespace()
        .filter(|w| crate::vault::note::valid_id(w))
        .collect();
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for w in &words {
        let term = Term::from_field_text(text_f, w);
        clauses.push((
            Occur::Should,
            Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
        ));
    }
    for id in ids {
        let term = Term::from_field_text(id_f, id);
        clauses.push((
            Occur::Should,
            Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
        ));
    }
    if clauses.is_empty() {
        return Ok(Vec::new());
    }
    let query = BooleanQuery::new(clauses);
    let (count, top) = searcher
        .search(
            &query,
            &(Count, TopDocs::with_limit(docs.len()).order_by_score()),
        )
        .map_err(engine)?;
    let mut scored: Vec<(f32, u64)> = Vec::with_capacity(count);
    let mut columns = std::collections::HashMap::new();
    for (score, addr) in top {
        let column = match columns.entry(addr.segment_ord) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(
                searcher
                    .segment_reader(addr.segment_ord)
                    .fast_fields()
                    .u64("ord")
                    .map_err(engine)?,
            ),
        };
        let ord = column
            .first(addr.doc_id)
            .ok_or_else(|| engine("a document without its order"))?;
        scored.push((score, ord));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(scored
        .into_iter()
        .map(|(score, ord)| (ord as usize, score))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_reproducibly_with_raw_ids() {
        let docs = [
            Doc {
                id: "D-001",
                title: "Review policy",
                text: "Every change gets a review.",
            },
            Doc {
                id: "D-002",
                title: "Deploys",
                text: "Deploy on Tuesdays.",
            },
            Doc {
                id: "S-001",
                title: "Review study",
                text: "review review policy",
            },
            Doc {
                id: "S-002",
                title: "Nothing",
                text: "unrelated",
            },
        ];
        let first = rank(&docs, "review policy").unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(first, rank(&docs, "review policy").unwrap());
        assert_eq!(rank(&docs, "D-002").unwrap(), [1]);
        assert!(rank(&docs, "  ").unwrap().is_empty());
    }
}
