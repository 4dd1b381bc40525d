"""Writes `tests/fixtures/engine/null_classifier.onnx` (+ its model description and labels): a
classifier that costs next to nothing, to measure what the pipeline itself can feed an engine
(`benches/pipeline.rs`, group `host_ceiling`: the rate a GPU engine could be fed at, measured on a
CPU-only machine).

Run from the repository root with the assets venv (numpy + onnx):

    assets/venv/bin/python scripts/make_null_classifier.py

The model: input `input` float32 [N, 3, 224, 224] (dynamic batch), GlobalAveragePool → Flatten →
MatMul with a fixed 3 × 1000 matrix → output `logits` [N, 1000]. Class scores depend on the mean
colour only, so different variants of a frame get (slightly) different top-5s.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join("tests", "fixtures", "engine")


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(13)
    w = rng.standard_normal((3, 1000)).astype(np.float32)
    nodes = [
        helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "w"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "null_classifier",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, "null_classifier.onnx"))
    with open(os.path.join(OUT, "null_classes.txt"), "w") as f:
        f.write("".join(f"class{i}\n" for i in range(1000)))
    with open(os.path.join(OUT, "null_classifier.toml"), "w") as f:
        f.write(
            "# A classifier that costs next to nothing (scripts/make_null_classifier.py): the\n"
            "# pipeline's own ceiling in benches/pipeline.rs. Preprocessing as EfficientNet-Lite0's.\n"
            'onnx = "null_classifier.onnx"\n'
            'labels = "null_classes.txt"\n'
            "[input]\n"
            'name = "input"\nlayout = "nchw"\nheight = 224\nwidth = 224\n'
            "[preprocess]\n"
            'resize_shorter = 256\ncrop = "center"\n'
            "mean = [127.0, 127.0, 127.0]\nstd = [128.0, 128.0, 128.0]\n"
            "[output]\n"
            'name = "logits"\nkind = "logits"\nclasses = 1000\n'
        )


if __name__ == "__main__":
    main()
