"""The inputs both sides run on: the user's .npz, or values drawn deterministically from the input types.

Drawn inputs (``numpy.random.default_rng(seed)``, one draw per graph input in declaration order; symbolic
dimensions take size 1):

- a float input that a QuantizeLinear reads: uniform over the reals its type represents,
  scale·(qmin − zp) to scale·(qmax − zp) (per axis: the widest such interval), so every storage value is reached;
- another float input: standard normal;
- a static quantized input: storage values uniform over the storage range (4- and 2-bit storage widened to
  int8 / uint8, as backends take it; float storage: reals uniform over its finite range, rounded to the type);
- a dynamic quantized input: standard normal reals.

Other inputs (int64 indices, shapes, booleans) have no meaningful random value: give them with --inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import ModelProto

from onnx_qtypes.conformance.execution_cases import widen
from onnx_qtypes.proto import QType, quantized_tensors
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.reference_ops.feeds import InputSpec, kind
from onnx_qtypes.reference_ops.quant import dequantize


class InputsError(QTypesError):
    """Inputs cannot be drawn for the model (or do not fit it)."""


def draw(model: ModelProto, specs: Sequence[InputSpec], seed: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """Feeds for every required input of ``model``, and one line per input saying how it was drawn."""
    rng = np.random.default_rng(seed)
    readers = _quantizer_types(model)
    feeds: dict[str, np.ndarray] = {}
    how: list[str] = []
    for spec in specs:
        if not spec.required:
            continue
        if spec.dims is None or not spec.is_tensor:
            raise InputsError(f"input {spec.name!r} has no declared shape: give its values with --inputs FILE.npz")
        shape = tuple(d if isinstance(d, int) else 1 for d in spec.dims)
        value, said = _one(spec, shape, readers.get(spec.name), rng)
        feeds[spec.name] = value
        how.append(f"{spec.name} {list(shape)}: {said}")
    return feeds, how


def _one(spec: InputSpec, shape: tuple[int, ...], reader: QType | None, rng: np.random.Generator
         ) -> tuple[np.ndarray, str]:
    qtype = spec.qtype
    if qtype is not None and not qtype.is_dynamic:
        storage = qtype.storage_type
        if storage.is_float:
            reals = rng.uniform(storage.min, storage.max, size=shape)
            return reals.astype(storage.np_dtype), f"{qtype.storage} values uniform over [{storage.min}, {storage.max}]"
        lo, hi = int(qtype.storage_min), int(qtype.storage_max)
        return widen(rng.integers(lo, hi, size=shape, endpoint=True).astype(storage.np_dtype)), \
            f"storage uniform over [{lo}, {hi}]"
    if qtype is not None:
        return rng.standard_normal(shape).astype(qtype.expressed_type.np_dtype), "standard normal reals"
    dtype = spec.dtype
    if dtype is None or kind(dtype) != "f":
        raise InputsError(f"input {spec.name!r} is {getattr(dtype, 'name', 'untyped')} and not quantized: no value "
                          "can be drawn for it; give its values with --inputs FILE.npz")
    if reader is not None:
        lo, hi = _representable(reader)
        return rng.uniform(lo, hi, size=shape).astype(dtype), \
            f"uniform over [{lo:.6g}, {hi:.6g}], the reals its QuantizeLinear represents"
    return rng.standard_normal(shape).astype(dtype), "standard normal"


def _quantizer_types(model: ModelProto) -> dict[str, QType]:
    """Graph input -> the static type of a QuantizeLinear that reads it (the first one)."""
    qtypes = quantized_tensors(model)
    inputs = {i.name for i in model.graph.input}
    out: dict[str, QType] = {}
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear" and node.input and node.input[0] in inputs and node.output:
            qtype = qtypes.get(node.output[0])
            if qtype is not None and not qtype.is_dynamic and not qtype.storage_type.is_float:
                out.setdefault(node.input[0], qtype)
    return out


def _representable(qtype: QType) -> tuple[float, float]:
    """The widest interval of reals the type's storage range represents, over all its scales."""
    count = len(qtype.scale)
    flat = qtype.replace(axis=0 if count > 1 else None, block_size=None)  # one entry per scale
    ends = np.concatenate([dequantize(np.full(count, qtype.storage_min, np.int64), flat),
                           dequantize(np.full(count, qtype.storage_max, np.int64), flat)])
    return float(ends.min()), float(ends.max())
