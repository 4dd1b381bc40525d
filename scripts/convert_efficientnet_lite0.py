#!/usr/bin/env python3
"""Convert EfficientNet-Lite0 PyTorch weights (.pth) to ONNX -- numpy + onnx only, no torch.

Usage: python scripts/convert_efficientnet_lite0.py WEIGHTS.pth OUT.onnx

The architecture follows PyPI efficientnet-lite-pytorch 0.1.0 (lukemelas-style EfficientNet with
the Lite changes): no squeeze-excite, ReLU6, stem 32 / head 1280 not scaled, BatchNorm eps 1e-3,
TF "SAME" padding computed statically for a 224x224 input (asymmetric for stride 2: the extra
pixel goes to the bottom/right). BatchNorm is folded into the preceding convolution.
Output: input "input" float32 [N,3,224,224] (expects (x-127)/128), output "logits" [N,1000].
"""
import collections
import io
import pickle
import struct
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# ---------------------------------------------------------------- torch checkpoint reader

STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "UntypedStorage": np.uint8,
}
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


class _Tensor:
    """A tensor view (storage key, offset, shape, stride), materialised once data is read."""

    def __init__(self, key, dtype, offset, size, stride):
        self.key, self.dtype, self.offset = key, dtype, offset
        self.size, self.stride = tuple(size), tuple(stride)

    def materialise(self, buffers):
        flat = np.frombuffer(buffers[self.key], dtype=self.dtype)
        item = flat.itemsize
        view = np.lib.stride_tricks.as_strided(
            flat[self.offset:], shape=self.size, strides=[s * item for s in self.stride])
        return np.array(view)  # contiguous copy


def _rebuild_tensor_v2(storage, offset, size, stride, *_ignored):
    key, dtype = storage
    return _Tensor(key, dtype, offset, size, stride)


class _Unpickler(pickle.Unpickler):
    """Restricted unpickler: only the few globals a state_dict needs are allowed."""

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) in (("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor")):
            return _rebuild_tensor_v2
        if module in ("torch", "torch.storage") and name in STORAGE_DTYPES:
            return np.dtype(STORAGE_DTYPES[name])
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")

    def persistent_load(self, pid):
        # ('storage', storage_type, key, location, numel[, view_metadata])
        if pid[0] != "storage":
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return (str(pid[2]), pid[1])


def _materialise(obj, buffers):
    if isinstance(obj, _Tensor):
        return obj.materialise(buffers)
    if isinstance(obj, dict):
        return collections.OrderedDict((k, _materialise(v, buffers)) for k, v in obj.items())
    return obj


def load_state_dict(path):
    """Read a torch.save()d state_dict, legacy (pickle stream) or zip format."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            pkl = next(n for n in z.namelist() if n.endswith("/data.pkl"))
            root = pkl[: -len("data.pkl")]
            state = _Unpickler(io.BytesIO(z.read(pkl))).load()
            keys = {t.key for t in _walk(state)}
            buffers = {k: z.read(f"{root}data/{k}") for k in keys}
        return _materialise(state, buffers)
    with open(path, "rb") as f:
        if pickle.load(f) != LEGACY_MAGIC:
            raise ValueError(f"{path}: not a torch checkpoint (bad magic number)")
        pickle.load(f)  # protocol version
        sys_info = pickle.load(f)
        if not sys_info.get("little_endian", True):
            raise ValueError("big-endian checkpoints are not supported")
        state = _Unpickler(f).load()
        dtypes = {t.key: t.dtype for t in _walk(state)}
        buffers = {}
        for key in pickle.load(f):  # storage keys, in file order
            (count,) = struct.unpack("<q", f.read(8))
            nbytes = count * np.dtype(dtypes.get(key, np.uint8)).itemsize
            buffers[key] = f.read(nbytes)
            if len(buffers[key]) != nbytes:
                raise ValueError(f"truncated storage {key}")
    return _materialise(state, buffers)


def _walk(obj):
    if isinstance(obj, _Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _walk(v)


# ---------------------------------------------------------------- ONNX graph builder

# (repeats, kernel, stride, expand ratio, in channels, out channels) -- Lite0 block table
LITE0_STAGES = [(1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40),
                (3, 3, 2, 6, 40, 80), (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192),
                (1, 3, 1, 6, 192, 320)]
IMAGE_SIZE, BN_EPS, OPSET = 224, 1e-3, 17


def same_pads(size, k, s):
    """TF 'SAME' padding for a static input size: returns (out size, before, after)."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


