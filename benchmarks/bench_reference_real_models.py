"""`run` on bigger quantized models, against onnxruntime's unoptimized path, tensor by tensor.

Two float models, built here with onnx.helper (nothing downloaded), at run-time input sizes:

- resnet: a ResNet-18-shaped CNN at opset 13 (stem Conv 7x7/2 + BatchNormalization + Relu + MaxPool, four
  stages of two basic blocks, 16..128 channels, strided 1x1 shortcuts, GlobalAveragePool, Gemm); input
  [batch, 3, height, width];
- bert: a two-layer BERT-like encoder at opset 17 (word / position / token-type embeddings with the torch
  GatherElements, LayerNormalization, 4-head attention with Softmax, Erf GELU feed-forward); input_ids
  [batch, sequence].

Each is quantized by onnxruntime (quantize_static QDQ uint8 and int8 per-channel, QOperator uint8;
quantize_dynamic; 4-bit MatMulNBits for bert), lifted (`onnx_qtypes.lift`), and run by the reference
evaluator and by onnxruntime (ORT_DISABLE_ALL, 1 thread) on the same inputs. For every quantized tensor both
expose (onnxruntime's QuantizeLinear output of a tensor the lifted model types): the largest difference in
storage steps of each operator run on onnxruntime's own values of its quantized inputs (the per-operator
tolerance is one step), the largest difference end to end (steps compound along the chain: a one-step
difference entering a BatchNormalization of gain 2 leaves it as two) and how many elements are off; for the
float outputs, the largest difference. Times: the
reference evaluator and onnxruntime side by side, median of 3.

Run: python benchmarks/bench_reference_real_models.py [--batch 2] [--size 64] [--sequence 32]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_lift_lower import best_of  # noqa: E402
from corpus import _quiet, _Reader  # noqa: E402, PLC2701 - the corpus's quantize_static helpers

from onnx_qtypes import lift, quantized_tensors  # noqa: E402
from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: E402

F = TensorProto.FLOAT


def _w(rng, name, shape, std=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return numpy_helper.from_array((rng.normal(0, std or (2 / fan_in) ** 0.5, shape)).astype(np.float32), name)


def resnet(rng: np.random.Generator) -> onnx.ModelProto:
    nodes, inits = [], []

    def conv_bn(x, cin, cout, k, stride, name, relu=True):
        inits.append(_w(rng, f"{name}_w", [cout, cin, k, k]))
        inits.extend(numpy_helper.from_array(v.astype(np.float32), f"{name}_{n}") for n, v in (
            ("s", rng.uniform(0.5, 1.5, cout)), ("b", rng.normal(0, 0.1, cout)), ("m", rng.normal(0, 0.1, cout)),
            ("v", rng.uniform(0.5, 1.5, cout))))
        nodes.append(helper.make_node("Conv", [x, f"{name}_w"], [f"{name}_c"], name=f"{name}_conv", strides=[stride] * 2,
                                      pads=[k // 2] * 4))
        nodes.append(helper.make_node("BatchNormalization", [f"{name}_c", *(f"{name}_{n}" for n in "sbmv")],
                                      [f"{name}_n"], name=f"{name}_bn", momentum=0.9))
        if not relu:
            return f"{name}_n"
        nodes.append(helper.make_node("Relu", [f"{name}_n"], [f"{name}_r"], name=f"{name}_relu"))
        return f"{name}_r"

    x = conv_bn("x", 3, 16, 7, 2, "stem")
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
    x, cin = "pool", 16
    for stage, cout in enumerate((16, 32, 64, 128)):
        for block in range(2):
            stride = 2 if stage and not block else 1
            name = f"s{stage}b{block}"
            h = conv_bn(x, cin, cout, 3, stride, f"{name}a")
            h = conv_bn(h, cout, cout, 3, 1, f"{name}b", relu=False)
            shortcut = conv_bn(x, cin, cout, 1, stride, f"{name}d", relu=False) if stride != 1 or cin != cout else x
            nodes.append(helper.make_node("Add", [h, shortcut], [f"{name}_sum"], name=f"{name}_add"))
            nodes.append(helper.make_node("Relu", [f"{name}_sum"], [f"{name}_out"], name=f"{name}_relu"))
            x, cin = f"{name}_out", cout
    inits += [_w(rng, "fc_w", [10, 128]), numpy_helper.from_array(np.zeros(10, np.float32), "fc_b")]
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"]), helper.make_node("Flatten", ["gap"], ["flat"]),
              helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "resnet", [helper.make_tensor_value_info("x", F, ["batch", 3, "height", "width"])],
                              [helper.make_tensor_value_info("logits", F, ["batch", 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)


def bert(rng: np.random.Generator, vocab: int = 1000, hidden: int = 64, heads: int = 4, ffn: int = 256,
         layers: int = 2) -> onnx.ModelProto:
    c = lambda name, value, dtype=np.float32: numpy_helper.from_array(np.asarray(value, dtype), name)  # noqa: E731
    inits = [_w(rng, "word", [vocab, hidden], 0.5), _w(rng, "position", [512, hidden], 0.1),
             _w(rng, "token_type", [2, hidden], 0.1), c("position_ids", np.arange(512).reshape(1, -1), np.int64),
             c("token_type_ids", np.zeros((1, 512)), np.int64), c("one", [1], np.int64), c("two", [2], np.int64),
             c("zero", [0], np.int64), c("heads_shape", [0, 0, heads, hidden // heads], np.int64),
             c("merge_shape", [0, 0, hidden], np.int64), c("sqrt_d", np.sqrt(hidden // heads)),
             c("sqrt2", np.sqrt(2.0)), c("one_f", 1.0), c("half", 0.5)]
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["ids_shape"]),
        helper.make_node("Slice", ["ids_shape", "one", "two"], ["seq"]),
        helper.make_node("Slice", ["position_ids", "zero", "seq", "one"], ["positions"]),
        helper.make_node("GatherElements", ["token_type_ids", "positions"], ["types"], axis=1),
        helper.make_node("Expand", ["types", "ids_shape"], ["token_types"]),
        helper.make_node("Gather", ["word", "input_ids"], ["e_word"]),
        helper.make_node("Gather", ["token_type", "token_types"], ["e_type"]),
        helper.make_node("Gather", ["position", "positions"], ["e_pos"]),
        helper.make_node("Add", ["e_word", "e_type"], ["e_sum"]), helper.make_node("Add", ["e_sum", "e_pos"], ["e_all"]),
    ]

    def layer_norm(x, name):
        inits.extend([c(f"{name}_g", np.ones(hidden)), c(f"{name}_b", np.zeros(hidden))])
        nodes.append(helper.make_node("LayerNormalization", [x, f"{name}_g", f"{name}_b"], [f"{name}_y"], axis=-1,
                                      epsilon=1e-12, name=name))
        return f"{name}_y"

    def dense(x, cin, cout, name):
        inits.extend([_w(rng, f"{name}_w", [cin, cout], cin ** -0.5), c(f"{name}_b", rng.normal(0, 0.02, cout))])
        nodes.append(helper.make_node("MatMul", [x, f"{name}_w"], [f"{name}_m"], name=f"{name}_matmul"))
        nodes.append(helper.make_node("Add", [f"{name}_m", f"{name}_b"], [f"{name}_y"], name=f"{name}_bias"))
        return f"{name}_y"

    x = layer_norm("e_all", "emb_ln")
    for i in range(layers):
        p = f"l{i}"
        q, k, v = (dense(x, hidden, hidden, f"{p}_{n}") for n in "qkv")
        for n, t in (("q", q), ("k", k), ("v", v)):
            nodes.append(helper.make_node("Reshape", [t, "heads_shape"], [f"{p}_{n}4"]))
        nodes += [helper.make_node("Transpose", [f"{p}_q4"], [f"{p}_qh"], perm=[0, 2, 1, 3]),
                  helper.make_node("Transpose", [f"{p}_k4"], [f"{p}_kt"], perm=[0, 2, 3, 1]),
                  helper.make_node("Transpose", [f"{p}_v4"], [f"{p}_vh"], perm=[0, 2, 1, 3]),
                  helper.make_node("MatMul", [f"{p}_qh", f"{p}_kt"], [f"{p}_scores"], name=f"{p}_scores"),
                  helper.make_node("Div", [f"{p}_scores", "sqrt_d"], [f"{p}_scaled"]),
                  helper.make_node("Softmax", [f"{p}_scaled"], [f"{p}_probs"], axis=-1, name=f"{p}_softmax"),
                  helper.make_node("MatMul", [f"{p}_probs", f"{p}_vh"], [f"{p}_ctx"], name=f"{p}_context"),
                  helper.make_node("Transpose", [f"{p}_ctx"], [f"{p}_ctx_t"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", [f"{p}_ctx_t", "merge_shape"], [f"{p}_merged"])]
        attn = dense(f"{p}_merged", hidden, hidden, f"{p}_o")
        nodes.append(helper.make_node("Add", [attn, x], [f"{p}_res1"]))
        x = layer_norm(f"{p}_res1", f"{p}_ln1")
        h = dense(x, hidden, ffn, f"{p}_ffn_in")
        nodes += [helper.make_node("Div", [h, "sqrt2"], [f"{p}_gd"]), helper.make_node("Erf", [f"{p}_gd"], [f"{p}_ge"]),
                  helper.make_node("Add", [f"{p}_ge", "one_f"], [f"{p}_ga"]),
                  helper.make_node("Mul", [h, f"{p}_ga"], [f"{p}_gm"]),
                  helper.make_node("Mul", [f"{p}_gm", "half"], [f"{p}_gelu"])]
        out = dense(f"{p}_gelu", ffn, hidden, f"{p}_ffn_out")
        nodes.append(helper.make_node("Add", [out, x], [f"{p}_res2"]))
        x = layer_norm(f"{p}_res2", f"{p}_ln2")
    nodes.append(helper.make_node("Identity", [x], ["hidden_states"]))
    graph = helper.make_graph(nodes, "bert", [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                                                             ["batch", "sequence"])],
                              [helper.make_tensor_value_info("hidden_states", F, ["batch", "sequence", hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds_for(name: str, args: argparse.Namespace, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "resnet":
        return {"x": rng.normal(0, 1, (args.batch, 3, args.size, args.size)).astype(np.float32)}
    return {"input_ids": rng.integers(0, 1000, (args.batch, args.sequence)).astype(np.int64)}


def quantized(name: str, model: onnx.ModelProto, folder: pathlib.Path, args) -> dict[str, onnx.ModelProto]:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    source = folder / f"{name}.onnx"
    onnx.save(model, source)
    samples = [feeds_for(name, args, 100 + i) for i in range(4)]
    settings = {"qdq_u8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                               weight_type=QuantType.QUInt8),
                "qdq_s8_perchannel": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                                          weight_type=QuantType.QInt8, per_channel=True),
                "qop_u8": dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                               weight_type=QuantType.QUInt8)}
    out = {}
    with _quiet():
        for setting, kwargs in settings.items():
            path = folder / f"{name}-{setting}.onnx"
            quantize_static(source, path, _Reader(samples), **kwargs)
            out[f"{name}-{setting}"] = onnx.load(path)
        path = folder / f"{name}-dynamic.onnx"
        quantize_dynamic(source, path, weight_type=QuantType.QUInt8)
        out[f"{name}-dynamic"] = onnx.load(path)
        if name == "bert":
            from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

            quantizer = MatMulNBitsQuantizer(onnx.load(source), block_size=32, is_symmetric=True)
            quantizer.process()
            out[f"{name}-matmul_nbits4"] = quantizer.model.model
    return out


def session(model: onnx.ModelProto):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def exposed(q: onnx.ModelProto, typed: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, str]]:
    """q with the QuantizeLinear output of every tensor the lifted model types added as graph outputs;
    typed tensor -> q's tensor."""
    qtypes = quantized_tensors(typed)
    pairs = {n.input[0]: n.output[0] for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] in qtypes}
    pairs.update({n: n for n in qtypes if n in {o for node in q.graph.node for o in node.output} and n not in pairs
                  and any(node.op_type.startswith("QLinear") or node.op_type == "QuantizeLinear"
                          for node in q.graph.node if n in node.output)})
    copy = onnx.ModelProto()
    copy.CopyFrom(q)
    have = {o.name for o in copy.graph.output}
    for typed_name, q_name in pairs.items():
        if q_name not in have:
            copy.graph.output.append(helper.make_tensor_value_info(q_name, qtypes[typed_name].storage_type.data_type, None))
    return copy, pairs


