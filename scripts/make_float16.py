"""The null classifier with a float16 input and a float16 output
(tests/fixtures/engine/null_classifier_f16.onnx): a model exported in half precision at its
boundary, as many GPU exports are, for the engine's float16 conversions (src/engine/onnx.rs,
tests/engine/engine_shapes.rs, docs/model-description.md#float16-models).

The graph is the float32 null classifier between two Cast nodes: `input` float16 [N, 3, 224, 224]
→ Cast to float32 → GlobalAveragePool → Flatten → MatMul → Cast to float16 → `logits` float16
[N, 1000]. Its predictions are the float32 model's up to float16 rounding.

Run with the assets venv (it has `onnx`): assets/venv/bin/python scripts/make_float16.py
"""
from pathlib import Path

import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "engine"
model = onnx.load(HERE / "null_classifier.onnx")
graph = model.graph
(inp,) = graph.input
(out,) = graph.output
# Every reader of the float32 input now reads the cast; the last node writes a float32 logits
# tensor that a cast turns into the float16 output.
for node in graph.node:
    node.input[:] = ["input_f32" if name == inp.name else name for name in node.input]
    node.output[:] = ["logits_f32" if name == out.name else name for name in node.output]
graph.node.insert(0, helper.make_node("Cast", [inp.name], ["input_f32"], to=TensorProto.FLOAT))
graph.node.append(helper.make_node("Cast", ["logits_f32"], [out.name], to=TensorProto.FLOAT16))
inp.type.tensor_type.elem_type = TensorProto.FLOAT16
out.type.tensor_type.elem_type = TensorProto.FLOAT16
onnx.checker.check_model(model)
onnx.save(model, HERE / "null_classifier_f16.onnx")
