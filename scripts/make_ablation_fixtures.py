#!/usr/bin/env python3
"""Writes the fixtures of the object scenarios (checked by `tests/scenarios/object_scenarios.rs`).

Run with the Python 3.10 venv (numpy 1.26, scipy 1.11, Pillow 10.1):

    ~/.cache/robustream/venv-ic310/bin/python scripts/make_ablation_fixtures.py

It is an independent, straightforward numpy implementation of docs/hard-imagenet.md#ablations,
docs/corner-cases.md#composition and docs/corner-cases.md#aspect-ratio-preserving-variant as
robustream documents them (src/scenario/ablation.rs, src/scenario/placement.rs), with the
connected components taken from `scipy.ndimage.label` (default structure = 4-connectivity, as Hard
ImageNet) and the patch resize from Pillow's default `Image.resize` (bicubic, as Corner Cases):

* Hard ImageNet ablations on a 96×72 textured image with an irregular multi-component mask (holes,
  components touching only diagonally, a one-pixel-wide line, objects at the image border):
  `abl_image.png`, `abl_mask.png`, `abl_gray.png`, `abl_gray_bbox.png`, `abl_tile.png`.
  u8 rules: gray 0.5 → 128; the box is [min, max) (the reference's off-by-one); tile = intended
  semantics (tiles trimmed at any object pixel, periodic continuation from the touching side, the
  right/left/below/above order on ties, gray when no tile).
* Corner Cases placements on a 224×224 image with two boxes (`place_image.png`, `place.json` with
  the normalised boxes as `--boxes` takes them and, per case, the key, the box order and the output
  file), the own background = the image with every box gray (robustream's stand-in for the
  reference's inpainting), the patch = the last box resized with Pillow's default filter, pasted with
  the reference's `utils` offsets (centre; top-right corner), square or aspect-ratio-preserving with
  the reference's `resize_short_side_safe_pil` size rule.

The sizes were chosen so that Pillow 10.1's horizontal-first pass order equals Pillow 13's (which
robustream reproduces): no case shrinks the height by more than twice the width's shrink.
"""

import json
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "objects"
GRAY = 128


