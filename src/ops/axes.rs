//! The project's typed axes: how one value of an axis sits within another.
//!
//! `[axes]` in kapi.toml types an axis as an enumerated hierarchy
//! (`market`: nordics contains no, se and dk), a numeric range (`age`:
//! 13-17 sits within 13-20 and overlaps 16-20) or a geo axis whose places
//! come from a gazetteer file (oslo within no-03 within no). An axis the
//! space does not type compares by equality. Everything here is a pure
//! function of values; reading the gazetteer file is the caller's job.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// How `[axes.<name>]` in kapi.toml types an axis.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AxisConfig {
    /// Named values, some containing others:
    /// `contains = { nordics = ["no", "se", "dk"] }`.
    Enum {
        /// Values that contain none and are named in no `contains`.
        #[serde(default)]
        values: Vec<String>,
        #[serde(default)]
        contains: BTreeMap<String, Vec<String>>,
    },
    /// Whole numbers and ranges of them: `15`, `13-17`, `18-`, `-12`.
    Range { min: Option<i64>, max: Option<i64> },
    /// Places from a gazetteer file (path relative to the work tree).
    Geo { gazetteer: String },
}

/// One place of a gazetteer file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Place {
    /// The value an axis takes: `oslo`, `no-03`, `no`.
    pub id: String,
    /// A name to show: `Oslo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What sort of place: `country`, `county`, `city`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The places that directly contain it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lon: Option<f64>,
}

/// A gazetteer file: `[[place]]` tables.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Gazetteer {
    #[serde(default)]
    pub place: Vec<Place>,
}

/// Why an axis cannot be typed; the message names the axis and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AxesError {
    #[error("[axes.{axis}] gazetteer {file}: {message}")]
    Gazetteer {
        axis: String,
        file: String,
        message: String,
    },
    #[error("[axes.{axis}]: {message}")]
    Axis { axis: String, message: String },
}

impl Gazetteer {
    /// Parse a gazetteer file's text (TOML).
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }
}

/// Values some of which contain others (an enumerated hierarchy or a
/// gazetteer): a value contains itself and everything below it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    /// Each value and the values directly containing it.
    within: BTreeMap<String, Vec<String>>,
    /// Each value and every value containing it, computed once: readers
    /// compare values per file and per pair of rules.
    above: BTreeMap<String, BTreeSet<String>>,
    /// Whether some value sits directly within two others: only then can
    /// two values meet without one containing the other.
    shared: bool,
    /// The places, for a geo axis.
    places: BTreeMap<String, Place>,
}

impl Tree {
    fn build(axis: &str, edges: BTreeMap<String, Vec<String>>) -> Result<Self, AxesError> {
        let mut tree = Tree {
            shared: edges.values().any(|w| w.len() > 1),
            within: edges,
            above: BTreeMap::new(),
            places: BTreeMap::new(),
        };
        let mut above = BTreeMap::new();
        for value in tree.within.keys() {
            let up = tree.ancestors(value);
            // A value that contains itself through others cannot be compared.
            if up.contains(value.as_str()) {
                return Err(AxesError::Axis {
                    axis: axis.into(),
                    message: format!("`{value}` ends up containing itself"),
                });
            }
            above.insert(value.clone(), up.into_iter().map(str::to_owned).collect());
        }
        tree.above = above;
        Ok(tree)
    }

    /// Every value strictly containing `value`.
    fn ancestors<'a>(&'a self, value: &str) -> BTreeSet<&'a str> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = self
            .within
            .get(value)
            .map(|w| w.iter().map(String::as_str).collect())
            .unwrap_or_default();
        while let Some(v) = todo.pop() {
            if seen.insert(v)
                && let Some(up) = self.within.get(v)
            {
                todo.extend(up.iter().map(String::as_str));
            }
        }
        seen
    }

    fn contains(&self, outer: &str, inner: &str) -> bool {
        outer == inner || self.above.get(inner).is_some_and(|up| up.contains(outer))
    }

    /// Two values meet when one contains the other or both contain a
    /// third (greater-oslo and no-03 both contain oslo).
    fn overlaps(&self, a: &str, b: &str) -> bool {
        self.contains(a, b)
            || self.contains(b, a)
            || (self.shared
                && self
                    .above
                    .values()
                    .any(|up| up.contains(a) && up.contains(b)))
    }

    fn legal(&self, value: &str) -> bool {
        self.within.contains_key(value)
    }
}

/// A range of whole numbers, both ends inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    lo: i64,
    hi: i64,
}

