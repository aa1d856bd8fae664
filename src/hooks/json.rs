//! A JSON value that keeps the order of an object's keys, for editing a
//! person's settings file (`.claude/settings.json`, `.codex/hooks.json`)
//! without reordering what kapi does not touch. (kapi's own records need
//! serde_json's sorted maps, so its `preserve_order` feature is no option.)

use std::fmt;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn str(s: &str) -> J {
        J::Str(s.to_owned())
    }

    pub fn obj(pairs: &[(&str, J)]) -> J {
        J::Obj(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut J> {
        match self {
            J::Obj(pairs) => pairs.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at `key`, inserted as `default` at the end when absent.
    pub fn entry(&mut self, key: &str, default: J) -> Option<&mut J> {
        let J::Obj(pairs) = self else { return None };
        let at = match pairs.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                pairs.push((key.to_owned(), default));
                pairs.len() - 1
            }
        };
        Some(&mut pairs[at].1)
    }

    pub fn remove(&mut self, key: &str) {
        if let J::Obj(pairs) = self {
            pairs.retain(|(k, _)| k != key);
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            J::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_empty_container(&self) -> bool {
        match self {
            J::Obj(p) => p.is_empty(),
            J::Arr(a) => a.is_empty(),
            _ => false,
        }
    }

    /// Pretty-printed with two spaces and a final newline, as the agent
    /// hosts write their settings.
    pub fn to_pretty(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a value always serializes");
        text.push('\n');
        text
    }
}

impl Serialize for J {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            J::Null => s.serialize_unit(),
            J::Bool(b) => s.serialize_bool(*b),
            J::Num(n) => n.serialize(s),
            J::Str(t) => s.serialize_str(t),
            J::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            J::Obj(pairs) => {
                let mut map = s.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

struct JVisitor;

impl<'de> Visitor<'de> for JVisitor {
    type Value = J;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_none<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<J, E> {
        Ok(J::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<J, E> {
        Ok(J::Num(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<J, E> {
        Ok(J::Num(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<J, E> {
        serde_json::Number::from_f64(v)
            .map(J::Num)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }
    fn visit_str<E>(self, v: &str) -> Result<J, E> {
        Ok(J::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<J, E> {
        Ok(J::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<J, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(J::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<J, A::Error> {
        let mut pairs: Vec<(String, J)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, J>()? {
            // A repeated key: the last one wins, as serde_json reads it.
            pairs.retain(|(key, _)| *key != k);
            pairs.push((k, v));
        }
        Ok(J::Obj(pairs))
    }
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        d.deserialize_any(JVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_through_a_round_trip() {
        let text = "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null,\n    \"x\"\n  ],\n  \"m\": {\n    \"y\": 2.5,\n    \"b\": -1\n  }\n}\n";
        let value: J = serde_json::from_str(text).unwrap();
        assert_eq!(value.to_pretty(), text);
    }
}
