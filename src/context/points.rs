//! The point of a file: `[[points]]` in kapi.toml maps path globs to axis
//! values, so a rule seen in one product's pages says nothing about
//! another's.
//!
//! ```toml
//! [[points]]
//! paths = ["docs/app/**"]
//! axes = { product = "quickcast", channel = "app" }
//!
//! [[points]]
//! paths = ["handbook/**"]
//! profile = "handbook"         # the axis `profile`: .kapi/profiles/handbook/
//! ```
//!
//! A profile is the value of the axis `profile`: the rules of a profile's
//! own term lists (`.kapi/profiles/<name>/`) are imported at it, so they
//! hold only in the files an entry names the profile for.

use std::collections::BTreeMap;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::ops::scope::Point;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    paths: Vec<String>,
    #[serde(default)]
    axes: BTreeMap<String, String>,
    /// The profile governing these paths: the value of the axis `profile`.
    profile: Option<String>,
}

/// The axis a profile is the value of.
pub const PROFILE_AXIS: &str = "profile";

/// Where a project keeps its profiles, relative to the work tree.
pub const PROFILES_DIR: &str = ".kapi/profiles";

/// Whether `name` can name a profile: the name of one folder under
/// `.kapi/profiles/` (letters, digits, `.`, `_`, `-`; at most 64; not
/// starting with a dot).
pub fn is_profile_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
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
    #[error(
        "[[points]] entry {entry}: `{name}` cannot name a profile (a folder under .kapi/profiles/: letters, digits, `.`, `_` and `-`, at most 64, not starting with a dot)"
    )]
    Profile { entry: usize, name: String },
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
            let mut entry: Entry =
                toml::Value::Table(table.clone())
                    .try_into()
                    .map_err(|source| PointsError::Entry {
                        entry: i + 1,
                        source,
                    })?;
            if let Some(name) = entry.profile.take() {
                entry.axes.insert(PROFILE_AXIS.to_owned(), name);
            }
            if let Some(name) = entry.axes.get(PROFILE_AXIS)
                && !is_profile_name(name)
            {
                return Err(PointsError::Profile {
                    entry: i + 1,
                    name: name.clone(),
                });
            }
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
