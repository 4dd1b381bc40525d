#!/usr/bin/env python3
"""Writes OpenCV reference outputs for the XIMAGENET-12 background kernels (docs/ximagenet.md#scenarios).

XIMAGENET-12 builds its scenarios with OpenCV on 8-bit images: GaussianBlur 15x15 sigma 3 and 9x9 sigma 4,
addWeighted(img, 1.5, blur, 0.9, 1.9), the 8-bit HSV round trip with a replaced or shifted hue, and (our
choice for its code-less "grayscale" scenario) cvtColor to GRAY. `src/kernels/opencv.rs`
reimplements those operations; this script records what OpenCV 4.8.1 (opencv-python-headless 4.8.1.78, the
build in the throwaway venv described in scripts/make_corruption_fixtures.py) returns, so the Rust tests can
compare byte for byte.

Run from the repository root:

    ~/.cache/robustream/venv-ic310/bin/python scripts/make_background_fixtures.py

Before writing anything the script CHECKS, exhaustively where the input space allows, the arithmetic the Rust
port implements (the numpy models below are our own derivation from the behaviour, written for this check):

* GaussianBlur on u8 = OpenCV's fixed-point path: the kernel in 1/256 steps (error-diffused rounding of the
  Gaussian from the outside in, the centre tap takes the remainder so the taps sum to 256), a horizontal
  then a vertical pass in exact integers, result (sum + 2^15) >> 16; border reflect-101. Checked on random
  images of several sizes, including sizes smaller than the kernel radius.
* RGB -> HSV (8-bit, H in 0..179): OpenCV's integer formula with its rounded 12-bit division tables.
  Checked on all 2^24 colours.
* HSV -> RGB (8-bit): float32 arithmetic in which the two products under `1 - s*h` and `1 - s*(1-h)` are
  fused (FMA); the columns OpenCV's SIMD loop covers (per row, whole blocks of 32 pixels on this AVX2
  build) are TRUNCATED to u8, the remaining columns of each row are ROUNDED half to even. Checked on all
  181 x 256 x 256 (H 0..180, S, V) inputs in both layouts.
* addWeighted(a, 1.5, b, 0.9, 1.9) on u8 = float32 fma(a, 1.5, fma(b, 0.9, 1.9)) rounded half to even and
  saturated, for the elements of the whole (continuous) buffer up to the last multiple of 16; the last
  (length mod 16) elements are computed unfused, (a*1.5 + b*0.9) + 1.9. Checked on all 65536 (a, b) pairs
  in both paths and on the tail positions.
* RGB -> GRAY (8-bit) = (9798 R + 19235 G + 3735 B + 2^14) >> 15. Checked on all 2^24 colours, vector and
  scalar layouts.

It writes, under tests/fixtures/background/ (PNG; RGB images hold R, G, B or H, S, V in their channels):

    input.png                37x29 random RGB input (seed 7) with a first row of hand-picked colours
    blur15_s3.png            GaussianBlur(input, (15, 15), 3)
    blur9_s4.png             GaussianBlur(input, (9, 9), 4)
    tiny_WxH.png, tiny_WxH_blur15.png, tiny_WxH_blur9.png   1x1, 3x2 and 7x5 inputs and their blurs
    bright.png               addWeighted(input, 1.5, blur9_s4, 0.9, 1.9) (1073 x 3 = 3219 elements: 3 in
                             the unfused tail)
    addweighted_vector.png   256x256 grey: value at (row a, column b) from the fused (vector) path
    addweighted_scalar.png   the same from the unfused (scalar) path
    hsv.png                  cvtColor(input, RGB2HSV)
    hue_H.png                input with every hue set to H (H = 0, 29, 45, 120, 150, 180), back to RGB
                             (37 columns: 32 vector + 5 scalar per row)
    rainbow_K.png            input with H <- ((H + K) mod 256) mod 180 (u8 wrap as in the reference),
                             back to RGB (K = 0, 40, 90)
    gray.png                 cvtColor(input, RGB2GRAY)
    hsv2rgb_in.png           64x64 random (H 0..180, S, V) triples, the first row hand-picked
    hsv2rgb_vector.png       their RGB in a layout that is all vector (64 columns)
    hsv2rgb_scalar.png       their RGB in a layout that is all scalar (rows of 16 pixels)
    rgb2hsv_in.png, rgb2hsv.png   64x64 random colours and their HSV
    README.md                versions and what was checked
"""

