"""Which of onnxruntime's QDQ fusions take activations with per-axis parameters, and what they compute.

Run:  python proposal/experiments/per_axis_activation_fusions.py            # prints the table, writes the .md here
      python proposal/experiments/per_axis_activation_fusions.py --no-write

For each operator onnxruntime's QDQ transformers rewrite into a fused kernel (com.microsoft QLinear*, QGemm,
QLinearConv / QLinearMatMul) or whose Q/DQ pairs they drop, one small QDQ model as quantize_static writes it:
float inputs -> QuantizeLinear -> DequantizeLinear -> op -> QuantizeLinear -> uint8 output, every activation
uint8 with per-axis parameters (axis 1, three channels, a distinct scale and zero point per channel; Conv:
the output only, and a second row with its input too). Weights are int8, per axis, zero point 0.

Each model runs on the CPU provider at onnxruntime's default level (ORT_ENABLE_ALL, the optimized model
saved via SessionOptions.optimized_model_filepath) and with ORT_DISABLE_ALL. Per operator: the optimized
graph's op types, whether it fused (a kernel the model does not name appears, or Q/DQ nodes are dropped),
whether each session runs (else the error's first line), and the largest difference in output steps
between the two. What onnxruntime computes is recorded as versioned data, never as the definition:
proposal/alternatives.md and proposal/spec/semantics.md §9 quote this table.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import stock_tools as st  # noqa: E402

F = TensorProto
RECORD = HERE / "per_axis_activation_fusions.md"
COMMAND = "python proposal/experiments/per_axis_activation_fusions.py"
ZERO_POINTS = [128, 120, 136]  # uint8, one per channel


@dataclass(frozen=True)
class Built:
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    per_axis: str  # which activations carry per-axis parameters


class Graph:
    """Collects the nodes and initializers of one QDQ model."""

    def __init__(self, per_tensor: bool) -> None:
        self.per_tensor = per_tensor  # the control: every activation per tensor (channel 0's parameters)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.feeds: dict[str, np.ndarray] = {}
        self.rng = np.random.default_rng(0)

    def params(self, name: str, scales, zero_points, dtype=np.uint8) -> None:
        self.inits += [numpy_helper.from_array(np.asarray(scales, np.float32), f"{name}_s"),
                       numpy_helper.from_array(np.asarray(zero_points, dtype), f"{name}_z")]

    def activation(self, name: str, shape: list[int], scales=(0.01, 0.02, 0.04), axis: int | None = 1) -> str:
        """A float graph input, quantized and dequantized: per axis unless ``axis`` is None (then per tensor)."""
        self.inputs.append(helper.make_tensor_value_info(name, F.FLOAT, shape))
        self.feeds[name] = self.rng.uniform(-1, 1, shape).astype(np.float32)
        attrs = self.activation_params(name, scales, None if self.per_tensor else axis)
        self.nodes += [helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"], **attrs),
                       helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_r"],
                                        **attrs)]
        return f"{name}_r"

    def activation_params(self, name: str, scales, axis: int | None) -> dict:
        """Per axis, or (``axis`` None) per tensor with channel 0's parameters; the Q/DQ attributes."""
        if axis is None:
            self.params(name, scales[0], ZERO_POINTS[0])
            return {}
        self.params(name, scales, ZERO_POINTS)
        return {"axis": axis}

    def weight(self, name: str, shape: list[int], scales, axis: int) -> str:
        """An int8 initializer, per axis, zero point 0, dequantized."""
        self.inits.append(numpy_helper.from_array(self.rng.integers(-127, 128, shape).astype(np.int8), name))
        self.params(name, scales, [0] * len(scales), np.int8)
        self.nodes.append(helper.make_node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_r"],
                                           axis=axis))
        return f"{name}_r"

    def output(self, real: str, shape: list[int], scales, axis: int = 1) -> None:
        attrs = self.activation_params("y", scales, None if self.per_tensor else axis)
        self.nodes.append(helper.make_node("QuantizeLinear", [real, "y_s", "y_z"], ["y"], **attrs))
        self.shape = shape

    def build(self, per_axis: str) -> Built:
        out = [helper.make_tensor_value_info("y", F.UINT8, self.shape)]
        return Built(st.model(self.nodes, self.inputs, out, self.inits), self.feeds, per_axis)


