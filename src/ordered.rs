//! A serde helper for `Vec<(String, T)>` fields written as JSON objects in their given order (the
//! summary's per-scenario tables): use it as `#[serde(with = "crate::ordered")]`. Reading rejects a
//! duplicate key instead of keeping the last one.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, Error, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

pub(crate) fn serialize<T: Serialize, S: Serializer>(
    v: &[(String, T)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(v.iter().map(|(k, v)| (k, v)))
}

pub(crate) fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, T)>, D::Error> {
    struct Entries<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Entries<T> {
        type Value = Vec<(String, T)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut out: Vec<(String, T)> = Vec::new();
            while let Some((k, v)) = access.next_entry::<String, T>()? {
                if out.iter().any(|(seen, _)| *seen == k) {
                    return Err(A::Error::custom(format!("duplicate key `{k}`")));
                }
                out.push((k, v));
            }
            Ok(out)
        }
    }
    d.deserialize_map(Entries(PhantomData))
}