import os

os.environ["OMP_NUM_THREADS"] = "1"

import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

import cv2  # noqa: E402

cv2.setNumThreads(1)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "background"
F32 = np.float32
LD = np.longdouble


# ---------------------------------------------------------------------------------------------------------
# numpy models of the arithmetic (checked against OpenCV below)

def gauss_q8(n: int, sigma: float) -> np.ndarray:
    """OpenCV's 8-bit fixed-point Gaussian kernel: taps in 1/256, summing to exactly 256."""
    half = n // 2
    raw = [np.exp(-((i - half) ** 2) / (2.0 * sigma * sigma)) for i in range(half)]
    total = 2.0 * sum(raw) + 1.0
    taps = [0] * n
    err, used = 0.0, 0
    for i in range(half):
        want = raw[i] / total * 256.0 + err
        q = int(np.rint(want))
        err = want - q
        taps[i] = taps[n - 1 - i] = q
        used += q
    taps[half] = 256 - 2 * used
    return np.array(taps, np.int64)


def blur_model(img: np.ndarray, n: int, sigma: float) -> np.ndarray:
    k = gauss_q8(n, sigma)
    r = n // 2
    h, w = img.shape[:2]
    # np.pad 'reflect' is whole-sample symmetric (reflect-101), repeated for pads wider than the image.
    p = np.pad(img.astype(np.int64), ((r, r), (r, r), (0, 0)), mode="reflect")
    horiz = sum(k[j] * p[:, j:j + w] for j in range(n))
    vert = sum(k[j] * horiz[j:j + h] for j in range(n))
    return ((vert + (1 << 15)) >> 16).astype(np.uint8)


def rgb2hsv_model(rgb: np.ndarray) -> np.ndarray:
    r, g, b = (rgb[..., c].astype(np.int64) for c in range(3))
    v = np.maximum(np.maximum(r, g), b)
    diff = v - np.minimum(np.minimum(r, g), b)
    sdiv = np.array([0] + [int(np.rint((255 << 12) / i)) for i in range(1, 256)], np.int64)
    hdiv = np.array([0] + [int(np.rint((180 << 12) / (6.0 * i))) for i in range(1, 256)], np.int64)
    s = (diff * sdiv[v] + 2048) >> 12
    num = np.where(v == r, g - b, np.where(v == g, b - r + 2 * diff, r - g + 4 * diff))
    h = (num * hdiv[diff] + 2048) >> 12
    h = np.where(h < 0, h + 180, h)
    return np.stack([h, s, v], -1).astype(np.uint8)


def _fma(a, b, c):
    # float32 fused multiply-add: the exact product and sum in 64-bit-mantissa long double, one rounding
    # to float32 (exact here: the operands are float32 and the checks below agree on every input).
    return (a.astype(LD) * np.asarray(b).astype(LD) + LD(c)).astype(F32)


def hsv2rgb_model(hsv: np.ndarray, vector: bool) -> np.ndarray:
    flat = hsv.reshape(-1, 3)
    inv = F32(1.0) / F32(255.0)
    s = flat[:, 1].astype(F32) * inv
    v = flat[:, 2].astype(F32) * inv
    h = flat[:, 0].astype(F32) * (F32(6.0) / F32(180.0))
    whole = np.trunc(h).astype(F32)
    frac = (h - whole).astype(F32)
    sector = (whole.astype(np.int64)) % 6
    one = F32(1.0)
    tabs = np.stack([v, v * (one - s), v * _fma(-s, frac, 1.0), v * _fma(-s, one - frac, 1.0)], -1)
    # (R, G, B) taken from tabs[...] per sector.
    pick = np.array([[0, 3, 1], [2, 0, 1], [1, 0, 3], [1, 2, 0], [3, 1, 0], [0, 1, 2]])
    rgb = np.take_along_axis(tabs, pick[sector], -1) * F32(255.0)
    out = np.trunc(rgb) if vector else np.rint(rgb)
    return np.clip(out, 0, 255).astype(np.uint8).reshape(hsv.shape)


