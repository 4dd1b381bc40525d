//! robustream: a streaming robustness evaluator for image classifiers.
//!
//! Frames flow one way: [`source`] → [`scenario`] → [`preprocess`] → batch assembly ([`app::pipeline`]) →
//! [`engine`] → [`metrics`] → [`report`]. The modules stand on floors, and each imports only from
//! its own floor or one below (checked by a test in `layering.rs`); `docs/ARCHITECTURE.md` has the
//! picture and a line per module.

#![warn(missing_docs)]

// Ground floor: the vocabulary, geometry and kernels every stage shares.
pub mod assets;
pub mod classmap;
pub mod contract;
mod duration;
pub mod frame;
mod fsread;
pub mod geometry;
pub mod kernels;
pub mod key;
mod latency;
pub mod model;
pub(crate) mod ordered;
mod quote;
pub mod rng;
mod runtime;
pub mod scene;
pub mod shard;
pub mod view;

// The stages, bottom up (one declaration each, so the order stays).
pub mod source;

pub mod scenario;

pub mod gpu;
pub mod preprocess;

pub mod engine;

pub mod metrics;

pub mod report;

// The run: the pipeline, the passes after it, and the commands (`app/`).
pub mod app;

#[cfg(test)]
mod layering;

/// An error and its causes on one line, `what: cause: cause`, each cause once: the library's errors
/// quote their cause in their own message (`cannot read X: <the I/O error>`) and also return it as
/// their `source()`, so printing the whole chain (anyhow's `{:#}`) said it twice. A cause whose text
/// the line already holds, as written or as a message quotes a library's text (folded to one
/// bounded line, [`source::decode::one_line`]), is left out; line breaks become spaces.
pub fn error_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        let text = text.trim();
        let quoted = |t: &str| line.contains(t) || line.contains(&source::decode::one_line(t));
        if !text.is_empty() && !quoted(text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(text);
        }
        next = e.source();
    }
    line.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_line_says_each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = crate::model::ModelDescError::Read {
            path: "m.toml".into(),
            source: io(),
        };
        let line = super::error_line(&e);
        assert_eq!(line.matches("No such file").count(), 1, "{line}");
        assert!(line.starts_with("cannot read model description m.toml: No such file"));
        // A context that does not quote its cause keeps it.
        let e = anyhow::Error::new(io()).context("cannot open the camera");
        assert_eq!(
            super::error_line(e.as_ref()),
            "cannot open the camera: No such file"
        );
        let e = anyhow::anyhow!("two\nlines");
        assert_eq!(super::error_line(e.as_ref()), "two lines");
        // A cause its message quotes folded and clipped (a decoder's long text) is not said again.
        let long = format!("bad\nchunk {}", "x".repeat(300));
        let io = std::io::Error::other(long.clone());
        let e = crate::source::decode::FileError::Unreadable {
            what: "image".into(),
            source: crate::fsread::ReadError::Io(io),
        };
        let e = crate::source::SourceError::at(
            crate::source::SourceErrorKind::Unreadable,
            "a.png".as_ref(),
            e.to_string(),
        )
        .caused_by(e);
        assert_eq!(super::error_line(&e), e.to_string());
    }
}
