//! Shards: a run split over N processes (pods of a Kubernetes Indexed Job, tasks of a Slurm job
//! array, machines), each evaluating a fixed part of the source (docs/deploy.md#how-frames-are-split).
//!
//! A frame belongs to shard `⌊h · N / 2⁶⁴⌋` where `h` is the 64-bit [`RngKey`] hash of its id under
//! the key `"shard"` (seed 0, so the split does not change with the run's seed). The split depends on
//! the frame's id alone: not on file-system order, not on which other frames the source holds, not on
//! the other shards. Frames keep the ids, positions and keyed randomness of the whole run, so the union
//! of the shards' records is the records of one unsharded run (`robustream merge` puts them back in
//! source order).
//!
//! Where the shard comes from, first match wins ([`Shard::from_env`]):
//! `--shard I/N`; `ROBUSTREAM_SHARD=I/N`; a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` with the
//! count in `ROBUSTREAM_SHARDS` (the Job's `spec.completions`; Kubernetes does not export it); a Slurm
//! job array's `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_MIN`, `SLURM_ARRAY_TASK_STEP` and
//! `SLURM_ARRAY_TASK_COUNT` (index = (ID − MIN) / STEP). `--shard 0/1` is the whole source and
//! ignores the environment.

use std::fmt;

use crate::rng::RngKey;

/// One part of a sharded run: shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u64,
    /// How many shards the run is split into (≥ 1).
    pub count: u64,
}

/// Where a run's shard was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardFrom {
    /// `--shard I/N`.
    Flag,
    /// `ROBUSTREAM_SHARD=I/N`.
    Robustream,
    /// A Kubernetes Indexed Job: `JOB_COMPLETION_INDEX` and `ROBUSTREAM_SHARDS`.
    Kubernetes,
    /// A Slurm job array: `SLURM_ARRAY_TASK_ID` and its companions.
    Slurm,
}

impl ShardFrom {
    /// How summary.json's `run.shard.from` and the start line name it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Flag => "--shard",
            Self::Robustream => "ROBUSTREAM_SHARD",
            Self::Kubernetes => "JOB_COMPLETION_INDEX",
            Self::Slurm => "SLURM_ARRAY_TASK_ID",
        }
    }
}

/// A shard that cannot be used; the message names the flag or variable and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N` with integers `0 ≤ I < N`.
    #[error(
        "{given}: `{value}` is not a shard; write I/N with 0 ≤ I < N, e.g. 0/4 for the first of 4 \
         shards (0/1 is the whole source)"
    )]
    Malformed {
        /// The flag or variable.
        given: &'static str,
        /// What it held (clipped).
        value: String,
    },
    /// A variable that must be a whole number is not.
    #[error("{name}={value} is not a whole number; {fix}")]
    NotANumber {
        /// The variable.
        name: &'static str,
        /// What it held (clipped).
        value: String,
        /// What to do.
        fix: &'static str,
    },
    /// A Kubernetes index without the count.
    #[error(
        "JOB_COMPLETION_INDEX={index} is set (a Kubernetes Indexed Job) but the number of shards is \
         not: set ROBUSTREAM_SHARDS to the Job's spec.completions in the pod's env, or give --shard \
         {index}/N (--shard 0/1 evaluates the whole source)"
    )]
    KubernetesCount {
        /// The index.
        index: u64,
    },
    /// A Slurm task id that is not on the array's grid of MIN + k·STEP, k < COUNT.
    #[error(
        "SLURM_ARRAY_TASK_ID={id} is not one of the {count} tasks MIN={min}, STEP={step} describe; \
         submit the array as a range (--array=0-{last}, or with a step: --array=0-{last_step}:{step}) \
         or give --shard I/N"
    )]
    SlurmGrid {
        /// The task id.
        id: u64,
        /// `SLURM_ARRAY_TASK_MIN`.
        min: u64,
        /// `SLURM_ARRAY_TASK_STEP`.
        step: u64,
        /// `SLURM_ARRAY_TASK_COUNT`.
        count: u64,
        /// `count - 1`, for the fix.
        last: u64,
        /// The last id of a stepped range, for the fix.
        last_step: u64,
    },
    /// A Slurm task id without the count.
    #[error(
        "SLURM_ARRAY_TASK_ID={id} is set (a Slurm job array) but SLURM_ARRAY_TASK_COUNT is not; \
         give --shard I/N (--shard 0/1 evaluates the whole source)"
    )]
    SlurmCount {
        /// The task id.
        id: u64,
    },
}

