//! The `robustream` binary: parses the command line, calls the library, maps errors to one line and an
//! exit code (0 ok, 1 error, 2 usage, 128 + the signal when interrupted: 130 Ctrl-C, 143 SIGTERM,
//! 129 SIGHUP; `compare`'s gate: 3 a rule fired, 4 a rule could not be checked,
//! docs/compare.md#exit-codes).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::Context;
use clap::Parser;
use robustream::app::cli::{
    ApplyArgs, BenchArgs, Cli, Command, CompareArgs, CompareFormat, Format, LabelsArgs, MergeArgs,
    PreviewArgs, ReportArgs, RunArgs,
};
use robustream::app::config::RunConfig;
use robustream::app::pipeline::EndReason;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Apply(args) => apply(args).map(|()| ExitCode::SUCCESS),
        Command::Preview(args) => preview(args).map(|()| ExitCode::SUCCESS),
        Command::Scenarios => {
            out(&robustream::scenario::catalog::render(
                &robustream::scenario::Catalog::builtin(),
            ));
            Ok(ExitCode::SUCCESS)
        }
        Command::Report(args) => report(args).map(|()| ExitCode::SUCCESS),
        Command::Merge(args) => merge(&args).map(|()| ExitCode::SUCCESS),
        Command::Compare(args) => compare(args),
        Command::Bench(args) => bench(args),
        Command::Labels(args) => labels(args).map(|()| ExitCode::SUCCESS),
        Command::Devices(args) => Ok(devices(&args)),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {}", message(&e));
        ExitCode::FAILURE
    })
}

