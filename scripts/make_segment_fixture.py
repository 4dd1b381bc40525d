"""Writes the tiny segmentation ONNX fixtures of `src/source/segment.rs` and `tests/sources/segment_masks.rs`.

Run from the repository root with the assets venv (numpy + onnx; onnxruntime to check the result):

    /work/main/assets/venv/bin/python scripts/make_segment_fixture.py

Both models call a pixel foreground when it is "strongly red": with r, g, b on 0..1,

    score = K * (r - (g + b) / 2 - T),   K = 10, T = 0.4

so a saturated red object (e.g. [230, 30, 30]) scores about +4 and any colour whose channels are all
in 20..110 (the synthetic camera's checker and stripe backgrounds) at most -3.1. Each is one 1x1
convolution, so the expected mask is known exactly at the model's resolution, and a channel-order or
layout mix-up in the caller (BGR for RGB, NHWC for NCHW) gives a visibly different mask.

- `red_logits_nchw.onnx`: input `image` float32 [1, 3, 64, 64] normalised the ImageNet way
  ((x / 255 - mean) / std, the `[source.segment]` defaults); output `logits` [1, 2, 64, 64] with
  class 0 = background (constant 0) and class 1 = `score` (a 2-class DeepLab-like head: foreground =
  argmax in `classes = [1]`).
- `red_prob_nhwc.onnx`: input `input` float32 [1, height, width, 3] (dynamic size, NHWC) on plain
  0..1 values (scale 1/255, mean 0, std 1); output `prob` [1, height, width, 1] = sigmoid(score),
  channels-last like its input (a U2-Net-like saliency map: foreground = prob > threshold).
- `fails_unless_64.onnx`: input `input` [1, height, width, 3] (dynamic, NHWC), output `map`
  [1, 64, 64, 1] = the channel maximum reshaped to 64 x 64: it loads and passes every load-time
  check, and ONNX Runtime fails at run time on any other input size (the per-frame error path).
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

K, T = 10.0, 0.4
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
OUT = os.path.join("tests", "fixtures", "segment")


def score_weights(mean, std):
    """Weights and bias of `score` on inputs normalised as (x01 - mean) / std."""
    a = K * np.array([1.0, -0.5, -0.5])
    # score = sum a_c x01_c - K T, x01_c = n_c std_c + mean_c
    return a * std, float(a @ mean - K * T)


def logits_model():
    w, b = score_weights(MEAN, STD)
    weight = np.zeros((2, 3, 1, 1), np.float32)
    weight[1, :, 0, 0] = w
    bias = np.array([0.0, b], np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["image", "W", "B"], ["logits"], kernel_shape=[1, 1])],
        "red_logits_nchw",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 2, 64, 64])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "B")],
    )
    return graph


def prob_model():
    w, b = score_weights(np.zeros(3), np.ones(3))
    weight = w.reshape(1, 3, 1, 1).astype(np.float32)
    bias = np.array([b], np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Transpose", ["input"], ["nchw"], perm=[0, 3, 1, 2]),
            helper.make_node("Conv", ["nchw", "W", "B"], ["score"], kernel_shape=[1, 1]),
            helper.make_node("Sigmoid", ["score"], ["prob_nchw"]),
            helper.make_node("Transpose", ["prob_nchw"], ["prob"], perm=[0, 2, 3, 1]),
        ],
        "red_prob_nhwc",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, "height", "width", 3])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, "height", "width", 1])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "B")],
    )
    return graph


def failing_model():
    shape = np.array([1, 64, 64, 1], np.int64)
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMax", ["input"], ["peak"], axes=[3], keepdims=1),
            helper.make_node("Reshape", ["peak", "shape"], ["map"]),
        ],
        "fails_unless_64",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, "height", "width", 3])],
        [helper.make_tensor_value_info("map", TensorProto.FLOAT, [1, 64, 64, 1])],
        [numpy_helper.from_array(shape, "shape")],
    )
    return graph


def save(graph, name):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13)],
        producer_name="robustream scripts/make_segment_fixture.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(OUT, name)
    onnx.save(model, path)
    return path


def check(path_logits, path_prob):
    """Runs both with onnxruntime on a red square over a dark checker and checks the masks."""
    import onnxruntime as ort

    img = np.zeros((64, 64, 3), np.uint8)
    yy, xx = np.mgrid[:64, :64]
    img[((yy // 8 + xx // 8) % 2) == 0] = [20, 110, 60]
    img[((yy // 8 + xx // 8) % 2) == 1] = [110, 20, 20]
    img[16:40, 20:52] = [230, 30, 30]
    want = np.zeros((64, 64), bool)
    want[16:40, 20:52] = True
    x01 = img.astype(np.float32) / 255.0
    nchw = ((x01 - MEAN) / STD).astype(np.float32).transpose(2, 0, 1)[None]
    logits = ort.InferenceSession(path_logits).run(None, {"image": nchw})[0]
    assert logits.shape == (1, 2, 64, 64)
    assert ((logits[0].argmax(0) == 1) == want).all()
    prob = ort.InferenceSession(path_prob).run(None, {"input": x01[None]})[0]
    assert prob.shape == (1, 64, 64, 1)
    assert ((prob[0, :, :, 0] > 0.5) == want).all()


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    a = save(logits_model(), "red_logits_nchw.onnx")
    b = save(prob_model(), "red_prob_nhwc.onnx")
    c = save(failing_model(), "fails_unless_64.onnx")
    check(a, b)
    for p in (a, b, c):
        print(p, os.path.getsize(p), "bytes")