def hsv2rgb_image_model(hsv: np.ndarray) -> np.ndarray:
    """Per row: whole blocks of 32 pixels on the vector path, the rest scalar (this AVX2 build)."""
    w = hsv.shape[1]
    cut = w // 32 * 32
    out = np.empty_like(hsv)
    out[:, :cut] = hsv2rgb_model(hsv[:, :cut], True)
    out[:, cut:] = hsv2rgb_model(hsv[:, cut:], False)
    return out


def add_weighted_model(a: np.ndarray, b: np.ndarray, separate: bool = False) -> np.ndarray:
    """One continuous buffer; `separate`: every element is its own one-element call (all scalar)."""
    fa = a.reshape(-1).astype(F32)
    fb = b.reshape(-1).astype(F32)
    fused = _fma(fa, F32(1.5), _fma(fb, F32(0.9), F32(1.9)))
    plain = (fa * F32(1.5) + fb * F32(0.9)) + F32(1.9)
    cut = 0 if separate else fa.size // 16 * 16
    val = np.concatenate([fused[:cut], plain[cut:]])
    return np.clip(np.rint(val), 0, 255).astype(np.uint8).reshape(a.shape)


def gray_model(rgb: np.ndarray) -> np.ndarray:
    r, g, b = (rgb[..., c].astype(np.int64) for c in range(3))
    return ((9798 * r + 19235 * g + 3735 * b + (1 << 14)) >> 15).astype(np.uint8)


# ---------------------------------------------------------------------------------------------------------
# exhaustive checks

def all_colours() -> np.ndarray:
    v = np.arange(1 << 24, dtype=np.uint32)
    return np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], -1).astype(np.uint8).reshape(4096, 4096, 3)


def all_hsv() -> np.ndarray:
    h = np.repeat(np.arange(181, dtype=np.uint32), 65536)
    sv = np.tile(np.arange(65536, dtype=np.uint32), 181)
    return np.stack([h, sv >> 8, sv & 255], -1).astype(np.uint8)


def check(name: str, ok: bool) -> None:
    print(f"  {name}: {'ok' if ok else 'MISMATCH'}")
    if not ok:
        sys.exit(f"the model of {name} does not match OpenCV {cv2.__version__}; fixtures not written")