def texture(h, w, seed):
    """A smooth colour pattern with fine noise: copied pixels are recognisable, PNGs stay small."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack(
        [
            128 + 90 * np.sin(x / 7.0 + y / 11.0),
            128 + 90 * np.cos(y / 5.0 - x / 13.0),
            (x * 3 + y * 2) % 256,
        ],
        axis=-1,
    )
    noise = rng.integers(-12, 13, size=(h, w, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def ablation_mask(h, w):
    """Object pixels (bool): blobs with holes, diagonal-only contacts, a thin line, border objects."""
    y, x = np.mgrid[0:h, 0:w]
    m = ((x - 30) ** 2 / 14.0**2 + (y - 30) ** 2 / 10.0**2) <= 1.0  # ellipse
    m &= ~(((x - 30) ** 2 + (y - 30) ** 2) <= 9)  # with a hole
    m |= (x >= 60) & (x < 75) & (y >= 10) & (y < 22)  # rectangle
    m[22:30, 75:83] = True  # a square touching the rectangle only at a corner
    m[40:62, 50] = True  # a one-pixel-wide vertical line (empty exclusive box)
    m[55:72, 0:12] = True  # touches the left and bottom borders
    m[45:50, 86:96] = True  # touches the right border
    m[60:66, 70:90] = True
    m[63:66, 58:70] = True  # an L joined to the previous bar
    return m


def exclusive_box(obj):
    """(x0, y0, x1, y1) with x1, y1 the last object column and row: the box [x0, x1) × [y0, y1)."""
    ys, xs = np.nonzero(obj)
    return xs.min(), ys.min(), xs.max(), ys.max()


def gray(img, obj):
    out = img.copy()
    out[obj] = GRAY
    return out


def gray_bbox(img, obj):
    out = img.copy()
    x0, y0, x1, y1 = exclusive_box(obj)
    out[y0:y1, x0:x1] = GRAY
    return out


def free_run(blocked):
    """How many leading entries are False."""
    n = 0
    for b in blocked:
        if b:
            break
        n += 1
    return n


def tile(img, obj):
    h, w = obj.shape
    labels, count = ndimage.label(obj)
    out = img.copy()
    for j in range(1, count + 1):
        x0, y0, x1, y1 = exclusive_box(labels == j)
        bw, bh = x1 - x0, y1 - y0
        if bw <= 0 or bh <= 0:
            continue
        right = free_run(obj[y0:y1, x].any() for x in range(x1, min(x1 + bw, w)))
        left = free_run(obj[y0:y1, x].any() for x in range(x0 - 1, max(x0 - bw, 0) - 1, -1))
        below = free_run(obj[y, x0:x1].any() for y in range(y1, min(y1 + bh, h)))
        above = free_run(obj[y, x0:x1].any() for y in range(y0 - 1, max(y0 - bh, 0) - 1, -1))
        areas = [right * bh, left * bh, below * bw, above * bw]
        best = int(np.argmax(areas))  # the first of equal maxima
        if areas[best] == 0:
            out[y0:y1, x0:x1] = GRAY
            continue
        k = np.arange(bw)
        r = np.arange(bh)
        if best == 0:
            cols = x1 + (k - bw) % right
            out[y0:y1, x0:x1] = out[y0:y1][:, cols]
        elif best == 1:
            cols = (x0 - left) + k % left
            out[y0:y1, x0:x1] = out[y0:y1][:, cols]
        elif best == 2:
            rows = y1 + (r - bh) % below
            out[y0:y1, x0:x1] = out[rows][:, x0:x1]
        else:
            rows = (y0 - above) + r % above
            out[y0:y1, x0:x1] = out[rows][:, x0:x1]
    return out


def ar_size(w, h, s, cap=224):
    """Corner Cases' resize_short_side_safe_pil size rule
    (docs/corner-cases.md#aspect-ratio-preserving-variant)."""
    scale = s / min(h, w)
    nw, nh = int(w * scale), int(h * scale)
    if max(nh, nw) > cap:
        scale = cap / max(nh, nw)
        nw, nh = int(nw * scale), int(nh * scale)
    return nw, nh


def paste(canvas, patch, where):
    """The reference's `utils` placement on a square canvas (centre, or the top-right corner)."""
    out = canvas.copy()
    size = canvas.shape[0]
    oh, ow = patch.shape[:2]
    if where == "centre":
        c = size // 2
        sx, sy = max(0, c - oh // 2), max(0, c - ow // 2)
        ex, ey = min(size, sx + oh), min(size, sy + ow)
        ox = 0 if c - oh // 2 >= 0 else abs(c - oh // 2)
        oy = 0 if c - ow // 2 >= 0 else abs(c - ow // 2)
    else:
        sx, sy = 0, max(0, size - ow)
        ex, ey = sx + min(oh, size - sx), sy + min(ow, size - sy)
        ox, oy = 0, 0
    out[sx:ex, sy:ey] = patch[ox : ox + (ex - sx), oy : oy + (ey - sy)]
    return out


def main():
    OUT.mkdir(parents=True, exist_ok=True)

    img = texture(72, 96, 1)
    obj = ablation_mask(72, 96)
    Image.fromarray(img).save(OUT / "abl_image.png")
    Image.fromarray((obj * 255).astype(np.uint8)).save(OUT / "abl_mask.png")
    Image.fromarray(gray(img, obj)).save(OUT / "abl_gray.png")
    Image.fromarray(gray_bbox(img, obj)).save(OUT / "abl_gray_bbox.png")
    Image.fromarray(tile(img, obj)).save(OUT / "abl_tile.png")

    img = texture(224, 224, 2)
    Image.fromarray(img).save(OUT / "place_image.png")
    # Pixel boxes (x0, y0, x1, y1), exclusive ends: a wide one and a tall one.
    boxes = {"wide": (30, 40, 130, 110), "tall": (150, 10, 190, 214)}
    norm = {k: " ".join(repr(v / 224) for v in b) for k, b in boxes.items()}
    background = img.copy()
    for x0, y0, x1, y1 in boxes.values():
        background[y0:y1, x0:x1] = GRAY
    cases = []
    # (key, object = the last box, output)
    for key, last in [
        ("placement/own-gray/centre/56", "wide"),
        ("placement/own-gray/top-right/84", "wide"),
        ("placement/ar/own-gray/top-right/112", "wide"),
        ("placement/ar/own-gray/centre/112", "tall"),  # capped at 224
        ("placement/ar/own-gray/centre/56", "tall"),
    ]:
        first = "tall" if last == "wide" else "wide"
        x0, y0, x1, y1 = boxes[last]
        crop = img[y0:y1, x0:x1]
        s = int(key.rsplit("/", 1)[1])
        size = ar_size(x1 - x0, y1 - y0, s) if "/ar/" in key else (s, s)
        patch = np.asarray(Image.fromarray(crop).resize(size))
        where = "centre" if "/centre/" in key else "top-right"
        name = key.replace("/", "_") + ".png"
        Image.fromarray(paste(background, patch, where)).save(OUT / name)
        cases.append({"key": key, "boxes": f"{norm[first]};{norm[last]}", "expected": name})
    (OUT / "place.json").write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    print(f"wrote {len(list(OUT.iterdir()))} files to {OUT}")


if __name__ == "__main__":
    main()
