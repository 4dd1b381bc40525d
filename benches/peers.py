#!/usr/bin/env python3
"""Times the Python peers of robustream's ImageNet-C corruptions on the frames benches/corruptions.rs uses.

Peers (one per call of this script; each lives in its own venv, made by `bash scripts/peer_venvs.sh`):

  imagecorruptions  1.1.2, the reference implementation (~/.cache/robustream/venv-ic310, Python 3.10)
  corrupt-tta       0.1.7, a modernised port of ImageNet-C (~/.cache/robustream/venv-peers)
  albumentations    2.0.8, the nearest equivalent transform of each corruption (venv-peers): NOT the same
                    corruptions, see ALBUMENTATIONS below and `--print-mapping`

Frames, made here with Pillow exactly as robustream makes them (the Rust bench's are byte-identical;
`--check-frames DIR` compares against the PNGs the bench writes with ROBUSTREAM_BENCH_FRAMES=DIR):

  224       the 224x224 model view of assets/photos/coffee.png: Resize(256) (short side 256, bilinear) and
            CenterCrop(224), as ImageNet-C prepared its inputs (= tests/fixtures/corruptions/photo224.png)
  1280x720  coffee.png resized to 1280x720, bilinear

Method: one thread everywhere (OMP/OpenBLAS/MKL/numexpr threads 1, set before numpy is imported;
cv2.setNumThreads(1)). Per frame x corruption x severity: one untimed warm-up call (imports, caches,
frost files), then up to --calls timed calls, stopping early after --min-calls once --budget seconds are
spent; the median wall time (perf_counter) is reported, with the median CPU time (process_time). Every
call returns a uint8 image as robustream's do: imagecorruptions' `corrupt()` already does; corrupt-tta
returns floats, so `np.uint8(...)` is part of its timed call; albumentations returns uint8. Transform
objects (albumentations) are built outside the timed call, as robustream builds its `Corruption`s outside
the timed loop. The sweep: all corruptions x severities the peer has, on one frame, in index order, timed
as one; median of --sweeps sweeps.

Output: JSON (--out, default stdout) with versions, machine, frames (sha256 of the RGB bytes), per-cell
and sweep timings; benches/compare.py turns it and criterion's estimates into the ratio tables of
BENCHMARKS.md, and benches/compare.sh runs everything in one go.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)

ROOT = Path(__file__).resolve().parent.parent
PHOTO = ROOT / "assets" / "photos" / "coffee.png"
PHOTO224_FIXTURE = ROOT / "tests" / "fixtures" / "corruptions" / "photo224.png"

# ImageNet-C index order (docs/imagenet-c.md#corruption-order-and-groups; = robustream's CORRUPTIONS).
NAMES = [
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur",
    "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate",
    "jpeg_compression", "speckle_noise", "gaussian_blur", "spatter", "saturate",
]
SEVERITIES = [1, 2, 3, 4, 5]
FRAMES = ["224", "1280x720"]
PEERS = ["imagecorruptions", "corrupt-tta", "albumentations"]


# ---------------------------------------------------------------------------------------------------------
# frames

def imagenet_view(img: Image.Image) -> Image.Image:
    """torchvision Resize(256) + CenterCrop(224) as ImageNet-C's make_imagenet_c.py applied them."""
    w, h = img.size
    ow, oh = (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)
    img = img.resize((ow, oh), Image.BILINEAR)
    top, left = int(round((oh - 224) / 2.0)), int(round((ow - 224) / 2.0))
    return img.crop((left, top, left + 224, top + 224))


