//! Frames already in memory: for benchmarks and library users who decode frames themselves.

use super::{Source, SourceError};
use crate::frame::Frame;

/// Yields the given frames in order (their `seq` is reassigned by the pipeline).
pub struct MemorySource {
    frames: std::vec::IntoIter<Frame>,
    total: usize,
}

impl MemorySource {
    /// A source over these frames.
    pub fn new(frames: Vec<Frame>) -> Self {
        let total = frames.len();
        Self {
            frames: frames.into_iter(),
            total,
        }
    }
}

impl Source for MemorySource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        self.frames.next().map(Ok)
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.total)
    }

    fn describe(&self) -> String {
        format!("memory ({} frames)", self.total)
    }
}
