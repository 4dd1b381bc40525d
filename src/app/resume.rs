//! `run --resume DIR`: going on with a run that was killed or pre-empted part way
//! (docs/deploy.md#resume).
//!
//! A run writes summary.json (with `run.fingerprint`, [`crate::app::fingerprint`]) before its first frame
//! and appends each frame's records whole as the frame completes, in source order. A resumed run
//! checks that DIR holds the same run (same fingerprint), keeps the records of every frame but the
//! last one in the file (whose records may be cut short; a half-written last line goes with it),
//! counts those frames as read and feeds them to the metrics first, and evaluates only the frames
//! without records — so it ends with the records and summary an uninterrupted run writes. A frame
//! that was skipped as unreadable has no records and is read (and skipped) again; the post passes
//! (challenge, saliency) run again whole, over the finished frames too.

use std::path::{Path, PathBuf};

use crate::metrics::Record;
use crate::report::jsonl::RECORDS_JSONL;
use crate::report::summary::Summary;
use crate::shard::Shard;

/// A run directory that cannot be resumed; the message names it and the fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResumeError {
    /// Records without the summary that says which run wrote them.
    #[error(
        "{}: holds records.jsonl but no readable summary.json ({reason}), so which run wrote them \
         cannot be checked; resume into another directory, or remove records.jsonl to start over",
        dir.display()
    )]
    NoSummary {
        /// The run directory.
        dir: PathBuf,
        /// Why summary.json could not be read.
        reason: String,
    },
    /// A summary without a fingerprint (written before robustream had them).
    #[error(
        "{}: its summary.json has no run.fingerprint (written by an older robustream), so it cannot \
         be checked to be this run; resume into another directory",
        dir.display()
    )]
    NoFingerprint {
        /// The run directory.
        dir: PathBuf,
    },
    /// The same run as another shard.
    #[error(
        "{}: holds shard {theirs} of this run, not {ours}; resume it with --shard {theirs} (a \
         resubmitted subset of a Slurm array renumbers its tasks: give --shard explicitly), or give \
         this shard another directory",
        dir.display()
    )]
    OtherShard {
        /// The run directory.
        dir: PathBuf,
        /// The shard it holds (`I/N`, `0/1` for the whole source).
        theirs: String,
        /// This run's.
        ours: String,
    },
    /// Another run's directory.
    #[error(
        "{}: holds another run: its `{part}` is {theirs}, this run's is {ours}; resume with the \
         command line and config that started it, or give this run another directory",
        dir.display()
    )]
    Different {
        /// The run directory.
        dir: PathBuf,
        /// The first part of the fingerprints that differs.
        part: String,
        /// Its value in the directory's run.
        theirs: String,
        /// Its value in this run.
        ours: String,
    },
}

/// What a resumed run found in its directory: a run with its fingerprint and some records.
#[derive(Debug)]
pub(crate) struct Previous {
    /// The directory's summary as last written (interim or final).
    pub(crate) summary: Summary,
}

impl Previous {
    /// Reads what `dir` holds: `None` when it holds no records yet (the run starts there afresh),
    /// else the run, checked to have `fingerprint` and to be the same `shard`.
    pub(crate) fn read(
        dir: &Path,
        fingerprint: &crate::report::run_block::Fingerprint,
        shard: Option<Shard>,
    ) -> Result<Option<Self>, ResumeError> {
        let records = dir.join(RECORDS_JSONL);
        if std::fs::metadata(&records).map_or(true, |m| m.len() == 0) {
            return Ok(None);
        }
        let summary =
            Summary::read(&dir.join("summary.json")).map_err(|e| ResumeError::NoSummary {
                dir: dir.to_path_buf(),
                reason: e.to_string(),
            })?;
        let theirs =
            summary
                .run
                .fingerprint
                .as_ref()
                .ok_or_else(|| ResumeError::NoFingerprint {
                    dir: dir.to_path_buf(),
                })?;
        if let Some((part, theirs, ours)) =
            crate::app::fingerprint::first_difference(theirs, fingerprint)
        {
            return Err(ResumeError::Different {
                dir: dir.to_path_buf(),
                part,
                theirs,
                ours,
            });
        }
        let held = summary
            .run
            .shard
            .as_ref()
            .map(|s| format!("{}/{}", s.index, s.count));
        let held = held.unwrap_or_else(|| Shard::WHOLE.to_string());
        let ours = shard.unwrap_or(Shard::WHOLE).to_string();
        if held != ours {
            return Err(ResumeError::OtherShard {
                dir: dir.to_path_buf(),
                theirs: held,
                ours,
            });
        }
        Ok(Some(Self { summary }))
    }