def make_frames(labels, check_dir):
    src = Image.open(PHOTO).convert("RGB")
    frames = {}
    for label in labels:
        img = imagenet_view(src) if label == "224" else src.resize((1280, 720), Image.BILINEAR)
        frames[label] = np.ascontiguousarray(np.array(img, dtype=np.uint8))
    if "224" in frames and PHOTO224_FIXTURE.exists():
        fixture = np.array(Image.open(PHOTO224_FIXTURE).convert("RGB"))
        if not np.array_equal(fixture, frames["224"]):
            sys.exit(f"the 224 frame differs from {PHOTO224_FIXTURE} (Pillow version?)")
    if check_dir:
        for label, arr in frames.items():
            path = Path(check_dir) / f"coffee_{label}.png"
            theirs = np.array(Image.open(path).convert("RGB"))
            if theirs.shape != arr.shape or not np.array_equal(theirs, arr):
                bad = np.abs(theirs.astype(int) - arr.astype(int)) if theirs.shape == arr.shape else None
                sys.exit(f"frame {label}: {path} (robustream's) differs from Pillow's"
                         + (f" (max |d| {bad.max()}, {(bad > 0).mean():.2%} of bytes)" if bad is not None else ""))
    return frames


# ---------------------------------------------------------------------------------------------------------
# the peers: each maps (name, severity, frame) to a zero-argument callable returning a uint8 image, or None

def peer_imagecorruptions():
    from imagecorruptions import corrupt

    def make(name, sev, x):
        return lambda: corrupt(x, severity=sev, corruption_name=name)
    return make, {"imagecorruptions": metadata.version("imagecorruptions")}


def peer_corrupt_tta():
    from corrupt_tta import corrupt

    def make(name, sev, x):
        return lambda: np.uint8(corrupt(x, severity=sev, corruption_name=name))
    return make, {"corrupt-tta": metadata.version("corrupt-tta")}


# ImageNet-C parameters (docs/imagenet-c.md#the-19-corruptions, imagecorruptions 1.1.2) the albumentations
# mapping derives from.
IC = {
    "gaussian_noise": [0.08, 0.12, 0.18, 0.26, 0.38],
    "shot_noise": [60, 25, 12, 5, 3],
    "impulse_noise": [0.03, 0.06, 0.09, 0.17, 0.27],
    "defocus_blur": [(3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)],
    "glass_blur": [(0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2)],
    "motion_blur": [(10, 3), (15, 5), (15, 8), (15, 12), (20, 15)],
    "zoom_blur": [(1.11, 0.01), (1.16, 0.01), (1.21, 0.02), (1.26, 0.02), (1.31, 0.03)],
    "brightness": [0.1, 0.2, 0.3, 0.4, 0.5],
    "contrast": [0.4, 0.3, 0.2, 0.1, 0.05],
    "elastic_transform": [12.5, 16.25, 21.25, 25.0, 30.0],
    "pixelate": [0.6, 0.5, 0.4, 0.3, 0.25],
    "jpeg_compression": [25, 18, 15, 10, 7],
    "speckle_noise": [0.15, 0.2, 0.35, 0.45, 0.6],
    "gaussian_blur": [1, 2, 3, 4, 6],
    "spatter": [(0.65, 0.3, 4, 0.69, 0.6, 0), (0.65, 0.3, 3, 0.68, 0.6, 0), (0.65, 0.3, 2, 0.68, 0.5, 0),
                (0.65, 0.3, 1, 0.65, 1.5, 1), (0.67, 0.4, 1, 0.65, 1.5, 1)],
    "saturate": [(0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2)],
}
# Severity scales for albumentations transforms that have no ImageNet-C counterpart parameter.
ALBU_SNOW_POINTS = [0.1, 0.2, 0.3, 0.4, 0.5]
ALBU_FOG_COEF = [0.3, 0.45, 0.6, 0.75, 0.9]