def run_checks(rng: np.random.Generator) -> list:
    print("checking the models against OpenCV", cv2.__version__)
    done = []
    for n, sigma in [(15, 3.0), (9, 4.0)]:
        for shape in [(1, 1, 3), (2, 3, 3), (5, 7, 3), (29, 37, 3), (224, 224, 3), (64, 333, 3)]:
            img = rng.integers(0, 256, shape, dtype=np.uint8)
            check(f"GaussianBlur {n}x{n} sigma {sigma} on {shape[1]}x{shape[0]}",
                  np.array_equal(cv2.GaussianBlur(img, (n, n), sigma), blur_model(img, n, sigma)))
    done.append("GaussianBlur 15x15 sigma 3 and 9x9 sigma 4 on 1x1, 3x2, 7x5, 37x29, 224x224, 333x64")

    colours = all_colours()
    check("RGB2HSV on all 2^24 colours",
          np.array_equal(cv2.cvtColor(colours, cv2.COLOR_RGB2HSV), rgb2hsv_model(colours)))
    done.append("RGB2HSV on all 2^24 colours")
    gray = cv2.cvtColor(colours, cv2.COLOR_RGB2GRAY)
    check("RGB2GRAY on all 2^24 colours (vector layout)", np.array_equal(gray, gray_model(colours)))
    narrow = colours.reshape(-1, 8, 3)
    check("RGB2GRAY on all 2^24 colours (rows of 8: scalar layout)",
          np.array_equal(cv2.cvtColor(narrow, cv2.COLOR_RGB2GRAY), gray_model(narrow)))
    done.append("RGB2GRAY on all 2^24 colours, rows of 4096 and of 8 pixels")

    hsv = all_hsv()
    wide = hsv.reshape(-1, 4096, 3)
    check("HSV2RGB vector path on all H 0..180 x S x V",
          np.array_equal(cv2.cvtColor(wide, cv2.COLOR_HSV2RGB), hsv2rgb_model(wide, True)))
    pad = (-hsv.shape[0]) % 31
    narrow = np.concatenate([hsv, np.zeros((pad, 3), np.uint8)]).reshape(-1, 31, 3)
    check("HSV2RGB scalar path on all H 0..180 x S x V (rows of 31)",
          np.array_equal(cv2.cvtColor(narrow, cv2.COLOR_HSV2RGB), hsv2rgb_model(narrow, False)))
    for w in [33, 45, 63, 64, 65, 100]:
        sample = hsv[rng.integers(0, hsv.shape[0], 200 * w)].reshape(200, w, 3)
        check(f"HSV2RGB column rule, width {w}",
              np.array_equal(cv2.cvtColor(sample, cv2.COLOR_HSV2RGB), hsv2rgb_image_model(sample)))
    done.append("HSV2RGB on all 181 x 256 x 256 inputs (vector and scalar layouts); the per-row column rule "
                "on widths 33, 45, 63, 64, 65, 100")

    a = np.repeat(np.arange(256, dtype=np.uint8), 256).reshape(256, 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256).reshape(256, 256)
    vec = cv2.addWeighted(a, 1.5, b, 0.9, 1.9)
    check("addWeighted vector path on all (a, b)", np.array_equal(vec, add_weighted_model(a, b)))
    scal = np.array([cv2.addWeighted(np.array([[x]], np.uint8), 1.5, np.array([[y]], np.uint8), 0.9, 1.9)[0, 0]
                     for x, y in zip(a.reshape(-1), b.reshape(-1))], np.uint8).reshape(256, 256)
    check("addWeighted scalar path on all (a, b)",
          np.array_equal(scal, add_weighted_model(a, b, separate=True)))
    for length in [1, 15, 16, 17, 31, 33, 200, 3219]:
        x = rng.integers(0, 256, (1, length), dtype=np.uint8)
        y = rng.integers(0, 256, (1, length), dtype=np.uint8)
        check(f"addWeighted tail rule, {length} elements",
              np.array_equal(cv2.addWeighted(x, 1.5, y, 0.9, 1.9), add_weighted_model(x, y)))
        x3 = rng.integers(0, 256, (3, length, 3), dtype=np.uint8)
        y3 = rng.integers(0, 256, (3, length, 3), dtype=np.uint8)
        check(f"addWeighted tail rule, 3x{length}x3 (one continuous buffer)",
              np.array_equal(cv2.addWeighted(x3, 1.5, y3, 0.9, 1.9), add_weighted_model(x3, y3)))
    done.append("addWeighted(1.5, 0.9, 1.9) on all 65536 (a, b) pairs in both paths; the tail rule on "
                "buffers of 1..3219 elements")
    return done, vec, scal


# ---------------------------------------------------------------------------------------------------------
# fixtures

