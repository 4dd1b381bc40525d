//! The run's watcher thread: ends a run after `--duration`, passes Ctrl-C on, and samples
//! the process's resident memory and progress once a second into `resources.csv` — the record a
//! soak run (hours on the synthetic camera) is judged by: RSS flat, frames per second steady.
//!
//! The signals that stop a run ([`STOP_SIGNALS`]: Ctrl-C's SIGINT, and SIGTERM and SIGHUP, which
//! `docker stop`, Kubernetes, systemd and a closed terminal send) all act as Ctrl-C does; the binary
//! receives them on a thread of its own (`signal-hook`) and raises the flag this watcher passes on.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::report::lines::LineFile;

/// The signals that stop a run as Ctrl-C does: the first raises the stop flag (frames in flight
/// finish, the summary is written with `run.end = "interrupted"`), a second aborts.
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The name of a stop signal in messages (`SIGTERM`; `Ctrl-C (SIGINT)`).
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "Ctrl-C (SIGINT)".to_string(),
        libc::SIGTERM => "SIGTERM".to_string(),
        libc::SIGHUP => "SIGHUP".to_string(),
        n => format!("signal {n}"),
    }
}

/// The exit status of a run ended by `signal`: 128 + its number, as a shell reports a process a
/// signal ended (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP); 130 for anything out of range.
pub fn signal_status(signal: i32) -> u8 {
    u8::try_from(128 + signal)
        .ok()
        .filter(|s| *s > 128)
        .unwrap_or(130)
}

/// How often resources are sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Flags shared by the run and its watcher.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    /// The flag the pipeline watches: raised by Ctrl-C or by the duration.
    pub(crate) stop: AtomicBool,
    /// Raised when the duration ended the run.
    pub(crate) duration_hit: AtomicBool,
    /// Raised by the run when the pipeline has returned (the watcher then ends).
    pub(crate) finished: AtomicBool,
    /// Frames done so far (evaluated, skipped or dropped), for the progress column.
    pub(crate) frames: AtomicU64,
    /// Of those, frames a live source dropped at admission (the pipeline was behind).
    pub(crate) dropped: AtomicU64,
    /// Why `resources.csv` could not be written (a full disk): set with `stop` raised, so the run
    /// ends, as failed with this message (file, cause, fix).
    pub(crate) write_error: std::sync::Mutex<Option<String>>,
}

/// Resident memory over the run, MiB (from `/proc/self/status`; absent on systems without it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct RssSummary {
    /// Samples taken.
    pub(crate) samples: u64,
    /// First sample, MiB.
    pub(crate) first_mib: f64,
    /// Largest sample, MiB.
    pub(crate) max_mib: f64,
    /// Last sample, MiB.
    pub(crate) last_mib: f64,
}

/// CPU time the whole process has used so far (user + system, all threads), seconds, from
/// `getrusage(RUSAGE_SELF)`; `None` where that fails.
fn process_cpu_s() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes a `rusage` into the pointer it is given, which points to one
    // (zero-initialised) `rusage` we own; it reads nothing from it. We read the value only when
    // the call reports success, after which it is fully written.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(secs(usage.ru_utime) + secs(usage.ru_stime))
}

/// How busy the machine's cores were with this process between two points: process CPU time
/// over wall time and cores (1.0 = every core busy the whole time).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CpuUse {
    /// Process CPU time in the interval, seconds.
    pub(crate) cpu_s: f64,
    /// Wall time of the interval, seconds.
    pub wall_s: f64,
    /// Cores available to the process.
    pub cores: usize,
    /// `cpu_s / wall_s / cores`.
    pub utilisation: f64,
}

/// Measures [`CpuUse`] from its start to [`CpuMeter::read`].
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    cpu_s: Option<f64>,
    wall: Instant,
}

impl CpuMeter {
    /// Starts measuring now.
    pub fn start() -> Self {
        Self {
            cpu_s: process_cpu_s(),
            wall: Instant::now(),
        }
    }

    /// The use since [`CpuMeter::start`]; `None` where CPU time cannot be read.
    pub fn read(&self) -> Option<CpuUse> {
        let cpu_s = process_cpu_s()? - self.cpu_s?;
        let wall_s = self.wall.elapsed().as_secs_f64();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        Some(CpuUse {
            cpu_s: round(cpu_s),
            wall_s: round(wall_s),
            cores,
            utilisation: round(if wall_s > 0.0 {
                cpu_s / wall_s / cores as f64
            } else {
                0.0
            }),
        })
    }
}

/// The process's resident set size in MiB, if the OS says (`VmRSS` of `/proc/self/status`).
fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vmrss_kib(&status).map(|kib| kib as f64 / 1024.0)
}