impl Span {
    /// `15`, `13-17`, `18-` or `-12`.
    fn parse(text: &str) -> Option<Span> {
        let text = text.trim();
        let number = |s: &str| s.trim().parse::<i64>().ok();
        match text.split_once('-') {
            None => number(text).map(|n| Span { lo: n, hi: n }),
            Some((lo, hi)) => {
                let lo = if lo.trim().is_empty() {
                    i64::MIN
                } else {
                    number(lo)?
                };
                let hi = if hi.trim().is_empty() {
                    i64::MAX
                } else {
                    number(hi)?
                };
                (lo <= hi && (lo, hi) != (i64::MIN, i64::MAX)).then_some(Span { lo, hi })
            }
        }
    }
}

/// How one axis compares values.
#[derive(Debug, Clone, PartialEq)]
pub enum Axis {
    /// An enumerated hierarchy.
    Enum(Tree),
    /// Numbers and ranges, within `min`..=`max` when given.
    Range { min: Option<i64>, max: Option<i64> },
    /// Places from a gazetteer.
    Geo(Tree),
}

impl Axis {
    /// The kind as kapi.toml spells it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Axis::Enum(_) => "enum",
            Axis::Range { .. } => "range",
            Axis::Geo(_) => "geo",
        }
    }

    /// Whether `inner` sits within `outer`.
    pub fn contains(&self, outer: &str, inner: &str) -> bool {
        match self {
            Axis::Enum(t) | Axis::Geo(t) => t.contains(outer, inner),
            Axis::Range { .. } => match (Span::parse(outer), Span::parse(inner)) {
                (Some(o), Some(i)) => o.lo <= i.lo && i.hi <= o.hi,
                _ => outer == inner,
            },
        }
    }

    /// Whether some value sits within both.
    pub fn overlaps(&self, a: &str, b: &str) -> bool {
        match self {
            Axis::Enum(t) | Axis::Geo(t) => t.overlaps(a, b),
            Axis::Range { .. } => match (Span::parse(a), Span::parse(b)) {
                (Some(x), Some(y)) => x.lo <= y.hi && y.lo <= x.hi,
                _ => a == b,
            },
        }
    }

    /// Whether the axis can take `value`.
    pub fn legal(&self, value: &str) -> bool {
        match self {
            Axis::Enum(t) | Axis::Geo(t) => t.legal(value),
            Axis::Range { min, max } => Span::parse(value).is_some_and(|s| {
                min.is_none_or(|m| s.lo >= m || s.lo == i64::MIN)
                    && max.is_none_or(|m| s.hi <= m || s.hi == i64::MAX)
            }),
        }
    }

    /// What a legal value looks like, for an error message.
    pub(crate) fn expects(&self) -> String {
        match self {
            Axis::Enum(t) => format!(
                "one of {}",
                t.within.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            Axis::Range { .. } => "a whole number or a range (13-17, 18-, -12)".into(),
            Axis::Geo(_) => "a place of the gazetteer".into(),
        }
    }

    /// For an enumerated or geo axis: every value and the values directly
    /// containing it.
    pub fn values(&self) -> Vec<(&str, &[String])> {
        match self {
            Axis::Enum(t) | Axis::Geo(t) => t
                .within
                .iter()
                .map(|(v, w)| (v.as_str(), w.as_slice()))
                .collect(),
            Axis::Range { .. } => Vec::new(),
        }
    }

    /// For a geo axis: the places containing `value` that nothing contains
    /// (its countries, in a gazetteer of countries).
    pub fn outermost(&self, value: &str) -> Vec<&str> {
        let Axis::Geo(t) = self else {
            return Vec::new();
        };
        if !t.places.contains_key(value) {
            return Vec::new();
        }
        let mut up: Vec<&str> = t.ancestors(value).into_iter().collect();
        up.push(
            t.places
                .get_key_value(value)
                .map_or("", |(k, _)| k.as_str()),
        );
        up.into_iter()
            .filter(|v| t.within.get(*v).is_none_or(Vec::is_empty))
            .collect()
    }

    /// For a geo axis: the place `value` names and every place containing
    /// it, `value` first.
    pub fn places(&self, value: &str) -> Vec<&Place> {
        let Axis::Geo(t) = self else {
            return Vec::new();
        };
        let Some(place) = t.places.get(value) else {
            return Vec::new();
        };
        let mut out = vec![place];
        out.extend(
            t.ancestors(value)
                .into_iter()
                .filter_map(|a| t.places.get(a)),
        );
        out
    }
}

/// A project's typed axes. An axis it does not type compares by equality.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Space {
    axes: BTreeMap<String, Axis>,
}

