#!/usr/bin/env python3
"""Writes reference outputs of the real ImageNet-C implementation for the corruption port's tests.

The reference is bethgelab's `imagecorruptions==1.1.2` (the PyPI wheel, run unmodified). It only runs all 19
corruptions on an old stack, so it lives in a throwaway Python 3.10 venv OUTSIDE the repository (not
committed):

    /root/.pyenv/versions/3.10.13/bin/python -m venv ~/.cache/robustream/venv-ic310
    ~/.cache/robustream/venv-ic310/bin/pip install "setuptools<81" numpy==1.26.4 scipy==1.11.4 \\
        scikit-image==0.19.3 opencv-python-headless==4.8.1.78 Pillow==10.1.0
    ~/.cache/robustream/venv-ic310/bin/pip install --no-deps imagecorruptions==1.1.2

(`--no-deps` because the package asks for `opencv-python`, the GUI build that needs libGL; the headless build
is the same library. `setuptools<81` keeps `pkg_resources`, which the package imports for its frost files.
numpy 1.26 keeps `np.float_`; scikit-image 0.19 still takes `multichannel=True`.)

(`bash scripts/peer_venvs.sh ic310` makes exactly this venv.) Then, from the repository root:

    ~/.cache/robustream/venv-ic310/bin/python scripts/make_corruption_fixtures.py
    ~/.cache/robustream/venv-ic310/bin/python scripts/make_corruption_fixtures.py --only-coarse

    ~/.cache/robustream/venv-ic310/bin/python scripts/make_corruption_fixtures.py --only-snow [--snow-photo NAME]

(the second form rewrites only photo224_coarse_stats.json, motion_dot.json and their README section; the third
only the snow files below and theirs).

It writes, under `tests/fixtures/corruptions/`:

    photo224.png               the 224x224 model view of assets/photos/coffee.png, made as ImageNet-C made its
                               inputs: PIL Resize(256) (short side 256, long side int(256*long/short),
                               BILINEAR), then centre crop 224 with top = int(round((H-224)/2)), left likewise
    small.png                  a 64x48 (WxH) crop of the original coffee.png (spoon, saucer rim, highlights)
    photo224/<name>_<sev>.png  the reference output (np.uint8 of the returned array, as `corrupt()` does) of
                               each DETERMINISTIC corruption, severities 1..5
    small/<name>_<sev>.png     the same for small.png
    photo224_stats.json        statistics of every corruption x severity on photo224.png (random ones over
                               several numpy seeds; see `stats()` for the definitions)
    photo224_coarse_stats.json the coarse-random corruptions (COARSE: one plasma map / texture + crop /
                               liquid layer / flake field per image) over many seeds (--coarse-runs, 512):
                               the distribution across runs of per-run statistics (`run_stats()`): mean,
                               sd, kurtosis and quantiles per channel
    heldout224.png             a held-out photo (assets/photos/rocket.jpg, or --snow-photo) prepared like photo224.png
    heldout224_snow_stats.json snow alone on heldout224.png in the format of photo224_coarse_stats.json (issue 14)
    snow_seeded/photo224_seed<k>_<sev>.png  snow on photo224.png after np.random.seed(k) (SNOW_SEEDS): byte-exact
                               targets for a port that redraws numpy's field and angle
    motion_dot.json            the reference motion-blur kernel (`_motion_blur`) on a single white dot at
                               fixed angles: the lit pixels (direction and weights of the streak)
    README.md                  versions (pip freeze), command, input preparation, deterministic list, timings

The deterministic list is checked, not assumed: every corruption is run twice with different numpy seeds
(and a different impulse_noise seed); identical outputs = deterministic. The script stops if that disagrees
with DETERMINISTIC below.

Randomness: everything uses numpy's global RNG (`np.random.seed(s)` before each call) except impulse_noise,
which calls `skimage.util.random_noise` without a seed (scikit-image's own `default_rng()`, unseeded). To make
the statistics reproducible the script wraps that one function so that it receives `seed=s`; the draw and the
distribution are unchanged.

Timings (single thread: OMP/MKL/OpenBLAS threads = 1, `cv2.setNumThreads(1)`), through `corrupt()` on
photo224.png: seconds per call per corruption at severity 3 (median of several calls), and the full
19 x 5 sweep on one frame (median of 3 sweeps). Wall-clock (`perf_counter`) and CPU time (`process_time`).
`--no-timing` skips them (the README then says so).
"""

import os

# Single thread everywhere, before numpy / OpenCV are imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import functools
import json
import platform
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from PIL import Image

warnings.filterwarnings("ignore", category=FutureWarning)      # skimage: multichannel= is deprecated
warnings.filterwarnings("ignore", category=DeprecationWarning)  # numpy 1.24+ aliases inside skimage 0.19

