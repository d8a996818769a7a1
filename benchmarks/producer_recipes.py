"""The producers' own recipes, run in each producer's own interpreter; writes model files for producer_corpus.py.

    PYTHON benchmarks/producer_recipes.py RECIPE --floats DIR --out DIR [--models a,b,...]

AMD Quark pins onnx <= 1.22, Intel's onnx-neural-compressor numpy < 2, and torchvision needs a torch build of its
own: none of them can share the project's venv. So this file imports neither onnx_qtypes nor anything of the
repository; only numpy, onnx and the producer. producer_corpus.py runs it with the interpreter given for each
producer (``--quark-python`` ...) and reads the files back in the project's venv.

Recipes (each producer's documented entry points, with its own defaults unless named):

- ``quark`` (amd-quark 0.13): ``ModelQuantizer(QConfig.get_default_config(NAME)).quantize_model`` for A8W8,
  A16W8, S16S8_ASWS, XINT8 (the Vitis AI DPU preset: power-of-two scales, MinMSE), BF16, FP16, MXINT8 and MXFP4E2M1.
- ``inc`` (onnx-neural-compressor 1.0): ``quantize(..., StaticQuantConfig(reader, quant_format=QDQ|QOperator))``
  with its defaults (uint8 activations, int8 weights, per tensor, MinMax); weight-only ``MatMulNBitsQuantizer``
  (4 bits, blocks of 32, symmetric) with ``RTNWeightOnlyQuantConfig`` and ``GPTQWeightOnlyQuantConfig``.
- ``torch-floats`` (torch + torchvision + transformers): float base models with random weights (seeded; nothing
  from a hub) exported with ``torch.onnx.export(dynamo=False)``: resnet18, mobilenet_v3_small, efficientnet_b0,
  a tiny BERT and a tiny GPT-2 (``transformers`` configs), a ``nn.TransformerEncoder``.
- ``torch-fx-qat``: ``prepare_qat_fx`` (per-tensor and per-channel weights) on a small Conv net and on resnet18 /
  mobilenet_v3_small, a few training steps, then ``torch.onnx.export(dynamo=False)`` at opset 17.
- ``brevitas`` (0.13): a small QuantConv / QuantReLU / QuantLinear net with Int32Bias, 8 and 4 bits, exported with
  ``export_onnx_qcdq`` and ``export_qonnx``.

The float folder holds ``NAME.onnx`` and ``NAME.npz`` (``calib/K/INPUT`` calibration samples, ``feed/INPUT`` the test
input). Every recipe writes ``OUT/<file>.onnx`` and ``OUT/manifest.json``: ``{"producer", "versions", "models":
[{"name", "file", "float", "recipe"}], "refused": [{"float", "recipe", "error"}]}``. Where the producer's file
needs the producer's own onnxruntime custom operators (Quark's BF16 and MX ops), the recipe also writes
``<file>.ort.npz``: onnxruntime's unoptimized outputs of the original on the float's test input, with the
producer's custom-op library registered, for producer_corpus.py to compare with, and ``<file>.ort_nodes.npz``: the
float values around each of the producer's nodes in that run, for producer_corpus.py to compare each node with (for
files written before: ``QUARK/bin/python -c "import sys; sys.path.insert(0, 'benchmarks'); import pathlib,
producer_recipes as r; r.quark_node_values(sorted(pathlib.Path('DIR').glob('quark-*-[bm][fx]*.onnx')))"``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import json
import logging
import os
import pathlib
import sys
import traceback

import numpy as np
import onnx


# --- the float folder ---------------------------------------------------------------------------------------


def samples_of(path: pathlib.Path) -> tuple[list[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """(calibration samples, test feed) of a float model's .npz."""
    data = np.load(path)
    calib: dict[int, dict[str, np.ndarray]] = {}
    feed = {}
    for key in data.files:
        if key.startswith("calib/"):
            _, k, name = key.split("/", 2)
            calib.setdefault(int(k), {})[name] = data[key]
        elif key.startswith("feed/"):
            feed[key[5:]] = data[key]
    return [calib[k] for k in sorted(calib)], feed


