//! Frames a source loses before robustream sees them (a camera driver's sequence gaps,
//! `Source::lost`) are counted as their own reason, next to the pipeline's drops: passed on live as
//! `Event::Lost` and totalled in `Outcome::frames_lost`, by cause (`Source::lost_causes`). Driven through the library with the real
//! model and ONNX Runtime (no camera exists here, so the source is a stand-in that reports losses).

use std::sync::atomic::AtomicBool;

use robustream::app::pipeline::PipelineConfig;
use robustream::app::pipeline::{self, Event, PipelineInputs};
use robustream::classmap::ClassMap;
use robustream::engine::EngineConfig;
use robustream::engine::onnx::OnnxEngine;
use robustream::frame::Frame;
use robustream::model::ModelDesc;
use robustream::scenario::ScenarioStage;
use robustream::scenario::schedule::Spread;
use robustream::scenario::{Catalog, Plan};
use robustream::source::{Source, SourceError};

/// Four frames; after the n-th it has "lost" 2·n (as a GenICam stream that, between every two
/// frames it hands over, had one buffer time out and one arrive incomplete).
struct Lossy {
    given: u64,
}

impl Source for Lossy {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        (self.given < 4).then(|| {
            self.given += 1;
            Ok(Frame::new(
                format!("cam/{}", self.given),
                0,
                image::RgbImage::from_pixel(64, 48, image::Rgb([90, 120, 40])),
            ))
        })
    }

    fn len_hint(&self) -> Option<usize> {
        Some(4)
    }

    fn describe(&self) -> String {
        "lossy stand-in".into()
    }

    fn lost(&self) -> u64 {
        2 * self.given
    }

    fn lost_causes(&self) -> Vec<(&'static str, u64)> {
        vec![("incomplete", self.given), ("timeout", self.given)]
    }
}

#[test]
fn source_losses_are_counted_live_and_in_the_outcome() {
    let model = ModelDesc::load(&crate::util::model()).unwrap();
    let config = EngineConfig {
        library: Some(crate::util::ort_lib()),
        ..EngineConfig::default()
    };
    let engine = OnnxEngine::new(&model, &config).unwrap();
    let plan = Plan::from_items::<&str>(&[], &Catalog::builtin()).unwrap();
    let schedule = Spread::default().schedule(plan.len(), 0);
    let inputs = PipelineInputs {
        source: Box::new(Lossy { given: 0 }),
        plan,
        schedule,
        model: model.clone(),
        engine: Box::new(engine),
        class_map: ClassMap::identity(&model.labels),
        seed: 0,
        stage: ScenarioStage::ModelInput,
        config: PipelineConfig::default(),
        strict: false,
        limit: None,
        flips: None,
        gpu: None,
        select: None,
        engine_thread_warmup: 0,
    };
    let (mut live_lost, mut frames) = (0u64, 0u64);
    let mut live_causes = Vec::new();
    let mut sink = |e: Event| -> Result<(), pipeline::SinkError> {
        match e {
            Event::Lost(n, causes) => {
                live_lost += n;
                // Cumulative: each message carries the counts so far.
                assert_eq!(causes.iter().map(|(_, n)| n).sum::<u64>(), live_lost);
                live_causes = causes;
            }
            Event::Frame(_) => frames += 1,
            _ => {}
        }
        Ok(())
    };
    let outcome = pipeline::run(inputs, &AtomicBool::new(false), &mut sink);
    assert_eq!(frames, 4);
    assert_eq!(outcome.frames_lost, 8);
    assert_eq!(live_lost, 8);
    assert_eq!(live_causes, [("incomplete", 4), ("timeout", 4)]);
    assert_eq!(outcome.frames_lost_causes, live_causes);
    assert_eq!(outcome.frames_dropped, 0);
}