/// The one line an error is reported in (after `error: `): the library's own line, or for the
/// typed errors that leave the fix to the binary, what, where and the fix.
fn message(e: &anyhow::Error) -> String {
    use robustream::app::run_lock::LockError;
    match e.downcast_ref::<LockError>() {
        Some(LockError::Busy { dir, pid }) => format!(
            "{}: another robustream run{} is writing this run directory; give this run another \
             --out (or `out` in the config), or wait until that run ends",
            dir.display(),
            pid.map(|p| format!(" (PID {p})")).unwrap_or_default()
        ),
        Some(LockError::Create { dir, source }) => format!(
            "{}: cannot create the run directory ({source}); give --out (or `out` in the config) \
             a folder this user can write",
            dir.display()
        ),
        _ => robustream::error_line(e.as_ref()),
    }
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // The arguments are the overrides (`config::Overrides`).
    let config = RunConfig::load(args.config.as_deref(), &args)?;
    let stop = Arc::new(AtomicBool::new(false));
    // The stop signal that arrived first (0: none; the live view's q/Esc/Ctrl-C stop as Ctrl-C).
    let signal = Arc::new(AtomicI32::new(0));
    watch_signals(stop.clone(), signal.clone())?;
    let status = || {
        robustream::app::watch::signal_status(match signal.load(Ordering::SeqCst) {
            0 => signal_hook::consts::SIGINT,
            s => s,
        })
    };
    let result = match robustream::app::run::run(&config, &stop, args.quiet) {
        Ok(r) => r,
        Err(e) => match e.downcast_ref::<robustream::app::run::StoppedOpening>() {
            // Stopped before anything ran: an interruption, not an error.
            Some(s) => {
                eprintln!(
                    "robustream: {}: stopped before the run began: opening the source had not \
                     returned {:.1} s after the stop (a FIFO nobody writes to, a stalled network \
                     mount?); nothing was evaluated",
                    s.path.display(),
                    robustream::app::pipeline::READ_GRACE.as_secs_f64()
                );
                return Ok(ExitCode::from(status()));
            }
            None => return Err(e),
        },
    };
    let dir = result.dir.display();
    let written = match result.summary_error {
        None => "records and summary",
        Some(_) => "records (no summary)",
    };
    out(&format!("{}\n{written}: {dir}\n", result.summary.table()));
    if let (Some(exporter), Some(linger)) = (result.exporter, config.report.linger) {
        eprintln!(
            "prometheus: serving the final figures at http://{}/metrics for {:.0} s more \
             (--linger); Ctrl-C ends it",
            exporter.addr(),
            linger.as_secs_f64()
        );
        exporter.linger(linger, &stop);
    }
    // Both failures in one line: how the run ended, and that its summary is missing too.
    let no_summary = result.summary_error.map(|e| {
        format!(
            "the summary was not written ({e}); `robustream report {dir}` rebuilds it from the \
             records"
        )
    });
    match (result.outcome.end, no_summary) {
        (EndReason::Failed(e), Some(s)) => Err(anyhow::anyhow!("{e}; {s}")),
        (EndReason::Failed(e), None) => Err(anyhow::anyhow!(e)),
        (_, Some(s)) => Err(anyhow::anyhow!(s)),
        (EndReason::Interrupted, None) => Ok(ExitCode::from(status())),
        (EndReason::Completed | EndReason::Limit | EndReason::Duration, None) => {
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Receives the stop signals (SIGINT, SIGTERM, SIGHUP: Ctrl-C, `docker stop`, Kubernetes, systemd,
/// a closed terminal) on a thread of its own. The first raises `stop` (reading stops, frames in
/// flight finish, the summary is written) and is recorded in `signal`; a second aborts at once with
/// 128 + its number.
fn watch_signals(stop: Arc<AtomicBool>, signal: Arc<AtomicI32>) -> anyhow::Result<()> {
    use robustream::app::watch::{STOP_SIGNALS, signal_name, signal_status};
    let mut signals = signal_hook::iterator::Signals::new(STOP_SIGNALS)
        .context("cannot install the handlers of SIGINT, SIGTERM and SIGHUP")?;
    std::thread::Builder::new()
        .name("rs-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let name = signal_name(sig);
                if stop.swap(true, Ordering::SeqCst) {
                    eprintln!(
                        "robustream: {name} again: aborting; the records written so far stay, \
                         no summary"
                    );
                    std::process::exit(i32::from(signal_status(sig)));
                }
                let _ = signal.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
                let again = match sig {
                    signal_hook::consts::SIGINT => "Ctrl-C again".to_string(),
                    _ => format!("{name} or Ctrl-C"),
                };
                eprintln!(
                    "robustream: {name} received: stopping; finishing frames in flight and \
                     writing the summary ({again} to abort)"
                );
            }
        })
        .context("cannot start the signal thread")?;
    Ok(())
}

/// `robustream bench`; `--fps` that does not fit `--mode` is a usage error (exit 2), found before
/// anything loads.
fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    use robustream::app::bench::{BenchRequest, Length};
    use std::time::Duration;
    let fps = match robustream::app::bench::settle_fps(args.mode.into(), args.fps.as_deref()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let secs = |s: f64, what: &str| {
        Duration::try_from_secs_f64(s)
            .map_err(|_| anyhow::anyhow!("{what} {s} is not a number of seconds ≥ 0"))
    };
    let length = match (args.iterations, args.duration) {
        (Some(n), _) => Length::Iterations(n),
        (None, d) => Length::Duration(secs(d.unwrap_or(10.0), "--duration")?),
    };
    let model = robustream::model::ModelDesc::load(&args.model)?;
    let (frame, frame_name) = robustream::app::bench::bench_frame(args.image.as_ref())?;
    let engine = robustream::engine::EngineConfig {
        provider: args.provider.into(),
        threads: args.threads,
        library: args.library,
        spin: args.spin,
        fp16: args.fp16,
        cudnn_search: args.cudnn_search.into(),
        ..Default::default()
    };
    let report = robustream::app::bench::run(&BenchRequest {
        model,
        engine,
        batch: args.batch,
        mode: args.mode.into(),
        fps,
        length,
        warmup: secs(args.warmup, "--warmup")?,
        frame,
        frame_name,
    })?;
    out(&report.render());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("{}: cannot write the JSON report", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    let several = |n: usize| n > 1;
    let written = robustream::app::apply::apply(&robustream::app::apply::ApplyRequest {
        scenario: args.scenario,
        seed: args.seed,
        mask: args.mask,
        boxes: args.boxes,
        annotation: args.annotation,
        frame_id: args.frame_id,
        model: args.model,
        input: args.input,
        output: args.output,
        jpeg_after_corruption: args.jpeg_after_corruption,
        backgrounds: args.backgrounds,
        class: args.class,
    })?;
    if several(written.len()) {
        let folder = written[0].parent().unwrap_or(std::path::Path::new("."));
        eprintln!("wrote {} images into {}", written.len(), folder.display());
    }
    Ok(())
}

fn preview(args: PreviewArgs) -> anyhow::Result<()> {
    let out_path = args.out.clone();
    let image = args.image.display().to_string();
    let s = robustream::app::preview::preview(&robustream::app::preview::PreviewRequest {
        image: args.image,
        scenarios: args.scenarios,
        out: args.out,
        model: args.model,
        stage: args.stage.into(),
        mask: args.mask,
        boxes: args.boxes,
        annotation: args.annotation,
        seed: args.seed,
        frame_id: args.frame_id,
        tile: args.tile,
        jpeg_after_corruption: args.jpeg_after_corruption,
        backgrounds: args.backgrounds,
        class: args.class,
    })?;
    for (key, e) in &s.failures {
        eprintln!(
            "warning: {key} cannot apply to {image}: {}; drawn as a grey tile",
            robustream::app::preview::short_reason(e)
        );
    }
    out(&format!(
        "wrote {}: {} variants in {} rows x {} columns, {}x{} px, {:.2} s\n",
        out_path.display(),
        s.variants,
        s.rows,
        s.columns,
        s.size.0,
        s.size.1,
        s.seconds
    ));
    Ok(())
}

/// `robustream merge`: the merged run directory, and one line on stderr saying what it holds.
fn merge(args: &MergeArgs) -> anyhow::Result<()> {
    let m = robustream::app::merge::merge(&args.run_dirs, &args.out, args.force)?;
    if !args.quiet {
        eprintln!(
            "merged {} shard{} ({} frames, {} records): {}",
            m.shards,
            if m.shards == 1 { "" } else { "s" },
            m.frames,
            m.records,
            args.out.display()
        );
    }
    Ok(())
}

fn report(args: ReportArgs) -> anyhow::Result<()> {
    // The table first: a bad one fails before the records are read.
    let baseline = match &args.ce_baseline {
        Some(path) => Some(
            robustream::metrics::imagenet_c::BaselineTable::read(path)
                .map_err(|e| anyhow::anyhow!("--ce-baseline: {e}"))?,
        ),
        None => None,
    };
    let (mut summary, metrics) = robustream::report::recompute_run_with_metrics(&args.run_dir)?;
    if let Some(table) = &baseline {
        summary.set_ce_baseline(table);
    }
    match args.format {
        Format::Md => out(&summary.to_markdown()),
        Format::Json => out(&(summary.to_json() + "\n")),
        Format::Csv => out(&summary.to_csv()),
        Format::Html => {
            let flips = robustream::report::flips::read(&args.run_dir)?;
            out(&robustream::report::run_html(
                &args.run_dir,
                &summary,
                &metrics,
                flips,
            ));
        }
    }
    Ok(())
}

/// `robustream compare`: the comparison on stdout (or --out), the gate's verdict on stderr, and the
/// gate's exit code. A malformed rule is a usage error (exit 2), found before anything is read.
fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    use robustream::report::compare::{Comparison, Input, rules};
    let rules = match rules::parse_rules(args.fail_on.iter().map(String::as_str)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let baseline = Input::load(&args.baseline, "baseline")?;
    let candidate = Input::load(&args.candidate, "candidate")?;
    let c = Comparison::new(&baseline, &candidate, args.alpha, &rules);
    let text = match args.format {
        CompareFormat::Table => c.to_table(),
        CompareFormat::Json => c.to_json() + "\n",
        CompareFormat::Md => c.to_markdown(),
        CompareFormat::Html => c.to_html(),
    };
    match &args.out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("{}: cannot write the comparison", path.display()))?,
        None => out(&text),
    }
    for line in c.gate_lines() {
        eprintln!("compare: {line}");
    }
    Ok(ExitCode::from(c.exit_code()))
}

/// Writes to stdout; a reader that went away (`robustream report run | head`) is not an error.
fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("error: cannot write to stdout: {e}");
    }
}

