//! Where and when a rule holds: a point (axis → value) and a half-open
//! lifetime window. Values compare on the project's typed axes
//! ([`Space`]: hierarchies, ranges, places); an axis it does not type
//! compares by equality.

use std::collections::BTreeMap;

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime};

use super::axes::Space;
use super::record::Scope;

/// A point: the coordinates of a file or of a piece of evidence.
pub type Point = BTreeMap<String, String>;

/// A point's coordinates as `axis=value`, in axis order: what every surface
/// prints for where a rule holds.
pub fn pairs(point: &Point) -> Vec<String> {
    point.iter().map(|(a, v)| format!("{a}={v}")).collect()
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("`{0}` is neither a date (2026-12-01) nor an RFC 3339 instant (2026-12-01T09:00:00Z)")]
    BadBound(String),
    #[error("the window is empty: valid_from {from} is not before valid_to {to}")]
    EmptyWindow { from: String, to: String },
    #[error("`{0}` is not axis=value")]
    BadPoint(String),
    #[error(
        "--as-of `{0}` is neither a date (2026-11-01) nor an RFC 3339 instant (2026-11-01T12:00:00Z)"
    )]
    BadAsOf(String),
}

/// Parse a window bound: a bare date means midnight UTC of that day, so a
/// `valid_to` date excludes that whole day.
pub fn parse_bound(text: &str) -> Result<i64, ScopeError> {
    let text = text.trim();
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(unix_ms(t));
    }
    let date = Date::parse(text, format_description!("[year]-[month]-[day]"))
        .map_err(|_| ScopeError::BadBound(text.to_owned()))?;
    Ok(unix_ms(date.midnight().assume_utc()))
}

/// Parse `--as-of`: an RFC 3339 instant, or a bare date meaning the end
/// of that day in UTC (everything the log accepted on that date counts).
/// Unix milliseconds.
pub fn parse_as_of(text: &str) -> Result<u64, ScopeError> {
    let bad = || ScopeError::BadAsOf(text.trim().to_owned());
    let text = text.trim();
    let ms = if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        unix_ms(t)
    } else {
        let date =
            Date::parse(text, format_description!("[year]-[month]-[day]")).map_err(|_| bad())?;
        unix_ms(date.midnight().assume_utc()) + 86_400_000 - 1
    };
    u64::try_from(ms).map_err(|_| bad())
}

fn unix_ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Check a window before it is recorded.
pub fn check_window(from: Option<&str>, to: Option<&str>) -> Result<(), ScopeError> {
    let f = from.map(parse_bound).transpose()?;
    let t = to.map(parse_bound).transpose()?;
    if let (Some(f), Some(t)) = (f, t)
        && f >= t
    {
        return Err(ScopeError::EmptyWindow {
            from: from.unwrap_or_default().into(),
            to: to.unwrap_or_default().into(),
        });
    }
    Ok(())
}

/// Parse `axis=value` flags into a point.
pub fn parse_point(pairs: &[String]) -> Result<Point, ScopeError> {
    let mut point = Point::new();
    for pair in pairs {
        let (axis, value) = pair
            .split_once('=')
            .ok_or_else(|| ScopeError::BadPoint(pair.clone()))?;
        let (axis, value) = (axis.trim(), value.trim());
        if axis.is_empty() || value.is_empty() {
            return Err(ScopeError::BadPoint(pair.clone()));
        }
        point.insert(axis.to_owned(), value.to_owned());
    }
    Ok(point)
}

/// The window as Unix milliseconds; an unparsable bound (from an untrusted
/// record) makes the window hold nowhere rather than everywhere.
fn window(scope: &Scope) -> (i64, i64) {
    let from = scope
        .valid_from
        .as_deref()
        .map_or(Ok(i64::MIN), parse_bound);
    let to = scope.valid_to.as_deref().map_or(Ok(i64::MAX), parse_bound);
    match (from, to) {
        (Ok(f), Ok(t)) => (f, t),
        _ => (0, 0),
    }
}

impl Scope {
    /// Whether the window includes `at` (Unix ms); `None` is the
    /// as-declared view in which every window holds.
    pub fn in_force(&self, at: Option<i64>) -> bool {
        match at {
            None => true,
            Some(at) => {
                let (f, t) = window(self);
                f <= at && at < t
            }
        }
    }

    /// Whether the scope covers `point` comparing by equality:
    /// [`Scope::covers_in`] with no typed axes.
    pub fn covers(&self, point: &Point) -> bool {
        self.covers_in(None, point)
    }

    /// Whether the scope covers `point`: for every axis the scope names,
    /// the point's value sits within the scope's value on `space`'s axes
    /// (equality for an axis it does not type).
    pub fn covers_in(&self, space: Option<&Space>, point: &Point) -> bool {
        self.point.iter().all(|(axis, value)| {
            point
                .get(axis)
                .is_some_and(|v| Space::contains(space, axis, value, v))
        })
    }

    /// Whether two scopes can apply at one point and one instant, comparing
    /// by equality: [`Scope::overlaps_in`] with no typed axes.
    pub fn overlaps(&self, other: &Scope) -> bool {
        self.overlaps_in(None, other)
    }

    /// Whether two scopes can apply at one point and one instant: their
    /// values meet on every axis both name, and their windows meet.
    pub fn overlaps_in(&self, space: Option<&Space>, other: &Scope) -> bool {
        let points_meet = self.point.iter().all(|(axis, value)| {
            other
                .point
                .get(axis)
                .is_none_or(|v| Space::overlaps(space, axis, value, v))
        });
        let (af, at) = window(self);
        let (bf, bt) = window(other);
        points_meet && af < bt && bf < at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(point: &[(&str, &str)], from: Option<&str>, to: Option<&str>) -> Scope {
        Scope {
            point: point
                .iter()
                .map(|(a, v)| (a.to_string(), v.to_string()))
                .collect(),
            valid_from: from.map(str::to_owned),
            valid_to: to.map(str::to_owned),
            ..Scope::default()
        }
    }

    #[test]
    fn a_rename_that_ends_when_its_replacement_begins_does_not_overlap() {
        let old = scope(&[], None, Some("2026-12-01"));
        let new = scope(&[], Some("2026-12-01"), None);
        assert!(!old.overlaps(&new));
        assert!(old.overlaps(&scope(&[], Some("2026-11-30T23:59:59Z"), None)));
    }

    #[test]
    fn coordinates_meet_unless_they_differ() {
        let no = scope(&[("market", "no")], None, None);
        assert!(no.overlaps(&scope(&[], None, None)));
        assert!(no.overlaps(&scope(&[("channel", "app")], None, None)));
        assert!(!no.overlaps(&scope(&[("market", "de")], None, None)));
        let point: Point = [("market".to_string(), "no".to_string())].into();
        assert!(no.covers(&point));
        assert!(!no.covers(&Point::new()));
        assert!(scope(&[], None, None).covers(&point));
    }

    #[test]
    fn a_valid_to_date_excludes_that_day() {
        let s = scope(&[], Some("2026-01-01"), Some("2026-02-01"));
        assert!(s.in_force(Some(parse_bound("2026-01-31T23:59:59Z").unwrap())));
        assert!(!s.in_force(Some(parse_bound("2026-02-01").unwrap())));
        assert!(s.in_force(None));
        assert!(check_window(Some("2026-02-01"), Some("2026-01-01")).is_err());
        assert!(parse_bound("next week").is_err());
    }
}
