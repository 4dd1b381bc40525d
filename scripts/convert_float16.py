#!/usr/bin/env python3
"""Convert a float32 ONNX classifier to float16 -- numpy + onnx only (our own converter).

Usage:
  python scripts/convert_float16.py IN.onnx OUT.onnx [--io float32|float16]
  python scripts/convert_float16.py --check OUT.onnx [IN.onnx] [--bench N]

What it does (docs/model-description.md#float16-models):
- Every float32 initializer (and Constant tensor) becomes float16, rounded to nearest even. A finite
  value beyond float16's range (|x| > 65504) is clamped to +-65504 and counted, never turned into
  inf; values that round to zero or to a subnormal are counted too (the line on stderr).
- Every float32 tensor of the graph becomes float16, so the ops run in half precision, except the
  ops outside FLOAT16_OPS: those stay float32 with a Cast on each side (see FLOAT16_OPS for why).
- The model's input and output stay float32, with one Cast at each end (`--io float32`, the
  default), or become float16 (`--io float16`).

Why float32 I/O is the default (measured on this repository's 2-core CPU, EfficientNet-Lite0,
ONNX Runtime 1.31.1, docs/model-description.md#float16-models has the numbers): the engine feeds
either kind -- a float16 input is converted on the host from the float32 batch it builds anyway
(src/engine/onnx.rs) -- so the choice is about where the conversion runs and what the model asks of
its users. With the Casts inside the graph
  * the fp16 model has the very interface of the fp32 one (same description keys, same tensor types
    as every other tool and the Python peers expect), so fp32 vs fp16 is a change of the onnx file
    and nothing else;
  * on a GPU the conversion is one elementwise kernel on the device over data already there, instead
    of a pass over the batch on the host CPU, which in robustream is the busy side (workers make the
    scenario variants there); the cost is twice the bytes over PCIe for the input (602 KB instead of
    301 KB a 224x224 image), which at PCIe 4/5 rates is tens of microseconds a batch of 64;
  * on the CPU it makes no difference: ORT runs both as float32 (below) and, in one interleaved
    run (`--check --bench 30`, 2 threads), the fp16 model took x1.19 / x1.47 the fp32 time at batch
    1 / 8 with float32 I/O and x1.23 / x1.46 with float16 I/O (host conversion included).
float16 I/O stays available for a deployment that feeds half-precision tensors itself.

Why ORT's CPU provider is slower with this model than with the fp32 one (x1.2 at batch 1, x1.5 at
batch 8 here): it has no float16 kernels for these ops, so at session start its InsertCastTransformer
runs the nodes in float32 between Casts (ONNX Runtime docs, "Create Float16 and Mixed Precision
Models"; onnxruntime/core/optimizer/insert_cast_transformer.h). In the optimised graph it saves, the
whole network is one float32 island: the weights are cast back to float32 once (folded into float32
initializers), the input Cast pair is removed, and the math is float32 with float16-rounded
weights. What it loses is fusion: the ReLU6 bounds are now Casts of float16 constants rather than
constants, so Conv+Clip is not fused and 33 Clips run on their own, each between NCHWc layout
reorders. So on the CPU a float16 model measures the cost of rounding the weights, at a loss of
speed, and nothing more; the gains of float16 -- half the memory traffic and Tensor Cores -- are on
GPUs (CUDA, TensorRT providers), where every op here has a float16 kernel.
"""
import argparse
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
FP16_MAX = float(np.finfo(np.float16).max)  # 65504
FP16_TINY = float(np.finfo(np.float16).tiny)  # 2**-14, the smallest normal float16