def write_samples(path: pathlib.Path, calib: list[dict[str, np.ndarray]], feed: dict[str, np.ndarray]) -> None:
    arrays = {f"calib/{k}/{n}": v for k, s in enumerate(calib) for n, v in s.items()}
    arrays.update({f"feed/{n}": v for n, v in feed.items()})
    np.savez(path, **arrays)


def _floats(folder: pathlib.Path, chosen: set[str] | None) -> dict[str, tuple[pathlib.Path, list, dict]]:
    out = {}
    for path in sorted(folder.glob("*.onnx")):
        if chosen is None or path.stem in chosen:
            out[path.stem] = (path, *samples_of(path.with_suffix(".npz")))
    return out


class Reader:
    """A calibration data reader over fixed samples (the interface onnxruntime, Quark and INC share)."""

    def __init__(self, samples: list[dict[str, np.ndarray]]) -> None:
        self.samples = samples
        self.rewind()

    def get_next(self):  # noqa: ANN201
        return next(self.items, None)

    def rewind(self) -> None:
        self.items = iter(self.samples)

    def __len__(self) -> int:
        return len(self.samples)


@contextlib.contextmanager
def quiet():
    """Producers log heavily (and some print): keep the corpus output readable."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        root.setLevel(level)


class Manifest:
    def __init__(self, producer: str, out: pathlib.Path, packages: tuple[str, ...]) -> None:
        self.out = out
        versions = {}
        for package in packages:
            try:
                versions[package] = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                pass
        self.data = {"producer": producer, "versions": versions, "models": [], "refused": []}

    def attempt(self, float_name: str, recipe: str, file: str, make) -> bool:
        """make(path) writes the model; a refusal is recorded with its error, never fatal."""
        path = self.out / f"{file}.onnx"
        try:
            with quiet():
                make(path)
            onnx.load(path, load_external_data=False)
        except Exception as exc:  # noqa: BLE001 - a producer refusing a model is a result
            text = "".join(traceback.format_exception_only(exc)).strip().splitlines()
            self.data["refused"].append({"float": float_name, "recipe": recipe,
                                         "error": (text[-1] if text else type(exc).__name__)[:300]})
            print(f"  {file}: refused ({self.data['refused'][-1]['error'][:160]})", flush=True)
            self.save()
            return False
        self.data["models"].append({"name": file, "file": path.name, "float": float_name, "recipe": recipe})
        print(f"  {file}", flush=True)
        self.save()  # (a producer the kernel kills for its memory leaves the models made so far examinable)
        return True

    def save(self) -> None:
        (self.out / "manifest.json").write_text(json.dumps(self.data, indent=1))


def _has_constant_matmul(path: pathlib.Path) -> bool:
    model = onnx.load(path, load_external_data=False)
    weights = {t.name for t in model.graph.initializer if len(t.dims) == 2}
    return any(n.op_type == "MatMul" and len(n.input) > 1 and n.input[1] in weights for n in model.graph.node)


def _ort_outputs(model_path: pathlib.Path, feed: dict, library: str | None) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    if library:
        options.register_custom_ops_library(library)
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feed)))


def _custom_node_values(model_path: pathlib.Path, feed: dict, library: str, domain: str) -> dict[str, np.ndarray]:
    """onnxruntime's unoptimized values of the float tensors each ``domain`` node reads and writes (for a quantize /
    dequantize pair of nodes, the quantize's input and the dequantize's output: onnxruntime's Python API cannot
    hand out bfloat16 storage), so that producer_corpus.py compares each such node on its own."""
    import onnxruntime as ort

    model = onnx.load(model_path)
    wanted: list[str] = []
    for node in model.graph.node:
        if node.domain != domain or not node.input or not node.output:
            continue
        if node.op_type.endswith("QuantizeLinear") and not node.op_type.endswith("DequantizeLinear"):
            wanted.append(node.input[0])
        elif node.op_type.endswith("DequantizeLinear"):
            wanted.append(node.output[0])
        else:
            wanted += [node.input[0], node.output[0]]
    constants = {t.name for t in model.graph.initializer}
    declared = {o.name for o in model.graph.output}
    for name in dict.fromkeys(wanted):
        if name and name not in constants and name not in declared:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.register_custom_ops_library(library)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feed)))


def save_node_values(path: pathlib.Path, values: dict[str, np.ndarray]) -> None:
    """``values`` as ``<file>.ort_nodes.npz`` beside ``path``: arrays v0, v1, ... and their tensor names in order."""
    names = list(values)
    np.savez(path.with_suffix(".ort_nodes.npz"), names=np.array(names),
             **{f"v{i}": values[name] for i, name in enumerate(names)})


def quark_node_values(files: list[pathlib.Path]) -> None:
    """``<file>.ort_nodes.npz`` for Quark files written before (each with ``<file>.feeds.npz`` beside it)."""
    with quiet():
        from quark.onnx.operators.custom_ops import get_library_path

        library = get_library_path()
    for path in files:
        feed = dict(np.load(path.with_suffix(".feeds.npz")))
        save_node_values(path, _custom_node_values(path, feed, library, "com.amd.quark"))


# --- AMD Quark ------------------------------------------------------------------------------------------------

QUARK_CONFIGS = ("A8W8", "A16W8", "S16S8_ASWS", "XINT8", "BF16", "FP16", "MXINT8", "MXFP4E2M1", "BFP16", "MX4", "MX6",
                 "MX9")


def quark(floats, out: pathlib.Path, manifest: Manifest, configs: tuple[str, ...] = QUARK_CONFIGS) -> None:
    from quark.onnx import ModelQuantizer, QConfig

    library = None
    for name, (source, calib, feed) in floats.items():
        for config in configs:
            file = f"quark-{name}-{config.lower()}"

            def make(target, config=config, source=source, calib=calib):
                ModelQuantizer(QConfig.get_default_config(config)).quantize_model(str(source), str(target),
                                                                                  Reader(calib))

            if not manifest.attempt(name, config, file, make):
                continue
            model = onnx.load(out / f"{file}.onnx", load_external_data=False)
            if any(n.domain == "com.amd.quark" for n in model.graph.node):
                try:
                    if library is None:
                        with quiet():
                            from quark.onnx.operators.custom_ops import get_library_path

                            library = get_library_path()
                    np.savez(out / f"{file}.ort.npz", **_ort_outputs(out / f"{file}.onnx", feed, library))
                    save_node_values(out / f"{file}.onnx",
                                     _custom_node_values(out / f"{file}.onnx", feed, library, "com.amd.quark"))
                except Exception as exc:  # noqa: BLE001 - recorded: the comparison is then not possible
                    manifest.data["models"][-1]["ort_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    manifest.save()  # (saved by attempt() before this was known: a later crash would lose it)


# --- Intel's onnx-neural-compressor --------------------------------------------------------------------------


def inc(floats, out: pathlib.Path, manifest: Manifest) -> None:
    from onnx_neural_compressor.quantization import config, matmul_nbits_quantizer, quantize
    from onnxruntime.quantization import QuantFormat

    from onnxruntime.quantization import QuantType

    # static: QDQ and QOperator as configured by default; per channel with int8 activations; SmoothQuant
    statics = {"static_qdq": dict(quant_format=QuantFormat.QDQ),
               "static_qoperator": dict(quant_format=QuantFormat.QOperator),
               "static_qdq_s8_pc": dict(quant_format=QuantFormat.QDQ, per_channel=True,
                                        activation_type=QuantType.QInt8),
               "static_qdq_smooth": dict(quant_format=QuantFormat.QDQ, extra_options={"SmoothQuant": True})}
    # weight-only: 4-bit symmetric blocks of 32 (RTN, GPTQ, AWQ), asymmetric, blocks of 128 with accuracy_level 4
    weight_only = {"woq_rtn": ("rtn", dict(block_size=32, is_symmetric=True)),
                   "woq_gptq": ("gptq", dict(block_size=32, is_symmetric=True)),
                   "woq_awq": ("awq", dict(block_size=32, is_symmetric=True)),
                   "woq_rtn_asym": ("rtn", dict(block_size=32, is_symmetric=False)),
                   "woq_rtn_b128_acc4": ("rtn", dict(block_size=128, is_symmetric=True, accuracy_level=4))}
    for name, (source, calib, _) in floats.items():
        for label, kwargs in statics.items():
            manifest.attempt(name, label, f"inc-{name}-{label}",
                             lambda target, kwargs=kwargs, source=source, calib=calib: quantize(
                                 str(source), str(target), config.StaticQuantConfig(Reader(calib), **kwargs)))
        if not _has_constant_matmul(source):
            continue  # weight-only quantization rewrites MatMul only
        for label, (algo, kwargs) in weight_only.items():

            def make(target, algo=algo, kwargs=kwargs, source=source, calib=calib):
                algo_config = (matmul_nbits_quantizer.RTNWeightOnlyQuantConfig() if algo == "rtn" else
                               matmul_nbits_quantizer.GPTQWeightOnlyQuantConfig(Reader(calib)) if algo == "gptq" else
                               matmul_nbits_quantizer.AWQWeightOnlyQuantConfig(Reader(calib)))
                quantizer = matmul_nbits_quantizer.MatMulNBitsQuantizer(str(source), n_bits=4, algo_config=algo_config,
                                                                        **kwargs)
                quantizer.process()
                made = quantizer.model.model if hasattr(quantizer.model, "model") else quantizer.model
                if not any(n.op_type == "MatMulNBits" for n in made.graph.node):
                    raise ValueError("no MatMul was quantized")
                onnx.save(made, target)

            manifest.attempt(name, label, f"inc-{name}-{label}", make)


# --- torch: float base models, FX QAT, Brevitas --------------------------------------------------------------

IMAGE = (1, 3, 64, 64)
SEQUENCE, VOCAB = 16, 1000


def _image_samples(seed: int, count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.normal(0, 1, IMAGE).astype(np.float32)} for _ in range(count)]


def _text_samples(seed: int, count: int, mask: bool) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        sample = {"input_ids": rng.integers(0, VOCAB, (1, SEQUENCE)).astype(np.int64)}
        if mask:
            sample["attention_mask"] = np.ones((1, SEQUENCE), np.int64)
            sample["attention_mask"][0, int(rng.integers(SEQUENCE // 2, SEQUENCE)):] = 0  # padded tail
        out.append(sample)
    return out


def _export(module, args: tuple, path: pathlib.Path, inputs: list[str], outputs: list[str], dynamic: dict,
            grad: bool = False) -> None:
    import torch

    with torch.set_grad_enabled(grad):  # TransformerEncoder traces its fused fast path (no ONNX export) without grad
        torch.onnx.export(module, args, str(path), opset_version=17, dynamo=False, input_names=inputs,
                          output_names=outputs, dynamic_axes=dynamic)


def torch_floats(floats, out: pathlib.Path, manifest: Manifest) -> None:
    import torch
    import torchvision

    def vision(name, **kwargs):
        def make(target):
            torch.manual_seed(0)
            net = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
            _export(net, (torch.from_numpy(_image_samples(0, 1)[0]["x"]),), target, ["x"], ["logits"],
                    {"x": {0: "batch"}, "logits": {0: "batch"}})
            write_samples(target.with_suffix(".npz"), _image_samples(1, 4), _image_samples(2, 1)[0])
        return make

    def bert(target, base: bool = False):
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        # base: BERT-base's own sizes (transformers' defaults: 12 layers of 768, 12 heads, 3072, vocabulary 30522)
        config = BertConfig() if base else BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                                      num_attention_heads=2, intermediate_size=128,
                                                      max_position_embeddings=64)
        net = BertModel(config).eval()
        feed = _text_samples(2, 1, mask=True)[0]
        args = (torch.from_numpy(feed["input_ids"]), torch.from_numpy(feed["attention_mask"]))
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                "last_hidden_state": {0: "batch", 1: "sequence"}}
        _export(_Outputs(net, "last_hidden_state"), args, target, ["input_ids", "attention_mask"],
                ["last_hidden_state"], axes)
        write_samples(target.with_suffix(".npz"), _text_samples(1, 4, mask=True), feed)

    def gpt2(target):
        from transformers import GPT2Config, GPT2LMHeadModel

        torch.manual_seed(0)
        net = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                                         use_cache=False)).eval()
        feed = _text_samples(2, 1, mask=True)[0]  # without a mask, transformers traces aten::diff (no ONNX export)
        args = (torch.from_numpy(feed["input_ids"]), torch.from_numpy(feed["attention_mask"]))
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                "logits": {0: "batch", 1: "sequence"}}
        _export(_Outputs(net, "logits"), args, target, ["input_ids", "attention_mask"], ["logits"], axes)
        write_samples(target.with_suffix(".npz"), _text_samples(1, 4, mask=True), feed)

    def encoder(target):
        from torch import nn

        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        net = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
        rng = np.random.default_rng(2)
        sample = lambda: {"x": rng.normal(0, 1, (1, SEQUENCE, 64)).astype(np.float32)}  # noqa: E731
        feed = sample()
        _export(net, (torch.from_numpy(feed["x"]),), target, ["x"], ["y"], {"x": {0: "batch", 1: "sequence"}},
                grad=True)
        write_samples(target.with_suffix(".npz"), [sample() for _ in range(4)], feed)

    makers = {"resnet18": vision("resnet18"), "mobilenet_v3_small": vision("mobilenet_v3_small"),
              "efficientnet_b0": vision("efficientnet_b0"), "bert_tiny": bert, "gpt2_tiny": gpt2,
              "transformer_encoder": encoder}
    # more architectures, made only when --models names them (their operators: Pad, LayerNorm, GELU, grouped and
    # depthwise Convs, channel shuffles, dense Concats, window attention), and BERT at its base size
    extra = {name: vision(name) for name in ("squeezenet1_0", "shufflenet_v2_x0_5", "densenet121", "convnext_tiny",
                                             "mnasnet0_5", "regnet_y_400mf", "swin_t", "resnext50_32x4d")}
    extra["googlenet"] = vision("googlenet", aux_logits=False, init_weights=True)
    extra["bert_base"] = lambda target: bert(target, base=True)
    for name, make in {**makers, **extra}.items():
        if (floats is None and name in makers) or (floats is not None and name in floats):
            manifest.attempt(name, "float", name, make)


class _Outputs:
    """A transformers model as a module returning one tensor (torch.onnx.export wants tensors, not ModelOutput)."""

    def __new__(cls, net, field):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, input_ids, attention_mask):  # by keyword: GPT-2's second parameter is the cache
                return getattr(self.net(input_ids=input_ids, attention_mask=attention_mask, return_dict=True), field)

        return Wrapped().eval()


def _small_net():
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


def torch_fx_qat(floats, out: pathlib.Path, manifest: Manifest) -> None:
    import torch
    import torchvision
    from torch.ao.quantization import (FakeQuantize, MovingAverageMinMaxObserver,
                                       MovingAveragePerChannelMinMaxObserver, QConfig, QConfigMapping,
                                       disable_observer)
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    nets = {"small": _small_net, "resnet18": lambda: torchvision.models.resnet18(weights=None),
            "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(weights=None)}
    for name, build in nets.items():
        # weights per tensor or per channel, activations quint8; and per channel with symmetric qint8 activations
        for per_channel, signed in ((False, False), (True, False), (True, True)):
            def make(target, build=build, per_channel=per_channel, signed=signed):
                torch.manual_seed(0)
                observer = MovingAveragePerChannelMinMaxObserver if per_channel else MovingAverageMinMaxObserver
                weight = FakeQuantize.with_args(observer=observer, quant_min=-128, quant_max=127, dtype=torch.qint8,
                                                qscheme=torch.per_channel_symmetric if per_channel
                                                else torch.per_tensor_symmetric)
                act = (FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
                                              dtype=torch.qint8, qscheme=torch.per_tensor_symmetric) if signed else
                       FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                              dtype=torch.quint8))
                example = torch.from_numpy(_image_samples(0, 1)[0]["x"])
                prepared = prepare_qat_fx(build().train(), QConfigMapping().set_global(QConfig(activation=act,
                                                                                             weight=weight)),
                                          (example,))
                optimizer = torch.optim.SGD(prepared.parameters(), lr=1e-3)
                for sample in _image_samples(1, 4):  # a few training steps: observers and weights move
                    optimizer.zero_grad()
                    prepared(torch.from_numpy(sample["x"])).square().mean().backward()
                    optimizer.step()
                prepared.apply(disable_observer)
                prepared.eval()
                _export(prepared, (example,), target, ["x"], ["y"], {})
                write_samples(target.with_suffix(".npz"), _image_samples(1, 4), _image_samples(2, 1)[0])

            mode = ("pc" if per_channel else "pt") + ("_s8" if signed else "")
            manifest.attempt(name, f"fx_qat_{mode}", f"torch-fxqat-{name}-{mode}", make)


def brevitas(floats, out: pathlib.Path, manifest: Manifest) -> None:
    import brevitas.nn as qnn
    import torch
    from brevitas.export import export_onnx_qcdq, export_qonnx
    from brevitas.quant import Int32Bias
    from torch import nn

    class Net(nn.Module):
        def __init__(self, bits, per_channel=False):
            super().__init__()
            self.inp = qnn.QuantIdentity(bit_width=bits, return_quant_tensor=True)
            self.c1 = qnn.QuantConv2d(3, 8, 3, padding=1, weight_bit_width=bits, bias_quant=Int32Bias,
                                      weight_scaling_per_output_channel=per_channel, return_quant_tensor=True)
            self.r = qnn.QuantReLU(bit_width=bits, return_quant_tensor=True)
            self.fc = qnn.QuantLinear(8 * 8 * 8, 5, bias=True, weight_bit_width=bits, bias_quant=Int32Bias,
                                      weight_scaling_per_output_channel=per_channel)

        def forward(self, x):
            return self.fc(self.r(self.c1(self.inp(x))).flatten(1))

    rng = np.random.default_rng(0)
    shape = (1, 3, 8, 8)
    calib = [{"x": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(4)]
    feed = {"x": rng.normal(0, 1, shape).astype(np.float32)}
    # 8 and 4 bits per tensor; per output channel; the odd widths 3 and 2 (narrowed int8 storage in QCDQ)
    for bits, per_channel in ((8, False), (4, False), (8, True), (4, True), (3, False), (2, True)):
        torch.manual_seed(bits)
        net = Net(bits, per_channel).train()
        for sample in calib:
            net(torch.from_numpy(sample["x"]))
        net.eval()
        x = torch.from_numpy(feed["x"])

        def qcdq(target, net=net, x=x):
            export_onnx_qcdq(net, x, export_path=str(target), input_names=["x"], output_names=["y"], dynamo=False)
            write_samples(target.with_suffix(".npz"), calib, feed)

        def qonnx(target, net=net, x=x):
            export_qonnx(net, x, export_path=str(target))
            first = onnx.load(target).graph.input[0].name  # QONNX names its input itself
            write_samples(target.with_suffix(".npz"), [{first: s["x"]} for s in calib], {first: feed["x"]})

        suffix = f"{bits}-pc" if per_channel else f"{bits}"
        manifest.attempt("brevitas_net", f"qcdq{suffix}", f"brevitas-qcdq-{suffix}", qcdq)
        manifest.attempt("brevitas_net", f"qonnx{suffix}", f"brevitas-qonnx-{suffix}", qonnx)


RECIPES = {
    "quark": (quark, ("amd-quark", "onnx", "onnxruntime", "numpy", "torch")),
    "inc": (inc, ("onnx-neural-compressor", "onnx", "onnxruntime", "numpy")),
    "torch-floats": (torch_floats, ("torch", "torchvision", "transformers", "onnx")),
    "torch-fx-qat": (torch_fx_qat, ("torch", "torchvision", "onnx")),
    "brevitas": (brevitas, ("brevitas", "torch", "onnx")),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", choices=sorted(RECIPES))
    parser.add_argument("--floats", type=pathlib.Path, help="the float models (NAME.onnx + NAME.npz)")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--models", help="comma-separated float model names (default: every one in --floats)")
    parser.add_argument("--configs", help="comma-separated names of Quark's preset configs "
                        f"(QConfig.get_default_config; default: {', '.join(QUARK_CONFIGS)}); a name Quark does not "
                        "know is a refused row")
    args = parser.parse_args(argv)
    configs = tuple(args.configs.split(",")) if args.configs else None
    if configs is not None and args.recipe != "quark":
        parser.error("--configs chooses the quark recipe's presets")
    recipe, packages = RECIPES[args.recipe]
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = set(args.models.split(",")) if args.models else None
    manifest = Manifest(args.recipe, args.out, packages)
    try:
        floats = _floats(args.floats, chosen) if args.floats else chosen
        recipe(floats, args.out, manifest, *([configs] if configs else []))
    except ImportError as exc:
        print(f"not installed: {exc.name or exc}", file=sys.stderr)
        return 3
    finally:
        manifest.save()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.exit(main())
