//! A record field most operations leave empty (a scope, evidence, a
//! basis), kept out of line: eight bytes in the record, no allocation when
//! it is empty. A long log is mostly usage signals and check runs, which
//! carry none of them; inline, those fields were most of a record's size
//! and of a cold read's memory (a million records held them empty).
//!
//! A [`Slim`] reads as its value (`record.scope.point`, `&record.evidence`
//! passed where a `&Vec<Evidence>` is wanted), is written as it on the wire
//! (serde sees the value), and compares by value: empty in line or boxed
//! is the same field.

use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value a record keeps out of line, with the empty value every absent
/// one reads as.
pub trait Rare: Default + 'static {
    /// The empty value, shared.
    fn empty() -> &'static Self;
    fn is_empty(&self) -> bool;
}

/// A field kept out of line when it holds something ([`Rare`]).
#[derive(Clone, Default)]
pub struct Slim<T>(Option<Box<T>>);

impl<T: Rare> Slim<T> {
    pub fn new(value: T) -> Self {
        if value.is_empty() {
            Self(None)
        } else {
            Self(Some(Box::new(value)))
        }
    }

    /// Whether it holds nothing (what the canonical bytes leave out).
    pub fn is_empty(&self) -> bool {
        self.0.as_deref().is_none_or(T::is_empty)
    }

    /// The value, taken out.
    pub fn into_inner(self) -> T {
        self.0.map(|b| *b).unwrap_or_default()
    }
}

impl<T: Rare> Deref for Slim<T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self.0.as_deref() {
            Some(value) => value,
            None => T::empty(),
        }
    }
}

/// Changing a field allocates it (and an emptied one stays allocated until
/// the record is read again: it still compares and writes as empty).
impl<T: Rare> DerefMut for Slim<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(Box::default)
    }
}

impl<T: Rare> From<T> for Slim<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<E> FromIterator<E> for Slim<Vec<E>>
where
    Vec<E>: Rare,
{
    fn from_iter<I: IntoIterator<Item = E>>(items: I) -> Self {
        Self::new(items.into_iter().collect())
    }
}

impl<T: Rare + PartialEq> PartialEq for Slim<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Rare + Eq> Eq for Slim<T> {}

impl<T: Rare + fmt::Debug> fmt::Debug for Slim<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Rare + Serialize> Serialize for Slim<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de, T: Rare + Deserialize<'de>> Deserialize<'de> for Slim<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Slim::new)
    }
}

impl<'a, T: Rare> IntoIterator for &'a Slim<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (**self).into_iter()
    }
}

/// [`Rare`] for lists of these element types, each with its own shared
/// empty list (a generic `static` is not possible).
macro_rules! rare_lists {
    ($($element:ty),*) => {$(
        impl Rare for Vec<$element> {
            fn empty() -> &'static Self {
                static EMPTY: Vec<$element> = Vec::new();
                &EMPTY
            }
            fn is_empty(&self) -> bool {
                Vec::is_empty(self)
            }
        }
    )*};
}

rare_lists!(String, super::record::Evidence);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_reads_writes_and_compares_as_empty_boxed_or_not() {
        let absent: Slim<Vec<String>> = Slim::default();
        let mut emptied: Slim<Vec<String>> = Slim::new(vec!["a".into()]);
        emptied.clear();
        assert!(absent.is_empty() && emptied.is_empty());
        assert_eq!(absent, emptied);
        assert_eq!(serde_json::to_string(&absent).unwrap(), "[]");
        let read: Slim<Vec<String>> = serde_json::from_str("[]").unwrap();
        assert!(read.0.is_none(), "an empty value read is not allocated");
        let full: Slim<Vec<String>> = serde_json::from_str(r#"["x"]"#).unwrap();
        assert_eq!(full.len(), 1);
        assert_eq!((&full).into_iter().count(), 1);
        assert_ne!(full, absent);
        assert_eq!(std::mem::size_of::<Slim<Vec<String>>>(), 8);
    }
}