import cv2  # noqa: E402
import skimage  # noqa: E402
import skimage.util  # noqa: E402
import scipy  # noqa: E402
import imagecorruptions  # noqa: E402
from imagecorruptions import corrupt, get_corruption_names  # noqa: E402

cv2.setNumThreads(1)

ROOT = Path(__file__).resolve().parent.parent
PHOTO = ROOT / "assets" / "photos" / "coffee.png"
OUT = ROOT / "tests" / "fixtures" / "corruptions"

# ImageNet-C index order (docs/imagenet-c.md#corruption-order-and-groups).
NAMES = [
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur",
    "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate",
    "jpeg_compression", "speckle_noise", "gaussian_blur", "spatter", "saturate",
]
# No random draw at all given the input (read from imagecorruptions 1.1.2's corruptions.py; checked at run time).
DETERMINISTIC = ["defocus_blur", "zoom_blur", "brightness", "contrast", "pixelate", "jpeg_compression",
                 "gaussian_blur", "saturate"]
SEVERITIES = [1, 2, 3, 4, 5]
# One random draw sets the change of the whole image (docs/imagenet-c.md#randomness-and-external-inputs): their
# per-run statistics vary a lot between runs, so they get many seeds and distribution statistics
# (photo224_coarse_stats.json).
COARSE = ["snow", "frost", "fog", "spatter"]
QUANTILES = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]
# Also run on the mirrored photo with the same seed (the same texture and crop): `pair_slope` isolates the
# image weight a from the texture, which alone varies a lot between runs (frost 3 and 4 differ only in a).
PAIRED = ["frost"]
# motion_dot.json: (severity, radius, sigma) of imagecorruptions' motion_blur table, and the angles.
MOTION_DOT = {"size": 81, "dot": 40, "severities": [(1, 10, 3), (5, 20, 15)],
              "angles": [-44.9, -30.0, -12.5, 0.0, 7.3, 30.0, 44.9]}

# Snow (issue 14): the held-out photo for heldout224.png and the numpy seeds of snow_seeded/.
SNOW_PHOTO = "rocket.jpg"
SNOW_SEEDS = [0]

SMALL_BOX = (320, 236, 384, 284)  # (left, top, right, bottom) in coffee.png: 64 x 48

EXPECTED = {"imagecorruptions": "1.1.2", "numpy": "1.26.", "scikit-image": "0.19.3"}


# ---------------------------------------------------------------------------------------------------------
# inputs

def imagenet_view(img: Image.Image) -> Image.Image:
    """torchvision Resize(256) + CenterCrop(224) as ImageNet-C's make_imagenet_c.py applied them."""
    w, h = img.size
    if w <= h:
        ow, oh = 256, int(256 * h / w)
    else:
        ow, oh = int(256 * w / h), 256
    img = img.resize((ow, oh), Image.BILINEAR)
    top = int(round((oh - 224) / 2.0))
    left = int(round((ow - 224) / 2.0))
    return img.crop((left, top, left + 224, top + 224))


def save_png(arr: np.ndarray, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, optimize=True, compress_level=9)


# ---------------------------------------------------------------------------------------------------------
# running the reference

_ORIG_RANDOM_NOISE = skimage.util.random_noise


