#!/usr/bin/env python3
"""Reference check of the converted model with Python onnxruntime + PIL.

Usage: python scripts/check_model.py [--model M.onnx] [--labels L.txt] [IMAGE ...]
Without images, runs every photo of assets/photos/demo.csv and compares with its label.
Preprocessing = torchvision Resize(256) (PIL bilinear, long side truncated) + CenterCrop(224),
then (x - 127) / 128 per channel, RGB, NCHW.
"""
import argparse
import csv
import os
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets")


def preprocess(path, short=256, crop=224):
    img = Image.open(path).convert("RGB")
    w, h = img.size
    if w <= h:
        size = (short, int(short * h / w))
    else:
        size = (int(short * w / h), short)
    img = img.resize(size, Image.BILINEAR)
    w, h = img.size
    top, left = int(round((h - crop) / 2.0)), int(round((w - crop) / 2.0))
    img = img.crop((left, top, left + crop, top + crop))
    x = (np.asarray(img, dtype=np.float32) - 127.0) / 128.0
    return x.transpose(2, 0, 1)[None]


def label_index(labels, name):
    """Lines equal to the name win; else lines having it as one comma-separated alias."""
    exact = [i for i, line in enumerate(labels) if line == name]
    alias = [i for i, line in enumerate(labels) if name in [a.strip() for a in line.split(",")]]
    hits = exact or alias
    return hits[0] if len(hits) == 1 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "efficientnet_lite0.onnx"))
    ap.add_argument("--labels", default=os.path.join(ROOT, "models", "imagenet_classes.txt"))
    ap.add_argument("images", nargs="*")
    args = ap.parse_args()
    labels = open(args.labels, encoding="utf-8").read().splitlines()
    if args.images:
        items = [(p, "") for p in args.images]
    else:
        manifest = os.path.join(ROOT, "photos", "demo.csv")
        with open(manifest, newline="", encoding="utf-8") as f:
            items = [(os.path.join(os.path.dirname(manifest), r["path"]), r["label"]) for r in csv.DictReader(f)]
    sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    top1_ok = top5_ok = labelled = 0
    for path, label in items:
        logits = sess.run(["logits"], {"input": preprocess(path)})[0][0].astype(np.float64)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        top5 = np.argsort(-probs)[:5]
        want = label_index(labels, label) if label else None
        tag = f"  [label: {label} = {want}]" if label else "  [no label]"
        print(f"{os.path.basename(path)}{tag}")
        for i in top5:
            print(f"  {i:4d} {probs[i]:.4f}  {labels[i]}")
        if want is not None:
            labelled += 1
            top1_ok += int(top5[0] == want)
            top5_ok += int(want in top5)
    if labelled:
        print(f"labelled photos: {labelled}, top-1 correct {top1_ok}, top-5 correct {top5_ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