# ALBUMENTATIONS: the nearest albumentations 2.0.8 transform of each ImageNet-C corruption, and how the
# severity's parameters map onto it (p = 1 always). `same` = the same algorithm and parameters (timing is
# comparable work); `near` = a related effect with matched strength where a parameter maps; `none` = no
# counterpart (left out of its table and sweep). Rendered by --print-mapping for BENCHMARKS.md.
ALBUMENTATIONS = {
    "gaussian_noise": ("same", "GaussNoise(std_range=(σ, σ), mean_range=(0, 0), per_channel=True)",
                       "additive N(0, σ) per pixel and channel on [0, 1]"),
    "shot_noise": ("near", "ShotNoise(scale_range=(1/c, 1/c))",
                   "Poisson with c photons, but in gamma-linearised space (x^2.2)"),
    "impulse_noise": ("near", "SaltAndPepper(amount=(a, a), salt_vs_pepper=(0.5, 0.5))",
                      "same amount; ImageNet-C flips each channel independently"),
    "defocus_blur": ("same", "Defocus(radius=(r, r), alias_blur=(a, a))",
                     "disk kernel + Gaussian anti-alias, as ImageNet-C"),
    "glass_blur": ("same", "GlassBlur(sigma=σ, max_delta=δ, iterations=n, mode='fast')",
                   "ImageNet-C's walk, vectorised (mode 'exact' is the sequential loop)"),
    "motion_blur": ("near", "MotionBlur(blur_limit=(2r+1, 2r+1), angle_range=(135, 225), "
                            "direction_range=(1, 1), allow_shifted=False)",
                    "one-sided line of the same support and a 90° span of angles around the horizontal, uniform "
                    "weights (ImageNet-C: half-Gaussian σ)"),
    "zoom_blur": ("same", "ZoomBlur(max_factor=(stop, stop), step_factor=(step, step))",
                  "the same zoom factors np.arange(1, stop, step)"),
    "snow": ("near", "RandomSnow(method='texture', snow_point_range=(p, p)), p = 0.1 … 0.5",
             "texture snow; no ImageNet-C parameter maps"),
    "frost": ("none", "—", "no texture blend in albumentations 2.0.8"),
    "fog": ("near", "RandomFog(fog_coef_range=(f, f), alpha_coef=0.08), f = 0.3 … 0.9",
            "blob fog; no ImageNet-C parameter maps (ImageNet-C: plasma fractal)"),
    "brightness": ("near", "HueSaturationValue(hue=0, sat=0, val_shift=Δ·255)",
                   "V + Δ in OpenCV's 8-bit HSV (ImageNet-C: scikit-image float HSV)"),
    "contrast": ("near", "ColorJitter(brightness=1, contrast=(c, c), saturation=1, hue=0)",
                 "(x − m)·c + m with m the grey level's mean (ImageNet-C: each channel's mean)"),
    "elastic_transform": ("same", "ElasticTransform(alpha=α·0.005·H, sigma=0.01·H, "
                                  "noise_distribution='uniform', border_mode=REFLECT_101)",
                          "the same displacement field scale; OpenCV remap instead of scipy"),
    "pixelate": ("near", "Downscale(scale_range=(f, f), down INTER_AREA, up INTER_NEAREST)",
                 "ImageNet-C: Pillow BOX down, NEAREST up"),
    "jpeg_compression": ("same", "ImageCompression(compression_type='jpeg', quality_range=(q, q))",
                         "OpenCV's libjpeg instead of Pillow's"),
    "speckle_noise": ("near", "MultiplicativeNoise(multiplier=(1−√3σ, 1+√3σ), per_channel=True, "
                              "elementwise=True)",
                      "uniform factor with the sd of N(1, σ), lower end clipped at 0"),
    "gaussian_blur": ("same", "GaussianBlur(sigma_limit=(σ, σ), blur_limit=(k, k)), k = 2·⌈4σ⌉+1",
                      "the same support as scipy's truncate 4"),
    "spatter": ("same", "Spatter(mean, std, gauss_sigma, cutout_threshold, intensity, mode='rain'/'mud')",
                "ImageNet-C's spatter (water = 'rain'; mud: intensity 1, as ImageNet-C's c4 is a blur σ there)"),
    "saturate": ("near", "HueSaturationValue(hue=0, sat_shift=Δ, val=0), Δ = 255·((k − 1)/2 + offset) "
                         "clipped to ±255",
                 "S + Δ in OpenCV's 8-bit HSV, hue and V kept (ImageNet-C: scikit-image float HSV, S·k + offset; "
                 "Δ is its change at S = ½) — the same HSV round trip as the brightness row"),
}