def run(x: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    """One call of the reference `corrupt()` with numpy's global RNG (and impulse_noise's generator) seeded."""
    np.random.seed(seed)
    skimage.util.random_noise = functools.partial(_ORIG_RANDOM_NOISE, seed=seed)
    try:
        out = corrupt(x, severity=severity, corruption_name=name)
    finally:
        skimage.util.random_noise = _ORIG_RANDOM_NOISE
    assert out.dtype == np.uint8 and out.shape == x.shape, (name, severity, out.dtype, out.shape)
    return out


def check_deterministic(x: np.ndarray) -> list:
    found = []
    for name in NAMES:
        same = all(np.array_equal(run(x, name, s, 1), run(x, name, s, 2)) for s in SEVERITIES)
        if same:
            found.append(name)
    if sorted(found) != sorted(DETERMINISTIC):
        sys.exit(f"deterministic corruptions found {sorted(found)} != expected {sorted(DETERMINISTIC)}")
    return found


# ---------------------------------------------------------------------------------------------------------
# statistics

def stats(x: np.ndarray, outs: list, seeds: list) -> dict:
    """Statistics of the outputs `outs` (u8, H x W x 3) of one corruption/severity on input `x`.

    Over all pixels of all runs together (population std, ddof = 0), d = output - input as float:
      diff_mean[c], diff_std[c]      mean and std of d per channel (R, G, B)
      abs_diff_mean                  mean |d| over pixels, channels and runs; abs_diff_mean_per_channel[c]
      changed_fraction               fraction of pixels (positions) with at least one channel changed
      changed_fraction_per_channel   fraction of elements changed, per channel
      out_mean[c], out_std[c]        mean and std of the output per channel
    Spread between runs (population std over the runs of each run's own value; 0 for one run):
      run_std.diff_mean[c], run_std.abs_diff_mean, run_std.changed_fraction, run_std.out_mean[c]
    """
    xf = x.astype(np.float64)
    o = np.stack(outs).astype(np.float64)  # runs x H x W x 3
    d = o - xf[None]
    ad = np.abs(d)
    changed = d != 0
    per_run_diff_mean = d.mean(axis=(1, 2))            # runs x 3
    per_run_abs = ad.mean(axis=(1, 2, 3))              # runs
    per_run_changed = changed.any(axis=3).mean(axis=(1, 2))
    per_run_out_mean = o.mean(axis=(1, 2))
    return {
        "runs": len(outs),
        "seeds": seeds,
        "diff_mean": d.mean(axis=(0, 1, 2)).tolist(),
        "diff_std": d.std(axis=(0, 1, 2)).tolist(),
        "abs_diff_mean": float(ad.mean()),
        "abs_diff_mean_per_channel": ad.mean(axis=(0, 1, 2)).tolist(),
        "changed_fraction": float(changed.any(axis=3).mean()),
        "changed_fraction_per_channel": changed.mean(axis=(0, 1, 2)).tolist(),
        "out_mean": o.mean(axis=(0, 1, 2)).tolist(),
        "out_std": o.std(axis=(0, 1, 2)).tolist(),
        "run_std": {
            "diff_mean": per_run_diff_mean.std(axis=0).tolist(),
            "abs_diff_mean": float(per_run_abs.std()),
            "changed_fraction": float(per_run_changed.std()),
            "out_mean": per_run_out_mean.std(axis=0).tolist(),
        },
    }


def run_stats(x: np.ndarray, o: np.ndarray) -> dict:
    """Per-run statistics of one output `o` (u8, H x W x 3) on input `x`, per channel c (floats, d = o - x):

      mean[c]   mean of d
      sd[c]     standard deviation of d over the pixels (ddof 0)
      slope[c]  least-squares slope of o on x: cov(o, x) / var(x) (ddof 0) -- the image's weight in the
                output (frost's a, fog's m/(m+c0), snow's blend, mud's 1 - B)
      rough[c]  mean |difference| of d between horizontally and vertically adjacent pixels, all pairs
                pooled -- the spatial frequency of the change (fog's decay, snow's zoom, spatter's blur)
    tests/scenarios/imagenet_c_fidelity.rs computes the same on robustream's outputs.
    """
    xf = x.astype(np.float64)
    of = o.astype(np.float64)
    d = of - xf
    xc = xf - xf.mean(axis=(0, 1))
    oc = of - of.mean(axis=(0, 1))
    slope = (xc * oc).mean(axis=(0, 1)) / (xc * xc).mean(axis=(0, 1))
    h_sum = np.abs(np.diff(d, axis=1)).sum(axis=(0, 1))
    v_sum = np.abs(np.diff(d, axis=0)).sum(axis=(0, 1))
    pairs = d.shape[0] * (d.shape[1] - 1) + (d.shape[0] - 1) * d.shape[1]
    return {"mean": d.mean(axis=(0, 1)), "sd": d.std(axis=(0, 1)), "slope": slope,
            "rough": (h_sum + v_sum) / pairs}


def pair_slope(x: np.ndarray, o: np.ndarray, x2: np.ndarray, o2: np.ndarray) -> np.ndarray:
    """Per channel: least-squares slope (cov / var, ddof 0) of o - o2 on x - x2 over the elements where neither
    output is clipped (0 < o < 255 and 0 < o2 < 255), for two inputs corrupted with the same seed (x2 = x
    mirrored left-right, so the same texture and crop): the weight of the image in the output with the
    random layer cancelled (frost: exactly a, up to truncation)."""
    out = []
    for c in range(3):
        keep = (o[..., c] > 0) & (o[..., c] < 255) & (o2[..., c] > 0) & (o2[..., c] < 255)
        assert keep.sum() >= 1000, keep.sum()
        dx = x[..., c][keep].astype(np.float64) - x2[..., c][keep].astype(np.float64)
        do = o[..., c][keep].astype(np.float64) - o2[..., c][keep].astype(np.float64)
        dxc, doc = dx - dx.mean(), do - do.mean()
        out.append((dxc * doc).mean() / (dxc * dxc).mean())
    return np.array(out)


def distribution(values: np.ndarray) -> dict:
    """Across-run summary of runs x 3 values: mean, sd (ddof 1), kurtosis (m4/m2^2, not excess) and the
    QUANTILES (numpy's default linear interpolation), each per channel."""
    m = values.mean(axis=0)
    c = values - m
    m2 = (c ** 2).mean(axis=0)
    m4 = (c ** 4).mean(axis=0)
    kurt = np.where(m2 > 0, m4 / np.where(m2 > 0, m2 * m2, 1), 3.0)
    r = lambda a: [float(f"{v:.6g}") for v in a]  # noqa: E731
    return {"mean": r(m), "sd": r(values.std(axis=0, ddof=1)), "kurtosis": r(kurt),
            "quantiles": [r(q) for q in np.quantile(values, QUANTILES, axis=0).T]}


def coarse_stats(x: np.ndarray, runs: int, versions_: dict, names=COARSE, input_name="photo224.png") -> dict:
    out = {
        "generator": "scripts/make_corruption_fixtures.py",
        "reference": f"imagecorruptions {versions_['imagecorruptions']}",
        "input": input_name,
        "runs": runs,
        "seeds": f"numpy seeds 0..{runs - 1}",
        "channel_order": "RGB",
        "statistics": "per run (run_stats in the script): mean, sd, slope, rough of d = output - input per "
                      "channel, and for PAIRED corruptions pair_slope (the same seed on the photo mirrored "
                      "left-right); then across runs per channel: mean, sd (ddof 1), kurtosis, quantiles",
        "paired": PAIRED,
        "quantile_levels": QUANTILES,
        "corruptions": {},
    }
    mirrored = np.ascontiguousarray(x[:, ::-1])
    for name in names:
        t0 = time.perf_counter()
        sevs = []
        for s in SEVERITIES:
            per = []
            for seed in range(runs):
                o = run(x, name, s, seed)
                st = run_stats(x, o)
                if name in PAIRED:
                    st["pair_slope"] = pair_slope(x, o, mirrored, run(mirrored, name, s, seed))
                per.append(st)
            sevs.append({"severity": s, **{k: distribution(np.stack([p[k] for p in per])) for k in per[0]}})
        out["corruptions"][name] = sevs
        print(f"  coarse {name}: {runs} runs x 5 severities, {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def motion_dot() -> dict:
    """imagecorruptions' motion-blur kernel applied to one white dot (all channels 255) at fixed angles."""
    from imagecorruptions.corruptions import _motion_blur
    n, c = MOTION_DOT["size"], MOTION_DOT["dot"]
    dot = np.zeros((n, n, 3), np.uint8)
    dot[c, c] = 255
    cases = []
    for sev, radius, sigma in MOTION_DOT["severities"]:
        for angle in MOTION_DOT["angles"]:
            out = np.uint8(np.clip(_motion_blur(dot, radius=radius, sigma=sigma, angle=angle), 0, 255))
            assert (out[..., 0] == out[..., 1]).all() and (out[..., 0] == out[..., 2]).all()
            ys, xs = np.nonzero(out[..., 0])
            cases.append({"severity": sev, "radius": radius, "sigma": sigma, "angle": angle,
                          "pixels": [[int(y), int(x), int(out[y, x, 0])] for y, x in zip(ys, xs)]})
    return {"generator": "scripts/make_corruption_fixtures.py",
            "what": "np.uint8(clip(imagecorruptions.corruptions._motion_blur(dot, radius, sigma, angle), 0, 255)) "
                    "for a size x size black RGB image with one white pixel at (dot, dot); pixels = [row, "
                    "column, value] of every non-zero output pixel (channels are equal)",
            "size": n, "dot": c, "cases": cases}


COARSE_BEGIN, COARSE_END = "<!-- coarse:begin -->", "<!-- coarse:end -->"


def coarse_readme(runs: int) -> list:
    return [
        COARSE_BEGIN,
        "## Many-seed statistics of the coarse corruptions: `photo224_coarse_stats.json`",
        "",
        f"{', '.join(COARSE)}: one random draw (flake field, texture + crop, plasma map, liquid layer) sets the",
        f"change of the whole image, so {runs} runs (numpy seeds 0..{runs - 1}) per severity on photo224.png. Per run and",
        "channel (d = output − input): `mean` and `sd` of d, `slope` = cov(output, input)/var(input) (the image's",
        "weight in the output) and `rough` = mean |Δd| between horizontal and vertical neighbours (the spatial",
        "frequency of the change). For " + ", ".join(PAIRED) + " also `pair_slope`: the same seed on the photo mirrored",
        "left-right, slope of (output − output′) on (input − input′) where neither output is clipped: the image",
        "weight with the random layer (the same texture and crop in both) cancelled. Across the runs, per channel: `mean`, `sd` (ddof 1),",
        f"`kurtosis` (m4/m2²) and `quantiles` at {QUANTILES}.",
        "",
        "## Motion blur of a dot: `motion_dot.json`",
        "",
        "imagecorruptions' motion-blur kernel (`_motion_blur`, the one motion_blur and snow use) on an",
        f"{MOTION_DOT['size']}×{MOTION_DOT['size']} black image with one white pixel at ({MOTION_DOT['dot']}, {MOTION_DOT['dot']}), for (radius, σ) of",
        f"severities {[s for s, _, _ in MOTION_DOT['severities']]} and angles {MOTION_DOT['angles']}°: the non-zero output pixels",
        "(direction and weights of the streak).",
        COARSE_END,
    ]


def patch_readme(runs: int) -> None:
    """Replaces (or inserts before the timings) the coarse section of an existing README."""
    path = OUT / "README.md"
    text = path.read_text()
    block = "\n".join(coarse_readme(runs))
    if COARSE_BEGIN in text:
        head, rest = text.split(COARSE_BEGIN, 1)
        tail = rest.split(COARSE_END, 1)[1]
        text = head + block + tail
    else:
        anchor = "## Timings of the reference"
        head, tail = text.split(anchor, 1) if anchor in text else (text, "")
        text = head + block + "\n\n" + (anchor + tail if tail else "")
    files = sorted(p for p in OUT.rglob("*") if p.is_file() and p.name != "README.md")
    total = sum(p.stat().st_size for p in files) + len(text.encode())
    text = re.sub(r"\d+ files besides this README, [0-9.]+ MB in total\.",
                  f"{len(files)} files besides this README, {total / 1e6:.3f} MB in total.", text)
    path.write_text(text)


# ---------------------------------------------------------------------------------------------------------
# timing

def time_calls(x: np.ndarray, name: str, severity: int, calls: int) -> dict:
    run(x, name, severity, 0)  # warm-up (imports, caches, frost file)
    wall, cpu = [], []
    for i in range(calls):
        np.random.seed(100 + i)
        t0, c0 = time.perf_counter(), time.process_time()
        corrupt(x, severity=severity, corruption_name=name)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"calls": calls, "wall_s": statistics.median(wall), "cpu_s": statistics.median(cpu)}


def time_sweep(x: np.ndarray, sweeps: int) -> dict:
    wall, cpu, per_name = [], [], {n: [] for n in NAMES}
    for k in range(sweeps):
        np.random.seed(1000 + k)
        t0, c0 = time.perf_counter(), time.process_time()
        for name in NAMES:
            cn0 = time.process_time()
            for s in SEVERITIES:
                corrupt(x, severity=s, corruption_name=name)
            per_name[name].append(time.process_time() - cn0)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"sweeps": sweeps, "wall_s": statistics.median(wall), "cpu_s": statistics.median(cpu),
            "cpu_s_per_corruption_all_severities": {n: statistics.median(v) for n, v in per_name.items()}}


