//! The pipeline's timing stages ([`Stage`]) and one record's per-stage timings ([`Timings`]): a
//! fixed slot per stage, written to `records.jsonl` as the `ms` object `{"<stage>": ms, ...}` with
//! the stages that were timed only, names in alphabetical order.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One timed stage of a variant's way through the pipeline, in pipeline order: the source's
/// `decode` and `mask`; `wait` (capture → a worker starts on the frame: admission); the variant's
/// `scenario` and `preprocess`; `queue` (ready → its batch starts); `infer` (its batch); `total`
/// (capture → inference done); `age` (capture → the record is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// The source's decode of the frame.
    Decode,
    /// The source's object mask of the frame (sources that make one).
    Mask,
    /// Capture → a worker starts on the frame (admission).
    Wait,
    /// The scenario's transform of the frame.
    Scenario,
    /// Preprocessing the variant into the model's input.
    Preprocess,
    /// The variant ready → its batch starts.
    Queue,
    /// Its batch's inference.
    Infer,
    /// Capture → inference done.
    Total,
    /// Capture → the record is written.
    Age,
}

impl Stage {
    /// Number of stages.
    pub(crate) const COUNT: usize = 9;

    /// All stages in pipeline order.
    pub(crate) const ALL: [Stage; Self::COUNT] = [
        Stage::Decode,
        Stage::Mask,
        Stage::Wait,
        Stage::Scenario,
        Stage::Preprocess,
        Stage::Queue,
        Stage::Infer,
        Stage::Total,
        Stage::Age,
    ];

    /// All stages in alphabetical order of their names: the order of the `ms` object on the wire.
    const WIRE: [Stage; Self::COUNT] = [
        Stage::Age,
        Stage::Decode,
        Stage::Infer,
        Stage::Mask,
        Stage::Preprocess,
        Stage::Queue,
        Stage::Scenario,
        Stage::Total,
        Stage::Wait,
    ];

    /// The stage's name in `records.jsonl`, `summary.json` and the Prometheus `stage` label.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Stage::Decode => "decode",
            Stage::Mask => "mask",
            Stage::Wait => "wait",
            Stage::Scenario => "scenario",
            Stage::Preprocess => "preprocess",
            Stage::Queue => "queue",
            Stage::Infer => "infer",
            Stage::Total => "total",
            Stage::Age => "age",
        }
    }

    /// The stage named `name`, if any.
    pub(crate) fn parse(name: &str) -> Option<Stage> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Position in [`Stage::ALL`].
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

/// The name, honouring width and alignment (`{stage:<10}`).
impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// One record's timings in milliseconds, at most one per [`Stage`]. Non-finite values are written
/// as JSON `null` and read back as NaN; names that are no stage are skipped when reading.
///
/// The slots live on the heap so that a [`super::Record`] stays small to move through the
/// pipeline's channels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings(Box<[Option<f64>; Stage::COUNT]>);

impl Timings {
    /// No timings.
    pub fn new() -> Self {
        Self::default()
    }

    /// The timing of `stage`, if it was timed.
    pub(crate) fn get(&self, stage: Stage) -> Option<f64> {
        self.0[stage.index()]
    }

    /// Sets the timing of `stage` (replacing an earlier one).
    pub(crate) fn set(&mut self, stage: Stage, ms: f64) {
        self.0[stage.index()] = Some(ms);
    }

    /// The timed stages and their timings, in pipeline order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Stage, f64)> + '_ {
        Stage::ALL
            .into_iter()
            .filter_map(|s| self.get(s).map(|ms| (s, ms)))
    }
}

impl Serialize for Timings {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let n = self.0.iter().flatten().count();
        let mut map = ser.serialize_map(Some(n))?;
        for stage in Stage::WIRE {
            if let Some(ms) = self.get(stage) {
                map.serialize_entry(stage.name(), &ms)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Timings {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct TimingsVisitor;

        impl<'de> Visitor<'de> for TimingsVisitor {
            type Value = Timings;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of stage timings in milliseconds")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Timings, A::Error> {
                let mut t = Timings::new();
                while let Some(name) = map.next_key::<String>()? {
                    // Every value must be a number or null, whatever its name; a name that is no
                    // stage is then dropped.
                    let ms: Option<f64> = map.next_value()?;
                    if let Some(stage) = Stage::parse(&name) {
                        t.set(stage, ms.unwrap_or(f64::NAN));
                    }
                }
                Ok(t)
            }
        }

        de.deserialize_map(TimingsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_orders_hold() {
        for (i, s) in Stage::ALL.into_iter().enumerate() {
            assert_eq!(s.index(), i);
            assert_eq!(Stage::parse(s.name()), Some(s));
            assert_eq!(s.to_string(), s.name());
        }
        assert_eq!(format!("[{:<6}]", Stage::Age), "[age   ]");
        assert_eq!(Stage::parse("bogus"), None);
        let mut sorted = Stage::ALL;
        sorted.sort_by_key(|s| s.name());
        assert_eq!(sorted, Stage::WIRE);
    }

    #[test]
    fn serialises_timed_stages_by_name_and_reads_old_files() {
        let mut t = Timings::new();
        t.set(Stage::Total, 3.0);
        t.set(Stage::Decode, 1.0);
        t.set(Stage::Age, f64::INFINITY);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"age":null,"decode":1.0,"total":3.0}"#
        );
        assert_eq!(serde_json::to_string(&Timings::new()).unwrap(), "{}");
        let back: Timings =
            serde_json::from_str(r#"{"wait":2.5,"bogus":1,"age":null,"wait":4}"#).unwrap();
        assert_eq!(back.get(Stage::Wait), Some(4.0));
        assert!(back.get(Stage::Age).is_some_and(f64::is_nan));
        let stages: Vec<Stage> = back.iter().map(|(s, _)| s).collect();
        assert_eq!(stages, [Stage::Wait, Stage::Age]);
        assert!(serde_json::from_str::<Timings>(r#"{"bogus":"x"}"#).is_err());
        assert!(serde_json::from_str::<Timings>("[]").is_err());
    }
}