NCHW = [1, 3, 4, 4]
EVERY = "every activation"


def binary(op: str, out_scales) -> Callable[[], Built]:
    def build(per_tensor: bool = False) -> Built:
        g = Graph(per_tensor)
        a, b = g.activation("a", NCHW), g.activation("b", NCHW, (0.03, 0.01, 0.02))
        g.nodes.append(helper.make_node(op, [a, b], ["r"]))
        g.output("r", NCHW, out_scales)
        return g.build(EVERY)
    return build


def unary(op: str, out_scales, in_shape=NCHW, out_shape=NCHW, **attrs) -> Callable[[], Built]:
    def build(per_tensor: bool = False) -> Built:
        g = Graph(per_tensor)
        g.nodes.append(helper.make_node(op, [g.activation("a", in_shape)], ["r"], **attrs))
        g.output("r", out_shape, out_scales)
        return g.build(EVERY)
    return build


def matmul(op: str) -> Callable[[], Built]:
    """[2, 3] activation (per axis 1) times a [3, 3] int8 weight (per column)."""
    def build(per_tensor: bool = False) -> Built:
        g = Graph(per_tensor)
        a, w = g.activation("a", [2, 3]), g.weight("w", [3, 3], [0.004, 0.008, 0.006], axis=1)
        g.nodes.append(helper.make_node(op, [a, w], ["r"]))
        g.output("r", [2, 3], [0.02, 0.03, 0.05])
        return g.build(EVERY)
    return build


def conv(input_per_axis: bool) -> Callable[[], Built]:
    """3x3 convolution, int8 weight per output channel; the bias (int32, scale s_x * s_w) only with a
    per-tensor input, where its scale is defined."""
    def build(per_tensor: bool = False) -> Built:
        g = Graph(per_tensor)
        x = g.activation("x", [1, 3, 5, 5], (0.01, 0.02, 0.04), axis=1 if input_per_axis else None)
        w_scales = [0.002, 0.004, 0.003]
        inputs = [x, g.weight("w", [3, 3, 3, 3], w_scales, axis=0)]
        if not input_per_axis:
            g.inits += [numpy_helper.from_array(np.array([300, -200, 100], np.int32), "bias"),
                        numpy_helper.from_array(np.float32(0.01) * np.array(w_scales, np.float32), "bias_s"),
                        numpy_helper.from_array(np.zeros(3, np.int32), "bias_z")]
            g.nodes.append(helper.make_node("DequantizeLinear", ["bias", "bias_s", "bias_z"], ["bias_r"], axis=0))
            inputs.append("bias_r")
        g.nodes.append(helper.make_node("Conv", inputs, ["r"], kernel_shape=[3, 3]))
        g.output("r", [1, 3, 3, 3], [0.03, 0.05, 0.08])
        return g.build(EVERY if input_per_axis else "output (input per tensor)")
    return build


def concat(per_tensor: bool = False) -> Built:
    g = Graph(per_tensor)
    a, b = g.activation("a", NCHW), g.activation("b", NCHW, (0.03, 0.01, 0.02))
    g.nodes.append(helper.make_node("Concat", [a, b], ["r"], axis=2))
    g.output("r", [1, 3, 8, 4], [0.02, 0.03, 0.05])
    return g.build(EVERY)