# Ops converted to float16. They either move values without arithmetic (Flatten, Reshape, Concat, ...)
# or do arithmetic whose float16 result stays within half an ulp or so of the float32 one:
# elementwise ops, and the dot products / window sums of Conv, Gemm, MatMul and the pools, which
# every float16 kernel we target (CUDA's cuDNN/cuBLAS, TensorRT) accumulates in float32.
# Everything else is kept float32 between Casts, in particular the ops whose float16 versions are
# numerically unsafe: Exp / Pow / Softmax / LogSoftmax (exp overflows float16 above 11.09 and a
# softmax over 1000 classes sums many small terms), Reduce* and the normalisations
# (BatchNormalization / InstanceNormalization / LayerNormalization: a variance of small values
# underflows, a sum of squares overflows), Sqrt / Reciprocal / Div-by-small (range), and any op we
# have not reviewed. EfficientNet-Lite0 as scripts/convert_efficientnet_lite0.py makes it has only
# Conv (BatchNorm folded in), Clip (ReLU6), Add, GlobalAveragePool, Flatten and Gemm, so nothing
# there needs float32; the model's softmax is applied by robustream in float32 after the output.
FLOAT16_OPS = frozenset("""
    Conv ConvTranspose Gemm MatMul GlobalAveragePool AveragePool MaxPool GlobalMaxPool
    Clip Relu LeakyRelu PRelu Sigmoid HardSigmoid HardSwish Tanh Add Sub Mul Max Min Neg Abs
    Flatten Reshape Squeeze Unsqueeze Transpose Concat Split Slice Pad Identity Gather Cast Constant
""".split())


def to_float16(x):
    """float32 array -> (float16 array, counts): finite overflow clamped to +-65504, not inf."""
    x = np.asarray(x, dtype=np.float32)
    finite = np.isfinite(x)
    over = finite & (np.abs(x) > FP16_MAX)
    h = np.where(over, np.sign(x) * FP16_MAX, x).astype(np.float16)
    nz = finite & (x != 0)
    counts = {
        "values": int(x.size),
        "clamped": int(over.sum()),
        "to_zero": int((nz & (h == 0)).sum()),
        "subnormal": int((nz & (h != 0) & (np.abs(h) < FP16_TINY)).sum()),
    }
    return h, counts


def _add(total, counts):
    for k, v in counts.items():
        total[k] = total.get(k, 0) + v


