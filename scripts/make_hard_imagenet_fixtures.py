#!/usr/bin/env python3
"""Writes the Hard ImageNet preprocessing fixtures used by `src/preprocess.rs`'s tests.

Run with the project's venv (Pillow 13.0.0, numpy):

    assets/venv/bin/python scripts/make_hard_imagenet_fixtures.py

The reference rule (docs/hard-imagenet.md#data-and-preprocessing; HardImageNet `augmentations.py` `standard_resize_center_crop` and
`datasets/hard_imagenet.py`): image and mask each go through torchvision
`Resize((256, 256))` → `CenterCrop(224)` → `ToTensor`, then `mask[mask > 0] = 1`. torchvision is not
installed here, so its two PIL steps are written out as torchvision performs them on PIL images:

* `Resize((h, w))`  → `img.resize((w, h), Image.BILINEAR)` (Pillow's antialiased bilinear; a mode
  "L" mask is filtered like an image, only modes "1"/"P" fall back to NEAREST);
* `CenterCrop((th, tw))` → `img.crop((left, top, left + tw, top + th))` with
  `top = int(round((h - th) / 2.0))`, `left = int(round((w - tw) / 2.0))` (Python rounds half to
  even);
* `ToTensor` divides by 255, so `mask > 0` is "the 8-bit value after the resize is not 0".

Masks are drawn procedurally as 0/255 mode "L" images (what `robustream`'s mask loader gives for
0/255 and 0/1 files alike), plus one soft mask with intermediate values. Two RGB cases check the
image geometry at other sizes (odd margins, so the half-to-even crop offset matters).

Writes under `tests/fixtures/hard_imagenet/`: the sources, the expected views, and `cases.json`
listing `{kind, src, want, resize: [w, h], crop: [w, h]}`.
"""

import json
from pathlib import Path

import numpy as np
from PIL import Image

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "hard_imagenet"


def resize(img, w, h):
    return img.resize((w, h), Image.Resampling.BILINEAR)


def center_crop(img, tw, th):
    w, h = img.size
    top = int(round((h - th) / 2.0))
    left = int(round((w - tw) / 2.0))
    return img.crop((left, top, left + tw, top + th))


def shapes_mask(w, h, seed):
    """0/255: an ellipse, a thin diagonal bar, a one-pixel-wide line and isolated dots."""
    y, x = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(seed)
    cx, cy = w * rng.uniform(0.3, 0.6), h * rng.uniform(0.3, 0.6)
    rx, ry = w * rng.uniform(0.12, 0.3), h * rng.uniform(0.12, 0.3)
    m = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1.0
    m |= np.abs((x - 0.2 * w) - 0.5 * (y - 0.1 * h)) < 1.5  # a bar 3 px wide
    m |= (x == int(0.85 * w)) & (y > h // 5) & (y < 4 * h // 5)  # one pixel wide
    dots = rng.integers(0, [w, h], size=(12, 2))
    m[dots[:, 1], dots[:, 0]] = True
    return (m * 255).astype(np.uint8)


def soft_mask(w, h):
    """Soft values: a radial falloff (1..255) inside a disc, sparse low values (1..3) outside, as a
    JPEG-compressed mask has near its edges."""
    y, x = np.mgrid[0:h, 0:w]
    r = np.hypot(x - w / 2, y - h / 2) / (0.35 * min(w, h))
    v = np.where(r < 1, np.clip((1 - r) * 255, 1, 255), 0)
    v = np.where(((x * 7 + y * 13) % 97 == 0) & (r >= 1), 1 + (x + y) % 3, v)
    return v.astype(np.uint8)


def pattern_rgb(w, h):
    y, x = np.mgrid[0:h, 0:w]
    out = np.stack(
        [(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x * 7 + y * 11) % 256)],
        axis=-1,
    )
    out[(x // 6 + y // 6) % 2 == 0] = [250, 20, 40]
    return out.astype(np.uint8)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    cases = []
    # (name, source array, resize (w, h), crop (w, h)): Hard ImageNet's 256² → 224 at typical
    # ImageNet sizes (down-scaling both ways, one up-scaling, one unchanged), then other geometries.
    masks = [
        ("mask500x375", shapes_mask(500, 375, 1), (256, 256), (224, 224)),
        ("mask375x500", shapes_mask(375, 500, 2), (256, 256), (224, 224)),
        ("mask640x427", shapes_mask(640, 427, 3), (256, 256), (224, 224)),
        ("mask200x150", shapes_mask(200, 150, 4), (256, 256), (224, 224)),
        ("mask256x256", shapes_mask(256, 256, 5), (256, 256), (224, 224)),
        ("soft333x250", soft_mask(333, 250), (256, 256), (224, 224)),
        ("mask101x67", shapes_mask(101, 67, 6), (41, 39), (32, 32)),
    ]
    for name, arr, (rw, rh), (cw, ch) in masks:
        src = Image.fromarray(arr, "L")
        view = np.array(center_crop(resize(src, rw, rh), cw, ch))
        want = ((view > 0) * 255).astype(np.uint8)
        src.save(OUT / f"{name}.png")
        Image.fromarray(want, "L").save(OUT / f"{name}_want.png")
        cases.append({"kind": "mask", "src": f"{name}.png", "want": f"{name}_want.png",
                      "resize": [rw, rh], "crop": [cw, ch]})
    images = [
        ("rgb120x90", pattern_rgb(120, 90), (64, 64), (56, 56)),
        ("rgb50x70", pattern_rgb(50, 70), (41, 39), (32, 32)),
    ]
    for name, arr, (rw, rh), (cw, ch) in images:
        src = Image.fromarray(arr, "RGB")
        want = center_crop(resize(src, rw, rh), cw, ch)
        src.save(OUT / f"{name}.png")
        want.save(OUT / f"{name}_want.png")
        cases.append({"kind": "rgb", "src": f"{name}.png", "want": f"{name}_want.png",
                      "resize": [rw, rh], "crop": [cw, ch]})
    (OUT / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    print(f"{len(cases)} cases written to {OUT}")


if __name__ == "__main__":
    main()
