//! `robustream merge RUN_DIR... --out MERGED`: the shard runs of one sharded run
//! ([`crate::shard`]) put back together into the run directory one unsharded run writes
//! (docs/deploy.md#merge).
//!
//! **Checks** (each a [`MergeError`] naming the run directory and the fix): every directory holds
//! `summary.json` and `records.jsonl`; all have the same `run.fingerprint` (the first differing part
//! is named, [`crate::app::fingerprint::first_difference`]); all were split into the same number of
//! shards N (a run without `run.shard` is shard 0/1) and the indices are 0..N−1, each exactly once;
//! every run ended `completed` or `limit`, and its post passes are complete; every record has a
//! `seq`, and no position or frame is in two runs.
//!
//! **Output.** `records.jsonl`: the records of all shards, sorted stably by `seq` (each shard's
//! frames are whole and in source order, so this is the order one run writes). `summary.json` is
//! recomputed from them ([`Summary::recompute_with_metrics`]) with the shards' frame counts summed,
//! `run` taken from shard 0 with `shard` (and `labels.shard`) removed, `started_unix` the earliest,
//! `ended_unix` the latest, `wall_s` the longest, `variants_failed` summed, and `merged_from` (the
//! directories) and `shards` (N) added; the post passes' results are merged from their lines
//! ([`merge_challenge`], [`merge_saliency`]); `flips.json` is re-chosen from the shards' kept frames
//! ([`crate::report::flips::merge_kept`]); `summary.md` and `report.html` come from the writer a run
//! uses ([`crate::report::write_run_report`]).
//!
//! **Post passes** (docs/deploy.md#post-passes-in-shards). The challenge's foregrounds and the
//! saliency frames are the candidates with the `k` smallest keyed ranks
//! (`crate::app::challenge::BottomK`); each shard kept the bottom `k` of its own candidates, and the
//! bottom `k` of the whole run is the bottom `k` of those, so the merge keeps the lines with the `k`
//! smallest ranks (ties by position) and recomputes the tallies and means from them. A line's result
//! does not depend on the shard that evaluated it (the challenge's backgrounds are the same in every
//! shard). Counts describe the merged result, what one run evaluates (`candidates` and
//! `unusable_masks` are the shards' sums; `composites`, `inferences` those of the kept lines);
//! `seconds` is the sum of the shards' pass times and `composite_ms` / `infer_ms` the mean over every
//! composite the shards evaluated — the work done, including lines the merge leaves out.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::app::challenge::{
    CHALLENGE_JSONL, ChallengeLine, FOREGROUND_SALT, SALIENCY_SALT, rank, round3,
};
use crate::app::saliency::{SALIENCY_JSONL, SaliencyLine};
use crate::metrics::Record;
use crate::metrics::in9::{ChallengeEntry, ChallengeTally};
use crate::metrics::saliency::{Alignment, AlignmentMeans, SaliencyEntry};
use crate::report::ReportError;
use crate::report::flips::{FlipFrame, merge_kept, write_kept};
use crate::report::jsonl::{RECORDS_JSONL, RecordWriter};
use crate::report::lines::LineFile;
use crate::report::run_block::{RunBlock, RunEnd};
use crate::report::summary::{FrameCounts, Summary};

