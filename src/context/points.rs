//! The point of a file: `[[points]]` in kapi.toml maps path globs to axis
//! values, so a rule seen in one product's pages says nothing about
//! another's.
//!
//! ```toml
//! [[points]]
//! paths = ["docs/app/**"]
//! axes = { product = "quickcast", channel = "app" }
//! ```

use std::collections::BTreeMap;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::ops::scope::Point;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    paths: Vec<String>,
    axes: BTreeMap<String, String>,
}

/// Why `[[points]]` cannot be read (entries are numbered from 1).
#[derive(Debug, thiserror::Error)]
pub enum PointsError {
    #[error("[[points]] entry {entry}: {source}")]
    Entry {
        entry: usize,
        #[source]
        source: toml::de::Error,
    },
    #[error("[[points]] entry {entry}: {source}")]
    Glob {
        entry: usize,
        #[source]
        source: globset::Error,
    },
    #[error(transparent)]
    Set(#[from] globset::Error),
}

/// Compiled `[[points]]` entries; later entries override earlier ones.
#[derive(Debug, Default)]
pub struct PointMap {
    entries: Vec<(GlobSet, BTreeMap<String, String>, Vec<String>)>,
}

impl PointMap {
    pub fn from_config(tables: &[toml::Table]) -> Result<Self, PointsError> {
        let mut entries = Vec::new();
        for (i, table) in tables.iter().enumerate() {
            let entry: Entry = toml::Value::Table(table.clone())
                .try_into()
                .map_err(|source| PointsError::Entry {
                    entry: i + 1,
                    source,
                })?;
            let mut set = GlobSetBuilder::new();
            for p in &entry.paths {
                set.add(Glob::new(p).map_err(|source| PointsError::Glob {
                    entry: i + 1,
                    source,
                })?);
            }
            entries.push((set.build()?, entry.axes, entry.paths));
        }
        Ok(Self { entries })
    }

    /// The point of a path relative to the work tree.
    pub(crate) fn point(&self, rel_path: &str) -> Point {
        let mut point = Point::new();
        for (set, axes, _) in &self.entries {
            if set.is_match(rel_path) {
                point.extend(axes.iter().map(|(a, v)| (a.clone(), v.clone())));
            }
        }
        point
    }

    /// The `[[points]]` entry (numbered from 1) that sets `axis` for
    /// `rel_path`, with its path globs: the last that matches, as in
    /// [`PointMap::point`].
    pub(crate) fn entry_setting(&self, rel_path: &str, axis: &str) -> Option<(usize, Vec<String>)> {
        self.entries
            .iter()
            .enumerate()
            .rev()
            .find(|(_, (set, axes, _))| axes.contains_key(axis) && set.is_match(rel_path))
            .map(|(i, (_, _, globs))| (i + 1, globs.clone()))
    }

    /// Every value the entries set: (entry, numbered from 1; axis; value).
    pub fn values(&self) -> impl Iterator<Item = (usize, &str, &str)> {
        self.entries
            .iter()
            .enumerate()
            .flat_map(|(i, (_, axes, _))| {
                axes.iter()
                    .map(move |(a, v)| (i + 1, a.as_str(), v.as_str()))
            })
    }
}

/// The point of `rel_path` under the project's config.
pub fn point_of(config: &crate::config::Config, rel_path: &str) -> Result<Point, PointsError> {
    Ok(PointMap::from_config(&config.points)?.point(rel_path))
}