# Timed besides the mapping above (cells only, not in the sweep) and reported separately: albumentations'
# other transform a user might reach for, which is not the nearest equivalent.
ALBUMENTATIONS_ALSO = {
    "saturate": ("ColorJitter(brightness=1, contrast=1, saturation=(k, k), hue=0)",
                 "torchvision's blend with the grey (luma) image: no HSV, keeps luma rather than V and hue; "
                 "a cheaper, different operation"),
}


def albumentations_transform(name, sev, h, w):
    """The albumentations transform for ImageNet-C `name` at `sev` on an h x w frame (None: no counterpart)."""
    import albumentations as A
    import cv2

    i = sev - 1
    p = IC.get(name)
    if name == "gaussian_noise":
        return A.GaussNoise(std_range=(p[i], p[i]), mean_range=(0, 0), per_channel=True, p=1)
    if name == "shot_noise":
        return A.ShotNoise(scale_range=(1 / p[i], 1 / p[i]), p=1)
    if name == "impulse_noise":
        return A.SaltAndPepper(amount=(p[i], p[i]), salt_vs_pepper=(0.5, 0.5), p=1)
    if name == "defocus_blur":
        r, a = p[i]
        return A.Defocus(radius=(r, r), alias_blur=(a, a), p=1)
    if name == "glass_blur":
        s, d, it = p[i]
        return A.GlassBlur(sigma=s, max_delta=d, iterations=it, mode="fast", p=1)
    if name == "motion_blur":
        k = 2 * p[i][0] + 1
        # angle_range must lie in [0, 360]: (135, 225) is ImageNet-C's 90° span around the horizontal.
        return A.MotionBlur(blur_limit=(k, k), angle_range=(135, 225), direction_range=(1, 1),
                            allow_shifted=False, p=1)
    if name == "zoom_blur":
        stop, step = p[i]
        return A.ZoomBlur(max_factor=(stop, stop), step_factor=(step, step), p=1)
    if name == "snow":
        return A.RandomSnow(method="texture", snow_point_range=(ALBU_SNOW_POINTS[i],) * 2, p=1)
    if name == "frost":
        return None
    if name == "fog":
        return A.RandomFog(fog_coef_range=(ALBU_FOG_COEF[i],) * 2, alpha_coef=0.08, p=1)
    if name == "brightness":
        v = p[i] * 255
        return A.HueSaturationValue(hue_shift_limit=(0, 0), sat_shift_limit=(0, 0), val_shift_limit=(v, v), p=1)
    if name == "contrast":
        # RandomBrightnessContrast only multiplies (no mean): ColorJitter pulls towards the grey mean.
        return A.ColorJitter(brightness=(1, 1), contrast=(p[i], p[i]), saturation=(1, 1), hue=(0, 0), p=1)
    if name == "elastic_transform":
        return A.ElasticTransform(alpha=p[i] * 0.005 * h, sigma=0.01 * h, noise_distribution="uniform",
                                  border_mode=cv2.BORDER_REFLECT_101, approximate=False, p=1)
    if name == "pixelate":
        return A.Downscale(scale_range=(p[i], p[i]),
                           interpolation_pair={"downscale": cv2.INTER_AREA, "upscale": cv2.INTER_NEAREST}, p=1)
    if name == "jpeg_compression":
        return A.ImageCompression(compression_type="jpeg", quality_range=(p[i], p[i]), p=1)
    if name == "speckle_noise":
        half = math.sqrt(3) * p[i]
        return A.MultiplicativeNoise(multiplier=(max(0.0, 1 - half), 1 + half), per_channel=True,
                                     elementwise=True, p=1)
    if name == "gaussian_blur":
        k = 2 * math.ceil(4 * p[i]) + 1
        return A.GaussianBlur(sigma_limit=(p[i], p[i]), blur_limit=(k, k), p=1)
    if name == "spatter":
        mu, sd, sigma, t, c4, mode = p[i]
        # Mud: ImageNet-C's c4 is a blur sigma, albumentations' intensity an opacity in [0, 1].
        k = c4 if mode == 0 else 1.0
        return A.Spatter(mean=(mu, mu), std=(sd, sd), gauss_sigma=(sigma, sigma), cutout_threshold=(t, t),
                         intensity=(k, k), mode="rain" if mode == 0 else "mud", p=1)
    if name == "saturate":
        k, offset = p[i]
        d = round(max(-255.0, min(255.0, 255 * ((k - 1) / 2 + offset))))
        return A.HueSaturationValue(hue_shift_limit=(0, 0), sat_shift_limit=(d, d), val_shift_limit=(0, 0), p=1)
    raise KeyError(name)