impl Space {
    /// Type the axes `[axes]` declares; `gazetteer` reads the file a geo
    /// axis names (relative to the work tree) and returns its text.
    pub fn build(
        config: &BTreeMap<String, AxisConfig>,
        mut gazetteer: impl FnMut(&str) -> Result<String, String>,
    ) -> Result<Space, AxesError> {
        let mut axes = BTreeMap::new();
        for (name, c) in config {
            let axis = match c {
                AxisConfig::Enum { values, contains } => {
                    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
                    for v in values {
                        edges.entry(v.clone()).or_default();
                    }
                    for (outer, inner) in contains {
                        edges.entry(outer.clone()).or_default();
                        for i in inner {
                            edges.entry(i.clone()).or_default().push(outer.clone());
                        }
                    }
                    Axis::Enum(Tree::build(name, edges)?)
                }
                AxisConfig::Range { min, max } => Axis::Range {
                    min: *min,
                    max: *max,
                },
                AxisConfig::Geo { gazetteer: file } => {
                    let bad = |message: String| AxesError::Gazetteer {
                        axis: name.clone(),
                        file: file.clone(),
                        message,
                    };
                    let g = Gazetteer::parse(&gazetteer(file).map_err(bad)?).map_err(bad)?;
                    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
                    let mut places = BTreeMap::new();
                    for p in &g.place {
                        if places.insert(p.id.clone(), p.clone()).is_some() {
                            return Err(bad(format!("place `{}` is listed twice", p.id)));
                        }
                        edges.insert(p.id.clone(), p.within.clone());
                    }
                    for p in &g.place {
                        if let Some(w) = p.within.iter().find(|w| !places.contains_key(*w)) {
                            return Err(bad(format!(
                                "place `{}` is within `{w}`, which the file does not list",
                                p.id
                            )));
                        }
                    }
                    let mut tree = Tree::build(name, edges)?;
                    tree.places = places;
                    Axis::Geo(tree)
                }
            };
            axes.insert(name.clone(), axis);
        }
        Ok(Space { axes })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.axes.is_empty()
    }

    /// The typed axis `name`, if the space types it.
    pub(crate) fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.get(name)
    }

    /// Every typed axis.
    pub fn axes(&self) -> impl Iterator<Item = (&str, &Axis)> {
        self.axes.iter().map(|(n, a)| (n.as_str(), a))
    }

    /// Whether `inner` sits within `outer` on `axis` (equality for an
    /// axis the space does not type).
    pub fn contains(space: Option<&Space>, axis: &str, outer: &str, inner: &str) -> bool {
        match space.and_then(|s| s.axes.get(axis)) {
            Some(a) => a.contains(outer, inner),
            None => outer == inner,
        }
    }

    /// Whether two values of `axis` meet (equality for an untyped axis).
    pub fn overlaps(space: Option<&Space>, axis: &str, a: &str, b: &str) -> bool {
        match space.and_then(|s| s.axes.get(axis)) {
            Some(x) => x.overlaps(a, b),
            None => a == b,
        }
    }
}

/// Each project's space, for the fold: rules of a project compare on its
/// axes; a project with none listed compares by equality.
#[derive(Debug, Clone, Default)]
pub struct Axes {
    by_project: BTreeMap<String, Arc<Space>>,
}

impl Axes {
    /// `project`'s axes typed by `space`.
    pub(crate) fn of(project: &str, space: Arc<Space>) -> Axes {
        Axes {
            by_project: [(project.to_owned(), space)].into(),
        }
    }

