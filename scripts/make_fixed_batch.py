"""The null classifier with its batch dimension fixed at 4 (tests/fixtures/engine/fixed_batch4.onnx):
a model exported for one batch size, as many edge exports are, for tests/engine/engine_shapes.rs.

Run with the assets venv (it has `onnx`): assets/venv/bin/python scripts/make_fixed_batch.py
"""
from pathlib import Path

import onnx

HERE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "engine"
model = onnx.load(HERE / "null_classifier.onnx")
for value in list(model.graph.input) + list(model.graph.output):
    batch = value.type.tensor_type.shape.dim[0]
    batch.ClearField("dim_param")
    batch.dim_value = 4
onnx.checker.check_model(model)
onnx.save(model, HERE / "fixed_batch4.onnx")