class Builder:
    def __init__(self, sd):
        self.sd, self.used = sd, set()
        self.nodes, self.inits = [], []

    def take(self, name):
        self.used.add(name)
        return self.sd[name]

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, np.float32), name))
        return name

    def conv_bn(self, x, conv, bn, size, stride=1, groups=1, relu6=True):
        """Conv (no bias) + folded BatchNorm [+ ReLU6]; returns (output name, output size)."""
        w = self.take(conv + ".weight").astype(np.float64)
        g, b = self.take(bn + ".weight"), self.take(bn + ".bias")
        mean, var = self.take(bn + ".running_mean"), self.take(bn + ".running_var")
        self.used.add(bn + ".num_batches_tracked")
        scale = g / np.sqrt(var.astype(np.float64) + BN_EPS)
        k = w.shape[-1]
        out, p0, p1 = same_pads(size, k, stride)
        wn = self.const(conv + ".w", w * scale[:, None, None, None])
        bn_ = self.const(conv + ".b", b - mean * scale)
        y = conv + ".out"
        self.nodes.append(helper.make_node(
            "Conv", [x, wn, bn_], [y], name=conv, kernel_shape=[k, k], strides=[stride, stride],
            pads=[p0, p0, p1, p1], group=groups))
        if relu6:
            self.nodes.append(helper.make_node("Clip", [y, "zero", "six"], [y + ".relu6"], name=conv + ".relu6"))
            y += ".relu6"
        return y, out


def build_model(sd):
    bld = Builder(sd)
    bld.const("zero", np.array(0.0)), bld.const("six", np.array(6.0))
    x, size = bld.conv_bn("input", "_conv_stem", "_bn0", IMAGE_SIZE, stride=2)
    idx = 0
    for repeats, k, stride, expand, cin, cout in LITE0_STAGES:
        for r in range(repeats):
            p = f"_blocks.{idx}."
            inp, s, ci = x, (stride if r == 0 else 1), (cin if r == 0 else cout)
            mid = ci * expand
            if expand != 1:
                x, _ = bld.conv_bn(x, p + "_expand_conv", p + "_bn0", size)
            assert sd[p + "_depthwise_conv.weight"].shape == (mid, 1, k, k), p
            x, size = bld.conv_bn(x, p + "_depthwise_conv", p + "_bn1", size, stride=s, groups=mid)
            x, _ = bld.conv_bn(x, p + "_project_conv", p + "_bn2", size, relu6=False)
            if s == 1 and ci == cout:  # identity skip (drop-connect is training-only)
                bld.nodes.append(helper.make_node("Add", [x, inp], [p + "add"], name=p + "add"))
                x = p + "add"
            idx += 1
    x, _ = bld.conv_bn(x, "_conv_head", "_bn1", size)
    bld.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="pool"))
    bld.nodes.append(helper.make_node("Flatten", ["pool"], ["features"], name="flatten", axis=1))
    fc_w, fc_b = bld.take("_fc.weight"), bld.take("_fc.bias")
    bld.nodes.append(helper.make_node(
        "Gemm", ["features", bld.const("fc.w", fc_w), bld.const("fc.b", fc_b)], ["logits"],
        name="fc", transB=1))
    unused = set(sd) - bld.used
    if unused:
        raise ValueError(f"weights not used by the graph: {sorted(unused)[:5]} ...")

    graph = helper.make_graph(
        bld.nodes, "efficientnet_lite0",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, IMAGE_SIZE, IMAGE_SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", fc_w.shape[0]])],
        bld.inits)
    model = helper.make_model(graph, producer_name="robustream-convert",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8  # matches opset 17; readable by older runtimes too
    model.doc_string = ("EfficientNet-Lite0 ImageNet-1k, BatchNorm folded, TF-SAME padding fixed for "
                        "224x224; input (x-127)/128 RGB NCHW")
    return model


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    sd = load_state_dict(argv[1])
    model = build_model(sd)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, argv[2])
    n_params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"wrote {argv[2]}: {len(model.graph.node)} nodes, {n_params} parameters", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
