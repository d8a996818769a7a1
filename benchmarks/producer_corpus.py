"""The producer corpus: small float models quantized by every producer installed, lifted, run and lowered.

    python benchmarks/producer_corpus.py                 # every producer importable here
    python benchmarks/producer_corpus.py --json out.json --keep DIR

Producers (each skipped, and said so, when not importable): onnxruntime's quantize_static (QDQ and QOperator,
per-tensor and per-channel, A16W8, int4 weights, FP8, contrib Q/DQ), quantize_dynamic, MatMulNBitsQuantizer,
NNCF (quantize and compress_weights), PyTorch FX QAT through torch.onnx.export, Brevitas (QCDQ and QONNX), AMD
Quark and Intel's onnx-neural-compressor. The float models are the test corpora's (tests/corpus.py,
tests/corpus_producers.py); nothing is downloaded.

For each model it reports: whether the lift crashed (anything but the project's own errors), whether it lifted
whole (no quantization node left) or which nodes it left (counted by op type, each with its reason), the largest
difference between ``run`` on the lifted model and onnxruntime's unoptimized run of the original (in steps of the
output's DequantizeLinear scale, when there is one), and whether lower + onnxruntime reproduces the original bit
for bit (static QDQ models; the original raised to the lowered model's opset 21 first, since onnxruntime's kernels
of another opset may round differently).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import pathlib
import sys
import tempfile
import traceback
from collections import Counter

import numpy as np
import onnx
from onnx import numpy_helper, version_converter

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from onnx_qtypes.interop import lift_model, lower  # noqa: E402
from onnx_qtypes.proto.errors import QTypesError  # noqa: E402
from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: E402
from tests.corpus import calibration_samples, corpus_feeds, float_models, run_onnxruntime  # noqa: E402
from tests import corpus_producers  # noqa: E402


class _Reader:
    def __init__(self, samples):
        self.items = iter(samples)

    def get_next(self):
        return next(self.items, None)


@contextlib.contextmanager
def _quiet():
    loggers = [logging.getLogger(), logging.getLogger("nncf")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _attempt(label: str, make):
    """make() or None, saying why the producer refused."""
    try:
        with _quiet():
            return make()
    except ImportError:
        raise
    except Exception as exc:  # noqa: BLE001 - a producer refusing a model is reported, not fatal
        print(f"  {label}: the producer refused ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"[:220])
        return None


def _floats() -> dict[str, tuple[onnx.ModelProto, list, dict]]:
    """name -> (float model, calibration samples, test feeds)."""
    out = {name: (model, calibration_samples(name), corpus_feeds(name)) for name, model in float_models().items()}
    for opset in (13, 21):
        for name, make in corpus_producers.FLOAT_MODELS.items():
            samples = [corpus_producers.feeds(1000 + k) for k in range(4)]
            out[f"{name}{opset}"] = (make(opset), samples, corpus_producers.feeds(0))
    return out


def ort_static(folder: pathlib.Path, floats) -> dict[str, tuple[onnx.ModelProto, dict]]:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    settings = {
        "qdq_u8": dict(quant_format=QuantFormat.QDQ),
        "qdq_s8_pc": dict(quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8),
        "qop_u8": dict(quant_format=QuantFormat.QOperator, extra_options={"ForceQuantizeNoInputCheck": True}),
        "qop_s8_pc": dict(quant_format=QuantFormat.QOperator, per_channel=True, activation_type=QuantType.QInt8,
                          extra_options={"ForceQuantizeNoInputCheck": True}),
        "a16w8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt16, per_channel=True),
        "a16w8_contrib": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt16,
                              extra_options={"UseQDQContribOps": True}),
        "w4": dict(quant_format=QuantFormat.QDQ, weight_type=QuantType.QInt4, per_channel=True),
        "fp8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QFLOAT8E4M3FN,
                    weight_type=QuantType.QFLOAT8E4M3FN, calibrate_method=CalibrationMethod.Distribution),
    }
    out = {}
    for name, (model, samples, feeds) in floats.items():
        source = folder / f"{name}.float.onnx"
        onnx.save(model, source)
        for setting, kwargs in settings.items():
            target = folder / f"ort-{name}-{setting}.onnx"
            if _attempt(f"quantize_static {name} {setting}",
                        lambda: quantize_static(source, target, _Reader(samples), **kwargs) or True):
                out[target.stem] = (onnx.load(target), feeds)
    return out


def ort_dynamic(folder: pathlib.Path, floats) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = {}
    for name in ("cnn", "mlp", "attention"):
        model, _, feeds = floats[name]
        onnx.save(model, folder / f"{name}.float.onnx")
        for weight in ("QInt8", "QUInt8"):
            target = folder / f"ortdyn-{name}-{weight}.onnx"
            with _quiet():
                quantize_dynamic(folder / f"{name}.float.onnx", target, weight_type=QuantType[weight])
            out[target.stem] = (onnx.load(target), feeds)
    return out


def ort_matmul_nbits(folder: pathlib.Path, floats) -> dict:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    out = {}
    for name in ("mlp", "attention"):
        model, _, feeds = floats[name]
        for block, symmetric in ((32, False), (16, True)):
            quantizer = MatMulNBitsQuantizer(onnx.ModelProto.FromString(model.SerializeToString()), block_size=block,
                                             is_symmetric=symmetric)
            with _quiet():
                quantizer.process()
            out[f"nbits-{name}-b{block}{'-sym' if symmetric else ''}"] = (quantizer.model.model, feeds)
    return out


def nncf_models(folder: pathlib.Path, floats) -> dict:
    import nncf

    out = {}
    for name in ("cnn", "mlp", "ops21"):
        model, samples, feeds = floats[name]
        made = _attempt(f"nncf.quantize {name}", lambda: nncf.quantize(model, nncf.Dataset(samples), subset_size=len(samples)))
        if made is not None:
            out[f"nncf-{name}-ptq"] = (made, feeds)
    for name in ("mlp", "attention"):
        model, _, feeds = floats[name]
        for mode in ("INT8_ASYM", "INT4_SYM"):
            kwargs = {} if mode.startswith("INT8") else {"ratio": 1.0, "group_size": 8, "all_layers": True}
            made = _attempt(f"nncf.compress_weights {name} {mode}",
                            lambda: nncf.compress_weights(model, mode=getattr(nncf.CompressWeightsMode, mode), **kwargs))
            if made is not None:
                out[f"nncf-{name}-{mode.lower()}"] = (made, feeds)
    return out


def _torch_net():
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            x = torch.relu(self.c1(x))
            x = self.c2(x) + x
            return self.fc(x.mean((2, 3)))

    torch.manual_seed(0)
    return Net()


def torch_fx_qat(folder: pathlib.Path, floats) -> dict:
    import torch
    from torch.ao.quantization import (FakeQuantize, MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                                       QConfig, QConfigMapping, disable_observer)
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    out = {}
    x = torch.randn(1, 3, 8, 8)
    for per_channel in (False, True):
        observer = MovingAveragePerChannelMinMaxObserver if per_channel else MovingAverageMinMaxObserver
        weight = FakeQuantize.with_args(observer=observer, quant_min=-128, quant_max=127, dtype=torch.qint8,
                                        qscheme=torch.per_channel_symmetric if per_channel else torch.per_tensor_symmetric)
        act = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8)
        prepared = prepare_qat_fx(_torch_net().train(), QConfigMapping().set_global(QConfig(activation=act, weight=weight)),
                                  (x,))
        for _ in range(4):
            prepared(torch.randn(1, 3, 8, 8))
        prepared.apply(disable_observer)
        prepared.eval()
        path = folder / f"torch-fxqat-{'pc' if per_channel else 'pt'}.onnx"
        with _quiet():
            torch.onnx.export(prepared, (x,), path, opset_version=17, dynamo=False, input_names=["x"], output_names=["y"])
        out[path.stem] = (onnx.load(path), {"x": np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32)})
    return out


def brevitas_models(folder: pathlib.Path, floats) -> dict:
    import brevitas.nn as qnn
    import torch
    from brevitas.export import export_onnx_qcdq, export_qonnx
    from brevitas.quant import Int32Bias
    from torch import nn

    class Net(nn.Module):
        def __init__(self, bits):
            super().__init__()
            self.inp = qnn.QuantIdentity(bit_width=bits, return_quant_tensor=True)
            self.c1 = qnn.QuantConv2d(3, 8, 3, padding=1, weight_bit_width=bits, bias_quant=Int32Bias, return_quant_tensor=True)
            self.r = qnn.QuantReLU(bit_width=bits, return_quant_tensor=True)
            self.fc = qnn.QuantLinear(8 * 8 * 8, 5, bias=True, weight_bit_width=bits, bias_quant=Int32Bias)

        def forward(self, x):
            return self.fc(self.r(self.c1(self.inp(x))).flatten(1))

    out = {}
    x = torch.randn(1, 3, 8, 8)
    feeds = {"x": np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32)}
    for bits in (8, 4):
        torch.manual_seed(bits)
        net = Net(bits).train()
        for _ in range(4):
            net(torch.randn(1, 3, 8, 8))
        net.eval()
        with _quiet():
            export_onnx_qcdq(net, x, export_path=folder / f"brevitas-qcdq-{bits}.onnx", input_names=["x"],
                             output_names=["y"], dynamo=False)
            export_qonnx(net, x, export_path=folder / f"brevitas-qonnx-{bits}.onnx")
        out[f"brevitas-qcdq-{bits}"] = (onnx.load(folder / f"brevitas-qcdq-{bits}.onnx"), feeds)
        qonnx_model = onnx.load(folder / f"brevitas-qonnx-{bits}.onnx")
        out[f"brevitas-qonnx-{bits}"] = (qonnx_model, {qonnx_model.graph.input[0].name: feeds["x"]})
    return out


PRODUCERS = {
    "onnxruntime quantize_static": ort_static,
    "onnxruntime quantize_dynamic": ort_dynamic,
    "onnxruntime MatMulNBitsQuantizer": ort_matmul_nbits,
    "NNCF": nncf_models,
    "PyTorch FX QAT + torch.onnx.export": torch_fx_qat,
    "Brevitas": brevitas_models,
}
NOT_COVERED = {  # importable names of producers this script has no recipe for yet
    "AMD Quark": "quark",
    "onnx-neural-compressor": "onnx_neural_compressor",
}


def _output_step(model: onnx.ModelProto, output: str) -> float | None:
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.output and node.output[0] == output and len(node.input) > 1:
            init = next((t for t in model.graph.initializer if t.name == node.input[1]), None)
            if init is not None and init.data_type == onnx.TensorProto.FLOAT:
                return float(np.max(numpy_helper.to_array(init)))
    return None


def _at_opset(model: onnx.ModelProto, opset: int) -> onnx.ModelProto | None:
    have = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), opset)
    if have >= opset:
        return model
    try:
        raised = version_converter.convert_version(model, opset)
    except Exception:  # noqa: BLE001
        return None
    raised.ir_version = max(raised.ir_version, 10)
    return raised


def examine(name: str, model: onnx.ModelProto, feeds: dict) -> dict:
    row: dict = {"model": name}
    try:
        result = lift_model(model)
    except QTypesError as exc:
        return {**row, "lift": f"refused: {exc}"[:300]}
    except Exception as exc:  # noqa: BLE001 - a crash is what this script looks for
        return {**row, "lift": "CRASH", "error": "".join(traceback.format_exception_only(exc)).strip()[:300]}
    row["lift"] = "whole" if not result.left and not result.warnings else "partly"
    row["left"] = dict(Counter(n.op_type for n in result.left))
    row["left_nodes"] = [n.line() for n in result.left]
    row["warnings"] = [w for w in result.warnings if not any(w.startswith(n.label) for n in result.left)]
    output = model.graph.output[0].name
    try:
        theirs = run_onnxruntime(model, feeds, optimize=False)[output]
    except Exception as exc:  # noqa: BLE001 - onnxruntime cannot run every producer's file (custom ops)
        row["onnxruntime"] = f"cannot run the original: {str(exc).splitlines()[0][:160]}"
        return row
    try:
        ours = np.asarray(ReferenceEvaluator(result.model).run([output], feeds)[0], dtype=np.float64)
        diff = float(np.max(np.abs(ours - theirs))) if ours.size else 0.0
        step = _output_step(model, output)
        row["run_vs_onnxruntime"] = {"max_abs": diff, "steps": None if not step else diff / step}
    except Exception as exc:  # noqa: BLE001
        row["run_vs_onnxruntime"] = f"run failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    static_qdq = not any(n.op_type.startswith(("QLinear", "QGemm", "DynamicQuantize", "MatMulInteger", "ConvInteger",
                                               "MatMulNBits")) or n.op_type == "Quant" for n in model.graph.node)
    if static_qdq and not result.left:
        try:
            lowered = lower(result.model)
            reference = _at_opset(model, 21)
            same = reference is not None and np.array_equal(run_onnxruntime(lowered, feeds, optimize=False)[output],
                                                            run_onnxruntime(reference, feeds, optimize=False)[output])
            row["lower_bit_identical"] = bool(same)
        except Exception as exc:  # noqa: BLE001
            row["lower_bit_identical"] = f"lower failed: {type(exc).__name__}: {str(exc)[:200]}"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="write every row as JSON")
    parser.add_argument("--keep", metavar="DIR", help="keep the produced models in DIR")
    args = parser.parse_args(argv)
    folder = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="producer-corpus-"))
    folder.mkdir(parents=True, exist_ok=True)
    floats = _floats()
    rows, producers = [], {}
    for producer, build in PRODUCERS.items():
        try:
            models = build(folder, floats)
        except ImportError as exc:
            producers[producer] = f"not installed ({exc.name})"
            continue
        producers[producer] = f"{len(models)} models"
        for name, (model, feeds) in models.items():
            rows.append({"producer": producer, **examine(name, model, feeds)})
    for producer, module in NOT_COVERED.items():
        try:
            __import__(module)
            producers[producer] = "installed, no recipe in this script yet"
        except ImportError:
            producers[producer] = "not installed"
    for producer, status in producers.items():
        print(f"{producer}: {status}")
    whole = sum(r["lift"] == "whole" for r in rows)
    crashes = [r for r in rows if r["lift"] == "CRASH"]
    lowered = [r for r in rows if "lower_bit_identical" in r]
    print(f"\n{len(rows)} models: {whole} lifted whole, {len(rows) - whole - len(crashes)} partly or refused, "
          f"{len(crashes)} crashed; lower + onnxruntime bit-identical on "
          f"{sum(r['lower_bit_identical'] is True for r in lowered)} of {len(lowered)} static QDQ models")
    for r in rows:
        run = r.get("run_vs_onnxruntime")
        run_text = (f"{run['steps']:.2f} steps" if isinstance(run, dict) and run["steps"] is not None else
                    f"{run['max_abs']:.3g} abs" if isinstance(run, dict) else str(run or r.get("onnxruntime", "")))
        print(f"  {r['model']:40s} {r['lift']:8s} left={r.get('left', {})} run={run_text} "
              f"lower={r.get('lower_bit_identical', '-')}")
        for line in r.get("left_nodes", [])[:3] + r.get("warnings", [])[:2]:
            print(f"      {line[:180]}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"producers": producers, "rows": rows}, indent=1))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
