//! The `robustream` binary: parses the command line, calls the library, maps errors to one line and an
//! exit code (0 ok, 1 error, 2 usage, 130 interrupted).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use clap::Parser;
use robustream::cli::{
    ApplyArgs, BenchArgs, Cli, Command, Format, LabelsArgs, PreviewArgs, ReportArgs, RunArgs,
};
use robustream::config::{Overrides, RunConfig};
use robustream::pipeline::EndReason;

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
        Command::Bench(args) => bench(args).map(|()| ExitCode::SUCCESS),
        Command::Labels(args) => labels(args).map(|()| ExitCode::SUCCESS),
        Command::Devices(args) => Ok(devices(&args)),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
        ExitCode::FAILURE
    })
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let overrides = Overrides {
        model: args.model,
        source: args.source,
        source_kind: args.source_kind.map(Into::into),
        clean: args.clean,
        class_map: args.class_map,
        scenarios: args.scenarios,
        out: args.out,
        seed: args.seed,
        limit: args.limit,
        strict: args.strict,
        workers: args.workers,
        threads: args.threads,
        max_batch: args.batch,
        challenge: args.challenge,
        saliency: args.saliency,
        saliency_maps: args.saliency_maps,
        prometheus: args.prometheus,
        duration: args.duration,
        label: args.label,
        labels: args.labels,
        view: args.view,
    };
    let mut config = RunConfig::load(args.config.as_deref(), &overrides)?;
    if args.realtime {
        robustream::source::video::set_realtime(&mut config.source).map_err(anyhow::Error::msg)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // First Ctrl-C: stop reading, finish frames in flight, write the summary. Second: exit now.
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("robustream: stopping; finishing frames in flight and writing the summary (Ctrl-C again to abort)");
    })
    .context("cannot install the Ctrl-C handler")?;
    let result = robustream::run::run(&config, &stop, args.quiet)?;
    let dir = result.dir.display();
    let written = match result.summary_error {
        None => "records and summary",
        Some(_) => "records (no summary)",
    };
    out(&format!("{}\n{written}: {dir}\n", result.summary.table()));
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
        (EndReason::Interrupted, None) => Ok(ExitCode::from(130)),
        (EndReason::Completed | EndReason::Limit | EndReason::Duration, None) => {
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn bench(args: BenchArgs) -> anyhow::Result<()> {
    use robustream::bench::{BenchRequest, Length};
    use std::time::Duration;
    let secs = |s: f64, what: &str| {
        Duration::try_from_secs_f64(s)
            .map_err(|_| anyhow::anyhow!("{what} {s} is not a number of seconds ≥ 0"))
    };
    let length = match (args.iterations, args.duration) {
        (Some(n), _) => Length::Iterations(n),
        (None, d) => Length::Duration(secs(d.unwrap_or(10.0), "--duration")?),
    };
    let model = robustream::engine::ModelDesc::load(&args.model)?;
    let (frame, frame_name) = robustream::bench::bench_frame(args.image.as_ref())?;
    let engine = robustream::engine::EngineConfig {
        provider: args.provider.into(),
        threads: args.threads,
        library: args.library,
        spin: args.spin,
        fp16: args.fp16,
        cudnn_search: args.cudnn_search,
        ..Default::default()
    };
    let report = robustream::bench::run(&BenchRequest {
        model,
        engine,
        batch: args.batch,
        mode: args.mode,
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
    Ok(())
}

fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    robustream::apply::apply(&robustream::apply::ApplyRequest {
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
    })
}

fn preview(args: PreviewArgs) -> anyhow::Result<()> {
    let out_path = args.out.clone();
    let image = args.image.display().to_string();
    let s = robustream::preview::preview(&robustream::preview::PreviewRequest {
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
            robustream::preview::short_reason(e)
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

fn report(args: ReportArgs) -> anyhow::Result<()> {
    // The table first: a bad one fails before the records are read.
    let baseline = match &args.ce_baseline {
        Some(path) => Some(
            robustream::metrics::imagenet_c::BaselineTable::read(path)
                .map_err(|e| anyhow::anyhow!("--ce-baseline: {e}"))?,
        ),
        None => None,
    };
    let mut summary = robustream::report::recompute_run(&args.run_dir)?;
    if let Some(table) = &baseline {
        summary.set_ce_baseline(table);
    }
    match args.format {
        Format::Md => out(&summary.to_markdown()),
        Format::Json => out(&(summary.to_json() + "\n")),
        Format::Csv => out(&summary.to_csv()),
    }
    Ok(())
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
    let model = robustream::engine::ModelDesc::load(&args.model)?;
    let space = match &args.class_map {
        Some(path) => robustream::metrics::classmap::ClassMap::load(path, model.output.classes)?
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

/// `robustream devices`: the V4L2 cameras as text or JSON; exit 2 without the `camera` feature.
fn devices(args: &robustream::cli::DevicesArgs) -> ExitCode {
    use robustream::source::camera;
    match camera::list_devices() {
        Ok(list) if args.json => {
            let text = serde_json::to_string_pretty(&list).unwrap_or_else(|_| "[]".into());
            out(&(text + "\n"));
            ExitCode::SUCCESS
        }
        Ok(list) => {
            out(&camera::render_devices(&list));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