impl Shard {
    /// The whole source: shard 0 of 1.
    pub(crate) const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` (`given` names the flag or variable in the error).
    fn parse(text: &str, given: &'static str) -> Result<Self, ShardError> {
        let malformed = || ShardError::Malformed {
            given,
            value: crate::quote::clip_to(text, 40).into_owned(),
        };
        let (i, n) = text.trim().split_once('/').ok_or_else(malformed)?;
        let index: u64 = i.trim().parse().map_err(|_| malformed())?;
        let count: u64 = n.trim().parse().map_err(|_| malformed())?;
        if count == 0 || index >= count {
            return Err(malformed());
        }
        Ok(Self { index, count })
    }

    /// The shard of a run: `flag` (`--shard`) when given, else the first scheduler's variables
    /// found through `var` (see the module docs for the order), else `None` (the whole source).
    /// `--shard 0/1` (and `ROBUSTREAM_SHARD=0/1`) is `None` too.
    pub(crate) fn from_env(
        flag: Option<&str>,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(Shard, ShardFrom)>, ShardError> {
        let found = match flag {
            Some(text) => Some((Self::parse(text, "--shard")?, ShardFrom::Flag)),
            None => Self::scheduler(var)?,
        };
        Ok(found.filter(|(s, _)| s.count > 1))
    }

    fn scheduler(
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(Shard, ShardFrom)>, ShardError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if let Some(text) = var("ROBUSTREAM_SHARD") {
            let shard = Self::parse(&text, "ROBUSTREAM_SHARD")?;
            return Ok(Some((shard, ShardFrom::Robustream)));
        }
        let number = |name: &'static str, fix: &'static str| -> Result<Option<u64>, ShardError> {
            var(name)
                .map(|v| {
                    v.trim().parse::<u64>().map_err(|_| ShardError::NotANumber {
                        name,
                        value: crate::quote::clip_to(&v, 40).into_owned(),
                        fix,
                    })
                })
                .transpose()
        };
        const K8S_FIX: &str = "Kubernetes sets it in an Indexed Job; or give --shard I/N";
        if let Some(index) = number("JOB_COMPLETION_INDEX", K8S_FIX)? {
            let count = number(
                "ROBUSTREAM_SHARDS",
                "set it to the Job's spec.completions, or give --shard I/N",
            )?
            .ok_or(ShardError::KubernetesCount { index })?;
            let shard = Self::parse(&format!("{index}/{count}"), "JOB_COMPLETION_INDEX")?;
            return Ok(Some((shard, ShardFrom::Kubernetes)));
        }
        const SLURM_FIX: &str = "Slurm sets it in a job array; or give --shard I/N";
        if let Some(id) = number("SLURM_ARRAY_TASK_ID", SLURM_FIX)? {
            let count = number("SLURM_ARRAY_TASK_COUNT", SLURM_FIX)?
                .ok_or(ShardError::SlurmCount { id })?;
            let min = number("SLURM_ARRAY_TASK_MIN", SLURM_FIX)?.unwrap_or(0);
            let step = number("SLURM_ARRAY_TASK_STEP", SLURM_FIX)?
                .unwrap_or(1)
                .max(1);
            let grid = ShardError::SlurmGrid {
                id,
                min,
                step,
                count,
                last: count.saturating_sub(1),
                last_step: count.saturating_sub(1).saturating_mul(step),
            };
            let offset = id.checked_sub(min).ok_or_else(|| grid.clone())?;
            if offset % step != 0 || offset / step >= count {
                return Err(grid);
            }
            let shard = Shard {
                index: offset / step,
                count,
            };
            return Ok(Some((shard, ShardFrom::Slurm)));
        }
        Ok(None)
    }

    /// The shard a frame id belongs to among `count` (docs/deploy.md#how-frames-are-split).
    fn of(frame_id: &str, count: u64) -> u64 {
        let h = RngKey::new(0, frame_id, "shard").0;
        ((u128::from(h) * u128::from(count.max(1))) >> 64) as u64
    }

    /// Whether this shard evaluates the frame with this id.
    pub fn owns(&self, frame_id: &str) -> bool {
        Self::of(frame_id, self.count) == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn from(
        flag: Option<&str>,
        pairs: &[(&str, &str)],
    ) -> Result<Option<(Shard, ShardFrom)>, ShardError> {
        Shard::from_env(flag, &env(pairs))
    }

    #[test]
    fn parses_i_over_n() {
        assert_eq!(
            Shard::parse("2/5", "--shard"),
            Ok(Shard { index: 2, count: 5 })
        );
        assert_eq!(Shard::parse(" 0 / 1 ", "--shard"), Ok(Shard::WHOLE));
        for bad in ["5/5", "1/0", "-1/3", "1", "a/b", "1/2/3", ""] {
            let e = Shard::parse(bad, "--shard").unwrap_err();
            assert!(e.to_string().starts_with("--shard: `"), "{e}");
        }
    }

    #[test]
    fn the_flag_wins_and_one_shard_is_the_whole_source() {
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ];
        assert_eq!(
            from(Some("2/4"), &slurm),
            Ok(Some((Shard { index: 2, count: 4 }, ShardFrom::Flag)))
        );
        assert_eq!(from(Some("0/1"), &slurm), Ok(None));
        assert_eq!(from(None, &[]), Ok(None));
        assert_eq!(from(None, &[("ROBUSTREAM_SHARD", "0/1")]), Ok(None));
    }

    #[test]
    fn schedulers_in_order() {
        assert_eq!(
            from(
                None,
                &[
                    ("ROBUSTREAM_SHARD", "1/2"),
                    ("JOB_COMPLETION_INDEX", "0"),
                    ("ROBUSTREAM_SHARDS", "3")
                ]
            ),
            Ok(Some((Shard { index: 1, count: 2 }, ShardFrom::Robustream)))
        );
        assert_eq!(
            from(
                None,
                &[("JOB_COMPLETION_INDEX", "2"), ("ROBUSTREAM_SHARDS", "3")]
            ),
            Ok(Some((Shard { index: 2, count: 3 }, ShardFrom::Kubernetes)))
        );
        let e = from(None, &[("JOB_COMPLETION_INDEX", "2")]).unwrap_err();
        assert!(e.to_string().contains("ROBUSTREAM_SHARDS"), "{e}");
        let e = from(
            None,
            &[("JOB_COMPLETION_INDEX", "3"), ("ROBUSTREAM_SHARDS", "3")],
        );
        assert!(e.is_err());
        let e = from(
            None,
            &[("JOB_COMPLETION_INDEX", "x"), ("ROBUSTREAM_SHARDS", "3")],
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .starts_with("JOB_COMPLETION_INDEX=x")
        );
    }

    #[test]
    fn slurm_ids_map_onto_the_array_grid() {
        let slurm = |id: &str, min: &str, step: &str, count: &str| {
            from(
                None,
                &[
                    ("SLURM_ARRAY_TASK_ID", id),
                    ("SLURM_ARRAY_TASK_MIN", min),
                    ("SLURM_ARRAY_TASK_STEP", step),
                    ("SLURM_ARRAY_TASK_COUNT", count),
                ],
            )
        };
        let s = |index, count| Ok(Some((Shard { index, count }, ShardFrom::Slurm)));
        assert_eq!(slurm("0", "0", "1", "4"), s(0, 4));
        assert_eq!(slurm("4", "1", "1", "4"), s(3, 4)); // --array=1-4
        assert_eq!(slurm("6", "0", "2", "4"), s(3, 4)); // --array=0-6:2
        assert!(slurm("5", "0", "2", "4").is_err());
        assert!(slurm("8", "0", "2", "4").is_err());
        assert!(slurm("0", "1", "1", "4").is_err());
        // --array=1,3,7: MIN 1, COUNT 3, no step: 7 is off the grid.
        let e = slurm("7", "1", "1", "3").unwrap_err();
        assert!(e.to_string().contains("--array=0-2"), "{e}");
        // Without MIN/STEP (older Slurm): the id is the index.
        assert_eq!(
            from(
                None,
                &[
                    ("SLURM_ARRAY_TASK_ID", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "3")
                ]
            ),
            s(2, 3)
        );
        let e = from(None, &[("SLURM_ARRAY_TASK_ID", "2")]).unwrap_err();
        assert!(matches!(e, ShardError::SlurmCount { id: 2 }));
    }

    #[test]
    fn every_frame_has_exactly_one_shard_and_the_split_is_even() {
        let ids: Vec<String> = (0..30_000)
            .map(|i| format!("class{}/img{i}.jpg", i % 7))
            .collect();
        for count in [1u64, 2, 3, 7] {
            let mut sizes = vec![0usize; count as usize];
            for id in &ids {
                let owners: Vec<u64> = (0..count)
                    .filter(|&i| Shard { index: i, count }.owns(id))
                    .collect();
                assert_eq!(owners.len(), 1);
                sizes[owners[0] as usize] += 1;
            }
            let even = ids.len() as f64 / count as f64;
            for s in sizes {
                // 6 σ of a binomial share.
                assert!(
                    (s as f64 - even).abs() < 6.0 * even.sqrt(),
                    "{count}: {s} vs {even}"
                );
            }
        }
        // Stable across releases (a resumed or merged run relies on it): known ids' shards, as
        // computed by an independent implementation of the hash (FNV-1a + SplitMix64 in Python).
        for (id, three, eight) in [
            ("n01440764/ILSVRC2012_val_00000293.JPEG", 0, 1),
            ("coffee.png", 2, 7),
            ("a", 2, 6),
            ("c", 1, 3),
        ] {
            assert_eq!((Shard::of(id, 3), Shard::of(id, 8)), (three, eight), "{id}");
        }
    }
}
