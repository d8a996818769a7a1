"""Fold QuantizeLinear / DequantizeLinear pairs into the types of the tensors between ops.

A float operator N is folded when every float activation it reads comes from
a lifted DequantizeLinear and every float value it writes goes only into
lifted QuantizeLinear nodes with one type — or stays a plain float value
when every such DequantizeLinear was written by ``lower`` for N itself
(``metadata.inserted_by_lower``: a typed op with a float result; such an op may
also read float activations, as a MatMul with a typed weight does). By the typed semantics
(dequantize the inputs, apply N, quantize the outputs) the typed N then
computes exactly what DQ -> N -> Q computed: N reads the integer tensors
directly and writes the quantized tensor itself. Constant float inputs
(Clip bounds, Resize scales) and non-float inputs (shapes, indices) stay as
they are. Everything else keeps its QuantizeLinear / DequantizeLinear nodes
as boundary ops: float graph inputs and outputs, float ops that are not
quantized, requantization chains (DQ -> Q).

The folded tensor takes the float name (``conv_out`` rather than
``conv_out_QuantizeLinear_Output``), unless the QuantizeLinear output is a
graph output or was invented by ``expand`` (then the integer name stays).
"""

from __future__ import annotations

import dataclasses

from onnx import NodeProto

from onnx_qtypes.interop import metadata
from onnx_qtypes.interop.graph import STANDARD_DOMAINS, GraphIndex, has_subgraph
from onnx_qtypes.proto.qtype import QType


@dataclasses.dataclass
class Folded:
    nodes: list[NodeProto]
    types: dict[str, QType]
    aliases: dict[str, str]  # vanished name (float output, Q output, DQ output) -> typed name standing for it
    origins: dict[str, list[str]]  # typed name -> integer names it had before the fold
    removed: set[int] = dataclasses.field(default_factory=set)  # positions of the Q / DQ nodes folded away
    folded_ops: int = 0


def fold(ix: GraphIndex, roles: dict[int, str], keep_output_name: set[int], types: dict[str, QType]) -> Folded:
    nodes = ix.nodes
    # the nodes' fields as the index read them: a Q / DQ node is never rewritten here, and another node only once it
    # has been read (its inputs are read again at the end, as rewritten)
    node_inputs, node_outputs = ix.node_inputs, ix.node_outputs
    writers: dict[str, list[int]] = {}  # DQ output -> the DQ nodes writing it
    source: dict[str, str] = {}  # DQ output -> integer input
    for i, r in roles.items():
        if r == "dq":
            out = node_outputs[i][0]
            writers.setdefault(out, []).append(i)
            source[out] = node_inputs[i][0]
    inserted_by_lower: dict[str, bool] = {}  # DQ output -> whether ``lower`` wrote it (read when first asked)

    def inserted(name: str) -> bool:
        if name not in inserted_by_lower:
            inserted_by_lower[name] = any(metadata.inserted_by_lower(nodes[i]) for i in writers[name])
        return inserted_by_lower[name]

    def written_for(inputs: list[str]) -> bool:
        """Whether ``lower`` wrote every DQ a node reading ``inputs`` reads (the node then welcomes float activations
        and float results: asked only when it has one)."""
        return all(inserted(name) for name in inputs if name in source)
    types = dict(types)
    removed: set[int] = set()
    rename: dict[str, str] = {}
    aliases: dict[str, str] = {}
    origins: dict[str, list[str]] = {}
    rewired: dict[str, int] = {}
    folded_ops = 0

    def quantizers(name: str) -> list[int] | None:
        """The lifted Q nodes that are the only readers of float value ``name``, or None."""
        readers = ix.consumers.get(name, [])
        found = [c for c, j in readers if roles.get(c) == "q" and j == 0]
        if not readers or len(found) != len(readers) or name in ix.output_set or name in ix.outer_refs:
            return None
        one_kind = len(found) == 1 or len({types[node_outputs[q][0]] for q in found}) == 1
        outputs = [q for q in found if node_outputs[q][0] in ix.output_set]
        return found if one_kind and len(outputs) <= 1 else None

    for i, node in enumerate(nodes):
        if i in roles or ix.domains[i] not in STANDARD_DOMAINS or (ix.has_subgraphs and has_subgraph(node)):
            continue
        inputs = node_inputs[i]
        if source.keys().isdisjoint(inputs):
            continue
        if not all(not name or name in source or ix.is_constant(name) or ix.is_float(name) is False
                   for name in inputs) and not written_for(inputs):
            continue
        outputs: list[tuple[int, list[int]]] = []
        output_names = node_outputs[i]
        for k, name in enumerate(output_names):
            if not name:
                continue
            qs = quantizers(name)
            if qs is not None:
                outputs.append((k, qs))
            elif ix.is_float(name) is not False and not written_for(inputs):
                break  # a float value read as float elsewhere: the DQs stay as boundary ops
            # else a float result of quantized inputs (a final MatMul) that lower wrote with DQs of its own
        else:
            folded_ops += 1
            for j, name in enumerate(inputs):
                if name in source:
                    rewired[name] = rewired.get(name, 0) + 1
                    node.input[j] = source[name]
            for k, qs in outputs:
                float_name = output_names[k]
                q_outputs = [node_outputs[q][0] for q in qs]
                keep = [o for q, o in zip(qs, q_outputs) if o in ix.output_set] or [
                    o for q, o in zip(qs, q_outputs) if q in keep_output_name
                ]
                typed = keep[0] if keep else float_name
                node.output[k] = typed
                types[typed] = types[q_outputs[0]]
                origins[typed] = q_outputs
                if typed != float_name:
                    aliases[float_name] = typed
                for q, o in zip(qs, q_outputs):
                    removed.add(q)
                    if o != typed:
                        rename[o] = typed
                        aliases[o] = typed
                        types.pop(o, None)

    dead: set[int] = set()  # DequantizeLinears whose output nothing ever read
    for i, role in roles.items():
        if role != "dq":
            continue
        out = node_outputs[i][0]
        still_read = len(ix.consumers.get(out, [])) - rewired.get(out, 0)
        if still_read <= 0 and out not in ix.output_set and out not in ix.outer_refs:
            removed.add(i)
            aliases[out] = rename.get(node_inputs[i][0], node_inputs[i][0])
            if not ix.consumers.get(out):
                dead.add(i)
    for i, role in roles.items():  # a pair nothing reads (quantize_static's on a tensor only a subgraph reads): whole
        out = node_outputs[i][0] if role == "q" and i not in removed else None
        readers = ix.consumers.get(out, []) if out else []
        if readers and all(c in dead for c, _ in readers) and out not in ix.output_set and out not in ix.outer_refs:
            removed.add(i)
    kept = []
    for i, node in enumerate(nodes):
        if i in removed:
            continue
        inputs = node.input[:]
        if not rename.keys().isdisjoint(inputs):
            for j, name in enumerate(inputs):
                if name in rename:
                    node.input[j] = rename[name]
        kept.append(node)
    return Folded(kept, types, aliases, origins, removed, folded_ops)