def save(arr: np.ndarray, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(OUT / name, optimize=True, compress_level=9)


def main() -> None:
    rng = np.random.default_rng(7)
    done, aw_vec, aw_scal = run_checks(np.random.default_rng(1))

    img = rng.integers(0, 256, (29, 37, 3), dtype=np.uint8)
    special = [(0, 0, 0), (255, 255, 255), (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 0, 1), (255, 1, 0),
               (128, 128, 128), (1, 0, 0), (254, 255, 255), (200, 10, 190), (10, 200, 190), (255, 0, 5),
               (90, 0, 255), (3, 2, 1), (255, 255, 0)]
    img[0, :len(special)] = np.array(special, np.uint8)
    save(img, "input.png")
    b15 = cv2.GaussianBlur(img, (15, 15), 3)
    b9 = cv2.GaussianBlur(img, (9, 9), 4)
    save(b15, "blur15_s3.png")
    save(b9, "blur9_s4.png")
    for w, h in [(1, 1), (3, 2), (7, 5)]:
        t = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        save(t, f"tiny_{w}x{h}.png")
        save(cv2.GaussianBlur(t, (15, 15), 3), f"tiny_{w}x{h}_blur15.png")
        save(cv2.GaussianBlur(t, (9, 9), 4), f"tiny_{w}x{h}_blur9.png")
    save(cv2.addWeighted(img, 1.5, b9, 0.9, 1.9), "bright.png")
    save(aw_vec, "addweighted_vector.png")
    save(aw_scal, "addweighted_scalar.png")

    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV)
    save(hsv, "hsv.png")
    for hue in [0, 29, 45, 120, 150, 180]:
        x = hsv.copy()
        x[:, :, 0] = hue
        save(cv2.cvtColor(x, cv2.COLOR_HSV2RGB), f"hue_{hue}.png")
    for k in [0, 40, 90]:
        x = hsv.copy()
        x[:, :, 0] = (x[:, :, 0] + k) % 180  # u8 + small int stays u8 in numpy: wraps at 256 first
        assert x.dtype == np.uint8
        save(cv2.cvtColor(x, cv2.COLOR_HSV2RGB), f"rainbow_{k}.png")
    save(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), "gray.png")

    trip = np.stack([rng.integers(0, 181, 4096), rng.integers(0, 256, 4096), rng.integers(0, 256, 4096)],
                    -1).astype(np.uint8)
    firsts = [(0, 255, 255), (180, 255, 255), (179, 255, 255), (30, 255, 255), (60, 255, 255), (90, 255, 255),
              (120, 255, 255), (150, 255, 255), (0, 0, 200), (0, 1, 1), (1, 90, 85), (1, 153, 25), (180, 1, 1),
              (45, 128, 77), (100, 255, 1), (170, 200, 255)]
    trip[:len(firsts)] = np.array(firsts, np.uint8)
    trip = trip.reshape(64, 64, 3)
    save(trip, "hsv2rgb_in.png")
    save(cv2.cvtColor(trip, cv2.COLOR_HSV2RGB), "hsv2rgb_vector.png")
    save(cv2.cvtColor(trip.reshape(-1, 16, 3), cv2.COLOR_HSV2RGB).reshape(64, 64, 3), "hsv2rgb_scalar.png")
    cols = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    save(cols, "rgb2hsv_in.png")
    save(cv2.cvtColor(cols, cv2.COLOR_RGB2HSV), "rgb2hsv.png")

    freeze = subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True).stdout
    cpu = "unknown"
    try:
        flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0]
        cpu = ", ".join(f for f in ["avx2", "fma", "avx512f"] if f" {f}" in flags)
    except (OSError, IndexError):
        pass
    lines = [
        "# Background fixtures: OpenCV outputs for the XIMAGENET-12 kernels",
        "",
        "Generated by `scripts/make_background_fixtures.py` (do not edit by hand; re-run it) with "
        f"OpenCV {cv2.__version__} (opencv-python-headless), numpy {np.__version__}, Python "
        f"{platform.python_version()}, on an x86-64 CPU with {cpu}.",
        "",
        "Checked before writing (the script stops on any mismatch):",
        "",
        *[f"- {d}" for d in done],
        "",
        "`pip freeze --all`:",
        "",
        "```",
        freeze.strip(),
        "```",
        "",
    ]
    (OUT / "README.md").write_text("\n".join(lines))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
