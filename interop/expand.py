"""Rewrite QOperator nodes as their QDQ equivalent, so that one fold lifts both forms.

A QLinear* node is, by its definition, DequantizeLinear on each quantized
input, the float operator, and QuantizeLinear on the output; an operator that
runs on stored integers (``passthrough``) is the same with the input's
parameters on both sides. After this rewrite the graph is plain QDQ, which
``onnx.shape_inference`` understands (it does not know the com.microsoft
ops), and ``fold`` turns every such group into one typed operator.
"""

from __future__ import annotations

import dataclasses
import functools

from onnx import NodeProto, TensorProto, helper

from onnx_qtypes.interop import metadata
from onnx_qtypes.interop.graph import MS_DOMAIN, GraphIndex, Names, node_with_attributes
from onnx_qtypes.interop.qdq import dequantize_node, parameter_tensors, quantize_node
from onnx_qtypes.interop.qoperator import operands
from onnx_qtypes.interop.recognise import QuantOp, Recognition
from onnx_qtypes.proto.qtype import QType

QUANT_SUFFIX = "_quantized"  # onnxruntime's QOperator name for the integer twin of a float tensor
QUANT_NODE_SUFFIX = "_quant"


@dataclasses.dataclass
class Expanded:
    nodes: list[NodeProto]
    initializers: list[TensorProto]
    roles: dict[int, str]  # position in ``nodes`` -> "q" | "dq" for every lifted boundary node
    keep_output_name: set[int]  # positions of Q nodes whose integer name must survive the fold
    synthetic: dict[str, str]  # float name invented here -> the integer tensor it stands for
    invented: set[int] = dataclasses.field(default_factory=set)  # positions of Q / DQ nodes made here
    qlinear: int = 0  # QLinear* nodes rewritten


class _Expander:
    def __init__(self, ix: GraphIndex, rec: Recognition) -> None:
        self.ix, self.rec = ix, rec
        self.out = Expanded([], [], {}, set(), {})
        self.dequantized: dict[str, str] = {}

    # made when a node is first rewritten (a plain QDQ graph has none to rewrite: nothing to gather)
    @functools.cached_property
    def names(self) -> Names:
        # stale declarations do not block a name: onnxruntime's QOperator models still declare the float
        # tensors ("conv_out") whose integer twins ("conv_out_quantized") replaced them; reusing the name
        # keeps its declared shape and lets calibration statistics keyed by it find the tensor
        return Names(self.ix.tensor_names())

    @functools.cached_property
    def node_names(self) -> Names:
        return Names({n.name for n in self.ix.nodes if n.name})

    def dequantize(self, tensor: str) -> str:
        if tensor in self.dequantized:
            return self.dequantized[tensor]
        qtype = self.rec.types[tensor]
        scale, zp = self._parameters(tensor, qtype)
        y = self.names.fresh(f"{tensor}_DequantizeLinear_Output")
        self.out.roles[len(self.out.nodes)] = "dq"
        self.out.invented.add(len(self.out.nodes))
        self.out.nodes.append(dequantize_node(tensor, y, scale, zp, qtype, self.node_names.fresh(f"{tensor}_DequantizeLinear")))
        self.dequantized[tensor] = y
        return y

    def quantize(self, float_name: str, tensor: str) -> None:
        qtype = self.rec.types[tensor]
        scale, zp = self._parameters(tensor, qtype)
        position = len(self.out.nodes)
        self.out.roles[position] = "q"
        self.out.keep_output_name.add(position)
        self.out.invented.add(position)
        self.out.synthetic[float_name] = tensor
        self.out.nodes.append(quantize_node(float_name, tensor, scale, zp, qtype, self.node_names.fresh(f"{tensor}_QuantizeLinear")))

    def _parameters(self, tensor: str, qtype: QType) -> tuple[str, str | None]:
        scale, zp = parameter_tensors(
            qtype, self.ix.shape(tensor), tensor, self.names.fresh(f"{tensor}_scale"), self.names.fresh(f"{tensor}_zero_point")
        )
        self.out.initializers.append(scale)
        if zp is not None:
            self.out.initializers.append(zp)
        return scale.name, None if zp is None else zp.name

    def float_name(self, tensor: str) -> str:
        base = tensor[: -len(QUANT_SUFFIX)] if tensor.endswith(QUANT_SUFFIX) else f"{tensor}_float"
        return self.names.fresh(base or f"{tensor}_float")

    def qlinear(self, node: NodeProto, op: QuantOp) -> None:
        spec = op.spec
        assert spec is not None
        inputs = [node.input[p] for p in spec.plain]
        inputs += [self.dequantize(node.input[o.data]) for o in operands(spec, node)]
        if spec.bias is not None and ("in", spec.bias.data) in op.ports:
            inputs.append(self.dequantize(op.ports[("in", spec.bias.data)]))
        out = node.output[0]
        typed_out = ("out", 0) in op.ports
        float_out = self.float_name(out) if typed_out else out
        name = node.name[: -len(QUANT_NODE_SUFFIX)] if node.name.endswith(QUANT_NODE_SUFFIX) else node.name
        name = self.node_names.fresh(name) if name else ""
        lifted = node_with_attributes(spec.float_op, inputs, [float_out], node, name=name, drop=tuple(spec.drop))
        given = {a.name for a in node.attribute}
        lifted.attribute.extend(helper.make_attribute(k, v) for k, v in spec.defaults if k not in given)
        if node.domain == MS_DOMAIN:  # lower's qoperator form writes it back: the original's kernel
            metadata.mark_contrib(lifted, node.op_type)
        self.out.nodes.append(lifted)
        if typed_out:
            self.quantize(float_out, out)
        self.out.qlinear += 1

    def passthrough(self, node: NodeProto, op: QuantOp) -> None:
        copy = NodeProto()
        copy.CopyFrom(node)
        for (side, position), tensor in op.ports.items():
            if side == "in":
                copy.input[position] = self.dequantize(tensor)
        outputs = []
        for (side, position), tensor in op.ports.items():
            if side == "out":
                copy.output[position] = self.float_name(tensor)
                outputs.append((copy.output[position], tensor))
        self.out.nodes.append(copy)
        for float_name, tensor in outputs:
            self.quantize(float_name, tensor)

    def run(self) -> Expanded:
        for i, node in enumerate(self.ix.nodes):
            op = self.rec.ops.get(i)
            if op is None:
                self.out.nodes.append(node)
            elif op.kind == "qlinear":
                self.qlinear(node, op)
            elif op.kind in ("pass", "use"):
                self.passthrough(node, op)
            else:
                self.out.roles[len(self.out.nodes)] = op.kind
                self.out.nodes.append(node)
        return self.out


def expand(ix: GraphIndex, rec: Recognition) -> Expanded:
    """The graph's nodes with every lifted QLinear / pass-through node in QDQ form."""
    return _Expander(ix, rec).run()
