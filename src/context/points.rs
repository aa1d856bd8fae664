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

/// Compiled `[[points]]` entries; later entries override earlier ones.
#[derive(Debug, Default)]
pub struct PointMap {
    entries: Vec<(GlobSet, BTreeMap<String, String>)>,
}

impl PointMap {
    pub fn from_config(tables: &[toml::Table]) -> Result<Self, String> {
        let mut entries = Vec::new();
        for (i, table) in tables.iter().enumerate() {
            let entry: Entry = toml::Value::Table(table.clone())
                .try_into()
                .map_err(|e| format!("[[points]] entry {}: {e}", i + 1))?;
            let mut set = GlobSetBuilder::new();
            for p in &entry.paths {
                set.add(Glob::new(p).map_err(|e| format!("[[points]] entry {}: {e}", i + 1))?);
            }
            entries.push((set.build().map_err(|e| e.to_string())?, entry.axes));
        }
        Ok(Self { entries })
    }

    /// The point of a path relative to the work tree.
    pub fn point(&self, rel_path: &str) -> Point {
        let mut point = Point::new();
        for (set, axes) in &self.entries {
            if set.is_match(rel_path) {
                point.extend(axes.iter().map(|(a, v)| (a.clone(), v.clone())));
            }
        }
        point
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The point of `rel_path` under the project's config.
pub fn point_of(config: &crate::config::Config, rel_path: &str) -> Result<Point, String> {
    Ok(PointMap::from_config(&config.points)?.point(rel_path))
}