/// Why shard runs cannot be merged; each names the run directory and the fix.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No run directory given.
    #[error("no run directory to merge; give the shard runs' directories (their --out)")]
    NoInput,
    /// A run directory lacks summary.json or records.jsonl, or it cannot be read.
    #[error(
        "{}: no readable {file} ({reason}); give merge the directories the shard runs wrote \
         (their --out), each after its run ended",
        dir.display()
    )]
    Missing {
        /// The run directory.
        dir: PathBuf,
        /// `summary.json` or `records.jsonl`.
        file: &'static str,
        /// Why it could not be read.
        reason: String,
    },
    /// A file of a run directory is not what a run writes (a malformed record or line).
    #[error("{0}; merge the directories as the shard runs left them")]
    Malformed(#[source] ReportError),
    /// A summary without a fingerprint (written by a robustream without shards).
    #[error(
        "{}: its summary.json has no run.fingerprint (written by an older robustream); run the \
         shard again with this robustream",
        dir.display()
    )]
    NoFingerprint {
        /// The run directory.
        dir: PathBuf,
    },
    /// Two runs that do not evaluate the same frames the same way.
    #[error(
        "{} and {} are not shards of one run: `{part}` is {first_value} in the first and {value} \
         in the second; merge shards started with the same command line and config (only the \
         shard may differ)",
        first.display(),
        dir.display()
    )]
    Different {
        /// The first run directory.
        first: PathBuf,
        /// The run directory that differs.
        dir: PathBuf,
        /// The first part of the fingerprints that differs.
        part: String,
        /// Its value in the first run.
        first_value: String,
        /// Its value in `dir`.
        value: String,
    },
    /// Shards of runs split into different numbers of shards.
    #[error(
        "{} is shard {index}/{count} but {} is of {first_count} shards; merge the shards of one \
         split (the same N in --shard I/N)",
        dir.display(),
        first.display()
    )]
    ShardCount {
        /// The run directory.
        dir: PathBuf,
        /// Its shard index.
        index: u64,
        /// Its shard count.
        count: u64,
        /// The first run directory.
        first: PathBuf,
        /// The first run's shard count.
        first_count: u64,
    },
    /// The same shard twice.
    #[error(
        "{} and {} are both shard {index}/{count}; give each shard once",
        first.display(),
        dir.display()
    )]
    DuplicateShard {
        /// The shard index.
        index: u64,
        /// The shard count.
        count: u64,
        /// The directory given first.
        first: PathBuf,
        /// The directory given again.
        dir: PathBuf,
    },
    /// Shards left out.
    #[error(
        "shard{} {} of {count} missing (given: {}); run {} and give {} too",
        if missing.len() == 1 { "" } else { "s" },
        list(missing),
        given.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
        if missing.len() == 1 { "it" } else { "them" },
        if missing.len() == 1 { "its directory" } else { "their directories" }
    )]
    MissingShards {
        /// The shard count.
        count: u64,
        /// The indices not given.
        missing: Vec<u64>,
        /// The directories given.
        given: Vec<PathBuf>,
    },
    /// A run that did not end normally.
    #[error(
        "{}: the run {}; resume it with `robustream run --resume {}` (and the command line that \
         started it) first",
        dir.display(),
        why,
        dir.display()
    )]
    NotEnded {
        /// The run directory.
        dir: PathBuf,
        /// What happened to it (`ended interrupted`, `is still running`, …).
        why: String,
    },
    /// Records without a position (written before records had one).
    #[error(
        "{}: line {line} of records.jsonl (frame `{frame}`) has no `seq`, so its frames cannot be \
         put back in source order; run the shard again with this robustream",
        dir.display()
    )]
    NoSeq {
        /// The run directory.
        dir: PathBuf,
        /// The record's line (1-based, blank lines not counted).
        line: usize,
        /// Its frame.
        frame: String,
    },
    /// A position or frame in two runs.
    #[error(
        "{} and {} both hold {what}; merge the shards of one split, each once",
        first.display(),
        dir.display()
    )]
    Overlap {
        /// The position or frame (`position 12 (frame `a.jpg`)`).
        what: String,
        /// The run directory that has it first.
        first: PathBuf,
        /// The other.
        dir: PathBuf,
    },
    /// `--out` is one of the inputs.
    #[error(
        "--out {} is one of the run directories to merge; give the merged run a directory of its own",
        out.display()
    )]
    OutIsInput {
        /// The output directory.
        out: PathBuf,
    },
    /// `--out` holds files.
    #[error(
        "--out {} is not empty; give an empty or new directory, or --force to replace the merged \
         run's files there",
        out.display()
    )]
    OutNotEmpty {
        /// The output directory.
        out: PathBuf,
    },
    /// The output directory cannot be made or cleared.
    #[error(
        "cannot {action} {}: {source}; give --out a folder this user can write",
        path.display()
    )]
    Out {
        /// What failed.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Writing the merged outputs failed.
    #[error(transparent)]
    Write(ReportError),
    /// A post pass's line file that does not parse.
    #[error(
        "{}:{line}: not a line the {pass} pass writes ({reason}); run the shard again",
        path.display()
    )]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// `challenge` or `saliency`.
        pass: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// `1, 2, 5`.
