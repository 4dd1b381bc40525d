//! The passes after the main pass: the adversarial-background challenge ([`crate::app::challenge`]) and
//! the occlusion saliency ([`crate::app::saliency`]). [`attach`] sets up what they keep while the main
//! pass runs; [`PostPasses`] runs them on the main pass's engine and puts their results into the
//! summary. Each takes its own config and the few run settings in [`PostContext`], not the whole
//! run configuration.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use crate::app::challenge::{
    CHALLENGE_JSONL, ChallengeConfig, ChallengeError, ChallengeRun, Harvest, Keep, KeepingSource,
    SharedEngine, SharedHarvest, evaluate, round3,
};
use crate::app::saliency::{SaliencyConfig, SaliencyError};
use crate::classmap::ClassMap;
use crate::engine::Engine;
use crate::metrics::in9::{ChallengeEntry, ChallengeTally};
use crate::metrics::saliency::SaliencyEntry;
use crate::model::ModelDesc;
use crate::source::Source;

/// What the post passes need of a run besides their own configs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PostContext<'a> {
    /// `[challenge]`.
    pub(crate) challenge: &'a ChallengeConfig,
    /// `[saliency]`.
    pub(crate) saliency: &'a SaliencyConfig,
    /// The root of the run's source when it is an IN-9 release (an IN-9 release brings its own
    /// masks and backgrounds).
    pub(crate) in9_root: Option<&'a Path>,
    /// Run seed.
    pub(crate) seed: u64,
    /// Backgrounds per class of the challenge's pool (`[pipeline] pool`).
    pub(crate) pool: usize,
    /// Composites / occluded images per engine call (`[pipeline] max_batch`).
    pub(crate) max_batch: usize,
    /// The run directory (`challenge.jsonl`, `saliency.jsonl`, maps).
    pub(crate) out: &'a Path,
    /// `--strict`: a challenge composite whose output cannot be scored fails the pass instead of
    /// being counted.
    pub(crate) strict: bool,
    /// The run's shard (its frames are the foregrounds and saliency frames).
    pub(crate) shard: Option<crate::shard::Shard>,
}

/// A post pass that failed (and with it the run; what the main pass measured is still
/// summarised): the pass's own error, said as the pass says it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PostError {
    /// The adversarial-background challenge failed.
    #[error(transparent)]
    Challenge(#[from] ChallengeError),
    /// The occlusion saliency pass failed.
    #[error(transparent)]
    Saliency(#[from] SaliencyError),
}

/// Wraps the main pass's source and engine for the post passes `ctx` asks for: the source hands
/// frames to a [`Harvest`] (when any post pass is on), the engine becomes a [`SharedEngine`] to give
/// the pipeline a handle of.
pub(crate) fn attach(
    ctx: &PostContext,
    model: &ModelDesc,
    source: Box<dyn Source>,
    engine: Box<dyn Engine>,
) -> (Box<dyn Source>, SharedEngine, Option<SharedHarvest>) {
    let keep = Keep {
        challenge: ctx.challenge,
        saliency_frames: ctx.saliency.enabled.then_some(ctx.saliency.frames),
        saliency_mask: crate::app::saliency::MASK_RESIZE,
        in9_root: ctx.in9_root,
        seed: ctx.seed,
        pool: ctx.pool,
        shard: ctx.shard,
    };
    let harvest = Harvest::for_run(&keep, model).map(|h| Arc::new(Mutex::new(h)));
    let source = match &harvest {
        Some(h) => Box::new(KeepingSource::new(source, h.clone())) as Box<dyn Source>,
        None => source,
    };
    (source, SharedEngine::new(engine), harvest)
}

/// Runs the post passes a config asks for after the main pass, on the main pass's engine: the
/// challenge ([`crate::app::challenge`]) and the occlusion saliency ([`crate::app::saliency`]). Returns the pieces to
/// put into the summary ([`PostPasses::apply`]). Skipped when the main pass did not end normally.
pub(crate) struct PostPasses {
    challenge: Option<(ChallengeEntry, Option<ChallengeTally>)>,
    saliency: Option<SaliencyEntry>,
}

impl PostPasses {
    /// Runs them. `main_ok` says whether the main pass ended normally (completed or limit); when it
    /// did not, nothing is evaluated and the summary says so.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        ctx: &PostContext,
        harvest: Option<&SharedHarvest>,
        engine: &mut dyn Engine,
        model: &ModelDesc,
        class_map: &ClassMap,
        stop: &AtomicBool,
        quiet: bool,
        main_ok: bool,
    ) -> Result<Self, PostError> {
        let mut post = Self {
            challenge: None,
            saliency: None,
        };
        let Some(harvest) = harvest else {
            return Ok(post);
        };
        let mut h = harvest.lock().unwrap_or_else(PoisonError::into_inner);
        let pass = Pass {
            ctx,
            model,
            class_map,
            stop,
            quiet,
        };
        if ctx.challenge.enabled {
            post.challenge = Some(if !main_ok {
                (ChallengeEntry::not_applicable(NOT_COMPLETED), None)
            } else {
                pass.challenge(&mut h, engine)?
            });
        }
        if ctx.saliency.enabled {
            post.saliency = Some(if !main_ok {
                SaliencyEntry::not_applicable(NOT_COMPLETED)
            } else {
                pass.saliency(&mut h, engine)?
            });
        }
        Ok(post)
    }

    /// Puts the results into the summary: `run.challenge` (counts, costs, where the backgrounds came
    /// from, or why it did not apply), `metrics.in9.challenge_accuracy` through
    /// [`crate::report::summary::Summary::set_challenge`], and `metrics.saliency`.
    pub(crate) fn apply(self, summary: &mut crate::report::summary::Summary) {
        if let Some((info, tally)) = self.challenge {
            summary.run.challenge = Some(info);
            if let Some(t) = tally {
                summary.set_challenge(t);
            }
        }
        if let Some(s) = self.saliency {
            summary.set_saliency(&s);
        }
    }
}

