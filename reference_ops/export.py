"""Fixed-point export: the integer constants an integer-only target needs, per node.

``fixed_point_parameters(model)`` asks each node's integer kernel for the
real multipliers it uses (its ``plan``) and converts them with
``fixed_point.quantize_multipliers`` exactly as the kernel does at run time,
so a device without floating point never computes them, and the checker
can inspect them (e.g. multipliers that flush to 0, shifts out of a
target's range).

For every node with quantized inputs or outputs (subgraph nodes included,
keyed ``<parent node>/<attribute>/<node>``)::

    {"op_type": "Conv",
     "kernel": "integer" | "definitional: <why no integer kernel applies>",
     "zero_points": {"x": [...], "w": [...], "y": [...]},
     "storage_ranges": {"y": [lo, hi], ...},
     "multipliers": {"accumulator": {"real": [...], "multiplier": [...], "shift": [...]}, ...},
     "constants": {"low": [...], ...},    # integer constants (clamp bounds, pad values, averaging counts)
     "tables": {"table": [...], ...}}     # lookup tables (element-wise functions, softmax)

``multiplier`` / ``shift`` follow ``fixed_point``: real ~= multiplier * 2**-shift,
multiplier in [2**30, 2**31); arrays are flattened in the broadcast layout
the kernel uses (per channel, per column, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from onnx_qtypes.proto import iter_declarations, load, static_shape
from onnx_qtypes.reference_ops import fixed_point
from onnx_qtypes.reference_ops.evaluator import ReferenceEvaluator, _TypedNode

__all__ = ["fixed_point_parameters"]

_INTEGER_CONSTANTS = ("low", "high", "pad_value", "count")


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for decl in iter_declarations(model):
        shape = static_shape(decl.value_info)
        if shape is not None and all(d is not None for d in shape):
            shapes.setdefault(decl.name, shape)  # type: ignore[arg-type]
    from onnx_qtypes.proto import iter_graphs

    for _, graph in iter_graphs(model):
        for init in graph.initializer:
            shapes[init.name] = tuple(init.dims)
    return shapes


def _listed(values: np.ndarray) -> list:
    return np.asarray(values).reshape(-1).tolist()


def _describe(plan: dict[str, np.ndarray]) -> dict[str, Any]:
    multipliers, constants, tables = {}, {}, {}
    for name, value in plan.items():
        value = np.asarray(value)
        if "table" in name:
            tables[name] = _listed(value)
        elif name in _INTEGER_CONSTANTS:
            constants[name] = _listed(value)
        else:
            reals = value.astype(np.float64)
            if reals.size > 1 and np.all(reals == reals.reshape(-1)[0]):
                reals = reals.reshape(-1)[:1]  # one value broadcast over a shape: store it once
            multiplier, shift = fixed_point.quantize_multipliers(reals)
            multipliers[name] = {"real": _listed(reals), "multiplier": _listed(multiplier), "shift": _listed(shift)}
    return {"multipliers": multipliers, "constants": constants, "tables": tables}


def _walk(evaluator: ReferenceEvaluator, prefix: str) -> list[tuple[str, _TypedNode, ReferenceEvaluator]]:
    found = []
    for index, node in enumerate(evaluator.rt_nodes_):
        proto = node.onnx_node
        key = prefix + (proto.name or f"{proto.op_type}#{index}")
        if isinstance(node, _TypedNode):
            found.append((key, node, evaluator))
        inner = node._inner if isinstance(node, _TypedNode) else node
        for attribute in proto.attribute:
            sub = getattr(inner, attribute.name, None)
            if isinstance(sub, ReferenceEvaluator):
                found.extend(_walk(sub, f"{key}/{attribute.name}/"))
    return found


def fixed_point_parameters(model: onnx.ModelProto | str | bytes) -> dict[str, dict[str, Any]]:
    """Per node with quantized tensors: the integer constants of its integer kernel (see module doc)."""
    from onnx_qtypes.reference_ops.ops import KernelContext, Unsupported  # noqa: PLC0415

    if not isinstance(model, onnx.ModelProto):
        model = load(model)
    evaluator = ReferenceEvaluator(model, kernels="integer")
    shapes = _shapes(model)
    qtypes = evaluator.qtypes
    out: dict[str, dict[str, Any]] = {}
    for key, node, owner in _walk(evaluator, ""):
        proto = node.onnx_node
        names = [n for n in [*proto.input, *proto.output] if n in qtypes]
        entry: dict[str, Any] = {
            "op_type": proto.op_type,
            "zero_points": {n: list(qtypes[n].zero_point) for n in names},
            "storage_ranges": {n: [qtypes[n].storage_min, qtypes[n].storage_max] for n in names},
            "multipliers": {}, "constants": {}, "tables": {},
        }
        kernel = node._kernel
        dynamic = [n for n in names if qtypes[n].is_dynamic]
        if kernel is None:
            entry["kernel"] = "definitional: no integer kernel for this operator"
        elif dynamic:
            entry["kernel"] = f"definitional: {dynamic[0]!r} is dynamic; its parameters are computed at run time"
        elif not hasattr(kernel, "plan"):
            entry["kernel"] = "integer"  # boundary conversion: nothing to precompute
        else:
            constants = [owner.rt_inits_.get(n) if n else None for n in proto.input]
            ctx = KernelContext(proto, node._inner, constants, node._in, node._out, shapes=[shapes.get(n) for n in proto.input])
            try:
                with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                    entry.update(_describe(kernel.plan(ctx)))
                entry["kernel"] = "integer"
            except (Unsupported, fixed_point.MultiplierError) as why:
                entry["kernel"] = f"definitional: {why}"
        out[key] = entry
    return out