fn list(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

/// The outputs a merge writes into `--out` (removed first under `--force`, so none is left from an
/// earlier merge).
const OUTPUTS: &[&str] = &[
    RECORDS_JSONL,
    crate::report::SUMMARY_JSON,
    crate::report::SUMMARY_MD,
    crate::report::flips::FLIPS_JSON,
    crate::report::html::REPORT_HTML,
    CHALLENGE_JSONL,
    SALIENCY_JSONL,
];

/// The folder of saliency maps in a run directory.
const MAPS: &str = "saliency";

/// What a merge wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// Shards merged (N).
    pub shards: u64,
    /// Frames read in all (the summed `frames.read`).
    pub frames: u64,
    /// Records written.
    pub records: u64,
}

/// One shard run as read.
#[derive(Debug)]
struct Part {
    dir: PathBuf,
    summary: Summary,
    records: Vec<Record>,
    index: u64,
    count: u64,
}

/// Merges the shard runs in `dirs` into `out` (module docs); `force` lets `out` hold files (the
/// merge's own outputs there are replaced).
pub fn merge(dirs: &[PathBuf], out: &Path, force: bool) -> Result<Merged, MergeError> {
    if dirs.is_empty() {
        return Err(MergeError::NoInput);
    }
    check_out(dirs, out, force)?;
    let mut parts = dirs
        .iter()
        .map(|d| read_part(d))
        .collect::<Result<Vec<_>, _>>()?;
    check_parts(&parts)?;
    // Shard order from here on: `run` is shard 0's, `merged_from` lists the shards in order.
    parts.sort_by_key(|p| p.index);
    prepare_out(out, force)?;
    // The records move into the merged list (one copy in memory, not two).
    let records: Vec<Record> = parts
        .iter_mut()
        .flat_map(|p| std::mem::take(&mut p.records))
        .collect();
    write(&parts, records, out)
}

/// `--out` is not an input, and is empty (or `force`).
fn check_out(dirs: &[PathBuf], out: &Path, force: bool) -> Result<(), MergeError> {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    if dirs.iter().any(|d| same(d, out)) {
        return Err(MergeError::OutIsInput {
            out: out.to_path_buf(),
        });
    }
    let non_empty = std::fs::read_dir(out).is_ok_and(|mut rd| rd.next().is_some());
    if non_empty && !force {
        return Err(MergeError::OutNotEmpty {
            out: out.to_path_buf(),
        });
    }
    if out.exists() && !out.is_dir() {
        return Err(MergeError::Out {
            action: "use",
            path: out.to_path_buf(),
            source: std::io::Error::other("not a directory"),
        });
    }
    Ok(())
}

/// Creates `out`; under `force`, removes what an earlier merge wrote there.
fn prepare_out(out: &Path, force: bool) -> Result<(), MergeError> {
    let fail = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| MergeError::Out {
            action,
            path,
            source,
        }
    };
    std::fs::create_dir_all(out).map_err(fail("create", out))?;
    if force {
        for name in OUTPUTS {
            let p = out.join(name);
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(fail("remove", &p)(e));
                }
                _ => {}
            }
        }
        let maps = out.join(MAPS);
        if maps.is_dir() {
            std::fs::remove_dir_all(&maps).map_err(fail("remove", &maps))?;
        }
    }
    Ok(())
}