/// `robustream labels`: `index<TAB>name` per label.
fn labels(args: LabelsArgs) -> anyhow::Result<()> {
    let model = robustream::model::ModelDesc::load(&args.model)?;
    let space = match &args.class_map {
        Some(path) => robustream::classmap::ClassMap::load(path, model.output.classes)?
            .classes()
            .clone(),
        None => model.labels.clone(),
    };
    let want = args.find.as_deref().map(str::to_lowercase);
    let mut text = String::new();
    for (i, name) in space.names().iter().enumerate() {
        if want
            .as_ref()
            .is_none_or(|w| name.to_lowercase().contains(w))
        {
            text.push_str(&format!("{i}\t{name}\n"));
        }
    }
    out(&text);
    Ok(())
}

/// `robustream devices`: the V4L2 cameras (feature `camera`), then the GenICam ones (feature
/// `genicam`), as text or JSON (one array: V4L2 entries, then GenICam entries with
/// `"kind": "genicam"`). A build with one of the two lists that one; exit 2 only when it has
/// neither.
fn devices(args: &robustream::app::cli::DevicesArgs) -> ExitCode {
    use robustream::source::{camera, genicam};
    let (v4l2, cams) = match (camera::list_devices(), genicam::list_devices()) {
        (Err(_), Err(_)) => {
            eprintln!(
                "error: `robustream devices` lists V4L2 cameras (feature `camera`) and GenICam \
                 cameras (feature `genicam`), and this robustream was built with neither; rebuild \
                 with default features (`cargo build --release`, needs libclang-dev and \
                 libaravis-dev)"
            );
            return ExitCode::from(2);
        }
        (v4l2, cams) => (v4l2.ok(), cams.ok()),
    };
    if args.json {
        let mut all: Vec<serde_json::Value> = v4l2
            .iter()
            .flatten()
            .filter_map(|d| serde_json::to_value(d).ok())
            .collect();
        all.extend(cams.iter().flatten().filter_map(|d| {
            let mut v = serde_json::to_value(d).ok()?;
            v.as_object_mut()?.insert("kind".into(), "genicam".into());
            Some(v)
        }));
        let text = serde_json::to_string_pretty(&all).unwrap_or_else(|_| "[]".into());
        out(&(text + "\n"));
    } else {
        let mut text = v4l2.map(|l| camera::render_devices(&l)).unwrap_or_default();
        if let Some(cams) = cams {
            text += &genicam::render_devices(&cams);
        }
        out(&text);
    }
    ExitCode::SUCCESS
}