# ---------------------------------------------------------------------------------------------------------

def versions() -> dict:
    freeze = subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True,
                            text=True, check=True).stdout.split()
    return {
        "python": platform.python_version(),
        "imagecorruptions": imagecorruptions.__version__ if hasattr(imagecorruptions, "__version__")
        else next((l.split("==")[1] for l in freeze if l.lower().startswith("imagecorruptions==")), "?"),
        "numpy": np.__version__, "scipy": scipy.__version__, "scikit-image": skimage.__version__,
        "opencv": cv2.__version__, "Pillow": Image.__version__,
        "pip_freeze": freeze,
    }


def check_versions(v: dict) -> None:
    bad = [f"{k} {v[k]} (want {want})" for k, want in EXPECTED.items() if not v[k].startswith(want)]
    if bad:
        sys.exit("wrong reference environment: " + ", ".join(bad) + " — see this script's docstring")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def fmt_ms(s: float) -> str:
    return f"{s * 1000:.2f}"


def write_readme(v, det, n_runs, timing, files, sizes_total, coarse_runs, snow_photo):
    lines = []
    a = lines.append
    a("# Corruption fixtures: outputs of the reference ImageNet-C implementation")
    a("")
    a("Generated by `scripts/make_corruption_fixtures.py` (do not edit by hand; re-run it). The reference is")
    a(f"bethgelab `imagecorruptions=={v['imagecorruptions']}` (PyPI wheel, unmodified), run in a throwaway")
    a(f"Python {v['python']} venv outside the repository:")
    a("")
    a("```sh")
    a("/root/.pyenv/versions/3.10.13/bin/python -m venv ~/.cache/robustream/venv-ic310")
    a('~/.cache/robustream/venv-ic310/bin/pip install "setuptools<81" numpy==1.26.4 scipy==1.11.4 \\')
    a("    scikit-image==0.19.3 opencv-python-headless==4.8.1.78 Pillow==10.1.0")
    a("~/.cache/robustream/venv-ic310/bin/pip install --no-deps imagecorruptions==1.1.2")
    a("~/.cache/robustream/venv-ic310/bin/python scripts/make_corruption_fixtures.py   # from the repo root")
    a("```")
    a("")
    a("`pip freeze --all` of that venv:")
    a("")
    a("```")
    lines.extend(v["pip_freeze"])
    a("```")
    a("")
    a("Note: the PyPI 1.1.2 wheel's `glass_blur` is the plain-Python loop (no numba), unlike the GitHub HEAD")
    a("described in docs/imagenet-c.md#glass_blur; the pixel semantics (copy, not swap; offsets in [-δ, δ-1])")
    a("are the same.")
    a("")
    a("## Inputs")
    a("")
    a("* `photo224.png` — `assets/photos/coffee.png` (600×400) as ImageNet-C prepared its images: PIL")
    a("  `resize((384, 256), BILINEAR)` (torchvision Resize(256): short side 256, long side int(256·600/400)),")
    a("  then centre crop 224 at left = int(round((384−224)/2)) = 80, top = int(round((256−224)/2)) = 16.")
    a(f"  (Pillow {v['Pillow']}.)")
    l, t, r, b = SMALL_BOX
    a(f"* `small.png` — the 64×48 (W×H) crop of the original coffee.png at left {l}, top {t} (spoon, saucer rim,")
    a("  specular highlights); for size-generalisation checks (imagecorruptions needs ≥ 32×32).")
    a("")
    a("## Deterministic corruptions: exact outputs")
    a("")
    a("These draw no random number (read from the reference code and checked at generation: two runs with")
    a("different seeds give identical bytes): " + ", ".join(f"`{n}`" for n in det) + ".")
    a("All others are random: gaussian/shot/impulse/speckle noise, glass_blur, motion_blur (angle), snow,")
    a("frost (file + crop), fog (plasma), elastic_transform, spatter.")
    a("")
    a("`photo224/<name>_<sev>.png` and `small/<name>_<sev>.png` (severity 1..5) hold `np.uint8(result)`, exactly")
    a("what `imagecorruptions.corrupt()` returns (truncation of the clipped float result). PNG is lossless:")
    a("compare decoded pixels byte-exactly (expect ±1 differences only where a port's float arithmetic")
    a("lands on the other side of an integer; jpeg_compression depends on Pillow's bundled libjpeg-turbo).")
    a("")
    a("## Statistics: `photo224_stats.json`")
    a("")
    a(f"For every corruption × severity on photo224.png: {n_runs['default']} runs with numpy seeds 0..N−1")
    a(f"({n_runs['glass_blur']} for glass_blur; 1 run for the deterministic ones), `np.random.seed(seed)` before each")
    a("call; impulse_noise's own scikit-image generator gets `seed=seed` too (its draw is otherwise unseeded).")
    a("Fields (R, G, B lists; over all pixels of all runs; std with ddof 0; d = output − input):")
    a("`diff_mean`, `diff_std` (of d per channel), `abs_diff_mean` (+ `_per_channel`), `changed_fraction`")
    a("(pixels with any channel changed) and `changed_fraction_per_channel` (elements), `out_mean`, `out_std`;")
    a("`run_std` = std across runs of each run's own diff_mean / abs_diff_mean / changed_fraction / out_mean,")
    a("a scale for test tolerances. `input` holds the input's own per-channel mean/std.")
    a("")
    lines.extend(coarse_readme(coarse_runs))
    a("")
    lines.extend(snow_readme(snow_photo, coarse_runs))
    a("")
    a("## Timings of the reference (peer baseline)")
    a("")
    if timing is None:
        a("Not measured in this run (`--no-timing`).")
    else:
        a(f"Single thread (OMP/OpenBLAS/MKL threads 1, `cv2.setNumThreads(1)`), through `corrupt()` on one 224×224")
        a(f"RGB frame, {timing['machine']}. Wall = `perf_counter`, CPU = `process_time`. Machine shared with other")
        a("jobs: treat as rough.")
        a("")
        a("| corruption | sev 3: ms per call (median, wall) | sev 3: ms CPU | calls | sweep: ms CPU, all 5 severities |")
        a("|---|---|---|---|---|")
        sw = timing["sweep"]["cpu_s_per_corruption_all_severities"]
        for n in NAMES:
            p = timing["per_call"][n]
            a(f"| {n} | {fmt_ms(p['wall_s'])} | {fmt_ms(p['cpu_s'])} | {p['calls']} | {fmt_ms(sw[n])} |")
        s = timing["sweep"]
        a("")
        a(f"Full 19 × 5 sweep on one 224² frame (median of {s['sweeps']}): **{s['wall_s']:.3f} s wall, "
          f"{s['cpu_s']:.3f} s CPU**.")
    a("")
    a("## Files")
    a("")
    a(f"{len(files)} files besides this README, {sizes_total / 1e6:.3f} MB in total.")
    a("")
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