/// Reads one shard run: its summary (with a fingerprint and an end a merge accepts) and records.
fn read_part(dir: &Path) -> Result<Part, MergeError> {
    let missing = |file: &'static str, e: &dyn std::fmt::Display| MergeError::Missing {
        dir: dir.to_path_buf(),
        file,
        reason: e.to_string(),
    };
    let summary = match Summary::read(&dir.join(crate::report::SUMMARY_JSON)) {
        Ok(s) => s,
        Err(ReportError::Io { source, .. }) => {
            return Err(missing("summary.json", &source));
        }
        Err(e) => return Err(MergeError::Malformed(e)),
    };
    if summary.run.fingerprint.is_none() {
        return Err(MergeError::NoFingerprint {
            dir: dir.to_path_buf(),
        });
    }
    let end = summary.run.end;
    if !matches!(end, Some(RunEnd::Completed | RunEnd::Limit)) {
        let why = match end {
            None | Some(RunEnd::Running) => {
                "has not ended (it is still running, or was killed)".into()
            }
            Some(e) => format!("ended `{}`", e.as_str()),
        };
        return Err(MergeError::NotEnded {
            dir: dir.to_path_buf(),
            why,
        });
    }
    for (pass, complete) in [
        (
            "challenge",
            summary.run.challenge.as_ref().and_then(|e| e.complete),
        ),
        ("saliency", summary.saliency().and_then(|e| e.complete)),
    ] {
        if complete == Some(false) {
            return Err(MergeError::NotEnded {
                dir: dir.to_path_buf(),
                why: format!("did not complete its {pass} pass"),
            });
        }
    }
    let read = match crate::report::jsonl::read_records(&dir.join(RECORDS_JSONL)) {
        Ok(r) => r,
        Err(ReportError::Io { source, .. }) => return Err(missing("records.jsonl", &source)),
        Err(e) => return Err(MergeError::Malformed(e)),
    };
    if read.truncated > 0 {
        return Err(MergeError::NotEnded {
            dir: dir.to_path_buf(),
            why: "left a cut last line in records.jsonl".into(),
        });
    }
    if let Some((i, r)) = read
        .records
        .iter()
        .enumerate()
        .find(|(_, r)| r.seq.is_none())
    {
        return Err(MergeError::NoSeq {
            dir: dir.to_path_buf(),
            line: i + 1,
            frame: r.frame.clone(),
        });
    }
    let (index, count) = summary
        .run
        .shard
        .as_ref()
        .map_or((0, 1), |s| (s.index, s.count));
    Ok(Part {
        dir: dir.to_path_buf(),
        summary,
        records: read.records,
        index,
        count,
    })
}

