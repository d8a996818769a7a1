"""Build the bundled example models (run: python examples/make_examples.py).

broken_cnn.onnx: the same model with mistakes the checker reports.

broken_qdq_cnn.onnx: the same model as standard QDQ ONNX, the form
quantizers write (no quantized types), with three mistakes `onnx-qtypes
check` finds in the file as it is.

float_cnn.onnx and float_cnn_samples.npz: a float model (Conv -> Relu -> MaxPool ->
Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm) and 16 calibration
samples for it ([16, 1, 3, 8, 8] under the input's name, as `onnx-qtypes
calibrate --data` reads them), to try calibration on.

typed_cnn.onnx: float input -> QuantizeLinear -> typed Conv (per-channel
int8 symmetric weights, int32 bias) -> Relu -> MaxPool -> DequantizeLinear
-> float output, with calibration statistics on the activations. Every op
between the edges is an unmodified ONNX operator; the quantization lives in
the tensors' types. The file is committed; tests/test_examples.py rebuilds
it and fails when the committed bytes drift.
"""

from __future__ import annotations

import io
import pathlib
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, Schema, Statistics, TensorStatistics, get_qtype, lower, save, set_qtype

HERE = pathlib.Path(__file__).resolve().parent
IR_VERSION, OPSET = 10, 21  # what onnxruntime 1.31 accepts