def compact_json(obj) -> str:
    """Indented JSON with every list of numbers on one line."""
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[\s*([-+0-9.eE,\s]+?)\s*\]", lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]",
                  text)


def write_coarse(photo: np.ndarray, runs: int, v: dict) -> None:
    (OUT / "photo224_coarse_stats.json").write_text(compact_json(coarse_stats(photo, runs, v)) + "\n")
    (OUT / "motion_dot.json").write_text(json.dumps(motion_dot()) + "\n")


SNOW_BEGIN, SNOW_END = "<!-- snow:begin -->", "<!-- snow:end -->"


def snow_readme(photo: str, runs: int) -> list:
    return [
        SNOW_BEGIN,
        "## Snow on a held-out photo and for given seeds: `heldout224*`, `snow_seeded/`",
        "",
        f"* `heldout224.png` — `assets/photos/{photo}` prepared like photo224.png (Resize(256) + centre crop 224): a",
        "  photo the port was not tuned on.",
        f"* `heldout224_snow_stats.json` — snow only, in the format of photo224_coarse_stats.json: {runs} runs (numpy",
        f"  seeds 0..{runs - 1}) per severity on heldout224.png, distributions of the per-run statistics.",
        f"* `snow_seeded/photo224_seed<k>_<sev>.png` — the reference's snow output on photo224.png after",
        f"  `np.random.seed(k)` for k in {SNOW_SEEDS}, severities 1..5. The draw (the H×W normal field, then the",
        "  angle) is numpy's legacy MT19937 stream, which a test can redraw exactly, so these compare byte for byte",
        "  with a port given the same field and angle.",
        "",
        "Written by `--only-snow [--snow-photo NAME]` (default " + SNOW_PHOTO + "), which touches nothing else.",
        SNOW_END,
    ]