/// The checks between runs: one fingerprint, one split given whole, no frame twice.
fn check_parts(parts: &[Part]) -> Result<(), MergeError> {
    let first = &parts[0];
    let fingerprint = |p: &Part| p.summary.run.fingerprint.clone().unwrap_or_default();
    let fp = fingerprint(first);
    for p in &parts[1..] {
        if let Some((part, first_value, value)) =
            crate::app::fingerprint::first_difference(&fp, &fingerprint(p))
        {
            return Err(MergeError::Different {
                first: first.dir.clone(),
                dir: p.dir.clone(),
                part,
                first_value,
                value,
            });
        }
    }
    let mut by_index: BTreeMap<u64, &Path> = BTreeMap::new();
    for p in parts {
        if p.count != first.count {
            return Err(MergeError::ShardCount {
                dir: p.dir.clone(),
                index: p.index,
                count: p.count,
                first: first.dir.clone(),
                first_count: first.count,
            });
        }
        if let Some(d) = by_index.insert(p.index, &p.dir) {
            return Err(MergeError::DuplicateShard {
                index: p.index,
                count: p.count,
                first: d.to_path_buf(),
                dir: p.dir.clone(),
            });
        }
    }
    let missing: Vec<u64> = (0..first.count)
        .filter(|i| !by_index.contains_key(i))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::MissingShards {
            count: first.count,
            missing,
            given: parts.iter().map(|p| p.dir.clone()).collect(),
        });
    }
    let mut seqs: HashMap<u64, usize> = HashMap::new();
    let mut frames: HashMap<&str, usize> = HashMap::new();
    for (k, p) in parts.iter().enumerate() {
        for r in &p.records {
            let seq = r.seq.unwrap_or_default();
            let overlap = |other: usize, what: String| MergeError::Overlap {
                what,
                first: parts[other].dir.clone(),
                dir: p.dir.clone(),
            };
            match seqs.insert(seq, k) {
                Some(other) if other != k => {
                    return Err(overlap(
                        other,
                        format!("position {seq} (frame `{}`)", crate::quote::clip(&r.frame)),
                    ));
                }
                _ => {}
            }
            match frames.insert(&r.frame, k) {
                Some(other) if other != k => {
                    return Err(overlap(
                        other,
                        format!("frame `{}`", crate::quote::clip(&r.frame)),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Writes the merged run into `out` (module docs).
fn write(parts: &[Part], mut records: Vec<Record>, out: &Path) -> Result<Merged, MergeError> {
    records.sort_by_key(|r| r.seq);
    let mut positions: HashMap<&str, u64> = HashMap::new();
    for r in &records {
        positions
            .entry(&r.frame)
            .or_insert(r.seq.unwrap_or(u64::MAX));
    }
    let position = |id: &str| positions.get(id).copied();
    let seed = parts[0].summary.run.seed;
    let fp_parts = Value::Object(
        parts[0]
            .summary
            .run
            .fingerprint
            .as_ref()
            .map(|f| f.parts.clone())
            .unwrap_or_default(),
    );

    let mut writer = RecordWriter::create(&out.join(RECORDS_JSONL)).map_err(MergeError::Write)?;
    for frame in crate::app::resume::frames(&records) {
        writer.write_batch(frame).map_err(MergeError::Write)?;
    }

    let challenge = merge_challenge(parts, out, seed, &fp_parts, &position)?;
    let saliency = merge_saliency(parts, out, seed, &fp_parts, &position)?;

    let mut previous = parts[0].summary.clone();
    previous.run = merged_run(parts, challenge.as_ref().map(|(entry, _)| entry.clone()));
    previous.frames = parts.iter().fold(FrameCounts::default(), |mut a, p| {
        let f = &p.summary.frames;
        a.read += f.read;
        a.skipped += f.skipped;
        a.dropped += f.dropped;
        a.lost += f.lost;
        for (cause, n) in &f.lost_causes {
            *a.lost_causes.entry(cause.clone()).or_default() += n;
        }
        a
    });
    previous.metrics = metric_families(parts);
    if let Some(s) = saliency {
        previous.set_saliency(&s);
    }
    if let Some((_, Some(tally))) = &challenge {
        previous.set_challenge(*tally);
    }
    let (summary, metrics) = Summary::recompute_with_metrics(&records, Some(&previous));

    let flips = parts
        .iter()
        .map(|p| crate::report::flips::read(&p.dir))
        .collect::<Result<Vec<Vec<FlipFrame>>, _>>()
        .map_err(MergeError::Malformed)?;
    write_kept(out, &merge_kept(flips, position)).map_err(MergeError::Write)?;
    crate::report::write_run_report(out, &summary, &metrics, None).map_err(MergeError::Write)?;
    Ok(Merged {
        shards: parts[0].count,
        frames: summary.frames.read,
        records: records.len() as u64,
    })
}

/// The shards' metric families in the order one run writes them: a shard without labelled frames
/// lacks the families that need labels, so the order is the fullest shard's (the first of the
/// fullest), then any family only others have. The recompute refills the values.
fn metric_families(parts: &[Part]) -> serde_json::Map<String, Value> {
    let fullest = parts
        .iter()
        .rev()
        .max_by_key(|p| p.summary.metrics.len())
        .map(|p| p.summary.metrics.clone())
        .unwrap_or_default();
    let mut out = fullest;
    for p in parts {
        for (k, v) in &p.summary.metrics {
            if !out.contains_key(k) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

/// `run` of the merged summary: shard 0's (`parts` are in shard order), without `shard` and
/// `batches`, with the times spanning the shards, the failed variants summed, the challenge's merged
/// entry, `merged_from` and `shards`.
fn merged_run(parts: &[Part], challenge: Option<ChallengeEntry>) -> RunBlock {
    let runs = || parts.iter().map(|p| &p.summary.run);
    let mut run = parts[0].summary.run.clone();
    run.shard = None;
    // A shard's batches are its own process's engine (each shard's batches.csv stays in its
    // directory); their quantiles do not add up to a whole run's (docs/output.md#runbatches).
    run.batches = None;
    // The fleet labels (`report::fleet`) are shard 0's; the shard is the merge's business.
    run.labels.retain(|(k, _)| k != "shard");
    run.started_unix = runs().map(|r| r.started_unix).min().unwrap_or_default();
    run.ended_unix = runs().filter_map(|r| r.ended_unix).max();
    run.wall_s = runs().filter_map(|r| r.wall_s).reduce(f64::max);
    if run.variants_failed.is_some() {
        run.variants_failed = Some(runs().filter_map(|r| r.variants_failed).sum());
    }
    if runs().any(|r| r.end == Some(RunEnd::Limit)) {
        run.end = Some(RunEnd::Limit);
    }
    if let Some(c) = challenge {
        run.challenge = Some(c);
    }
    run.merged_from = Some(parts.iter().map(|p| p.dir.display().to_string()).collect());
    run.shards = Some(parts[0].count);
    run
}

/// One line of a post pass's file: its text as written and what the merge reads of it.
struct Line<L> {
    text: String,
    value: L,
}

/// A post pass's line type as the merge reads it: which frame the line is of.
trait PassLine: serde::de::DeserializeOwned {
    fn frame(&self) -> &str;
}

impl PassLine for ChallengeLine {
    fn frame(&self) -> &str {
        &self.frame
    }
}

impl PassLine for SaliencyLine {
    fn frame(&self) -> &str {
        &self.frame
    }
}

/// A post pass's summary entry as the merge reads it.
trait PassEntry: Clone {
    fn applicable(&self) -> bool;
}

impl PassEntry for ChallengeEntry {
    fn applicable(&self) -> bool {
        self.applicable
    }
}

impl PassEntry for SaliencyEntry {
    fn applicable(&self) -> bool {
        self.applicable
    }
}

/// The lines of `dir/name` (none when the file is absent).
fn read_lines<L: PassLine>(
    dir: &Path,
    name: &str,
    pass: &'static str,
) -> Result<Vec<Line<L>>, MergeError> {
    let path = dir.join(name);
    let text = match crate::fsread::read_text_io(&path, 1 << 30) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(MergeError::Malformed(ReportError::io("read", &path)(e))),
    };
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let value: L = serde_json::from_str(l).map_err(|e| MergeError::BadLine {
            path: path.clone(),
            line: i + 1,
            pass,
            reason: e.to_string(),
        })?;
        out.push(Line {
            text: l.to_string(),
            value,
        });
    }
    Ok(out)
}

/// A kept line: the index of the shard that wrote it, its index there, and the line.
type Placed<L> = (usize, usize, Line<L>);

/// The `k` lines with the smallest `rank(seed, frame, salt)` (ties by position), in source order,
/// each with the index of the shard that wrote it and its index there.
fn bottom_k<L: PassLine>(
    lines: Vec<Placed<L>>,
    k: usize,
    seed: u64,
    salt: &str,
    position: &dyn Fn(&str) -> Option<u64>,
) -> Vec<Placed<L>> {
    let at = |l: &Line<L>| position(l.value.frame()).unwrap_or(u64::MAX);
    let mut ranked: Vec<(u64, u64, Placed<L>)> = lines
        .into_iter()
        .map(|t| (rank(seed, t.2.value.frame(), salt), at(&t.2), t))
        .collect();
    ranked.sort_by_key(|&(r, p, _)| (r, p));
    ranked.truncate(k);
    ranked.sort_by_key(|&(_, p, _)| p);
    ranked.into_iter().map(|(_, _, t)| t).collect()
}

/// Writes `lines` as `out/name`.
fn write_lines<L: PassLine>(out: &Path, name: &str, lines: &[Placed<L>]) -> Result<(), MergeError> {
    let mut file = LineFile::create(&out.join(name)).map_err(MergeError::Write)?;
    for (_, _, l) in lines {
        file.append(&l.text, || {
            format!(
                "the line of frame `{}`",
                crate::quote::clip(l.value.frame())
            )
        })
        .map_err(MergeError::Write)?;
    }
    Ok(())
}

/// A post pass as the merge reads it: its lines' file, its name in messages and in the
/// fingerprint, its rank salt, where a shard's summary holds its entry, and the fingerprint key of
/// how many lines it keeps.
struct Pass<E> {
    file: &'static str,
    name: &'static str,
    salt: &'static str,
    entry: fn(&Summary) -> Option<E>,
    k: &'static str,
}

/// What the shards' entries of a post pass say, and the lines the merged run keeps.
enum Kept<E, L> {
    /// No shard ran the pass.
    NotRun,
    /// It applied in no shard: the first shard's entry.
    NotApplied(E),
    /// The shards where it applied (index, entry), the first such entry, and the lines of the `k`
    /// smallest ranks ([`bottom_k`]).
    Lines {
        applied: Vec<(usize, E)>,
        base: E,
        kept: Vec<Placed<L>>,
    },
}

impl<E: PassEntry> Pass<E> {
    /// Each shard's summary entry of the pass (index, entry), where it ran, and how many lines the
    /// run keeps as the fingerprint says.
    fn gather<'a>(
        &self,
        parts: &[Part],
        fp_parts: &'a Value,
    ) -> (Vec<(usize, E)>, Option<&'a Value>) {
        let entries = parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| (self.entry)(&p.summary).map(|e| (i, e)))
            .collect();
        let k = fp_parts.get(self.name).and_then(|c| c.get(self.k));
        (entries, k)
    }

    /// The lines of the shards where the pass applied (`entries`: each shard's summary entry),
    /// kept to the `k` smallest ranks (`k` as the fingerprint gives it; all when absent).
    fn kept<L: PassLine>(
        &self,
        parts: &[Part],
        entries: &[(usize, E)],
        k: Option<&Value>,
        seed: u64,
        position: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Kept<E, L>, MergeError> {
        let Some((_, first)) = entries.first() else {
            return Ok(Kept::NotRun);
        };
        let applied: Vec<(usize, E)> = entries
            .iter()
            .filter(|(_, e)| e.applicable())
            .cloned()
            .collect();
        let Some((_, base)) = applied.first() else {
            return Ok(Kept::NotApplied(first.clone()));
        };
        let base = base.clone();
        let mut lines = Vec::new();
        for &(i, _) in &applied {
            for (j, l) in read_lines(&parts[i].dir, self.file, self.name)?
                .into_iter()
                .enumerate()
            {
                lines.push((i, j, l));
            }
        }
        let k = k.and_then(Value::as_u64).map_or(usize::MAX, |k| k as usize);
        let kept = bottom_k(lines, k, seed, self.salt, position);
        Ok(Kept::Lines {
            applied,
            base,
            kept,
        })
    }
}

/// Sets `slot` to `value` where the entry has the field (an entry of an older format keeps the
/// keys it was written with).
fn update<T>(slot: &mut Option<T>, value: T) {
    if slot.is_some() {
        *slot = Some(value);
    }
}

/// The challenge of the merged run (docs/deploy.md#post-passes-in-shards): `challenge.jsonl`
/// with the lines of the `foregrounds` smallest ranks, and `run.challenge` with its tally; `None`
/// when the run had no challenge. When no shard's challenge applied, shard 0's entry with
/// `candidates` and `unusable_masks` summed over the shards (the counts its reason text gives are
/// shard 0's).
fn merge_challenge(
    parts: &[Part],
    out: &Path,
    seed: u64,
    fp_parts: &Value,
    position: &dyn Fn(&str) -> Option<u64>,
) -> Result<Option<(ChallengeEntry, Option<ChallengeTally>)>, MergeError> {
    let pass = Pass {
        file: CHALLENGE_JSONL,
        name: "challenge",
        salt: FOREGROUND_SALT,
        entry: |s| s.run.challenge.clone(),
        k: "foregrounds",
    };
    let (entries, k) = pass.gather(parts, fp_parts);
    let sum = |field: fn(&ChallengeEntry) -> Option<u64>| {
        entries.iter().filter_map(|(_, e)| field(e)).sum::<u64>()
    };
    let (applied, base, kept) =
        match pass.kept::<ChallengeLine>(parts, &entries, k, seed, position)? {
            Kept::NotRun => return Ok(None),
            Kept::NotApplied(mut entry) => {
                update(&mut entry.candidates, sum(|e| e.candidates));
                update(&mut entry.unusable_masks, sum(|e| e.unusable_masks));
                return Ok(Some((entry, None)));
            }
            Kept::Lines {
                applied,
                base,
                kept,
            } => (applied, base, kept),
        };
    write_lines(out, CHALLENGE_JSONL, &kept)?;

    let mut tally = ChallengeTally {
        backgrounds: base.backgrounds.unwrap_or_default(),
        complete: true,
        ..ChallengeTally::default()
    };
    for (_, _, l) in &kept {
        let v = &l.value;
        tally.foregrounds += u64::from(!v.undecided);
        tally.undecided += u64::from(v.undecided);
        tally.vulnerable += u64::from(v.vulnerable);
        tally.composites += v.composites;
        tally.failed += v.failed;
    }
    let candidates = sum(|e| e.candidates);
    // A shard sampled its backgrounds when it says `sampled` though it kept all its candidates; the
    // backgrounds are the same in every shard.
    let backgrounds_sampled = applied.iter().any(|(_, e)| {
        let lines = e.foregrounds.unwrap_or_default() + e.undecided.unwrap_or_default();
        e.sampled == Some(true) && e.candidates.unwrap_or_default() <= lines
    });
    // Per composite, over every composite the shards evaluated.
    let composites = |e: &ChallengeEntry| e.composites.unwrap_or_default();
    let shard_composites: u64 = applied.iter().map(|(_, e)| composites(e)).sum();
    let per = |field: fn(&ChallengeEntry) -> Option<Option<f64>>| {
        let total: f64 = applied
            .iter()
            .filter_map(|(_, e)| field(e).flatten().map(|ms| ms * composites(e) as f64))
            .sum();
        (shard_composites > 0).then(|| round3(total / shard_composites as f64))
    };
    let seconds: f64 = applied.iter().filter_map(|(_, e)| e.seconds).sum();
    let mut entry = base;
    update(&mut entry.foregrounds, tally.foregrounds);
    update(&mut entry.vulnerable, tally.vulnerable);
    update(&mut entry.backgrounds, tally.backgrounds);
    update(&mut entry.composites, tally.composites);
    update(&mut entry.failed, tally.failed);
    update(&mut entry.undecided, tally.undecided);
    update(
        &mut entry.upper_bound,
        kept.len() as u64 * tally.backgrounds,
    );
    update(&mut entry.complete, true);
    update(&mut entry.accuracy, tally.accuracy());
    update(
        &mut entry.sampled,
        candidates > kept.len() as u64 || backgrounds_sampled,
    );
    update(&mut entry.candidates, candidates);
    update(&mut entry.unusable_masks, sum(|e| e.unusable_masks));
    update(&mut entry.seconds, round3(seconds));
    update(&mut entry.composite_ms, per(|e| e.composite_ms));
    update(&mut entry.infer_ms, per(|e| e.infer_ms));
    Ok(Some((entry, Some(tally))))
}

/// `metrics.saliency` of the merged run (docs/deploy.md#post-passes-in-shards), with
/// `saliency.jsonl` of the `frames` smallest ranks and their maps; `None` when the run had no
/// saliency pass. When no shard's pass applied, shard 0's entry as it is (the counts its reason
/// gives are shard 0's).
fn merge_saliency(
    parts: &[Part],
    out: &Path,
    seed: u64,
    fp_parts: &Value,
    position: &dyn Fn(&str) -> Option<u64>,
) -> Result<Option<SaliencyEntry>, MergeError> {
    let pass = Pass {
        file: SALIENCY_JSONL,
        name: "saliency",
        salt: SALIENCY_SALT,
        entry: Summary::saliency,
        k: "frames",
    };
    let (entries, k) = pass.gather(parts, fp_parts);
    let (applied, base, kept) =
        match pass.kept::<SaliencyLine>(parts, &entries, k, seed, position)? {
            Kept::NotRun => return Ok(None),
            Kept::NotApplied(first) => return Ok(Some(first)),
            Kept::Lines {
                applied,
                base,
                kept,
            } => (applied, base, kept),
        };
    write_lines(out, SALIENCY_JSONL, &kept)?;
    copy_maps(parts, out, &kept)?;

    let mut means = AlignmentMeans::default();
    for (_, _, l) in &kept {
        means.add(&Alignment {
            iou: l.value.iou,
            dice: l.value.dice,
            delta_density: l.value.delta_density,
        });
    }
    let per_frame = base.positions.unwrap_or_default() + 1;
    let seconds: f64 = applied.iter().filter_map(|(_, e)| e.seconds).sum();
    let mut entry = base;
    update(&mut entry.frames, means.frames);
    update(&mut entry.iou, means.iou());
    update(&mut entry.dice, means.dice());
    update(&mut entry.delta_density, means.delta_density());
    update(&mut entry.inferences, means.frames * per_frame);
    update(&mut entry.complete, true);
    update(&mut entry.seconds, round3(seconds));
    Ok(Some(entry))
}

/// Copies the kept frames' maps (`saliency/<n>.png`, n = the frame's line in its shard) to
/// `out/saliency/<m>.png`, m = its line in the merged file, where the shards wrote maps.
fn copy_maps(parts: &[Part], out: &Path, kept: &[Placed<SaliencyLine>]) -> Result<(), MergeError> {
    for (m, (i, j, _)) in kept.iter().enumerate() {
        let from = parts[*i].dir.join(MAPS).join(format!("{j}.png"));
        if !from.is_file() {
            continue;
        }
        let dir = out.join(MAPS);
        std::fs::create_dir_all(&dir).map_err(|source| MergeError::Out {
            action: "create",
            path: dir.clone(),
            source,
        })?;
        let to = dir.join(format!("{m}.png"));
        std::fs::copy(&from, &to).map_err(|source| MergeError::Out {
            action: "write",
            path: to,
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
