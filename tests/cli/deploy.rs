//! deploy/: the Kubernetes Indexed Job, the Slurm job array and their merge steps start robustream
//! as docs/deploy.md says. The schedulers are not here, so each scheduler's side is played by the
//! test: its variables are set, and its signals sent, the way the scheduler's docs say it does.
//! A fake `robustream` (a shell script on PATH) records the arguments, environment and process id it
//! was started with, and the signals it gets; the end-to-end tests run the real binary on the demo
//! photos. `kubectl kustomize` and PyYAML check the manifests where they are installed (each test
//! says on stderr when it left that check out).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// The scheduler variables robustream reads for its shard: removed from every command started
/// here, so that a test run inside a Slurm job or a pod is not steered by its own scheduler.
const SHARD_VARS: [&str; 8] = [
    "ROBUSTREAM_SHARD",
    "ROBUSTREAM_SHARDS",
    "JOB_COMPLETION_INDEX",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_STEP",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MAX",
];

fn deploy(relative: &str) -> PathBuf {
    root().join("deploy").join(relative)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A folder with a fake `robustream` and a fake `scontrol` on a PATH of their own, and the folder
/// they report into.
struct Fakes {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    out: PathBuf,
}

/// The fake robustream: writes its arguments (one a line), environment and PID. With FAKE_BLOCK
/// set it then runs until a SIGTERM, writing one `TERM` line per SIGTERM it gets, and exits 143
/// (as robustream does) 300 ms after the first, so a second signal in that time is seen.
const FAKE_ROBUSTREAM: &str = r#"#!/bin/sh
printf '%s\n' "$@" > "$FAKE_OUT/argv"
env > "$FAKE_OUT/env"
echo $$ > "$FAKE_OUT/pid.part" && mv "$FAKE_OUT/pid.part" "$FAKE_OUT/pid"
if [ -n "$FAKE_BLOCK" ]; then
  stop=
  trap 'echo TERM >> "$FAKE_OUT/signals"; stop=1' TERM
  while [ -z "$stop" ]; do sleep 0.05; done
  sleep 0.3
  exit 143
fi
"#;

const FAKE_SCONTROL: &str = "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$FAKE_OUT/scontrol\"\n";

impl Fakes {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let out = dir.path().join("out");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        for (name, body) in [("robustream", FAKE_ROBUSTREAM), ("scontrol", FAKE_SCONTROL)] {
            let p = bin.join(name);
            std::fs::write(&p, body).unwrap();
            let mut perm = std::fs::metadata(&p).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
            std::fs::set_permissions(&p, perm).unwrap();
        }
        Self {
            _dir: dir,
            bin,
            out,
        }
    }

    /// A command with only the fakes, /usr/bin and /bin on PATH and none of the caller's
    /// environment but HOME.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("FAKE_OUT", &self.out);
        if let Some(home) = std::env::var_os("HOME") {
            c.env("HOME", home);
        }
        c
    }

    /// The arguments the fake robustream was started with.
    fn argv(&self) -> Vec<String> {
        read(&self.out.join("argv"))
            .lines()
            .map(String::from)
            .collect()
    }

    /// Its environment.
    fn env(&self) -> BTreeMap<String, String> {
        read(&self.out.join("env"))
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Its PID, once it has started (waits up to 20 s).
    fn pid(&self) -> u32 {
        let t = Instant::now();
        loop {
            if let Ok(p) = std::fs::read_to_string(self.out.join("pid")) {
                return p.trim().parse().unwrap();
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the fake never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The SIGTERMs it got.
    fn terms(&self) -> usize {
        std::fs::read_to_string(self.out.join("signals")).map_or(0, |s| s.lines().count())
    }

    /// What the fake scontrol was called with, if it was.
    fn scontrol(&self) -> Option<Vec<String>> {
        std::fs::read_to_string(self.out.join("scontrol"))
            .ok()
            .map(|s| s.lines().map(String::from).collect())
    }
}

fn kill(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Waits up to 20 s for `child` to end; its exit code.
fn exit_code(child: &mut Child) -> Option<i32> {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- Kubernetes ---------------------------------------------------------------------------------

/// What the Indexed Job's manifest says, read line by line (its layout is part of what is tested:
/// one `completions:` in the Job's spec, ROBUSTREAM_SHARDS's value on the line after its name, the
/// container's shell command as the one item of `args:`).
struct JobManifest {
    completions: u64,
    shards_env: u64,
    script: String,
}

fn job_manifest() -> JobManifest {
    let text = read(&deploy("kubernetes/job.yaml"));
    let lines: Vec<&str> = text.lines().collect();
    let value = |line: &str| -> String {
        let v = line.split_once(':').expect("key: value").1;
        let v = v.split(" #").next().unwrap().trim();
        v.trim_matches('"').to_string()
    };
    let completions: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("  completions:"))
        .collect();
    assert_eq!(completions.len(), 1, "one spec.completions in job.yaml");
    let completions = value(completions[0])
        .parse()
        .expect("completions is a number");
    let at = lines
        .iter()
        .position(|l| l.trim() == "- name: ROBUSTREAM_SHARDS   # MUST equal spec.completions above")
        .expect("job.yaml sets ROBUSTREAM_SHARDS (with the comment that ties it to completions)");
    assert!(
        lines[at + 1].trim().starts_with("value:"),
        "{}",
        lines[at + 1]
    );
    let shards_env = value(lines[at + 1])
        .parse()
        .expect("ROBUSTREAM_SHARDS is a number");
    let at = lines
        .iter()
        .position(|l| l.trim() == "args:")
        .expect("job.yaml has the container's args");
    let script = lines[at + 1]
        .trim()
        .strip_prefix("- ")
        .expect("args holds one item")
        .to_string();
    JobManifest {
        completions,
        shards_env,
        script,
    }
}

#[test]
fn the_indexed_jobs_shard_count_is_its_completions() {
    let job = job_manifest();
    assert!(job.completions > 1, "a sharded sweep");
    assert_eq!(
        job.shards_env, job.completions,
        "deploy/kubernetes/job.yaml: ROBUSTREAM_SHARDS must equal spec.completions"
    );
    let text = read(&deploy("kubernetes/job.yaml"));
    for needed in [
        "completionMode: Indexed",
        "backoffLimitPerIndex:",
        "restartPolicy: Never",
        "podReplacementPolicy: Failed",
        "terminationGracePeriodSeconds:",
        "- type: DisruptionTarget",
        "MUST BE THE SAME NUMBER",
    ] {
        assert!(text.contains(needed), "job.yaml lacks `{needed}`");
    }
}

/// The pod's command, run by `sh -c` as the container runtime does, with the variables the Job
/// controller and the manifest give the pod: robustream is exec'd (it is the process the kubelet
/// signals), with this index's run directory to resume, and the index and count in its environment.
#[test]
fn the_pod_command_execs_robustream_on_its_index_directory() {
    let job = job_manifest();
    let fakes = Fakes::new();
    let mut child = fakes
        .command("sh")
        .args(["-c", &job.script])
        .env("JOB_COMPLETION_INDEX", "5")
        .env("ROBUSTREAM_SHARDS", job.shards_env.to_string())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert_eq!(exit_code(&mut child), Some(0));
    assert_eq!(
        fakes.argv(),
        [
            "run",
            "--config",
            "/config/run.toml",
            "--resume",
            "/results/shard-5"
        ]
    );
    assert_eq!(
        fakes.pid(),
        pid,
        "the shell must exec robustream, or SIGTERM stops at the shell"
    );
    let env = fakes.env();
    assert_eq!(env["JOB_COMPLETION_INDEX"], "5");
    assert_eq!(env["ROBUSTREAM_SHARDS"], job.shards_env.to_string());
}

/// Whether `python3` with PyYAML is here (it turns YAML into JSON for the structural checks).
fn pyyaml() -> bool {
    Command::new("python3")
        .args(["-c", "import yaml"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The YAML documents of `text` as JSON, through PyYAML's safe loader.
fn yaml_documents(text: &str) -> Vec<Value> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump(list(yaml.safe_load_all(sys.stdin)), sys.stdout)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "not YAML");
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The manifests as Kubernetes reads them: `kubectl kustomize` renders deploy/kubernetes (the
/// ConfigMap from run.toml, the volume, the Job) where kubectl is installed, and PyYAML parses
/// them where it is, for checks on the objects' fields rather than the files' lines.
#[test]
fn the_manifests_are_the_objects_the_docs_describe() {
    let mut rendered = None;
    match Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    {
        Ok(o) if o.status.success() => {
            let o = Command::new("kubectl")
                .arg("kustomize")
                .arg(deploy("kubernetes"))
                .output()
                .unwrap();
            assert!(o.status.success(), "kubectl kustomize: {}", text(&o.stderr));
            let out = text(&o.stdout);
            for needed in ["kind: ConfigMap", "name: robustream-config", "kind: Job"] {
                assert!(
                    out.contains(needed),
                    "kustomize output lacks {needed}:\n{out}"
                );
            }
            rendered = Some(out);
        }
        _ => {
            eprintln!("kubectl is not installed: `kubectl kustomize deploy/kubernetes` not checked")
        }
    }
    if !pyyaml() {
        eprintln!("python3 with PyYAML is not installed: the manifests' fields not checked");
        return;
    }
    let rendered = rendered.unwrap_or_else(|| {
        ["pvc.yaml", "job.yaml"]
            .iter()
            .map(|f| read(&deploy(&format!("kubernetes/{f}"))))
            .collect::<Vec<_>>()
            .join("\n---\n")
    });
    let docs = yaml_documents(&rendered);
    let kind = |k: &str| {
        docs.iter()
            .find(|d| d["kind"] == k)
            .unwrap_or_else(|| panic!("no {k}"))
    };
    let job = kind("Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().unwrap();
    assert!(spec["parallelism"].as_u64().unwrap() <= completions);
    assert!(spec["backoffLimitPerIndex"].as_u64().unwrap() >= 1);
    assert_eq!(spec["podReplacementPolicy"], "Failed");
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    assert_eq!(rules[0]["action"], "Ignore");
    assert_eq!(rules[0]["onPodConditions"][0]["type"], "DisruptionTarget");
    assert_eq!(rules[1]["action"], "FailIndex");
    assert_eq!(rules[1]["onExitCodes"]["containerName"], "robustream");
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert!(pod["terminationGracePeriodSeconds"].as_u64().unwrap() >= 60);
    let c = &pod["containers"][0];
    assert_eq!(c["name"], "robustream");
    assert_eq!(c["command"], serde_json::json!(["/bin/sh", "-c"]));
    assert_eq!(c["args"], serde_json::json!([job_manifest().script]));
    let shards = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "ROBUSTREAM_SHARDS")
        .expect("ROBUSTREAM_SHARDS");
    assert_eq!(
        shards["value"],
        completions.to_string(),
        "ROBUSTREAM_SHARDS must equal spec.completions (and be a string)"
    );
    // The volumes the command's paths live on.
    let mounts: BTreeMap<&str, &str> = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap(),
                m["mountPath"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(mounts["config"], "/config");
    assert_eq!(mounts["results"], "/results");
    let volumes = pod["volumes"].as_array().unwrap();
    let volume = |name: &str| volumes.iter().find(|v| v["name"] == name).unwrap();
    assert_eq!(volume("config")["configMap"]["name"], "robustream-config");
    let claim = volume("results")["persistentVolumeClaim"]["claimName"].clone();
    let pvc = kind("PersistentVolumeClaim");
    assert_eq!(pvc["metadata"]["name"], claim);
    assert_eq!(
        pvc["spec"]["accessModes"],
        serde_json::json!(["ReadWriteMany"])
    );
    if let Some(cm) = docs.iter().find(|d| d["kind"] == "ConfigMap") {
        assert_eq!(
            cm["data"]["run.toml"].as_str().unwrap(),
            read(&deploy("kubernetes/run.toml")),
            "the ConfigMap holds run.toml as it is"
        );
    }

    let merge = &yaml_documents(&read(&deploy("kubernetes/merge-job.yaml")))[0];
    let pod = &merge["spec"]["template"]["spec"];
    assert_eq!(
        pod["containers"][0]["args"],
        serde_json::json!(["exec robustream merge /results/shard-* --out /results/merged"])
    );
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        claim
    );
}

// ---- Slurm --------------------------------------------------------------------------------------

/// `bash deploy/slurm/robustream-array.sh` as task `id` of an array of `count` (MIN 0, STEP 1),
/// writing into `results`, with the fakes on PATH.
fn array_task(fakes: &Fakes, results: &Path, id: u32, count: u32) -> Command {
    let mut c = fakes.command("bash");
    c.arg(deploy("slurm/robustream-array.sh"))
        .env("RESULTS", results)
        .env("CONFIG", "/site/run.toml")
        .env("SLURM_JOB_ID", "4242")
        .env("SLURM_ARRAY_JOB_ID", "4200")
        .env("SLURM_ARRAY_TASK_ID", id.to_string())
        .env("SLURM_ARRAY_TASK_MIN", "0")
        .env("SLURM_ARRAY_TASK_STEP", "1")
        .env("SLURM_ARRAY_TASK_COUNT", count.to_string());
    c
}

#[test]
fn the_sbatch_header_requeues_and_warns_before_the_time_limit() {
    let script = read(&deploy("slurm/robustream-array.sh"));
    for needed in [
        "#SBATCH --array=0-7\n",
        "#SBATCH --requeue\n",
        "#SBATCH --signal=B:USR1@300\n",
        "#SBATCH --open-mode=append\n",
        "#SBATCH --output=robustream-%A_%a.out\n",
    ] {
        assert!(
            script.contains(needed),
            "robustream-array.sh lacks {needed}"
        );
    }
}

/// A task passes its own run directory (by task id) to --resume, keeps the array's variables, and
/// drops a ROBUSTREAM_SHARD that sbatch carried over from the submitting shell (it would come
/// first and give every task the same shard). Extra script arguments go to `robustream run`.
#[test]
fn an_array_task_runs_its_shard_into_its_directory() {
    let fakes = Fakes::new();
    let results = tempfile::tempdir().unwrap();
    let o = array_task(&fakes, results.path(), 3, 8)
        .args(["--limit", "5"])
        .env("ROBUSTREAM_SHARD", "0/2")
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let dir = results.path().join("shard-3");
    assert_eq!(
        fakes.argv(),
        [
            "run",
            "--config",
            "/site/run.toml",
            "--resume",
            path(&dir),
            "--limit",
            "5"
        ]
    );
    let env = fakes.env();
    assert_eq!(env["SLURM_ARRAY_TASK_ID"], "3");
    assert_eq!(env["SLURM_ARRAY_TASK_COUNT"], "8");
    for gone in ["ROBUSTREAM_SHARD", "JOB_COMPLETION_INDEX"] {
        assert!(!env.contains_key(gone), "{gone} reached robustream");
    }
    assert_eq!(fakes.scontrol(), None, "a finished task is not requeued");
}

#[test]
fn an_array_task_needs_its_results_folder() {
    let fakes = Fakes::new();
    let o = array_task(&fakes, Path::new("/unused"), 0, 2)
        .env_remove("RESULTS")
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(
        text(&o.stderr).contains("set RESULTS"),
        "{}",
        text(&o.stderr)
    );
    assert!(!fakes.out.join("argv").exists(), "robustream was started");
}

/// `--signal=B:USR1@300`: Slurm's warning reaches the batch shell only. The script stops robustream
/// with one SIGTERM (its clean stop), waits for it, and requeues the task, which then resumes.
#[test]
fn the_time_limit_warning_stops_the_run_and_requeues_the_task() {
    let fakes = Fakes::new();
    let results = tempfile::tempdir().unwrap();
    let mut task = array_task(&fakes, results.path(), 1, 4)
        .env("FAKE_BLOCK", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = fakes.pid();
    kill("USR1", task.id());
    assert_eq!(exit_code(&mut task), Some(0), "the requeue's status");
    assert_eq!(fakes.terms(), 1, "one SIGTERM: a second aborts robustream");
    assert_eq!(
        fakes.scontrol(),
        Some(vec!["requeue".to_string(), "4242".to_string()])
    );
}

/// scancel (and the time limit itself, and pre-emption) signal every process of the job: robustream
/// gets its own SIGTERM, so the script passes none on, does not requeue, and waits for robustream
/// to write its files before the task ends with robustream's status.
#[test]
fn a_cancelled_task_waits_for_robustream_and_is_not_requeued() {
    let fakes = Fakes::new();
    let results = tempfile::tempdir().unwrap();
    let mut task = array_task(&fakes, results.path(), 0, 4)
        .env("FAKE_BLOCK", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let robustream = fakes.pid();
    kill("TERM", task.id());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        task.try_wait().unwrap().is_none(),
        "the task ended before robustream"
    );
    assert_eq!(fakes.terms(), 0, "the script passed SIGTERM on");
    kill("TERM", robustream);
    assert_eq!(exit_code(&mut task), Some(143));
    assert_eq!(fakes.terms(), 1);
    assert_eq!(fakes.scontrol(), None);
}

#[test]
fn the_merge_script_is_given_every_shard_directory() {
    let fakes = Fakes::new();
    let results = tempfile::tempdir().unwrap();
    let merge = || {
        fakes
            .command("bash")
            .arg(deploy("slurm/merge.sh"))
            .env("RESULTS", results.path())
            .output()
            .unwrap()
    };
    let o = merge();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no shard-* run in"),
        "{}",
        text(&o.stderr)
    );

    for id in [5, 1, 3] {
        std::fs::create_dir(results.path().join(format!("shard-{id}"))).unwrap();
    }
    let o = merge();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = |p: &str| results.path().join(p).display().to_string();
    assert_eq!(
        fakes.argv(),
        [
            "merge".to_string(),
            r("shard-1"),
            r("shard-3"),
            r("shard-5"),
            "--out".to_string(),
            r("merged")
        ]
    );
}

// ---- end to end: the real binary ----------------------------------------------------------------

/// A run config on the demo photos with the clean scenario only.
fn clean_config(dir: &Path) -> PathBuf {
    let p = dir.join("run.toml");
    std::fs::write(
        &p,
        format!(
            "model = {:?}\nscenarios = [\"clean\"]\n[source]\npath = {:?}\n",
            model(),
            photo("demo.csv")
        ),
    )
    .unwrap();
    p
}

/// The frame ids and positions of a run's records.
fn frames(dir: &Path) -> BTreeMap<String, u64> {
    records(dir)
        .iter()
        .map(|r| {
            (
                r["frame"].as_str().unwrap().to_string(),
                r["seq"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The Slurm script with the real binary, as the three tasks of `--array=1-5:2` (task ids 1, 3, 5:
/// MIN 1, STEP 2, COUNT 3): each task's directory is named by its task id and holds shard
/// (id − 1) / 2 of 3; together they hold every frame of the whole run once, at the whole run's
/// positions; a task run again (a requeue after it finished) resumes and keeps its records.
#[test]
fn a_stepped_slurm_array_splits_the_demo_into_disjoint_shards() {
    let d = tempfile::tempdir().unwrap();
    let config = clean_config(d.path());
    let results = d.path().join("results");
    let task = |id: u32| {
        let mut c = Command::new("bash");
        c.arg(deploy("slurm/robustream-array.sh"))
            .env("RESULTS", &results)
            .env("CONFIG", &config)
            .env("ROBUSTREAM", env!("CARGO_BIN_EXE_robustream"))
            .env("ORT_DYLIB_PATH", ort_lib())
            .env("SLURM_JOB_ID", format!("70{id}"))
            .env("SLURM_ARRAY_TASK_ID", id.to_string())
            .env("SLURM_ARRAY_TASK_MIN", "1")
            .env("SLURM_ARRAY_TASK_STEP", "2")
            .env("SLURM_ARRAY_TASK_COUNT", "3");
        for v in [
            "ROBUSTREAM_SHARD",
            "ROBUSTREAM_SHARDS",
            "JOB_COMPLETION_INDEX",
        ] {
            c.env_remove(v);
        }
        c
    };
    let mut whole_cmd = robustream();
    for v in SHARD_VARS {
        whole_cmd.env_remove(v);
    }
    let whole = d.path().join("whole");
    let o = run(whole_cmd
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(&whole));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let whole = frames(&whole);
    assert_eq!(whole.len(), 9, "the nine demo photos");

    let mut union = BTreeMap::new();
    for (id, index) in [(1, 0), (3, 1), (5, 2)] {
        let o = run(&mut task(id));
        assert!(o.status.success(), "task {id}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("shard: {index}/3 (from SLURM_ARRAY_TASK_ID)")),
            "task {id}: {err}"
        );
        let dir = results.join(format!("shard-{id}"));
        let s = summary(&dir);
        assert_eq!(
            s["run"]["shard"],
            serde_json::json!({"index": index, "count": 3, "from": "SLURM_ARRAY_TASK_ID"}),
            "task {id}"
        );
        assert_eq!(s["run"]["end"], "completed");
        for (frame, seq) in frames(&dir) {
            assert!(union.insert(frame.clone(), seq).is_none(), "{frame} twice");
        }
    }
    assert_eq!(union, whole, "the shards together are the whole run");

    // Task 3 again (a requeue after it finished): it resumes its run, which keeps its records
    // (the last frame is evaluated again: only its timings may differ).
    let without_timings = |dir: &Path| -> Vec<Value> {
        let mut r = records(dir);
        for rec in &mut r {
            rec.as_object_mut().unwrap().remove("ms");
        }
        r
    };
    let before = without_timings(&results.join("shard-3"));
    let o = run(&mut task(3));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(without_timings(&results.join("shard-3")), before);
    assert_eq!(summary(&results.join("shard-3"))["run"]["end"], "completed");
}

/// deploy/kubernetes/run.toml (its image paths pointed at the checkout's assets) as pod 1 of a
/// 3-completion Indexed Job sees it: the shard comes from JOB_COMPLETION_INDEX and ROBUSTREAM_SHARDS.
/// Also a Slurm task 1 of 3 on the same config, without MIN and STEP (Slurm's defaults).
#[test]
fn the_kubernetes_config_runs_as_an_indexed_pod() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("run.toml");
    let assets = assets().canonicalize().unwrap();
    let toml = read(&deploy("kubernetes/run.toml"));
    assert!(
        toml.contains("/opt/robustream/assets/"),
        "the image's asset paths"
    );
    std::fs::write(
        &config,
        toml.replace("/opt/robustream/assets", path(&assets)),
    )
    .unwrap();
    for (vars, from) in [
        (
            [("JOB_COMPLETION_INDEX", "1"), ("ROBUSTREAM_SHARDS", "3")],
            "JOB_COMPLETION_INDEX",
        ),
        (
            [
                ("SLURM_ARRAY_TASK_ID", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ],
            "SLURM_ARRAY_TASK_ID",
        ),
    ] {
        let dir = d.path().join(from);
        let mut c = robustream();
        for v in SHARD_VARS {
            c.env_remove(v);
        }
        let o = run(c
            .envs(vars)
            .args(["run", "--quiet", "--config"])
            .arg(&config)
            .arg("--resume")
            .arg(&dir));
        assert!(o.status.success(), "{from}: {}", text(&o.stderr));
        let s = summary(&dir);
        assert_eq!(
            s["run"]["shard"],
            serde_json::json!({"index": 1, "count": 3, "from": from})
        );
        assert_eq!(s["run"]["end"], "completed");
        assert!(
            records(&dir).iter().all(|r| r["seq"].as_u64().is_some()),
            "records carry seq"
        );
    }
}
