//! Readers for members of the evidence that serde's derives read too leniently (`evidence`,
//! `wire` and `transport` share them).

use serde::Deserialize;

/// An integer signal, also when JSON spells it `8.0` (JSON has one number type; JSON Schema
/// calls 8.0 an integer): a fraction or a value out of range is an error.
pub(crate) fn integral<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    use serde::de::Error;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let whole = match (n.as_i64(), n.as_f64()) {
        (Some(i), _) => Some(i),
        (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
        _ => None,
    };
    whole
        .and_then(|i| T::try_from(i).ok())
        .map(Some)
        .ok_or_else(|| {
            D::Error::custom(format!("invalid value: {n}, expected an integer in range"))
        })
}

/// A member that must be a JSON object, or null: serde's derived structs also read an array by
/// position (`"activity": [null, null]`), which no agent sends and which would pass unseen. Read
/// in place (no intermediate value: the collect route reads these on every visit).
pub(crate) fn object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Object<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object or null")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<S: serde::Deserializer<'de>>(self, d: S) -> Result<Self::Value, S::Error> {
            d.deserialize_any(self)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    d.deserialize_any(Object(std::marker::PhantomData))
}
