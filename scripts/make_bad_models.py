"""Writes the broken-model fixtures of `tests/cli/bad_input.rs` into `tests/fixtures/engine/`: tiny
classifiers (10 classes, the labels in `ten_classes.txt`) that load, but that robustream must refuse
with one clear line.

Run from the repository root with the assets venv (numpy + onnx; onnxruntime to check the result):

    assets/venv/bin/python scripts/make_bad_models.py

- `nan_when_bright.onnx` (+ `.toml`): input `input` float32 [N, 3, 224, 224] (dynamic batch),
  GlobalAveragePool -> Flatten -> MatMul with a fixed 3 x 10 matrix -> `logits` [N, 10], plus
  `0 * sqrt(-m)` where m is the mean of the normalised input: 0 for a dark image (m < 0), NaN in
  every score of a bright one (m > 0). So a dark frame is scored and a bright one is not, in the
  same run, on the real ONNX Runtime.
- `uint8_input.onnx` (+ `.toml`): the same classifier behind a uint8 input (Cast to float first),
  as some exports with the normalisation inside the graph have; robustream feeds float32.
- `rank4_output.onnx` (+ `.toml`): the same classifier as a 1x1 convolution without the Flatten,
  so `logits` is [N, 10, 1, 1] (a convolutional head exported without its reshape): its shape
  must be named, not read as "1 class".
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join("tests", "fixtures", "engine")
CLASSES = 10


def weights():
    rng = np.random.default_rng(14)
    return numpy_helper.from_array(rng.standard_normal((3, CLASSES)).astype(np.float32), "w")


def nan_when_bright():
    zero = numpy_helper.from_array(np.zeros((), np.float32), "zero")
    nodes = [
        helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "w"], ["scores"]),
        helper.make_node("ReduceMean", ["flat"], ["m"], axes=[1], keepdims=1),
        helper.make_node("Neg", ["m"], ["neg"]),
        helper.make_node("Sqrt", ["neg"], ["root"]),
        helper.make_node("Mul", ["root", "zero"], ["poison"]),
        helper.make_node("Add", ["scores", "poison"], ["logits"]),
    ]
    return helper.make_graph(
        nodes,
        "nan_when_bright",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])],
        [weights(), zero],
    )


def uint8_input():
    nodes = [
        helper.make_node("Cast", ["input"], ["x"], to=TensorProto.FLOAT),
        helper.make_node("GlobalAveragePool", ["x"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "w"], ["logits"]),
    ]
    return helper.make_graph(
        nodes,
        "uint8_input",
        [helper.make_tensor_value_info("input", TensorProto.UINT8, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])],
        [weights()],
    )


def rank4_output():
    w = numpy_helper.to_array(weights()).T.reshape(CLASSES, 3, 1, 1)
    nodes = [
        helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
        helper.make_node("Conv", ["pooled", "w"], ["logits"]),
    ]
    return helper.make_graph(
        nodes,
        "rank4_output",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES, 1, 1])],
        [numpy_helper.from_array(np.ascontiguousarray(w), "w")],
    )


DESC = """# {what} (scripts/make_bad_models.py, a fixture of tests/cli/bad_input.rs).
onnx = "{name}.onnx"
labels = "ten_classes.txt"
[input]
name = "input"
layout = "nchw"
height = 224
width = 224
[preprocess]
resize_shorter = 224
crop = "center"
mean = [127.0, 127.0, 127.0]
std = [128.0, 128.0, 128.0]
[output]
name = "logits"
kind = "logits"
classes = {classes}
"""


def save(graph, name, what):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="robustream scripts/make_bad_models.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(model, path)
    with open(os.path.join(OUT, name + ".toml"), "w") as f:
        f.write(DESC.format(what=what, name=name, classes=CLASSES))
    return path


def check(nan_path, uint8_path, rank4_path):
    import onnxruntime as ort

    s = ort.InferenceSession(nan_path)
    dark = np.full((1, 3, 224, 224), (20 - 127) / 128, np.float32)
    bright = np.full((1, 3, 224, 224), (230 - 127) / 128, np.float32)
    (out,) = s.run(None, {"input": np.concatenate([dark, bright])})
    assert np.isfinite(out[0]).all(), out[0]
    assert np.isnan(out[1]).all(), out[1]
    s = ort.InferenceSession(uint8_path)
    assert s.get_inputs()[0].type == "tensor(uint8)"
    s = ort.InferenceSession(rank4_path)
    (out,) = s.run(None, {"input": dark})
    assert out.shape == (1, CLASSES, 1, 1), out.shape


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "ten_classes.txt"), "w") as f:
        f.write("".join(f"class{i}\n" for i in range(CLASSES)))
    a = save(nan_when_bright(), "nan_when_bright", "Scores a dark image, NaN on a bright one")
    b = save(uint8_input(), "uint8_input", "A classifier with a uint8 input")
    c = save(rank4_output(), "rank4_output", "A classifier whose output is [N, 10, 1, 1]")
    check(a, b, c)
    for p in (a, b, c):
        print(p, os.path.getsize(p), "bytes")