def where(per_tensor: bool = False) -> Built:
    g = Graph(per_tensor)
    g.inputs.append(helper.make_tensor_value_info("c", F.BOOL, NCHW))
    g.feeds["c"] = g.rng.integers(0, 2, NCHW).astype(bool)
    a, b = g.activation("a", NCHW), g.activation("b", NCHW, (0.03, 0.01, 0.02))
    g.nodes.append(helper.make_node("Where", ["c", a, b], ["r"]))
    g.output("r", NCHW, [0.02, 0.03, 0.05])
    return g.build(EVERY)


def same_params(op: str, out_shape: list[int], out_axis: int = 1, **attrs) -> Callable[[], Built]:
    """An op whose Q/DQ pair onnxruntime drops when both sides share parameters: the output reuses the input's."""
    def build(per_tensor: bool = False) -> Built:
        g = Graph(per_tensor)
        g.nodes.append(helper.make_node(op, [g.activation("a", NCHW)], ["r"], **attrs))
        q_attrs = {} if per_tensor else {"axis": out_axis}
        g.nodes.append(helper.make_node("QuantizeLinear", ["r", "a_s", "a_z"], ["y"], **q_attrs))
        g.shape = out_shape
        return g.build(EVERY + ", output's = input's")
    return build


CASES: dict[str, Callable[..., Built]] = {  # each takes per_tensor (the control), default False
    "Add": binary("Add", [0.02, 0.03, 0.05]),
    "Mul": binary("Mul", [0.004, 0.006, 0.01]),
    "MatMul": matmul("MatMul"),
    "Gemm": matmul("Gemm"),
    "Conv": conv(input_per_axis=False),
    "Conv, input per axis": conv(input_per_axis=True),
    "LeakyRelu": unary("LeakyRelu", [0.005, 0.01, 0.02], alpha=0.1),
    "Sigmoid": unary("Sigmoid", [1 / 256, 1 / 200, 1 / 150]),
    "GlobalAveragePool": unary("GlobalAveragePool", [0.002, 0.004, 0.006], out_shape=[1, 3, 1, 1]),
    "AveragePool": unary("AveragePool", [0.004, 0.006, 0.01], out_shape=[1, 3, 2, 2], kernel_shape=[2, 2],
                         strides=[2, 2]),
    "Softmax": unary("Softmax", [1 / 256, 1 / 200, 1 / 150], in_shape=[1, 3, 4], out_shape=[1, 3, 4], axis=-1),
    "Concat": concat,
    "Where": where,
    "MaxPool": same_params("MaxPool", [1, 3, 2, 2], kernel_shape=[2, 2], strides=[2, 2]),
    "Transpose": same_params("Transpose", [1, 4, 3, 4], out_axis=2, perm=[0, 2, 1, 3]),
}


@dataclass(frozen=True)
class Row:
    op: str
    per_axis: str
    changed_by: list[str]  # graph transformers that reported changing the model
    fused_per_tensor: bool  # the control: the same model with per-tensor activations fuses
    optimized_ops: list[str] | None  # None: onnxruntime saved no optimized model (the session did not load)
    optimized: st.Outcome
    unoptimized: st.Outcome

    @property
    def fused(self) -> bool:
        return QDQ_TRANSFORMER in self.changed_by

    @property
    def max_steps(self) -> int | None:
        if not (self.optimized.ran and self.unoptimized.ran):
            return None
        return int(np.max(np.abs(self.optimized.value.astype(np.int64) - self.unoptimized.value.astype(np.int64))))

    def cells(self) -> list[str]:
        def ran(outcome: st.Outcome) -> str:
            return "runs" if outcome.ran else outcome.error

        saved = "(not saved: no session)" if self.optimized_ops is None else ", ".join(self.optimized_ops)
        return [self.op, self.per_axis, "yes" if self.fused_per_tensor else "no", "yes" if self.fused else "no",
                ", ".join(self.changed_by) or "none", saved,
                ran(self.optimized), ran(self.unoptimized), "—" if self.max_steps is None else str(self.max_steps)]


