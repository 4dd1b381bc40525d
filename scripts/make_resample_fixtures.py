#!/usr/bin/env python3
"""Writes the Pillow resampling fixtures used by `src/kernels/resample.rs`'s tests.

Run with the project's venv (Pillow 13.0.0, numpy):

    assets/venv/bin/python scripts/make_resample_fixtures.py

It builds a few small deterministic source images from fixed integer formulas (a noisy RGB pattern with
hard 0/255 blocks so BICUBIC/LANCZOS overshoot and clip, a smooth-plus-noise gray one, and a wider RGB one
for strong down-scales), resizes each with `PIL.Image.resize(size, filter)` for every filter at several
sizes (down ×0.3, ~×0.5, non-integer, up ×1.7, one axis only, extreme, and both sides of Pillow 13's
switch to the vertical pass first — height shrinking by more than twice the width's pixel count), and
writes everything as PNG under `tests/fixtures/resample/`:

    src_<name>.png                       the source image
    <name>_<filter>_<w>x<h>.png          Pillow's resize of it

The Rust tests discover the files by name and require byte-exact equality.
"""

from pathlib import Path

import numpy as np
import PIL
from PIL import Image

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "resample"

FILTERS = {
    "nearest": Image.Resampling.NEAREST,
    "box": Image.Resampling.BOX,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
}


def hash_u8(x, y, c):
    """A fixed integer hash → 0..255 (uint64 arithmetic, wraps)."""
    v = (x.astype(np.uint64) * np.uint64(2654435761)
         + y.astype(np.uint64) * np.uint64(40503)
         + np.uint64(c) * np.uint64(2246822519)
         + np.uint64(12345))
    v ^= v >> np.uint64(13)
    v *= np.uint64(3266489917)
    v ^= v >> np.uint64(16)
    return (v & np.uint64(255)).astype(np.uint8)


def pattern_rgb(w, h):
    """Noise on a gradient, with saturated 0/255 blocks and a thin bright line."""
    y, x = np.mgrid[0:h, 0:w]
    out = np.zeros((h, w, 3), np.uint8)
    for c in range(3):
        grad = (x * (40 + 30 * c) // max(w - 1, 1) + y * (90 - 25 * c) // max(h - 1, 1)).astype(np.int64)
        noise = hash_u8(x, y, c).astype(np.int64)
        v = (grad + noise * (1 + c) // 3) % 256
        block = (x // 5 + y // 4 + c) % 4
        v = np.where(block == 0, 0, np.where(block == 2, 255, v))
        out[..., c] = v.astype(np.uint8)
    out[h // 3, :, :] = 255
    return out


def pattern_gray(w, h):
    """A smooth radial ramp plus small noise and a hard-edged square."""
    y, x = np.mgrid[0:h, 0:w]
    r2 = (x - w // 3) ** 2 + (y - h // 2) ** 2
    v = (r2 * 7) % 256
    v = (v + hash_u8(x, y, 7).astype(np.int64) % 23) % 256
    sq = (x >= w // 2) & (x < w // 2 + 6) & (y >= 2) & (y < 9)
    v = np.where(sq, 255, v)
    return v.astype(np.uint8)


SOURCES = {
    # name: (array, sizes)
    "rgb37x23": (
        pattern_rgb(37, 23),
        [(11, 7), (18, 11), (19, 12), (29, 17), (63, 39), (37, 13), (20, 23), (5, 3), (1, 1), (100, 9),
         (37, 40),
         (30, 8), (30, 9), (40, 22)],
    ),
    "gray37x23": (
        pattern_gray(37, 23),
        [(11, 7), (18, 11), (29, 17), (63, 39), (37, 13), (20, 23), (1, 1), (3, 50), (30, 8), (30, 9)],
    ),
    "rgb120x50": (
        pattern_rgb(120, 50),
        [(12, 5), (13, 7), (120, 9), (77, 31), (131, 4)],
    ),
}


def main():
    assert PIL.__version__ == "13.0.0", f"fixtures are for Pillow 13.0.0, this is {PIL.__version__}"
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    total = 0
    for name, (arr, sizes) in SOURCES.items():
        src = Image.fromarray(arr)
        assert src.mode in ("RGB", "L")
        path = OUT / f"src_{name}.png"
        src.save(path, optimize=True)
        total += path.stat().st_size
        for fname, f in FILTERS.items():
            for (w, h) in sizes:
                out = src.resize((w, h), f)
                path = OUT / f"{name}_{fname}_{w}x{h}.png"
                out.save(path, optimize=True)
                total += path.stat().st_size
    print(f"wrote {len(list(OUT.glob('*.png')))} files, {total} bytes, to {OUT}")


if __name__ == "__main__":
    main()