def typed_cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(20261122)
    cin, cout, k = 3, 4, 3
    # Scales are float32 values (the expressed type), held as Python floats.
    x_scale, x_zp = float(np.float32(0.02)), 0
    w_real = rng.normal(0, 0.3, size=(cout, cin, k, k))
    w_scale = (np.abs(w_real).reshape(cout, -1).max(axis=1) / 127.0).astype(np.float32)
    w_q = np.clip(np.rint(w_real / w_scale[:, None, None, None]), -127, 127).astype(np.int8)
    b_scale = np.float32(x_scale) * w_scale  # float32 product, as runtimes compute it
    b_q = np.rint(rng.normal(0, 0.1, size=cout) / b_scale).astype(np.int32)
    y_scale, y_zp = float(np.float32(0.05)), -10

    inits = [
        numpy_helper.from_array(np.array(x_scale, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(x_zp, np.int8), "x_zero_point"),
        numpy_helper.from_array(w_q, "w"),
        numpy_helper.from_array(b_q, "b"),
        numpy_helper.from_array(np.array(y_scale, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(y_zp, np.int8), "y_zero_point"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"], name="quantize_x"),
        helper.make_node("Conv", ["x_q", "w", "b"], ["conv_q"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv_q"], ["relu_q"], name="relu"),
        helper.make_node("MaxPool", ["relu_q"], ["pool_q"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("DequantizeLinear", ["pool_q", "y_scale", "y_zero_point"], ["y"], name="dequantize_y"),
    ]
    graph = helper.make_graph(
        nodes,
        "typed_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, 4, 4])],
        inits,
        value_info=[
            helper.make_tensor_value_info("x_q", TensorProto.INT8, [1, cin, 8, 8]),
            helper.make_tensor_value_info("conv_q", TensorProto.INT8, [1, cout, 8, 8]),
            helper.make_tensor_value_info("relu_q", TensorProto.INT8, [1, cout, 8, 8]),
            helper.make_tensor_value_info("pool_q", TensorProto.INT8, [1, cout, 4, 4]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    model.producer_name = "onnx-qtypes examples"

    x_stats = TensorStatistics(
        tensor=Statistics(min=-2.4, max=2.5, mean=0.01, std=0.98, count=192,
                          histogram_edges=(-2.5, -1.25, 0.0, 1.25, 2.5), histogram_counts=(20, 75, 77, 20)),
        method="minmax",
    )
    act = QType("int8", y_scale, y_zp)
    set_qtype(model, "x_q", QType("int8", x_scale, x_zp, statistics=x_stats))
    set_qtype(model, "w", QType("int8", w_scale, [0] * cout, axis=0, schema=Schema.SYMMETRIC,
                                storage_min=-127, storage_max=127))
    set_qtype(model, "b", QType("int32", b_scale, [0] * cout, axis=0, schema=Schema.SYMMETRIC))
    conv_stats = TensorStatistics(tensor=Statistics(min=-0.9, max=6.8, mean=0.4, std=0.7, count=256), method="minmax")
    set_qtype(model, "conv_q", act.with_statistics(conv_stats))
    set_qtype(model, "relu_q", act)
    set_qtype(model, "pool_q", act)
    return model


def broken_cnn() -> onnx.ModelProto:
    """typed_cnn with mistakes a checker must catch before the model reaches hardware.

    - the bias scale is not input scale x weight scale (a factor 10 off on channel 2);
    - MaxPool writes a different scale than it reads, so the DequantizeLinear at the
      output no longer uses the parameters of the tensor it reads.
    """
    model = typed_cnn()
    b = get_qtype(model, "b")
    scales = list(b.scale)
    scales[2] = float(np.float32(scales[2]) * np.float32(10))  # stays a float32 value
    set_qtype(model, "b", b.replace(scale=tuple(scales)))
    set_qtype(model, "pool_q", get_qtype(model, "pool_q").replace(scale=(float(np.float32(0.1)),)))
    return model


def broken_qdq_cnn() -> onnx.ModelProto:
    """typed_cnn lowered to QuantizeLinear / DequantizeLinear nodes, with mistakes no stock tool reports.

    - the Relu output is quantized with scale 0 (every value becomes the zero point);
    - the bias DequantizeLinear's scale is not input scale x weight scale (channel 2 is 10x off);
    - the output DequantizeLinear reads the MaxPool result with twice the scale its QuantizeLinear wrote.
    """
    model = lower(typed_cnn())
    for entry in [*model.graph.node, *model.graph.value_info, *model.graph.input, *model.graph.output]:
        del entry.metadata_props[:]  # what lower keeps for lift; a quantizer writes none
    constants = {t.name: t for t in model.graph.initializer}

    def scale(name: str, change) -> None:
        values = numpy_helper.to_array(constants[name]).copy()
        constants[name].CopyFrom(numpy_helper.from_array(change(values), name))

    scale("relu_q_scale", lambda v: np.zeros_like(v))
    scale("b_scale", lambda v: np.where(np.arange(v.size) == 2, v * np.float32(10), v).astype(v.dtype))
    scale("y_scale", lambda v: v * np.float32(2))
    return model


def float_cnn() -> onnx.ModelProto:
    """A small float CNN, He-initialised so that its activations keep their scale, to calibrate."""
    rng = np.random.default_rng(20261128)

    def he(*shape: int) -> np.ndarray:
        return (rng.normal(0, 1, shape) * np.sqrt(2 / np.prod(shape[1:]))).astype(np.float32)

    inits = [numpy_helper.from_array(he(8, 3, 3, 3), "conv1_w"),
             numpy_helper.from_array((rng.normal(0, 0.1, 8)).astype(np.float32), "conv1_b"),
             numpy_helper.from_array(he(8, 8, 3, 3), "conv2_w"),
             numpy_helper.from_array((rng.normal(0, 0.1, 8)).astype(np.float32), "conv2_b"),
             numpy_helper.from_array(he(10, 8), "fc_w"),
             numpy_helper.from_array((rng.normal(0, 0.1, 10)).astype(np.float32), "fc_b")]
    nodes = [
        helper.make_node("Conv", ["x", "conv1_w", "conv1_b"], ["conv1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2_w", "conv2_b"], ["conv2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["relu2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["features"], name="flatten"),
        helper.make_node("Gemm", ["features", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "float_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    model.producer_name = "onnx-qtypes examples"
    return model


def float_cnn_samples() -> bytes:
    """16 samples of float_cnn's input as an .npz, byte for byte the same on every run (fixed zip timestamps)."""
    x = np.random.default_rng(20261129).normal(0, 1, (16, 1, 3, 8, 8)).astype(np.float32)
    npy = io.BytesIO()
    np.lib.format.write_array(npy, x, allow_pickle=False)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("x.npy", date_time=(1980, 1, 1, 0, 0, 0)), npy.getvalue(),
                         compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


EXAMPLES = {"typed_cnn.onnx": typed_cnn, "broken_cnn.onnx": broken_cnn, "broken_qdq_cnn.onnx": broken_qdq_cnn,
            "float_cnn.onnx": float_cnn}
DATA = {"float_cnn_samples.npz": float_cnn_samples}  # generated files that are not models


def main(out_dir: pathlib.Path = HERE) -> None:
    for name, build in EXAMPLES.items():
        save(build(), out_dir / name)
        print(out_dir / name)
    for name, make in DATA.items():
        (out_dir / name).write_bytes(make())
        print(out_dir / name)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
