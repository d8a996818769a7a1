"""Operators that compute the same on storage integers as on real values.

QOperator models run data-movement operators (Reshape, Transpose, MaxPool,
...) directly on the stored integers. That is exact under the typed
semantics only when every output element is one input element, or the
maximum / minimum of some (dequantization is strictly increasing because a
scale is > 0, so it commutes with max and min), and the output keeps the
input's per-tensor parameters. For those operators the output tensor gets
the input's type; any other operator on stored integers is left alone.

``PASS_THROUGH`` is ``onnx_qtypes.proto.data_movement.DATA_MOVEMENT``: op
type -> (input positions, output positions) that share one type (``None`` =
every position). ``TYPED_INPUT_ONLY`` ops read a
quantized input and write something that is not quantized (a shape, an
index), identically on integers and on reals.
"""

from __future__ import annotations

from onnx import NodeProto

from onnx_qtypes.interop.graph import STANDARD_DOMAINS, attributes, has_subgraph
from onnx_qtypes.proto.data_movement import DATA_MOVEMENT, moves_data

PASS_THROUGH = DATA_MOVEMENT  # the one list, in onnx_qtypes.proto.data_movement

TYPED_INPUT_ONLY = frozenset({"Shape", "Size", "ArgMax", "ArgMin"})


def links(node: NodeProto) -> list[str] | None:
    """The tensor names that must share one type when ``node`` runs on integers, or None."""
    attrs = attributes(node)
    if node.domain not in STANDARD_DOMAINS or has_subgraph(node):
        return None
    if not moves_data(node.op_type, attrs.get("mode", b"nearest")):
        return None  # not data movement, or a Resize that interpolates (on integers it rounds otherwise)
    ins, outs = PASS_THROUGH[node.op_type]
    if node.op_type == "Pad":
        mode = attrs.get("mode", b"constant")
        if mode in (b"constant", "constant") and (len(node.input) < 3 or not node.input[2]):
            return None  # pads with integer 0, i.e. the real value -scale*zero_point, not 0
    in_names = [n for i, n in enumerate(node.input) if n and (ins is None or i in ins)]
    out_names = [n for i, n in enumerate(node.output) if n and (outs is None or i in outs)]
    return in_names + out_names


def typed_input_only(node: NodeProto) -> bool:
    return node.domain in STANDARD_DOMAINS and node.op_type in TYPED_INPUT_ONLY
