"""A tensor holding quantized integers is stored with a plain data_type: stock tools read it as numbers.

## What it checks
Every tensor that holds the stored integers of a quantized value carries the
fail-closed marker as `data_type` (1000 + the storage type, its integers in
`raw_data`): a quantized initializer, the `value` of a `Constant` whose
output is quantized, and the zero point of a boundary QuantizeLinear (whose
output is quantized) or DequantizeLinear (whose input is). A boundary
QuantizeLinear has a zero-point input, so that its output type comes from a
marked tensor rather than from `output_dtype` or the UINT8 default.

## Why
A stock tool that rewrites the model may drop `value_info` (optimizers do)
or re-infer types from the nodes (shape inference, the version converter).
Then the only types left are those of the constants and of what the nodes
compute from them: an INT8 initializer or an INT8 zero point lets
onnxruntime run `Add` on stored integers and return plain integer sums
(measured by proposal/experiments/encodings_vs_tools.py, recorded in
encodings_vs_tools.json: fail-open pairs for marked declarations alone,
none once these tensors are marked too).

## Invalid example
`w` an initializer with `data_type: INT8` declared `int8:float32<0.5:0>`; or
`x_q = QuantizeLinear(x, s, z)` with `x_q` quantized and `z` of
`data_type: INT8`.

## Valid example
The same tensors with `data_type: 1003` and their integers in `raw_data`.

## Fix
Save the model with `onnx_qtypes.save`, which marks them (and converts a
model read in the version-1 form).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding, Location
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.encoding import marker
from onnx_qtypes.proto.storage_types import STORAGE_TYPES


@rule("QT311", "quantized-constant-fails-open", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    for key, const, qtype in ctx.quantized_constants():
        st = STORAGE_TYPES.get(qtype.storage)
        if st is not None and const.tensor is not None and not const.marked and const.data_type == st.data_type:
            yield Finding(const.location(), _message(f"quantized constant {key[1]!r}", st.data_type))
    for ref in ctx.nodes_of("QuantizeLinear", "DequantizeLinear"):
        if not ctx.is_boundary(ref):
            continue
        names = ref.outputs if ref.op_type == "QuantizeLinear" else ref.inputs
        quantized = names[0] if names else ""
        qtype = ctx.qtype(ref.scope, quantized) if quantized else None
        st = STORAGE_TYPES.get(qtype.storage) if qtype is not None else None
        if st is None:
            continue
        zero_point = ref.inputs[2] if len(ref.inputs) > 2 and ref.inputs[2] else None
        if zero_point is None:
            if ref.op_type == "QuantizeLinear":
                yield Finding(ref.location(), f"QuantizeLinear writes quantized {quantized!r} without a zero-point "
                              "input, so re-inference types its output from output_dtype as plain integers; give it "
                              f"a zero point of data_type {marker(st.data_type)}")
            continue
        const = ctx.constants.get((ref.scope, zero_point))
        if const is not None and not const.marked and const.data_type == st.data_type:
            yield Finding(Location(ref.location("input", 2).pointer, node=ref.name, tensor=zero_point,
                                   op_type=ref.op_type),
                          _message(f"zero point {zero_point!r} of boundary {ref.op_type} on {quantized!r}",
                                   st.data_type))


def _message(what: str, storage: int) -> str:
    return (f"{what} is stored with its plain data_type, so a tool that drops or re-infers the declarations leaves "
            f"runtimes computing on the raw integers; store it with data_type {marker(storage)} "
            "(onnx_qtypes.save does)")
