"""Small graphs: requantization after requantization, dynamic types, control flow."""

from __future__ import annotations

import numpy as np

from .common import Spec, _bias, _i64, far_from_ties


def _graphs(rm):
    from onnx import TensorProto  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415

    T = rm.T

    def conv_relu_max_pool(g, v):
        x, w = g.q(), g.weight((3, 2, 3, 3), 0 if v == "per-axis" else None)
        t = g.out(g.width(x) * g.width(w) * 18 ** 0.5 / 6, fitted=False)
        inputs = [T("x", (1, 2, 5, 5), x), T("w", (3, 2, 3, 3), w, value=g.data(w, (3, 2, 3, 3)).astype(np.int32)),
                  T("b", (3,), _bias(g, x, w, 3), value=np.array([-97, 0, 194], np.int32))]
        nodes = [("Conv", ["x", "w", "b"], ["t"], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
                 ("Relu", ["t"], ["r"], {}),
                 ("MaxPool", ["r"], ["y"], {"kernel_shape": [2, 2], "strides": [2, 2]})]
        return Spec("Conv", inputs, [T("y", (1, 3, 2, 2), t)], {}, nodes=nodes,
                    hidden=[T("t", (1, 3, 5, 5), t), T("r", (1, 3, 5, 5), t)],
                    note="Conv -> Relu -> MaxPool, one requantization")

    def matmul_add(g, v):
        a, b = g.q(), g.weight((4, 5), 1 if v == "per-axis" else None)
        t = g.out(g.width(a) * g.width(b) * 4 ** 0.5 / 6, fitted=False)
        c = g.q()
        y = QType(g.storage, 2 * max(t.scale[0], c.scale[0]), g.zero_point(), expressed=g.expressed)
        inputs = [T("a", (2, 3, 4), a), T("b", (4, 5), b, value=g.data(b, (4, 5)).astype(np.int32)),
                  T("c", (2, 3, 5), c)]
        nodes = [("MatMul", ["a", "b"], ["t"], {}), ("Add", ["t", "c"], ["y"], {})]
        return Spec("MatMul", inputs, [T("y", (2, 3, 5), y)], {}, nodes=nodes, hidden=[T("t", (2, 3, 5), t)],
                    note="MatMul -> Add, two requantizations")

    def requantize_concat(g, v):
        a = g.q()
        b = QType(g.storage, a.scale[0] * 3, g.zero_point(), expressed=g.expressed)
        inputs = [T("x0", (2, 3, 4), a), _i64(T, "shape", [2, 4, 3]), T("x1", (2, 2, 3), b)]
        nodes = [("Reshape", ["x0", "shape"], ["t"], {}), ("Concat", ["t", "x1"], ["y"], {"axis": 1})]
        return Spec("Concat", inputs, [T("y", (2, 6, 3), b)], {}, nodes=nodes, hidden=[T("t", (2, 4, 3), b)],
                    note="Reshape (requantizing) -> Concat")

    def quantize_relu_dequantize(g, v):
        a = g.q()
        fdt = g.fdt
        scale, zp = np.asarray(a.scale[0], g.fdtype), np.asarray(a.zero_point[0]).astype(g.info.np_dtype)
        inputs = [T("x", (2, 3, 4), dtype=fdt), T("s", (), dtype=fdt, value=scale), T("z", (), value=zp)]
        nodes = [("QuantizeLinear", ["x", "s", "z"], ["q"], {}), ("Relu", ["q"], ["r"], {}),
                 ("DequantizeLinear", ["r", "s", "z"], ["y"], {})]
        feeds = {"x": far_from_ties((g.rng.normal(0, 1, (2, 3, 4)) * g.width(a) / 4).astype(g.fdtype), a)}
        return Spec("Relu", inputs, [T("y", (2, 3, 4), dtype=fdt)], {}, nodes=nodes, anchor="boundary",
                    hidden=[T("q", (2, 3, 4), a), T("r", (2, 3, 4), a)], feeds=feeds,
                    note="QuantizeLinear -> Relu -> DequantizeLinear, float in and out")

    def dynamic_quantize_linear(g, v):
        if g.expressed != "float32":
            return None  # ONNX defines DynamicQuantizeLinear on float32 only
        shift = 3.0 if v == "positive" else 0.0  # all positive: the range still includes 0
        feeds = {"x": (g.rng.normal(shift, 1.5, (2, 3, 4))).astype(np.float32)}
        nodes = [("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"], {})]
        outputs = [T("y", (2, 3, 4), QType("uint8")), T("y_scale", (), dtype=TensorProto.FLOAT),
                   T("y_zero_point", (), dtype=TensorProto.UINT8)]
        return Spec("DynamicQuantizeLinear", [T("x", (2, 3, 4))], outputs, {}, nodes=nodes, qdq="plain",
                    anchor="dynamic-binding", feeds=feeds, note=f"a dynamic uint8 type ({v} inputs)")

    def quantize_binds(g, v):
        fdt = g.fdt
        bound = g.q()
        inputs = [T("x", (2, 3, 4), dtype=fdt), T("s", (), dtype=fdt), T("z", (), dtype=g.info.data_type)]
        nodes = [("QuantizeLinear", ["x", "s", "z"], ["y"], {}), ("DequantizeLinear", ["y", "s", "z"], ["r"], {})]
        feeds = {"x": far_from_ties((g.rng.normal(0, 1, (2, 3, 4)) * g.width(bound) / 4).astype(g.fdtype), bound),
                 "s": np.asarray(bound.scale[0], g.fdtype), "z": np.asarray(bound.zero_point[0]).astype(g.info.np_dtype)}
        outputs = [T("y", (2, 3, 4), QType(g.storage, None, None, expressed=g.expressed)), T("r", (2, 3, 4), dtype=fdt)]
        return Spec("QuantizeLinear", inputs, outputs, {}, nodes=nodes, qdq="plain", anchor="dynamic-binding",
                    feeds=feeds, steps={"r": bound.scale[0]},  # r in the steps of the scale y is bound to
                    note="the dynamic output type binds the run-time scale and zero point")

    def dynamic_matmul(g, v):
        from onnx_qtypes.reference_ops import dynamic_parameters  # noqa: PLC0415

        if g.expressed != "float32":
            return None  # ONNX defines DynamicQuantizeLinear on float32 only
        b = g.weight((4, 5), 1 if v == "per-axis" else None)
        x = g.rng.normal(0, 1.5, (3, 4)).astype(np.float32)
        feeds = {"x": x}
        x_scale = dynamic_parameters(x, QType("uint8")).scale[0]  # what DynamicQuantizeLinear computes
        nodes = [("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], {}), ("MatMul", ["xq", "b"], ["y"], {})]
        inputs = [T("x", (3, 4)), T("b", (4, 5), b, value=g.data(b, (4, 5)).astype(np.int32))]
        hidden = [T("xq", (3, 4), QType("uint8")), T("xs", ()), T("xz", (), dtype=TensorProto.UINT8)]
        return Spec("MatMul", inputs, [T("y", (3, 5))], {}, nodes=nodes, hidden=hidden, anchor="dynamic-binding",
                    feeds=feeds, steps={"y": float(x_scale) * float(min(b.scale))},
                    note="DynamicQuantizeLinear -> MatMul with a float result (dynamic quantization)")

    def body(name, nodes, inputs, outputs):
        """A subgraph: nodes (op, inputs, outputs, attrs), its formal inputs and outputs (T)."""
        from onnx import helper  # noqa: PLC0415

        return helper.make_graph([helper.make_node(op, ins, outs, name=f"{name}_{i}", **attrs)
                                  for i, (op, ins, outs, attrs) in enumerate(nodes)], name,
                                 [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in inputs],
                                 [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in outputs])

    def if_(g, v):
        """The branch taken computes (Max of x and w) or moves (Transpose twice) with the outer type, which the If's
        output keeps."""
        x = g.q()
        then = body("then", [("Max", ["x", "w"], ["t"], {})], [], [T("t", (2, 3, 4), x)])
        else_ = body("else", [("Transpose", ["x"], ["u"], {"perm": [0, 2, 1]}),
                              ("Transpose", ["u"], ["e"], {"perm": [0, 2, 1]})], [], [T("e", (2, 3, 4), x)])
        inputs = [T("x", (2, 3, 4), x), T("w", (2, 3, 4), x), T("c", (), dtype=TensorProto.BOOL)]
        nodes = [("If", ["c"], ["y"], {"then_branch": then, "else_branch": else_})]
        return Spec("If", inputs, [T("y", (2, 3, 4), x)], {}, nodes=nodes, anchor="data-movement",
                    feeds={"c": np.array(v == "then")}, inner=[T("t", (2, 3, 4), x), T("u", (2, 4, 3), x),
                                                                T("e", (2, 3, 4), x)],
                    note=f"the {v} branch (Max / Transpose twice) on the outer type")

    def loop(g, v):
        """Three iterations each rotate the carried x by one along its last axis (Slice, Concat) and keep the
        elementwise maximum of it and its rotation (Max with the carried type): moved and compared, never
        requantized. No scan output: onnx.reference 1.23.2 concatenates Loop scan outputs where ONNX stacks them."""
        x = g.q()
        nodes = [("Slice", ["acc_in", "one", "end", "last"], ["tail"], {}),
                 ("Slice", ["acc_in", "zero", "one", "last"], ["head"], {}),
                 ("Concat", ["tail", "head"], ["turned"], {"axis": 2}),
                 ("Max", ["acc_in", "turned"], ["acc_out"], {}),
                 ("Identity", ["cond_in"], ["cond_out"], {})]
        consts = [_i64(T, "zero", [0]), _i64(T, "one", [1]), _i64(T, "end", [4]), _i64(T, "last", [2])]
        inner = [T("acc_in", (2, 3, 4), x), T("tail", (2, 3, 3), x), T("head", (2, 3, 1), x),
                 T("turned", (2, 3, 4), x), T("acc_out", (2, 3, 4), x)]
        graph = body("body", nodes, [T("i", (), dtype=TensorProto.INT64), T("cond_in", (), dtype=TensorProto.BOOL),
                                     inner[0]], [T("cond_out", (), dtype=TensorProto.BOOL), inner[4]])
        inputs = [T("n", (), dtype=TensorProto.INT64, value=np.array(3, np.int64)), None, T("x", (2, 3, 4), x), *consts]
        nodes = [("Loop", ["n", "", "x"], ["y"], {"body": graph})]
        return Spec("Loop", inputs, [T("y", (2, 3, 4), x)], {}, nodes=nodes, anchor="data-movement", inner=inner,
                    note="rotate and elementwise maximum in the body, 3 iterations")

    def scan(g, v):
        """A running minimum over the scanned slices (state) and each slice's reverse (scan output)."""
        x = g.q()
        nodes = [("Min", ["s_in", "x_in"], ["s_out"], {}), ("Slice", ["x_in", "last", "past", "axis", "back"],
                                                             ["y_out"], {})]
        consts = [_i64(T, "last", [-1]), _i64(T, "past", [-5]), _i64(T, "axis", [0]), _i64(T, "back", [-1])]
        inner = [T("s_in", (4,), x), T("x_in", (4,), x), T("s_out", (4,), x), T("y_out", (4,), x)]
        graph = body("body", nodes, inner[:2], inner[2:])
        inputs = [T("s", (4,), x), T("xs", (3, 4), x), *consts]
        nodes = [("Scan", ["s", "xs"], ["y", "ys"], {"body": graph, "num_scan_inputs": 1})]
        return Spec("Scan", inputs, [T("y", (4,), x), T("ys", (3, 4), x)], {}, nodes=nodes,
                    anchor="data-movement", inner=inner,
                    note="running minimum (state) and reversed slices")

    return {
        # lower keeps a subgraph that only moves and compares stored values of one type as it is, on the storage
        # integers (exact with equal parameters throughout); onnxruntime's Max / Min take 8-bit storage only
        "if": (if_, ("int8", "uint8"), ("then", "else")),
        "loop": (loop, ("int8", "uint8"), ("chain",)),
        "scan": (scan, ("int8", "uint8"), ("chain",)),
        "conv-relu-max_pool": (conv_relu_max_pool, ("int8", "uint8", "int16"), ("per-tensor", "per-axis")),
        "matmul-add": (matmul_add, ("int8", "uint8", "int16", "uint16"), ("per-tensor", "per-axis")),
        "reshape-requantize-concat": (requantize_concat, ("int8", "uint8", "int16", "uint4"), ("chain",)),
        "quantize-relu-dequantize": (quantize_relu_dequantize, ("int8", "uint8", "int16", "uint16"), ("chain",)),
        "dynamic_quantize_linear": (dynamic_quantize_linear, ("uint8",), ("mixed", "positive")),
        "quantize_linear-binds-dynamic": (quantize_binds, ("int8", "uint8", "int16", "uint16"), ("dynamic",)),
        "dynamic_quantize_linear-matmul": (dynamic_matmul, ("int8",), ("per-tensor", "per-axis")),
    }


MIXED = (("int16", "int8"), ("uint16", "int8"), ("uint16", "uint8"), ("uint8", "int4"), ("int8", "int4"))