def patch_section(begin: str, end: str, block: list, anchor: str = "## Timings of the reference") -> None:
    """Replaces (or inserts before `anchor`) a marked section of the existing README and refreshes the file
    count."""
    path = OUT / "README.md"
    text = path.read_text()
    block = "\n".join(block)
    if begin in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        head, tail = text.split(anchor, 1) if anchor in text else (text, "")
        text = head + block + "\n\n" + (anchor + tail if tail else "")
    files = sorted(p for p in OUT.rglob("*") if p.is_file() and p.name != "README.md")
    total = sum(p.stat().st_size for p in files) + len(text.encode())
    text = re.sub(r"\d+ files besides this README, [0-9.]+ MB in total\.",
                  f"{len(files)} files besides this README, {total / 1e6:.3f} MB in total.", text)
    path.write_text(text)


def write_snow(photo_name: str, runs: int, v: dict) -> None:
    """The held-out photo's snow statistics and the seeded snow outputs on photo224 (issue 14: snow's
    statistics checked on a photo besides photo224, and the deterministic part of the port checked byte for
    byte given the reference's own draw)."""
    held = np.array(imagenet_view(Image.open(ROOT / "assets" / "photos" / photo_name).convert("RGB")))
    assert held.shape == (224, 224, 3)
    save_png(held, OUT / "heldout224.png")
    st = coarse_stats(held, runs, v, names=["snow"], input_name="heldout224.png")
    st["source"] = f"assets/photos/{photo_name}, Resize(256) + CenterCrop(224) as photo224.png"
    (OUT / "heldout224_snow_stats.json").write_text(compact_json(st) + "\n")
    photo = np.array(Image.open(OUT / "photo224.png").convert("RGB"))
    for old in (OUT / "snow_seeded").glob("*.png") if (OUT / "snow_seeded").exists() else []:
        old.unlink()
    for k in SNOW_SEEDS:
        for s in SEVERITIES:
            save_png(run(photo, "snow", s, k), OUT / "snow_seeded" / f"photo224_seed{k}_{s}.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="runs per random corruption/severity (default 20)")
    ap.add_argument("--glass-runs", type=int, default=10, help="runs for glass_blur (slow; default 10)")
    ap.add_argument("--coarse-runs", type=int, default=512,
                    help="runs per severity of the COARSE corruptions for photo224_coarse_stats.json (default 512)")
    ap.add_argument("--only-coarse", action="store_true",
                    help="write only photo224_coarse_stats.json, motion_dot.json and their README section")
    ap.add_argument("--only-snow", action="store_true",
                    help="write only heldout224.png, heldout224_snow_stats.json, snow_seeded/ and their README section")
    ap.add_argument("--snow-photo", default=SNOW_PHOTO,
                    help=f"photo under assets/photos/ for heldout224.png (default {SNOW_PHOTO})")
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()

    v = versions()
    check_versions(v)
    assert get_corruption_names("all") == NAMES, get_corruption_names("all")

    if args.only_snow:
        write_snow(args.snow_photo, args.coarse_runs, v)
        patch_section(SNOW_BEGIN, SNOW_END, snow_readme(args.snow_photo, args.coarse_runs))
        return

    if args.only_coarse:
        photo = np.array(Image.open(OUT / "photo224.png").convert("RGB"))
        assert np.array_equal(photo, np.array(imagenet_view(Image.open(PHOTO).convert("RGB"))))
        write_coarse(photo, args.coarse_runs, v)
        patch_readme(args.coarse_runs)
        return

    OUT.mkdir(parents=True, exist_ok=True)
    for sub in ("photo224", "small"):
        for old in (OUT / sub).glob("*.png") if (OUT / sub).exists() else []:
            old.unlink()

    src = Image.open(PHOTO).convert("RGB")
    photo = np.array(imagenet_view(src))
    small = np.array(src.crop(SMALL_BOX))
    assert photo.shape == (224, 224, 3) and small.shape == (48, 64, 3)
    save_png(photo, OUT / "photo224.png")
    save_png(small, OUT / "small.png")

    print("checking which corruptions are deterministic ...", flush=True)
    det = check_deterministic(photo)
    print("  deterministic:", det, flush=True)

    for name in det:
        for s in SEVERITIES:
            save_png(run(photo, name, s, 0), OUT / "photo224" / f"{name}_{s}.png")
            save_png(run(small, name, s, 0), OUT / "small" / f"{name}_{s}.png")

    n_runs = {"default": args.runs, "glass_blur": args.glass_runs}
    result = {
        "generator": "scripts/make_corruption_fixtures.py",
        "reference": f"imagecorruptions {v['imagecorruptions']}",
        "versions": {k: v[k] for k in ("python", "imagecorruptions", "numpy", "scipy", "scikit-image",
                                       "opencv", "Pillow")},
        "input": {"file": "photo224.png", "height": 224, "width": 224,
                  "mean": photo.reshape(-1, 3).astype(np.float64).mean(axis=0).tolist(),
                  "std": photo.reshape(-1, 3).astype(np.float64).std(axis=0).tolist()},
        "deterministic": det,
        "channel_order": "RGB",
        "corruptions": {},
    }
    for name in NAMES:
        t0 = time.perf_counter()
        n = 1 if name in det else n_runs.get(name, args.runs)
        seeds = list(range(n))
        sev_stats = []
        for s in SEVERITIES:
            outs = [run(photo, name, s, seed) for seed in seeds]
            sev_stats.append({"severity": s, **stats(photo, outs, seeds)})
        result["corruptions"][name] = {"deterministic": name in det, "severities": sev_stats}
        print(f"  stats {name}: {n} run(s) x 5 severities, {time.perf_counter() - t0:.1f} s", flush=True)
    (OUT / "photo224_stats.json").write_text(json.dumps(result, indent=1) + "\n")
    write_coarse(photo, args.coarse_runs, v)
    write_snow(args.snow_photo, args.coarse_runs, v)

    timing = None
    if not args.no_timing:
        print("timing ...", flush=True)
        machine = f"{cpu_model()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start"
        per_call = {}
        for name in NAMES:
            per_call[name] = time_calls(photo, name, 3, 3 if name == "glass_blur" else 9)
            print(f"  {name}: {fmt_ms(per_call[name]['wall_s'])} ms", flush=True)
        sweep = time_sweep(photo, 3)
        print(f"  sweep: {sweep['wall_s']:.3f} s wall, {sweep['cpu_s']:.3f} s cpu", flush=True)
        timing = {"machine": machine, "per_call": per_call, "sweep": sweep}

    files = sorted(p for p in OUT.rglob("*") if p.is_file() and p.name != "README.md")
    total = sum(p.stat().st_size for p in files)
    write_readme(v, det, n_runs, timing, files, total, args.coarse_runs, args.snow_photo)
    total += (OUT / "README.md").stat().st_size
    print(f"wrote {len(files) + 1} files, {total / 1e6:.3f} MB, under {OUT}")


if __name__ == "__main__":
    main()
