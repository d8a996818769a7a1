"""Does a runtime take a dynamic graph input's fed zero point, as `lower` writes the input each way?

Run: python proposal/experiments/zero_point_input_lowering.py

The suite case dynamic-graph-input-storage-int8-float32 (x int8 fed with x.scale and x.zero_point by the calling
convention) is lowered with ``dynamic_inputs="storage"`` (x.zero_point optional: an all-zero initializer of its
name is its default) and ``"storage-required"`` (a required input), and run on onnxruntime's unoptimized path and
on OpenVINO with the case's own feeds, a non-zero zero point among them. Each line says whether the runtime's
output equals the case's expected output (the reference's), exactly. Output: a Markdown table.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASE = ROOT / "conformance_tests" / "cases" / "execution" / "dynamic-graph-input-storage-int8-float32"


def _feeds_and_expected() -> tuple[dict[str, np.ndarray], np.ndarray]:
    data = CASE / "test_data_set_0"
    feeds = {}
    for path in sorted(data.glob("input_*.pb")):
        tensor = onnx.load_tensor(str(path))
        feeds[tensor.name] = numpy_helper.to_array(tensor).copy()
    return feeds, numpy_helper.to_array(onnx.load_tensor(str(data / "output_0.pb")))


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort  # noqa: PLC0415

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in (*session.get_inputs(), *session.get_overridable_initializers())}
    return session.run(None, {k: v for k, v in feeds.items() if k in names})[0]


def _openvino(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import openvino as ov  # noqa: PLC0415

    core = ov.Core()
    compiled = core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU")
    names = {p.get_any_name() for p in compiled.inputs}  # an initializer-backed input may have no port
    return compiled({k: np.array(v) for k, v in feeds.items() if k in names})[compiled.outputs[0]]


def main() -> int:
    from onnx_qtypes import lower  # noqa: PLC0415

    typed = onnx.load(CASE / "model.onnx")
    feeds, expected = _feeds_and_expected()
    print(f"case {CASE.name}; fed zero point {feeds.get('x.zero_point')}\n")
    print("| lowering | runtime | equals the expected output |")
    print("|---|---|---|")
    for mode in ("storage", "storage-required"):
        lowered = lower(typed, dynamic_inputs=mode)
        for name, runtime in (("onnxruntime (ORT_DISABLE_ALL)", _onnxruntime), ("openvino", _openvino)):
            try:
                got = runtime(lowered, feeds)
                answer = "yes" if got.shape == expected.shape and np.array_equal(got, expected) else "no"
            except ImportError:
                answer = "not installed"
            except Exception as exc:  # noqa: BLE001 - a runtime refusing the model is a result
                answer = f"refused: {str(exc).splitlines()[0][:80]}"
            print(f"| {mode} | {name} | {answer} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