    /// The space of `project`, if typed.
    pub(crate) fn space(&self, project: &str) -> Option<&Space> {
        self.by_project.get(project).map(|s| &**s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> Space {
        let config: BTreeMap<String, AxisConfig> = toml::from_str(
            r#"
            [market]
            kind = "enum"
            values = ["de"]
            contains = { nordics = ["no", "se", "dk"], europe = ["nordics", "de"] }
            [age]
            kind = "range"
            min = 0
            [place]
            kind = "geo"
            gazetteer = "places.toml"
            "#,
        )
        .unwrap();
        Space::build(&config, |_| {
            Ok(r#"
                [[place]]
                id = "no"
                name = "Norway"
                [[place]]
                id = "no-03"
                within = ["no"]
                [[place]]
                id = "greater-oslo"
                within = ["no"]
                [[place]]
                id = "oslo"
                within = ["no-03", "greater-oslo"]
                [[place]]
                id = "se"
            "#
            .into())
        })
        .unwrap()
    }

    #[test]
    fn a_hierarchy_contains_its_members_and_theirs() {
        let s = space();
        let s = Some(&s);
        assert!(Space::contains(s, "market", "nordics", "no"));
        assert!(Space::contains(s, "market", "europe", "no"));
        assert!(!Space::contains(s, "market", "nordics", "de"));
        assert!(!Space::contains(s, "market", "no", "nordics"));
        assert!(Space::overlaps(s, "market", "no", "nordics"));
        assert!(!Space::overlaps(s, "market", "no", "se"));
        // An axis the space does not type compares by equality.
        assert!(!Space::contains(s, "brand", "nordics", "no"));
        assert!(!Space::contains(None, "market", "nordics", "no"));
    }

    #[test]
    fn ranges_contain_and_overlap_by_their_bounds() {
        let s = space();
        let age = s.axis("age").unwrap();
        assert!(age.contains("13-20", "13-17"));
        assert!(age.contains("13-17", "14-16"));
        assert!(!age.contains("13-17", "18-"));
        assert!(age.overlaps("13-17", "16-20"));
        assert!(!age.overlaps("13-17", "18-"));
        assert!(age.contains("18-", "21"));
        assert!(age.legal("13-17") && !age.legal("17-13") && !age.legal("teen"));
        assert!(!age.legal("-3-4"));
    }

    #[test]
    fn places_sit_within_their_containers() {
        let s = space();
        let place = s.axis("place").unwrap();
        assert!(place.contains("no", "oslo"));
        assert!(place.contains("no-03", "oslo"));
        assert!(!place.contains("oslo", "no"));
        assert!(place.overlaps("greater-oslo", "no-03"));
        assert!(!place.overlaps("se", "no"));
        let ids: Vec<&str> = place.places("oslo").iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids[0], "oslo");
        assert_eq!(ids.len(), 4);
        assert!(!place.legal("bergen"));
    }

    #[test]
    fn a_gazetteer_naming_an_unknown_container_or_a_cycle_is_refused() {
        let config: BTreeMap<String, AxisConfig> =
            toml::from_str("[place]\nkind = \"geo\"\ngazetteer = \"g.toml\"").unwrap();
        let unknown = Space::build(&config, |_| {
            Ok("[[place]]\nid = \"oslo\"\nwithin = [\"no\"]".into())
        });
        assert!(unknown.unwrap_err().to_string().contains("within `no`"));
        let cycle = Space::build(&config, |_| {
            Ok(
                "[[place]]\nid = \"a\"\nwithin = [\"b\"]\n[[place]]\nid = \"b\"\nwithin = [\"a\"]"
                    .into(),
            )
        });
        assert!(cycle.unwrap_err().to_string().contains("containing itself"));
        let bad_kind: Result<BTreeMap<String, AxisConfig>, _> =
            toml::from_str("[x]\nkind = \"colour\"");
        assert!(bad_kind.is_err());
    }
}

#[cfg(test)]
mod fold_tests {
    use std::sync::Arc;

    use super::*;
    use crate::ops::fold::{Ledger, Status};
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{Actor, ActorKind, Kind, Record, Subject};

    fn rule(n: u64, project: &str, preferred: &str, market: &str) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        let actor = Actor {
            kind: ActorKind::Agent,
            name: "a".into(),
            session: Some(format!("s{n}").into()),
        };
        let mut r = Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            subject: Some(Box::new(Subject::Term {
                preferred: preferred.into(),
                avoid: vec!["Quick cast".into()],
            })),
            ..Record::new(project, actor, Kind::Observe)
        };
        r.scope.point.insert("market".into(), market.into());
        r
    }

    fn status(ledger: &Ledger, r: &Record) -> Status {
        ledger.state(&r.op_id()).unwrap().status
    }

    #[test]
    fn the_fold_compares_scopes_on_each_projects_axes_and_never_across_projects() {
        let config: BTreeMap<String, AxisConfig> =
            toml::from_str("[market]\nkind = \"enum\"\ncontains = { nordics = [\"no\", \"se\"] }")
                .unwrap();
        let space = Arc::new(Space::build(&config, |_| Err(String::new())).unwrap());
        let a = rule(1, "docs", "Quickcast", "nordics");
        let b = rule(2, "docs", "Fastcast", "no");
        let log = vec![a.clone(), b.clone()];
        // By equality nordics and no never meet; on the project's axes they do.
        let plain = Ledger::new(log.clone()).folded();
        assert_eq!(status(&plain, &a), Status::Suggested);
        let typed = Ledger::new(log)
            .with_axes(Axes::of("docs", Arc::clone(&space)))
            .folded();
        assert_eq!(status(&typed, &a), Status::Contested);
        assert_eq!(status(&typed, &b), Status::Contested);
        // A rule of another project at the same point never contests.
        let other = rule(3, "site", "Fastcast", "nordics");
        let ledger = Ledger::new(vec![a.clone(), other.clone()])
            .with_axes(Axes::of("docs", space))
            .folded();
        assert_eq!(status(&ledger, &a), Status::Suggested);
        assert_eq!(status(&ledger, &other), Status::Suggested);
    }
}