def _per_operator(evaluator, ours: dict, theirs: dict, pairs: dict) -> int:
    """Largest difference in steps of any operator's quantized output when the operator reads onnxruntime's
    values of its quantized inputs (ours for the rest): each operator on its own, not the chain."""
    known = {typed: np.asarray(theirs[q]) for typed, q in pairs.items() if q in theirs}
    worst = 0
    for node in evaluator.rt_nodes_:
        proto = node.onnx_node
        if not any(o in known for o in proto.output) or not any(i in known for i in proto.input):
            continue
        args = [None if not i else known[i].astype(np.asarray(ours[i]).dtype) if i in known else ours[i]
                for i in proto.input]
        for o, value in zip(proto.output, node.run(*args)):
            if o in known:
                worst = max(worst, int(np.abs(np.asarray(value).astype(np.int64) - known[o].astype(np.int64)).max(initial=0)))
    return worst


def measure(name: str, q: onnx.ModelProto, args) -> str:
    typed = lift(q)
    evaluator = ReferenceEvaluator(typed)
    probe, pairs = exposed(q, typed)
    runtime = session(probe)
    names = [o.name for o in runtime.get_outputs()]
    feeds = feeds_for(name.split("-")[0], args, 7)
    theirs = dict(zip(names, runtime.run(names, feeds)))
    ours = evaluator.run(None, feeds, intermediate=True)
    local = _per_operator(evaluator, ours, theirs, pairs)
    worst, off, elements, tensors = 0, 0, 0, 0
    for typed_name, q_name in pairs.items():
        if typed_name not in ours or q_name not in theirs:
            continue
        a, b = np.asarray(ours[typed_name]).astype(np.int64), np.asarray(theirs[q_name]).astype(np.int64)
        if a.shape != b.shape:
            return f"| {name} | tensor {typed_name}: shape {list(a.shape)} against {list(b.shape)} |"
        d = np.abs(a - b)
        tensors, elements = tensors + 1, elements + d.size
        worst, off = max(worst, int(d.max(initial=0))), off + int(np.count_nonzero(d))
    float_diff = max(float(np.max(np.abs(np.asarray(ours[o.name], np.float64) - theirs[o.name]))) for o in q.graph.output)
    left = sorted({n.op_type for n in typed.graph.node if n.domain not in ("", "ai.onnx")})
    t_ours = best_of(3, lambda: evaluator.run(None, feeds))
    plain = session(q)
    t_ort = best_of(3, lambda: plain.run(None, feeds))
    return (f"| {name} | {len(typed.graph.node)} | {tensors} | {local} | {worst} | {off} of {elements} | {float_diff:.2e} | "
            f"{', '.join(left) or '-'} | {t_ours * 1e3:.0f} ms | {t_ort * 1e3:.1f} ms | {t_ours / t_ort:.0f}x |")


def main(argv: list[str] | None = None) -> int:
    import onnxruntime as ort

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--sequence", type=int, default=32)
    args = parser.parse_args(argv)
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}; batch {args.batch}, image {args.size}x{args.size}, "
          f"sequence {args.sequence}\n")
    print("| model | nodes (lifted) | quantized tensors compared | max steps per operator (onnxruntime's inputs) "
          "| max steps end to end | elements off | float outputs max diff | non-standard ops left | reference "
          "| onnxruntime | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(20)
    with tempfile.TemporaryDirectory() as folder:
        for name, make in (("resnet", resnet), ("bert", bert)):
            for key, q in quantized(name, make(rng), pathlib.Path(folder), args).items():
                try:
                    print(measure(key, q, args), flush=True)
                except Exception as exc:  # noqa: BLE001 - a row says what failed
                    print(f"| {key} | failed: {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
