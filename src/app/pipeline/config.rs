//! `[pipeline]` settings: the pipeline's own config types, which `config.rs` composes into a run's
//! configuration (with where scenarios are applied, `ScenarioStage`, which `scenario/` owns).

use serde::Deserialize;

/// `[pipeline]`: threads, batching and queues, checked ([`PipelineConfig::validate`]). The table's
/// schedule settings are parsed with it (`RawPipelineConfig`) and settled apart
/// ([`crate::scenario::schedule::ScheduleSettings`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// Scenario/preprocess worker threads; 0 = one per core.
    pub workers: usize,
    /// Largest batch handed to the engine.
    pub max_batch: usize,
    /// Longest wait for a batch to fill, in milliseconds, once its first variant is queued.
    pub max_wait_ms: u64,
    /// Frames an offline source reads ahead of the workers (decoded, not yet started). A live source
    /// keeps at most one frame waiting instead, the newest (see `drop`), so nothing it hands over
    /// is older than one frame's plan time when work on it starts.
    pub queue: usize,
    /// Backgrounds kept per class by the stream's background pool (`scenario::pool`; used by the
    /// IN-9 mixed, random-background and other-background placement scenarios).
    pub pool: usize,
    /// What a live source (a camera, a paced file) does with a new frame while a frame is already
    /// waiting for the workers (admission, `pipeline::admission`): `"oldest"` (default: the waiting
    /// frame is dropped and the new one waits, so the freshest frame is evaluated), `"newest"`
    /// (the new frame is dropped) or `"never"` (the source waits, as offline sources always do).
    /// Every drop is counted in `frames.dropped`.
    pub drop: DropPolicy,
}

/// The `[pipeline]` table as written: [`PipelineConfig`]'s settings and the scenario schedule's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawPipelineConfig {
    /// See [`PipelineConfig::workers`].
    pub(crate) workers: usize,
    /// See [`PipelineConfig::max_batch`].
    pub(crate) max_batch: usize,
    /// See [`PipelineConfig::max_wait_ms`].
    pub(crate) max_wait_ms: u64,
    /// See [`PipelineConfig::queue`].
    pub(crate) queue: usize,
    /// See [`PipelineConfig::pool`].
    pub(crate) pool: usize,
    /// Which scenarios each frame is evaluated under: `"all"` (default), `"round-robin"` or
    /// `"random"` (seeded) — `clean` always, plus `per_frame` others (`scenario::schedule`), so a
    /// live stream keeps up with a plan too big to run on every frame.
    pub(crate) schedule: crate::scenario::schedule::ScheduleMode,
    /// Scenarios besides `clean` per frame under a `round-robin` or `random` schedule.
    pub(crate) per_frame: Option<usize>,
    /// A compute budget instead of `per_frame`: at most this many inferences per second, shared
    /// over the stream's frame rate (`scenario::schedule::Budget`; turns an `all` schedule into
    /// `round-robin`).
    pub(crate) budget: Option<f64>,
    /// The frame rate the budget is shared over, frames per second; default: the source's nominal
    /// rate (synthetic camera, video, camera).
    pub(crate) fps: Option<f64>,
    /// See [`PipelineConfig::drop`].
    pub(crate) drop: DropPolicy,
}

impl Default for RawPipelineConfig {
    fn default() -> Self {
        let d = PipelineConfig::default();
        Self {
            workers: d.workers,
            max_batch: d.max_batch,
            max_wait_ms: d.max_wait_ms,
            queue: d.queue,
            pool: d.pool,
            schedule: crate::scenario::schedule::ScheduleMode::All,
            per_frame: None,
            budget: None,
            fps: None,
            drop: d.drop,
        }
    }
}

impl RawPipelineConfig {
    /// The pipeline's own settings, unchecked (the schedule's stay here).
    pub(crate) fn pipeline(&self) -> PipelineConfig {
        PipelineConfig {
            workers: self.workers,
            max_batch: self.max_batch,
            max_wait_ms: self.max_wait_ms,
            queue: self.queue,
            pool: self.pool,
            drop: self.drop,
        }
    }
}

/// `[pipeline] drop`: which frame a live source loses when the workers are busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DropPolicy {
    /// Drop the frame already waiting; the new one waits (the freshest frame is evaluated).
    #[default]
    Oldest,
    /// Drop the new frame; the waiting one stays.
    Newest,
    /// Never drop: the source waits.
    Never,
}

/// The longest `[pipeline] max_wait_ms`: a partly filled batch waits this long before it runs.
pub(crate) const MAX_WAIT_MS: u64 = 10_000;

/// The largest `[pipeline] max_batch`: three batch buffers of this many images are allocated.
const MAX_BATCH: usize = 4096;

impl PipelineConfig {
    /// Checks the values that do not depend on the source or the plan; each message names the key,
    /// says why and what to set. (The schedule settings are checked by
    /// [`crate::scenario::schedule::ScheduleSettings::new`].)
    pub(crate) fn validate(&self) -> Result<(), PipelineConfigError> {
        let max_threads = crate::engine::MAX_THREADS;
        if self.workers > max_threads {
            return Err(PipelineConfigError::Workers {
                workers: self.workers,
                cores: crate::engine::cores(),
            });
        }
        if self.max_batch > MAX_BATCH {
            return Err(PipelineConfigError::MaxBatch(self.max_batch));
        }
        if self.max_wait_ms > MAX_WAIT_MS {
            return Err(PipelineConfigError::MaxWait(self.max_wait_ms));
        }
        if self.pool == 0 {
            return Err(PipelineConfigError::NoPool);
        }
        Ok(())
    }
}

/// A `[pipeline]` setting out of range; each message names the key, says why and what to set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineConfigError {
    /// More workers than threads can usefully run.
    #[error(
        "`[pipeline] workers` (--workers) = {workers}: each worker is a thread with its own frame \
         buffers, and more than the cores only wait for each other (this machine has {cores}); \
         use 0 (one per core) or at most {max}",
        max = crate::engine::MAX_THREADS
    )]
    Workers {
        /// The configured count.
        workers: usize,
        /// This machine's cores.
        cores: usize,
    },
    /// Batch buffers too large to allocate up front.
    #[error(
        "`[pipeline] max_batch` (--batch) = {0}: three batch buffers of that many images \
         are allocated up front (600 MB per 1000 images at 224²); use at most {MAX_BATCH}"
    )]
    MaxBatch(usize),
    /// A partial batch would wait too long.
    #[error(
        "`[pipeline] max_wait_ms` = {0}: a partly filled batch waits that long before it \
         runs, holding up every record in it; use at most {MAX_WAIT_MS} (10 s; the default \
         is 5)"
    )]
    MaxWait(u64),
    /// A background pool that keeps nothing.
    #[error(
        "`[pipeline] pool` = 0: the background pool would keep no background, so every \
         scenario drawing from it fails on every frame; use at least 1 (default 32)"
    )]
    NoPool,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            workers: 0,
            max_batch: 8,
            max_wait_ms: 5,
            queue: 4,
            pool: 32,
            drop: DropPolicy::Oldest,
        }
    }
}
