#!/usr/bin/env python3
"""Python onnxruntime peer benchmark: fixed seeded random input, one JSON line on stdout.

Usage: python scripts/bench_python_ort.py MODEL.onnx [--threads T] [--batch B] [--iters N] [--warmup W]
"""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    h, w = inp.shape[2], inp.shape[3]
    x = np.random.default_rng(args.seed).standard_normal((args.batch, 3, h, w)).astype(np.float32)
    feed = {inp.name: x}

    for _ in range(args.warmup):
        sess.run(None, feed)
    times = []
    for _ in range(args.iters):
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    median, p90 = float(np.median(times)), float(np.percentile(times, 90))
    print(json.dumps({
        "runtime": f"python-onnxruntime {ort.__version__}", "model": args.model,
        "threads": args.threads, "batch": args.batch, "iters": args.iters, "warmup": args.warmup,
        "median_ms": round(median, 3), "p90_ms": round(p90, 3),
        "images_per_s": round(args.batch * 1e3 / median, 2),
    }))


if __name__ == "__main__":
    main()
