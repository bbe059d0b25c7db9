//! JSON from outside, parsed within a bound on memory.
//!
//! A JSON text parsed into values (`serde_json::Value`, or a struct holding one) costs 32
//! bytes and more per value whatever the value's text: `[0,0,0,…]` is two bytes per value, so
//! a 33 MB body of it became 2.4 GB in memory. Every request body, socket line and argument
//! object is therefore counted first by [`check_values`], a pass of the parser that builds
//! nothing, and refused when it holds more values than its size allows ([`value_budget`]):
//! what it then becomes in memory is proportional to its size. A value a face takes as its
//! raw text (a stored tool result, [`serde_json::value::RawValue`]) is not parsed into
//! values at all.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Values any JSON text may hold, however short.
pub const BASE_VALUES: usize = 4096;

/// Bytes of text a value needs on average beyond [`BASE_VALUES`]. A parsed value costs 32 to
/// 64 bytes (a `Value`, an array's spare capacity; a key's `String` and map slot), so a text
/// within its budget costs at most ~16× its size, where `[0,0,…]` costs 32×. Ordinary JSON
/// (records with names and numbers) has 5 to 10 bytes per value and passes.
pub const BYTES_PER_VALUE: usize = 4;

/// How many values a JSON text of `len` bytes may hold.
pub fn value_budget(len: usize) -> usize {
    BASE_VALUES.saturating_add(len / BYTES_PER_VALUE)
}

/// Check that `bytes` is one JSON text holding at most `max` values (objects, arrays, keys,
/// strings, numbers, booleans and nulls each count one), without building any; nesting is
/// bounded by the parser (128 levels). The error says what was refused and why.
pub fn check_values(bytes: &[u8], max: usize) -> Result<(), String> {
    let left = Cell::new(max);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Counter { left: &left, max }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())
}

/// Parse `bytes` as a `T` after checking it holds at most [`value_budget`] values for its
/// size.
pub fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    check_values(bytes, value_budget(bytes.len()))?;
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// Counts values down from a budget; an error once it is spent.
#[derive(Clone, Copy)]
struct Counter<'a> {
    left: &'a Cell<usize>,
    max: usize,
}

impl Counter<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(n) => {
                self.left.set(n);
                Ok(())
            }
            None => Err(E::custom(format!(
                "the JSON holds more than {} values, the most its size allows (each value \
                 costs memory whatever its text; send a large JSON result as a string)",
                self.max
            ))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Counter<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while let Some(()) = seq.next_element_seed(self)? {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while let Some(()) = map.next_key_seed(self)? {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_without_being_built() {
        // The object, two keys, the array and its four values, the inner object: nine.
        assert!(check_values(br#"{"a": [1, "x", null, true], "b": {}}"#, 9).is_ok());
        let e = check_values(br#"{"a": [1, "x", null, true], "b": {}}"#, 8).unwrap_err();
        assert!(e.contains("more than 8 values"), "{e}");
        // Not JSON, or two texts: refused as such.
        assert!(check_values(b"{", 100).is_err());
        assert!(check_values(b"1 2", 100).is_err());
        // Nesting past the parser's limit is refused, not a stack overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(check_values(deep.as_bytes(), usize::MAX).is_err());
    }

    #[test]
    fn a_body_of_tiny_values_is_refused_and_ordinary_json_passes() {
        // The attack: two bytes per value.
        let zeros = format!("[{}0]", "0,".repeat(1_000_000));
        assert!(parse::<serde_json::Value>(zeros.as_bytes()).is_err());
        // An ordinary object of records passes.
        let rows: Vec<serde_json::Value> = (0..10_000)
            .map(|i| serde_json::json!({"id": i, "name": format!("customer {i}"), "ok": true}))
            .collect();
        let text = serde_json::to_vec(&rows).unwrap();
        let back: serde_json::Value = parse(&text).unwrap();
        assert_eq!(back.as_array().map(Vec::len), Some(10_000));
        // Small texts always have room.
        assert!(parse::<serde_json::Value>(b"[0,0,0,0,0,0,0,0,0,0]").is_ok());
    }
}