def albumentations_also(name, sev):
    """The transform of ALBUMENTATIONS_ALSO for `name` at `sev` (None: nothing extra for it)."""
    import albumentations as A

    if name == "saturate":
        k = IC["saturate"][sev - 1][0]
        return A.ColorJitter(brightness=(1, 1), contrast=(1, 1), saturation=(k, k), hue=(0, 0), p=1)
    return None


def peer_albumentations():
    import albumentations as A

    def make(name, sev, x):
        t = albumentations_transform(name, sev, x.shape[0], x.shape[1])
        if t is None:
            return None
        t.set_random_seed(sev)
        return lambda: t(image=x)["image"]
    return make, {"albumentations": A.__version__, "albucore": metadata.version("albucore")}


PEER_FACTORIES = {"imagecorruptions": peer_imagecorruptions, "corrupt-tta": peer_corrupt_tta,
                  "albumentations": peer_albumentations}


# ---------------------------------------------------------------------------------------------------------
# timing

def time_cell(fn, x_shape, calls, min_calls, budget):
    out = fn()  # warm-up
    out = np.asarray(out)
    if out.dtype != np.uint8 or out.shape != x_shape:
        raise RuntimeError(f"peer returned {out.dtype} {out.shape}, want uint8 {x_shape}")
    wall, cpu = [], []
    start = time.perf_counter()
    while len(wall) < calls and (len(wall) < min_calls or time.perf_counter() - start < budget):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"median_s": statistics.median(wall), "cpu_s": statistics.median(cpu), "calls": len(wall),
            "min_s": min(wall)}


def time_sweep(fns, sweeps):
    wall, cpu = [], []
    for _ in range(sweeps):
        t0, c0 = time.perf_counter(), time.process_time()
        for fn in fns:
            fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"median_s": statistics.median(wall), "cpu_s": statistics.median(cpu), "sweeps": sweeps,
            "cells": len(fns)}


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def print_mapping():
    print("| corruption | albumentations 2.0.8 transform (severity parameters) | kind | note |")
    print("|---|---|---|---|")
    for n in NAMES:
        kind, call, note = ALBUMENTATIONS[n]
        print(f"| {n} | {'`' + call + '`' if kind != 'none' else call} | {kind} | {note} |")
    for n, (call, note) in ALBUMENTATIONS_ALSO.items():
        print(f"| {n} (also timed) | `{call}` | other | {note} |")