    /// Whether the run wrote its final summary (it ended, completed or not): every record it
    /// wrote is whole then, its last frame too.
    pub(crate) fn ended(&self) -> bool {
        self.summary.run.end != Some(crate::report::run_block::RunEnd::Running)
    }
}

/// `records` split into frames: runs of consecutive records with the same `seq` (the same `frame`
/// where `seq` is absent), as the run wrote them.
pub(crate) fn frames(records: &[Record]) -> Vec<&[Record]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=records.len() {
        let ends = i == records.len()
            || match (records[i].seq, records[start].seq) {
                (Some(a), Some(b)) => a != b,
                _ => records[i].frame != records[start].frame,
            };
        if ends {
            out.push(&records[start..i]);
            start = i;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::rec;

    fn at(mut r: Record, seq: u64) -> Record {
        r.seq = Some(seq);
        r
    }

    #[test]
    fn frames_split_by_position() {
        let records = vec![
            at(rec("a", "clean", None, &[1]), 0),
            at(rec("a", "x", None, &[1]), 0),
            at(rec("a", "clean", None, &[1]), 3), // same id, another position
            at(rec("b", "clean", None, &[1]), 4),
        ];
        let f = frames(&records);
        assert_eq!(f.iter().map(|g| g.len()).collect::<Vec<_>>(), [2, 1, 1]);
        assert!(frames(&[]).is_empty());
    }

    #[test]
    fn an_empty_directory_starts_afresh_and_another_run_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let fp_json = serde_json::json!({"hash": "1", "parts": {"seed": 0}});
        let fp: crate::report::run_block::Fingerprint =
            serde_json::from_value(fp_json.clone()).unwrap();
        assert!(Previous::read(d.path(), &fp, None).unwrap().is_none());
        std::fs::write(d.path().join(RECORDS_JSONL), "").unwrap();
        assert!(Previous::read(d.path(), &fp, None).unwrap().is_none());
        std::fs::write(d.path().join(RECORDS_JSONL), "{}\n").unwrap();
        let e = Previous::read(d.path(), &fp, None).unwrap_err();
        assert!(matches!(e, ResumeError::NoSummary { .. }), "{e}");
        let summary = |run: serde_json::Value| {
            let s = Summary::recompute(&[], None);
            let s = Summary {
                run: crate::report::run_block::RunBlock::from_json(run),
                ..s
            };
            std::fs::write(d.path().join("summary.json"), s.to_json()).unwrap();
        };
        summary(serde_json::json!({}));
        let e = Previous::read(d.path(), &fp, None).unwrap_err();
        assert!(matches!(e, ResumeError::NoFingerprint { .. }), "{e}");
        summary(serde_json::json!({"fingerprint": {"hash": "2", "parts": {"seed": 5}}}));
        let e = Previous::read(d.path(), &fp, None).unwrap_err().to_string();
        assert!(e.contains("its `seed` is 5, this run's is 0"), "{e}");
        summary(serde_json::json!({"fingerprint": fp_json.clone(), "end": "running"}));
        let p = Previous::read(d.path(), &fp, None).unwrap().unwrap();
        assert!(!p.ended());
        let two = Some(Shard { index: 1, count: 2 });
        let e = Previous::read(d.path(), &fp, two).unwrap_err().to_string();
        assert!(e.contains("holds shard 0/1 of this run, not 1/2"), "{e}");
        summary(
            serde_json::json!({"fingerprint": fp_json.clone(), "end": "completed",
            "shard": {"index": 1, "count": 2, "from": "--shard"}}),
        );
        assert!(Previous::read(d.path(), &fp, two).unwrap().unwrap().ended());
        let e = Previous::read(d.path(), &fp, None).unwrap_err().to_string();
        assert!(e.contains("holds shard 1/2 of this run, not 0/1"), "{e}");
    }
}