/// Why a post pass was not run: the main pass did not end normally.
const NOT_COMPLETED: &str = "the main pass did not complete";

/// The settings one post pass runs with (the run's, shared by both passes).
struct Pass<'a> {
    ctx: &'a PostContext<'a>,
    model: &'a ModelDesc,
    class_map: &'a ClassMap,
    stop: &'a AtomicBool,
    quiet: bool,
}

impl Pass<'_> {
    /// The challenge on the foregrounds and backgrounds the harvest `h` kept: `run.challenge` and
    /// the tally, or why it does not apply (no foreground or no background; warned on stderr).
    fn challenge(
        &self,
        h: &mut Harvest,
        engine: &mut dyn Engine,
    ) -> Result<(ChallengeEntry, Option<ChallengeTally>), PostError> {
        let (ctx, model) = (self.ctx, self.model);
        let bound = ctx.challenge.backgrounds;
        let candidates = h.challenge_candidates();
        let (fgs, bgs, from, available) =
            h.take_challenge(model, ctx.seed, bound).unwrap_or_default();
        if fgs.is_empty() || bgs.is_empty() {
            let reason = if fgs.is_empty() {
                format!(
                    "{}; the challenge composites masked, labelled foregrounds (e.g. a \
                     manifest with `label` and `mask` columns, or an IN-9 release with \
                     fg_mask)",
                    h.no_foreground_reason()
                )
            } else {
                "no background (the stream's pool holds no frame with a usable \
                 background; an IN-9 release needs only_bg_t/val)"
                    .to_string()
            };
            // A warning, printed under --quiet too (as the main pass's warnings are).
            eprintln!("warning: challenge: not applicable: {reason}");
            return Ok((
                // The counts a merge of shards sums (some shards may have candidates).
                ChallengeEntry {
                    foregrounds: Some(fgs.len() as u64),
                    backgrounds: Some(bgs.len() as u64),
                    candidates: Some(candidates),
                    unusable_masks: Some(h.unusable_masks()),
                    ..ChallengeEntry::not_applicable(reason)
                },
                None,
            ));
        }
        let run = ChallengeRun {
            model,
            class_map: self.class_map,
            seed: ctx.seed,
            batch: ctx.max_batch,
            jsonl: &ctx.out.join(CHALLENGE_JSONL),
            quiet: self.quiet,
            strict: ctx.strict,
        };
        let r = evaluate(&run, engine, &fgs, &bgs, self.stop)?;
        let per =
            |ms: f64| (r.tally.composites > 0).then(|| round3(ms / r.tally.composites as f64));
        Ok((
            ChallengeEntry {
                applicable: true,
                foregrounds: Some(r.tally.foregrounds),
                vulnerable: Some(r.tally.vulnerable),
                backgrounds: Some(r.tally.backgrounds),
                composites: Some(r.tally.composites),
                failed: Some(r.tally.failed),
                undecided: Some(r.tally.undecided),
                upper_bound: Some(fgs.len() as u64 * bgs.len() as u64),
                complete: Some(r.tally.complete),
                accuracy: Some(r.tally.accuracy()),
                background_source: Some(from),
                // The bounds sampled the candidates (see `complete`: interruption only).
                sampled: Some(candidates > fgs.len() as u64 || available > bgs.len()),
                candidates: Some(candidates),
                unusable_masks: Some(h.unusable_masks()),
                seconds: Some(round3(r.seconds)),
                composite_ms: Some(per(r.composite_ms)),
                infer_ms: Some(per(r.infer_ms)),
                ..ChallengeEntry::default()
            },
            Some(r.tally),
        ))
    }

    /// The occlusion saliency on the frames the harvest `h` kept: `metrics.saliency`.
    fn saliency(
        &self,
        h: &mut Harvest,
        engine: &mut dyn Engine,
    ) -> Result<SaliencyEntry, PostError> {
        let frames = h.take_saliency();
        let why = h.no_foreground_reason();
        Ok(crate::app::saliency::run_pass(
            self.ctx.saliency,
            self.ctx.max_batch,
            self.ctx.out,
            &frames,
            &why,
            engine,
            self.model,
            self.class_map,
            self.stop,
            self.quiet,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_pass_is_its_kind_and_says_its_own_line() {
        let e = PostError::from(SaliencyError::MapSize { frame: "f".into() });
        assert!(matches!(
            e,
            PostError::Saliency(SaliencyError::MapSize { .. })
        ));
        assert_eq!(
            crate::error_line(&e),
            "saliency map of f has the wrong size"
        );
    }
}