def split(arg, allowed, what):
    items = [s.strip() for s in arg.split(",") if s.strip()]
    bad = [s for s in items if s not in allowed]
    if bad:
        sys.exit(f"unknown {what}: {', '.join(bad)} (known: {', '.join(map(str, allowed))})")
    return items


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", choices=PEERS, help="which peer to time (required unless --print-mapping)")
    ap.add_argument("--frames", default=",".join(FRAMES), help="comma list of 224, 1280x720 (default both)")
    ap.add_argument("--corruptions", default="all", help="comma list of names (default all 19)")
    ap.add_argument("--severities", default="1,2,3,4,5")
    ap.add_argument("--calls", type=int, default=7, help="at most this many timed calls per cell (default 7)")
    ap.add_argument("--min-calls", type=int, default=3, help="at least this many (default 3)")
    ap.add_argument("--budget", type=float, default=2.0,
                    help="stop a cell after --min-calls once this many seconds are spent (default 2)")
    ap.add_argument("--sweeps", type=int, default=3, help="full sweeps per frame, median reported (default 3)")
    ap.add_argument("--no-sweep", action="store_true", help="skip the full 19 x 5 sweep")
    ap.add_argument("--check-frames", metavar="DIR",
                    help="compare the frames with DIR/coffee_<frame>.png (written by the Rust bench)")
    ap.add_argument("--out", help="write the JSON here (default stdout)")
    ap.add_argument("--print-mapping", action="store_true",
                    help="print the albumentations mapping as a markdown table and exit")
    args = ap.parse_args()
    if args.print_mapping:
        print_mapping()
        return
    if not args.peer:
        ap.error("--peer is required")

    frames_wanted = split(args.frames, FRAMES, "frame")
    names = NAMES if args.corruptions == "all" else split(args.corruptions, NAMES, "corruption")
    sevs = [int(s) for s in split(args.severities, [str(s) for s in SEVERITIES], "severity")]

    import cv2
    cv2.setNumThreads(1)
    make, versions = PEER_FACTORIES[args.peer]()
    np.random.seed(0)
    frames = make_frames(frames_wanted, args.check_frames)

    result = {
        "generator": "benches/peers.py",
        "peer": args.peer,
        "versions": {**versions, "python": platform.python_version(), "numpy": np.__version__,
                     "opencv": cv2.__version__, "Pillow": Image.__version__},
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "load_average_start": os.getloadavg()[0]},
        "threads": {"OMP_NUM_THREADS": 1, "cv2": cv2.getNumThreads()},
        "method": {"calls": args.calls, "min_calls": args.min_calls, "budget_s": args.budget,
                   "sweeps": 0 if args.no_sweep else args.sweeps},
        "frames": {k: {"height": v.shape[0], "width": v.shape[1],
                       "sha256": hashlib.sha256(v.tobytes()).hexdigest()} for k, v in frames.items()},
        "cells": {},
        "sweep": {},
    }
    if args.peer == "albumentations":
        result["mapping"] = {n: {"kind": k, "transform": c, "note": t} for n, (k, c, t) in ALBUMENTATIONS.items()}
        result["also_mapping"] = {n: {"transform": c, "note": t} for n, (c, t) in ALBUMENTATIONS_ALSO.items()}
        result["also"] = {}

    for label, x in frames.items():
        cells = result["cells"].setdefault(label, {})
        for name in names:
            for sev in sevs:
                fn = make(name, sev, x)
                if fn is None:
                    continue
                r = time_cell(fn, x.shape, args.calls, args.min_calls, args.budget)
                cells.setdefault(name, {})[str(sev)] = r
                print(f"{args.peer} {label} {name}/{sev}: {r['median_s'] * 1e3:.3f} ms ({r['calls']} calls)",
                      file=sys.stderr, flush=True)
                also = albumentations_also(name, sev) if args.peer == "albumentations" else None
                if also is not None:
                    also.set_random_seed(sev)
                    r = time_cell(lambda: also(image=x)["image"], x.shape, args.calls, args.min_calls,
                                  args.budget)
                    result["also"].setdefault(label, {}).setdefault(name, {})[str(sev)] = r
                    print(f"{args.peer} {label} {name}/{sev} (also: {ALBUMENTATIONS_ALSO[name][0]}): "
                          f"{r['median_s'] * 1e3:.3f} ms", file=sys.stderr, flush=True)
        if not args.no_sweep:
            fns = []
            for n in NAMES:
                for s in SEVERITIES:
                    f = make(n, s, x)
                    if f is not None:
                        fns.append(f)
                        if not (n in names and s in sevs):
                            f()  # first-call costs outside the sweep timing (timed cells had theirs)
            r = time_sweep(fns, args.sweeps)
            result["sweep"][label] = r
            print(f"{args.peer} {label} sweep ({r['cells']} calls): {r['median_s']:.3f} s", file=sys.stderr,
                  flush=True)
    result["machine"]["load_average_end"] = os.getloadavg()[0]

    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
