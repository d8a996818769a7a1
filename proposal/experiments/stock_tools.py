"""Run one model through the stock tools: onnx.checker, onnx.reference, onnxruntime.

Shared by the experiments in this folder; not a script. Every model here is
built with onnx.helper and pinned to an IR version and opset that
onnxruntime accepts. onnxruntime runs on the CPU execution provider with
graph optimizations disabled, so each node is the kernel the model names.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper
from onnx.reference import ReferenceEvaluator

IR_VERSION, OPSET = 10, 21  # onnxruntime 1.32 refuses onnx 1.23's defaults (IR 14 / opset 28)
MIN_IR = {21: 10, 23: 11, 24: 12, 25: 13, 28: 14}  # the smallest IR version of each opset


def versions() -> str:
    """The line every experiment prints first."""
    return f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}"


def model(nodes, inputs, outputs, initializers=(), opset: int = OPSET) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "experiment", inputs, outputs, list(initializers))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=MIN_IR.get(opset, IR_VERSION)
    )


@dataclass(frozen=True)
class Outcome:
    """What one tool did: ``value`` when it ran, ``error`` (one short line) when it raised."""

    value: np.ndarray | None = None
    error: str | None = None

    @property
    def ran(self) -> bool:
        return self.error is None


def short_error(exc: BaseException, width: int = 90) -> str:
    """The informative part of an exception message, on one line."""
    text = str(exc)
    if "Status Message:" in text:  # onnxruntime: keep the kernel's own message
        text = text.split("Status Message:", 1)[1]
    if " was false." in text:  # onnxruntime ORT_ENFORCE: the condition, then the message
        text = text.split(" was false.", 1)[1]
    text = re.sub(r"\S+\.(cc|h):\d+ .*?\)\s", "", text)  # a source location and C++ signature
    text = re.sub(r"^\s*\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = " ".join(text.split()).replace("|", "/") or "(no message)"
    text = f"{type(exc).__name__}: {text}" if not text.startswith(type(exc).__name__) else text
    return text if len(text) <= width else text[: width - 1] + "…"


def check(m: onnx.ModelProto) -> str:
    """``accepts`` or ``refuses: <message>`` from onnx.checker.check_model(full_check=True)."""
    try:
        onnx.checker.check_model(m, full_check=True)
        return "accepts"
    except Exception as exc:  # noqa: BLE001 - we report whatever the tool says
        return "refuses: " + short_error(exc).split(": ", 1)[-1]


def run_reference(m: onnx.ModelProto, feeds: dict) -> Outcome:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return Outcome(np.asarray(ReferenceEvaluator(m).run(None, feeds)[0]))
    except Exception as exc:  # noqa: BLE001
        return Outcome(error=short_error(exc))


def ort_session(m: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # silence warnings on stderr
    return ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run_onnxruntime(m: onnx.ModelProto, feeds: dict) -> Outcome:
    try:
        session = ort_session(m)
    except Exception as exc:  # noqa: BLE001
        return Outcome(error="load: " + short_error(exc))
    try:
        return Outcome(np.asarray(session.run(None, feeds)[0]))
    except Exception as exc:  # noqa: BLE001
        return Outcome(error="run: " + short_error(exc))


def as_numbers(values: np.ndarray) -> np.ndarray:
    """int4 / float8 / ... arrays (ml_dtypes) as int64 or float64, for comparison."""
    kind = "i" if values.dtype.kind in "iub" or "int" in values.dtype.name else "f"
    return values.astype(np.int64 if kind == "i" else np.float64)


def count_different(a: Outcome, b: Outcome) -> tuple[int, int] | None:
    """(elements that differ, elements) when both ran with outputs of one shape."""
    if not (a.ran and b.ran) or a.value.shape != b.value.shape:
        return None
    x, y = as_numbers(a.value), as_numbers(b.value)
    same = (x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x == y
    return int(np.count_nonzero(~same)), int(x.size)
