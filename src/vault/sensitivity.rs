//! Sensitivity labels and the caller's grant.
//!
//! Labels are ordered `public < internal < confidential < restricted`. A
//! missing or unknown label is the most restrictive one: classification
//! fails closed.

use std::collections::BTreeSet;
use std::fmt;

/// One sensitivity label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sensitivity {
    Public,
    Internal,
    Confidential,
    Restricted,
}

impl Sensitivity {
    pub const ALL: [Sensitivity; 4] = [
        Sensitivity::Public,
        Sensitivity::Internal,
        Sensitivity::Confidential,
        Sensitivity::Restricted,
    ];

    /// The exact label, or `None` when it is not one of the four.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "public" => Some(Self::Public),
            "internal" => Some(Self::Internal),
            "confidential" => Some(Self::Confidential),
            "restricted" => Some(Self::Restricted),
            _ => None,
        }
    }

    /// Classify a declared label: missing or unknown is restricted.
    pub(crate) fn classify(declared: Option<&str>) -> Self {
        declared.and_then(Self::parse).unwrap_or(Self::Restricted)
    }

    /// A table row's effective label: the higher of the file's floor and
    /// the row's cell. Without a sensitivity column rows take the floor; an
    /// empty or unknown cell is restricted.
    pub fn of_row(floor: Self, cell: Option<&str>) -> Self {
        match cell {
            None => floor,
            Some(c) => Self::classify(Some(c)).max(floor),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Internal => "internal",
            Self::Confidential => "confidential",
            Self::Restricted => "restricted",
        }
    }
}

impl fmt::Display for Sensitivity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The exact set of labels a caller permits. The default is public only.
/// Supplying a set is a caller decision, not authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    allowed: BTreeSet<Sensitivity>,
}

impl Default for Grant {
    fn default() -> Self {
        Self::public()
    }
}

impl Grant {
    pub fn public() -> Self {
        Self::exact([Sensitivity::Public])
    }

    /// Exactly these labels.
    pub(crate) fn exact(labels: impl IntoIterator<Item = Sensitivity>) -> Self {
        Self {
            allowed: labels.into_iter().collect(),
        }
    }

    /// Every label up to and including `max`.
    pub fn up_to(max: Sensitivity) -> Self {
        Self::exact(Sensitivity::ALL.into_iter().filter(|s| *s <= max))
    }

    /// Parse `public,internal`; `None` names the first unknown label.
    pub(crate) fn parse_list(text: &str) -> Result<Self, String> {
        let mut labels = BTreeSet::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            labels.insert(Sensitivity::parse(part).ok_or_else(|| part.to_string())?);
        }
        if labels.is_empty() {
            return Err(String::new());
        }
        Ok(Self { allowed: labels })
    }

    pub fn permits(&self, label: Sensitivity) -> bool {
        self.allowed.contains(&label)
    }

    /// The labels, lowest first.
    pub(crate) fn labels(&self) -> impl Iterator<Item = Sensitivity> + '_ {
        self.allowed.iter().copied()
    }

    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.labels().map(Sensitivity::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_unknown_is_restricted() {
        assert_eq!(Sensitivity::classify(None), Sensitivity::Restricted);
        assert_eq!(
            Sensitivity::classify(Some("Public")),
            Sensitivity::Restricted
        );
        assert_eq!(
            Sensitivity::classify(Some("internal")),
            Sensitivity::Internal
        );
    }

    #[test]
    fn grants() {
        assert!(Grant::default().permits(Sensitivity::Public));
        assert!(!Grant::default().permits(Sensitivity::Internal));
        let g = Grant::up_to(Sensitivity::Confidential);
        assert_eq!(g.names(), ["public", "internal", "confidential"]);
        assert!(Grant::parse_list("public, secret").is_err());
        assert_eq!(
            Grant::parse_list("restricted").unwrap().names(),
            ["restricted"]
        );
    }
}