def _elem_types(model):
    """name -> elem type of every tensor onnx's type inference knows."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    g = inferred.graph
    types = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.HasField("tensor_type"):
            types[vi.name] = vi.type.tensor_type.elem_type
    for t in g.initializer:
        types[t.name] = t.data_type
    return types


def convert(model, io="float32"):
    """Returns (float16 model, stats dict). `io`: the element type of graph inputs and outputs."""
    g = model.graph
    for node in g.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            raise ValueError(f"node {node.name or node.op_type}: subgraphs (If/Loop/Scan) are not supported")
    types = _elem_types(model)
    io_type = F32 if io == "float32" else F16
    is_float = lambda name: name != "" and types.get(name) == F32  # noqa: E731
    graph_outputs = {o.name for o in g.output if is_float(o.name)}
    stats = {"values": 0, "clamped": 0, "to_zero": 0, "subnormal": 0, "initializers": 0,
             "kept_float32": {}, "casts": 0}

    # avail[name][elem type] = the tensor name holding that version of `name`.
    avail = {}
    inits = {t.name: t for t in g.initializer}
    for i in g.input:
        if is_float(i.name) and i.name not in inits:
            avail[i.name] = {io_type: i.name}
    fp16_users = {n for node in g.node if node.op_type in FLOAT16_OPS for n in node.input}
    new_inits = []
    for t in g.initializer:
        if t.data_type != F32:
            new_inits.append(t)
            continue
        if t.name in fp16_users or not any(t.name in node.input for node in g.node):
            h, counts = to_float16(numpy_helper.to_array(t))
            _add(stats, counts)
            stats["initializers"] += 1
            new_inits.append(numpy_helper.from_array(h, t.name))
            avail[t.name] = {F16: t.name}
        else:  # read by float32-kept nodes only: stays exact
            new_inits.append(t)
            avail[t.name] = {F32: t.name}

    nodes = []
    suffix = {F16: "__fp16", F32: "__fp32"}

    def version(name, want):
        """The name of `name` as `want`, inserting a Cast (or an exact initializer) if needed."""
        have = avail[name]
        if want in have:
            return have[want]
        new = name + suffix[want]
        if name in inits and inits[name].data_type == F32 and want == F32:
            # the exact float32 values under a second name, not a Cast of the rounded ones
            new_inits.append(numpy_helper.from_array(numpy_helper.to_array(inits[name]), new))
        else:
            (src,) = have.values()
            nodes.append(helper.make_node("Cast", [src], [new], name=new + ".cast", to=want))
            stats["casts"] += 1
        have[want] = new
        return new

    for node in g.node:
        half = node.op_type in FLOAT16_OPS
        native = F16 if half else F32
        if not half:
            stats["kept_float32"][node.op_type] = stats["kept_float32"].get(node.op_type, 0) + 1
        node.input[:] = [version(n, native) if is_float(n) else n for n in node.input]
        if half and node.op_type == "Cast" and node.attribute[0].i == F32:
            node.attribute[0].i = F16
        if half and node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value" and a.t.data_type == F32:
                    h, counts = to_float16(numpy_helper.to_array(a.t))
                    _add(stats, counts)
                    a.t.CopyFrom(numpy_helper.from_array(h, a.t.name))
                elif a.name in ("value_float", "value_floats"):
                    raise ValueError(f"Constant {node.name}: {a.name} is not supported")
        outs = []
        for n in node.output:
            if is_float(n):
                name = n if (n not in graph_outputs or native == io_type) else n + suffix[native]
                avail[n] = {native: name}
                outs.append(name)
            else:
                outs.append(n)
        node.output[:] = outs
        nodes.append(node)

    for o in g.output:
        if o.name in graph_outputs and avail[o.name].get(io_type) != o.name:
            (src,) = avail[o.name].values()
            nodes.append(helper.make_node("Cast", [src], [o.name], name=o.name + ".cast", to=io_type))
            stats["casts"] += 1
    for vi in list(g.input) + list(g.output):
        if is_float(vi.name) and vi.name not in inits:
            vi.type.tensor_type.elem_type = io_type
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(new_inits)
    del g.value_info[:]
    model.doc_string = (model.doc_string + " " if model.doc_string else "") + (
        f"Converted to float16 by robustream scripts/convert_float16.py (I/O {io}).")
    return model, stats


# ---------------------------------------------------------------- --check

def _session(path, threads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def _softmax(z):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _inputs(sess, batch, seed):
    """Seeded inputs in the demo description's value range: (u8 - 127) / 128, smooth like photos."""
    inp = sess.get_inputs()[0]
    h, w = inp.shape[2], inp.shape[3]
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, size=(batch, 3, h // 8, w // 8)).astype(np.float32)
    img = np.repeat(np.repeat(coarse, 8, axis=2), 8, axis=3)
    img += rng.normal(0, 12, size=img.shape).astype(np.float32)
    return ((np.clip(np.round(img), 0, 255) - 127) / 128).astype(np.float32)


def _interleaved_ms(runs, iters):
    """Median ms of each callable, called in turn (ABAB...) so both see the same machine load."""
    for run in runs:
        for _ in range(3):
            run()
    times = [[] for _ in runs]
    for _ in range(iters):
        for run, t in zip(runs, times):
            t0 = time.perf_counter()
            run()
            t.append((time.perf_counter() - t0) * 1e3)
    return [float(np.median(t)) for t in times]


def check(fp16_path, fp32_path=None, bench=0, threads=2):
    model = onnx.load(fp16_path)
    onnx.checker.check_model(model, full_check=True)
    g = model.graph
    floats = [t for t in g.initializer if t.data_type in (F32, F16)]
    n16 = sum(t.data_type == F16 for t in floats)
    assert n16 > 0 and n16 == len(floats), f"{len(floats) - n16} of {len(floats)} float initializers are not float16"
    io = {vi.type.tensor_type.elem_type for vi in list(g.input) + list(g.output)}
    print(f"{fp16_path}: checker ok, {n16} float16 initializers, I/O "
          f"{'/'.join(TensorProto.DataType.Name(t).lower() for t in sorted(io))}", file=sys.stderr)
    sess16 = _session(fp16_path, threads)
    x = _inputs(sess16, 8, 0)
    feed16 = x.astype(np.float16) if io == {F16} else x
    (y16,) = sess16.run(None, {sess16.get_inputs()[0].name: feed16})
    assert np.isfinite(y16).all(), "non-finite scores"
    print(f"runs on ONNX Runtime's CPU provider: output {y16.dtype} {list(y16.shape)}", file=sys.stderr)
    if fp32_path is None:
        return
    sess32 = _session(fp32_path, threads)
    (y32,) = sess32.run(None, {sess32.get_inputs()[0].name: x})
    p16, p32 = _softmax(y16.astype(np.float32)), _softmax(y32)
    agree = int((p16.argmax(1) == p32.argmax(1)).sum())
    top = p32.argmax(1)
    rows = np.arange(len(top))
    print(f"vs {fp32_path} on {len(x)} seeded inputs: top-1 agreement {agree}/{len(x)}, "
          f"max |dlogit| {np.abs(y16 - y32).max():.4g}, max |dp| {np.abs(p16 - p32).max():.3g}, "
          f"max |dp(top-1)| {np.abs(p16[rows, top] - p32[rows, top]).max():.3g}", file=sys.stderr)
    assert agree == len(x), "top-1 differs from the float32 model"
    if bench:
        # A float16 input is converted from the float32 batch inside the timed call, as the
        # engine does it on the host.
        name16, name32 = sess16.get_inputs()[0].name, sess32.get_inputs()[0].name
        for b in (1, 8):
            xb = _inputs(sess32, b, 1)
            run32 = lambda: sess32.run(None, {name32: xb})  # noqa: E731
            if io == {F16}:
                run16 = lambda: sess16.run(None, {name16: xb.astype(np.float16)})  # noqa: E731
            else:
                run16 = lambda: sess16.run(None, {name16: xb})  # noqa: E731
            t32, t16 = _interleaved_ms([run32, run16], bench)
            print(f"CPU, {threads} threads, batch {b}: fp32 {t32:.2f} ms, fp16 {t16:.2f} ms "
                  f"(x{t16 / t32:.2f}), medians of {bench}, interleaved", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="IN.onnx OUT.onnx, or with --check: FP16.onnx [FP32.onnx]")
    ap.add_argument("--io", choices=["float32", "float16"], default="float32")
    ap.add_argument("--check", action="store_true", help="check a converted model (and compare with its fp32 source)")
    ap.add_argument("--bench", type=int, default=0, metavar="N", help="with --check: time N runs of each")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.check:
        if len(args.paths) > 2:
            ap.error("--check takes FP16.onnx [FP32.onnx]")
        check(*args.paths, bench=args.bench, threads=args.threads)
        return
    if len(args.paths) != 2:
        ap.error("expected IN.onnx OUT.onnx")
    model, stats = convert(onnx.load(args.paths[0]), io=args.io)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, args.paths[1])
    kept = ", ".join(f"{op} x{n}" for op, n in sorted(stats["kept_float32"].items())) or "none"
    print(f"wrote {args.paths[1]}: {stats['initializers']} initializers ({stats['values']} values) to "
          f"float16; clamped to +-65504: {stats['clamped']}; rounded to zero: {stats['to_zero']}; "
          f"subnormal: {stats['subnormal']}; kept float32: {kept}; {stats['casts']} Casts; I/O {args.io}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
