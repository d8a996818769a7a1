"""Run the float model on calibration samples and accumulate statistics of every float tensor.

The model runs on onnxruntime when it is installed (every float tensor made
an extra graph output, optimizations off so intermediate names survive, IR 10
pinned as onnxruntime requires), otherwise on ``onnx.reference``. Each sample's
values are counted and dropped before the next sample is read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, helper, numpy_helper

from onnx_qtypes.calibration.data import feeds
from onnx_qtypes.calibration.errors import CalibrationError
from onnx_qtypes.calibration.running import CHANNEL_BINS, NonFinite, TensorAccumulator
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS, default_opset

FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16)
ORT_IR, ORT_OPSET = 10, 21
ACTIVATION_AXIS = 1  # NCHW channels, or the feature axis of [batch, features]


def weight_axes(model: ModelProto) -> dict[str, int]:
    """Initializer name -> its output-channel axis, from the operator that reads it as weight or bias."""
    axes: dict[str, int] = {}
    inits = {t.name: len(t.dims) for t in model.graph.initializer}
    for node in model.graph.node:
        ins = list(node.input)
        if node.op_type in ("Conv", "ConvTranspose") and len(ins) > 1 and ins[1] in inits:
            axes[ins[1]] = 1 if node.op_type == "ConvTranspose" else 0
            if len(ins) > 2 and ins[2] in inits:
                axes[ins[2]] = 0
        elif node.op_type == "Gemm" and len(ins) > 1 and ins[1] in inits:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            axes[ins[1]] = 0 if trans_b else 1
            if len(ins) > 2 and ins[2] in inits and inits[ins[2]] == 1:
                axes[ins[2]] = 0
        elif node.op_type == "MatMul" and len(ins) > 1 and ins[1] in inits and inits[ins[1]] >= 2:
            axes[ins[1]] = inits[ins[1]] - 1
    return axes


def float_activations(model: ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Graph inputs and node outputs of a float type (by shape inference), by name, in graph order."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    g = inferred.graph
    declared = {vi.name: vi for vi in (*g.value_info, *g.output, *g.input)}
    inits = {t.name for t in g.initializer}
    names = [vi.name for vi in g.input if vi.name not in inits] + [o for n in g.node for o in n.output if o]
    out = {}
    for name in names:
        vi = declared.get(name)
        if vi is not None and vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in FLOAT_TYPES:
            out[name] = vi
    return out


def graph_inputs(model: ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def check_feed(sample: Mapping[str, Any], inputs: list[onnx.ValueInfoProto], index: int) -> dict[str, np.ndarray]:
    """The sample as arrays, or CalibrationError naming the input whose name, shape or dtype does not fit."""
    if not isinstance(sample, Mapping):
        raise CalibrationError(f"sample {index}: expected a dict of graph input name -> array, got {type(sample).__name__}")
    want = {vi.name for vi in inputs}
    extra, missing = sorted(set(sample) - want), sorted(want - set(sample))
    if extra or missing:
        parts = ([f"no graph input named {', '.join(map(repr, extra))}"] if extra else []) + (
            [f"input {', '.join(map(repr, missing))} missing"] if missing else [])
        raise CalibrationError(f"sample {index}: {'; '.join(parts)} (the model's inputs: {', '.join(sorted(want))})")
    out = {}
    for vi in inputs:
        value = np.asarray(sample[vi.name])
        elem = vi.type.tensor_type.elem_type
        dtype = helper.tensor_dtype_to_np_dtype(elem)
        if value.dtype != dtype:
            raise CalibrationError(f"sample {index}: input {vi.name!r} is {value.dtype}, the model declares {dtype}")
        # a symbolic dimension, or a negative one as exporters write for "any" (PaddleOCR's -1), fits any size
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None
                for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.HasField("shape") and (
                len(dims) != value.ndim or any(d is not None and d != s for d, s in zip(dims, value.shape))):
            shown = [d.dim_param or (d.dim_value if d.HasField("dim_value") else "?")  # as declared
                     for d in vi.type.tensor_type.shape.dim]
            raise CalibrationError(f"sample {index}: input {vi.name!r} has shape {list(value.shape)}, "
                                   f"the model declares {shown}")
        out[vi.name] = value
    return out


def _ort_runner(model: ModelProto, names: list[str], activations: dict[str, onnx.ValueInfoProto] | None
                ) -> Callable[[dict], list[np.ndarray]] | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    opset = default_opset(model.opset_import) or 0
    # a domain imported but read by no node (onnxruntime's quant_pre_process imports several) is no reason
    if opset > ORT_OPSET or any(n.domain not in STANDARD_DOMAINS for n in model.graph.node):
        return None
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # fatal only: a failing run's error is raised, with its message, not logged too
    declared = float_activations(model) if activations is None else activations
    present = {o.name for o in model.graph.output}
    wide = _with_outputs(model, [declared[n] for n in names if n not in present])
    session = ort.InferenceSession(wide, options, providers=["CPUExecutionProvider"])
    return lambda feed: session.run(names, feed)


def _with_outputs(model: ModelProto, outputs: list[onnx.ValueInfoProto]) -> bytes:
    """The bytes of ``model`` with ``outputs`` more graph outputs, at an IR version onnxruntime loads. Written from
    the model itself, left as it was: a copy would hold every weight once more while onnxruntime loads them (a
    transformer's calibration peaked a model's size higher)."""
    ir_version, kept = model.ir_version, len(model.graph.output)
    try:
        model.ir_version = min(ir_version, ORT_IR)
        model.graph.output.extend(outputs)
        return model.SerializeToString()
    finally:
        model.ir_version = ir_version
        del model.graph.output[kept:]


def _reference_runner(model: ModelProto, names: list[str]) -> Callable[[dict], list[np.ndarray]]:
    from onnx.reference import ReferenceEvaluator

    from onnx_qtypes.reference_ops.corrected import CORRECTED_OPS  # onnx.reference's wrong operators, corrected

    try:
        evaluator = ReferenceEvaluator(model, new_ops=CORRECTED_OPS)
    except Exception as exc:  # an operator onnx.reference does not implement (a custom domain, a missing type)
        raise CalibrationError(f"neither onnxruntime nor onnx.reference can run the model: {_first_line(exc)}") from None
    return lambda feed: evaluator.run(names, feed)


ENGINES = ("auto", "onnxruntime", "reference")


def runner(model: ModelProto, names: list[str], engine: str = "auto",
           activations: dict[str, onnx.ValueInfoProto] | None = None) -> tuple[str, Callable[[dict], list]]:
    """("onnxruntime" or "reference", a function feed -> values of ``names``, float activations). ``auto``:
    onnxruntime when it is installed and loads the model (it has no kernel for, e.g., a float64 Conv), else
    onnx.reference. ``activations``: ``float_activations(model)`` when the caller has it (each is a whole-model
    shape inference)."""
    if engine not in ENGINES:
        raise CalibrationError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if engine in ("auto", "onnxruntime"):
        try:
            run = _ort_runner(model, names, activations)
        except Exception as exc:  # onnxruntime's own exception types: NotImplemented, Fail, InvalidGraph, ...
            if engine == "onnxruntime":
                raise CalibrationError(f"onnxruntime cannot run the model: {_first_line(exc)}") from None
            run = None
        if run is not None:
            return "onnxruntime", run
        if engine == "onnxruntime":
            raise CalibrationError("onnxruntime is not installed, or cannot run this model's opset")
    return "reference", _reference_runner(model, names)


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n")[0].split())
    return text or type(exc).__name__


def collect(
    model: ModelProto,
    data: Any,
    *,
    engine: str = "auto",
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, TensorAccumulator], int, str, dict[str, str]]:
    """Per float tensor (activations and float initializers) its accumulated statistics, the sample count, what
    ran the model ("onnxruntime" or "reference"), and the tensors that took NaN or an infinity, each with where
    (a masked attention's -inf fill): those have no statistics. A graph input that does is the data's fault:
    CalibrationError naming the sample."""
    acts = float_activations(model)
    if not acts and not any(t.data_type in FLOAT_TYPES for t in model.graph.initializer):
        raise CalibrationError("the model has no float tensors to calibrate")
    accs = {name: TensorAccumulator(ACTIVATION_AXIS) for name in acts}
    names = list(acts)
    inputs = graph_inputs(model)
    input_names = {vi.name for vi in inputs}
    skipped: dict[str, str] = {}
    run, used = None, ""
    count = 0
    for index, sample in enumerate(feeds(data)):
        feed = check_feed(sample, inputs, index)
        if run is None:
            used, run = runner(model, names, engine, acts)
        try:
            values = run(feed)
        except Exception as exc:  # the model fails on this sample (a Reshape that does not fit): the user's input
            raise CalibrationError(f"sample {index}: {used} cannot run the model on it: {_first_line(exc)}") from None
        for name, value in zip(names, values):
            acc = accs.get(name)
            if acc is None:  # it took NaN or an infinity in an earlier sample
                continue
            try:
                acc.add(value)
            except NonFinite as exc:
                if name in input_names:
                    raise CalibrationError(f"sample {index}: input {name!r} {exc}; calibration needs finite "
                                           "inputs") from None
                skipped[name] = f"sample {index}: {exc}"
                del accs[name]
            except ValueError as exc:
                raise CalibrationError(f"sample {index}: tensor {name!r} {exc}") from None
        count += 1
        if progress is not None:
            progress(count)
    if count == 0:
        raise CalibrationError("the calibration data holds no samples; parameters need at least one")
    run = None  # the session's copy of every weight freed before the weights' own statistics are computed
    axes = weight_axes(model)
    for init in model.graph.initializer:
        if init.data_type in FLOAT_TYPES:
            acc = TensorAccumulator(axes.get(init.name), channel_bins=CHANNEL_BINS)
            try:
                acc.add(numpy_helper.to_array(init))
            except NonFinite as exc:
                skipped[init.name] = f"a constant: {exc}"
                continue
            except ValueError as exc:
                raise CalibrationError(f"initializer {init.name!r} {exc}") from None
            accs[init.name] = acc
    return accs, count, used, skipped


def progress_bar(total: int | None, stream: Any = None) -> Callable[[int], None] | None:
    """A one-line progress display on a terminal's stderr, or None when stderr is not a terminal."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def show(done: int) -> None:
        if total:
            filled = 30 * done // total
            stream.write(f"\rcalibrating [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        else:
            stream.write(f"\rcalibrating: {done} samples")
        if done == total:
            stream.write("\n")
        stream.flush()

    return show