QDQ_TRANSFORMER = "QDQSelectorActionTransformer"  # onnxruntime's DQ -> op -> Q fusions and Q/DQ drops
CHANGED = re.compile(r"GraphTransformer (\w+) modified: 1")


@contextlib.contextmanager
def stderr_to(sink: IO[bytes]) -> Iterator[None]:
    """onnxruntime logs from C++ to file descriptor 2: point it at ``sink`` meanwhile."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def run_optimized(m: onnx.ModelProto, feeds: dict) -> tuple[list[str], list[str] | None, st.Outcome]:
    """Default optimizations (ORT_ENABLE_ALL): the transformers that changed the graph (from onnxruntime's
    info log, written even when the session then fails to load), the op types of the optimized model
    onnxruntime saves, and the outcome."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as log:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 1  # info: each transformer reports whether it modified the graph
        options.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
        session, outcome = None, None
        with stderr_to(log):
            try:
                session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # noqa: BLE001 - the runtime's own error is the result
                outcome = st.Outcome(error="load: " + first_line(exc))
            if session is not None:
                try:
                    outcome = st.Outcome(np.asarray(session.run(None, feeds)[0]))
                except Exception as exc:  # noqa: BLE001
                    outcome = st.Outcome(error="run: " + first_line(exc))
        log.seek(0)
        changed = list(dict.fromkeys(CHANGED.findall(log.read().decode(errors="replace"))))
        saved = Path(options.optimized_model_filepath)
        ops = [n.op_type for n in onnx.load(saved).graph.node] if saved.exists() else None
    return changed, ops, outcome


def first_line(exc: BaseException) -> str:
    return st.short_error(exc, width=110).splitlines()[0]


def measure(ops: list[str] | None = None) -> list[Row]:
    rows = []
    for op in ops or CASES:
        built = CASES[op]()
        changed, optimized_ops, optimized = run_optimized(built.model, built.feeds)
        control = CASES[op](per_tensor=True)
        fused_per_tensor = QDQ_TRANSFORMER in run_optimized(control.model, control.feeds)[0]
        rows.append(Row(op, built.per_axis, changed, fused_per_tensor, optimized_ops, optimized,
                        st.run_onnxruntime(built.model, built.feeds)))
    return rows


HEADER = ["operator", "per-axis activations", "fused, per tensor (control)", "fused, per axis",
          "transformers that changed the graph", "optimized graph onnxruntime saves", "ORT_ENABLE_ALL", "ORT_DISABLE_ALL",
          "max difference, optimized − unoptimized (steps)"]


def table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    return "\n".join(lines + ["| " + " | ".join(row.cells()) + " |" for row in rows])


def render(rows: list[Row]) -> str:
    return (f"# Per-axis activations through onnxruntime's QDQ fusions\n\n"
            f"Generated by `{COMMAND}` (do not edit by hand).\n\n"
            f"Versions: {st.versions()} (CPU provider).\n\n"
            "Each model: float inputs -> QuantizeLinear -> DequantizeLinear -> op -> QuantizeLinear, uint8"
            " activations per axis (axis 1, three channels, a distinct scale and zero point each), int8 weights per"
            " axis. *Fused*: onnxruntime's QDQSelectorActionTransformer changed the graph (its info log; the"
            " control is the same model with per-tensor activations). The optimized graph is the model onnxruntime"
            " saves through SessionOptions.optimized_model_filepath, which it does not write when the session fails"
            " to load. Steps: output storage integers.\n\n" + table(rows) + "\n")


def recorded_onnxruntime(text: str) -> str:
    """The onnxruntime version a recorded table holds for."""
    return text.split("onnxruntime ", 1)[1].split(",", 1)[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-write", action="store_true", help=f"print only; do not rewrite {RECORD.name}")
    args = ap.parse_args(argv)
    text = render(measure())
    print(text, end="")
    if not args.no_write:
        RECORD.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
