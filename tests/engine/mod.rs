//! The inference engine on the real model and ONNX Runtime: fixed batch shapes that score every
//! image as it scores alone, float16 models, the batches a run logs, and `robustream bench`.

mod batches;
mod bench_cli;
mod engine_shapes;
mod float16_cli;
