"""A Scan or Loop has sizes the checker can prove absurd.

## What it checks
A Scan's `num_scan_inputs` is at least 1 and at most the number of inputs
it has (less the `sequence_lens` input of Scan-8). A Loop whose trip count
is a constant and that has no condition input runs exactly that many times:
its scan outputs (the body's outputs after the condition and the loop-carried
values), at the per-iteration shapes the body declares, must fit in 2^40
bytes (1 TiB) altogether.

## Why
Both are sizes of the model, not of its data: a Scan with
`num_scan_inputs = 2^62` has no such inputs to scan (onnxruntime refuses it
at load time; a reference evaluator that trusts the number allocates for
it), and a Loop that stacks 4 KiB per iteration over 2^40 iterations asks for
4 PiB before it can finish. No runtime can run either; the model should be
refused before any memory is spent.

## Invalid example
`Scan(state, xs)` with `num_scan_inputs = 4611686018427387904`; a Loop with
trip count `1099511627776` (a constant), no condition, and a body scan
output of shape `[1024]` float32.

## Valid example
The Scan with `num_scan_inputs = 1`; the Loop with trip count 16, or with a
condition input that may end it early.

## Fix
Give `num_scan_inputs` the number of scanned inputs; bound the Loop's trip
count (or give it a condition).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from onnx import AttributeProto

from onnx_qtypes.checker.context import Context, NodeRef
from onnx_qtypes.checker.diagnostics import Finding, Location
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.encoding import plain_data_type
from onnx_qtypes.proto.tensor_sizes import BITS

MAX_BYTES = 2**40


def _attribute(ref: NodeRef, name: str) -> tuple[int, AttributeProto] | None:
    for k, attribute in enumerate(ref.node.attribute):
        if attribute.name == name:
            return k, attribute
    return None


def _scan(ref: NodeRef) -> Iterator[Finding]:
    found = _attribute(ref, "num_scan_inputs")
    if found is None or found[1].type != AttributeProto.INT:
        return  # absent or of another kind: the schema's error (QT310)
    k, attribute = found
    available = len(ref.inputs) - (1 if ref.opset and ref.opset < 9 else 0)
    if not 1 <= attribute.i <= available:
        yield Finding(Location(f"{ref.pointer}/attribute/{k}", node=ref.name, op_type=ref.op_type),
                      f"num_scan_inputs = {attribute.i}, but the node has {available} input(s) it could scan; "
                      "it must be from 1 to that number")


def _loop(ctx: Context, ref: NodeRef) -> Iterator[Finding]:
    if not ref.inputs or not ref.inputs[0] or (len(ref.inputs) > 1 and ref.inputs[1]):
        return  # no constant trip count to prove anything with, or a condition that may end it early
    trips = ctx.constant_array(ref.scope, ref.inputs[0])
    found = _attribute(ref, "body")
    if trips is None or trips.size != 1 or trips.dtype.kind not in "iu" or found is None:
        return
    body = found[1].g
    carried = max(len(ref.inputs) - 2, 0)
    per_iteration = 0
    for output in list(body.output)[1 + carried:]:  # condition, loop-carried values, then scan outputs
        tensor_type = output.type.tensor_type if output.type.WhichOneof("value") == "tensor_type" else None
        if tensor_type is None or not tensor_type.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
        bits = BITS.get(plain_data_type(tensor_type.elem_type))
        if None in dims or bits is None:
            continue  # an unknown size proves nothing
        per_iteration += -(-math.prod(dims) * bits // 8)
    total = int(trips.reshape(-1)[0]) * per_iteration
    if total > MAX_BYTES:
        yield Finding(Location(f"{ref.pointer}/input/0", node=ref.name, tensor=ref.inputs[0], op_type=ref.op_type),
                      f"trip count {int(trips.reshape(-1)[0])} (a constant, and no condition to end the loop early) "
                      f"times {per_iteration} bytes of scan outputs per iteration is {total} bytes, beyond 2^40; "
                      "no runtime can hold them")


@rule("QT413", "control-flow-size-absurd", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of("Scan", "Loop"):
        yield from (_scan(ref) if ref.op_type == "Scan" else _loop(ctx, ref))