/// The `VmRSS:` value of a `/proc/<pid>/status` text, kB.
fn parse_vmrss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Watches until `flags.finished`: raises `flags.stop` when `external` (Ctrl-C) is raised or
/// `duration` has passed (then also `duration_hit`), and writes one `resources.csv` line per
/// [`SAMPLE_EVERY`] (`t_s,rss_mib,frames,dropped`, flushed as written) into `dir`. Returns the RSS summary.
/// A row that cannot be written (a full disk) stops the run with its message in
/// `flags.write_error` (the run then ends as failed).
pub(crate) fn watch(
    external: &AtomicBool,
    flags: &Flags,
    duration: Option<Duration>,
    dir: &Path,
) -> RssSummary {
    let start = Instant::now();
    // A failed write ends the run as failed, like a failed records write: the file stops being
    // written (ending with whole rows) and the message waits in `flags.write_error`.
    let fail = |e: crate::report::ReportError| {
        let mut slot = flags
            .write_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert(e.to_string());
        flags.stop.store(true, Ordering::Relaxed);
    };
    let mut csv = match LineFile::create(&dir.join("resources.csv")).and_then(|mut f| {
        f.append("t_s,rss_mib,frames,dropped", || "the header".into())
            .map(|()| f)
    }) {
        Ok(f) => Some(f),
        Err(e) => {
            fail(e);
            None
        }
    };
    let mut rss = RssSummary::default();
    let mut next_sample = start;
    loop {
        let now = Instant::now();
        if now >= next_sample {
            if let Some(mib) = rss_mib() {
                if rss.samples == 0 {
                    rss.first_mib = mib;
                }
                rss.samples += 1;
                rss.max_mib = rss.max_mib.max(mib);
                rss.last_mib = mib;
                if let Some(f) = csv.as_mut() {
                    let t = now.duration_since(start).as_secs_f64();
                    let frames = flags.frames.load(Ordering::Relaxed);
                    let dropped = flags.dropped.load(Ordering::Relaxed);
                    let row = format!("{t:.3},{mib:.1},{frames},{dropped}");
                    if let Err(e) = f.append(&row, || format!("the row at {t:.3} s")) {
                        fail(e);
                        csv = None;
                    }
                }
            }
            next_sample += SAMPLE_EVERY;
        }
        if flags.finished.load(Ordering::Relaxed) {
            return rss;
        }
        if external.load(Ordering::Relaxed) {
            flags.stop.store(true, Ordering::Relaxed);
        }
        if duration.is_some_and(|d| now.duration_since(start) >= d)
            && !flags.stop.swap(true, Ordering::Relaxed)
        {
            flags.duration_hit.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_use_counts_this_process_busy_threads() {
        let meter = CpuMeter::start();
        // Two threads each doing a fixed amount of work (tens of ms of CPU on any machine).
        let spin = || {
            let mut x = 0u64;
            for _ in 0..50_000_000u64 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        std::thread::scope(|s| {
            s.spawn(spin);
            s.spawn(spin);
        });
        let u = meter.read().expect("getrusage works on Linux");
        assert!(u.cpu_s > 0.01 && u.utilisation > 0.0, "{u:?}");
        // No more CPU than the cores could give in that wall time (rusage ticks: 10 ms slack).
        assert!(u.cpu_s <= u.wall_s * u.cores as f64 + 0.02, "{u:?}");
    }

    #[test]
    fn stop_signals_are_named_and_give_the_shell_status() {
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGINT), "Ctrl-C (SIGINT)");
        assert_eq!(signal_status(libc::SIGINT), 130);
        assert_eq!(signal_status(libc::SIGTERM), 143);
        assert_eq!(signal_status(libc::SIGHUP), 129);
        assert_eq!(signal_status(0), 130);
        assert_eq!(signal_status(400), 130);
    }

    #[test]
    fn vmrss_is_read_from_proc_status() {
        let text = "Name:\trobustream\nVmPeak:\t  9000 kB\nVmRSS:\t   51234 kB\nThreads:\t4\n";
        assert_eq!(parse_vmrss_kib(text), Some(51234));
        assert_eq!(parse_vmrss_kib("Name: x\n"), None);
        if Path::new("/proc/self/status").exists() {
            assert!(rss_mib().is_some_and(|m| m > 1.0));
        }
    }

    #[test]
    fn the_duration_raises_stop_and_samples_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let flags = Flags::default();
        let external = AtomicBool::new(false);
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                watch(
                    &external,
                    &flags,
                    Some(Duration::from_millis(150)),
                    dir.path(),
                )
            });
            while !flags.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(flags.duration_hit.load(Ordering::Relaxed));
            flags.finished.store(true, Ordering::Relaxed);
            let rss = w.join().unwrap();
            if Path::new("/proc/self/status").exists() {
                assert!(rss.samples >= 1 && rss.max_mib >= rss.first_mib);
            }
        });
        let csv = std::fs::read_to_string(dir.path().join("resources.csv")).unwrap();
        assert!(csv.starts_with("t_s,rss_mib,frames,dropped\n"), "{csv}");
        // Ctrl-C is passed on and is not a duration end.
        let flags = Flags::default();
        let external = AtomicBool::new(true);
        std::thread::scope(|s| {
            let w = s.spawn(|| watch(&external, &flags, None, dir.path()));
            while !flags.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
            flags.finished.store(true, Ordering::Relaxed);
            w.join().unwrap();
        });
        assert!(!flags.duration_hit.load(Ordering::Relaxed));
    }
}
