"""The producer corpus: float models quantized by six producers, each in its own venv; lifted, checked, run, lowered.

    python benchmarks/producer_corpus.py --keep DIR [--json out.json] \\
        [--torch-python PY] [--quark-python PY] [--inc-python PY] [--ppocr-cache DIR | --no-ppocr] \\
        [--producers a,b] [--models a,b] [--settings a,b] [--quark-configs A8W8,BFP16,...]
    python benchmarks/producer_corpus.py --report run1.json [run2.json ...]   # earlier runs' report (later rows win)

Float models (written to DIR/float as NAME.onnx + NAME.npz, the calibration samples and one test input):
the test corpora's (tests/corpus.py cnn / mlp / attention, tests/corpus_producers.py ops / shared_bias / pad at
opsets 13 and 21, tests/corpus_real_inputs.py ocr_det / bert_embed); with ``--torch-python`` (a venv with torch, torchvision
and transformers) resnet18, mobilenet_v3_small, efficientnet_b0, a tiny BERT, a tiny GPT-2 and a
TransformerEncoder with random weights (benchmarks/producer_recipes.py torch-floats; ``--models`` may also name
squeezenet1_0, shufflenet_v2_x0_5, densenet121, convnext_tiny, mnasnet0_5, regnet_y_400mf, swin_t, resnext50_32x4d,
googlenet and bert_base (BERT at its base size: 12 layers of 768), made only then); and the three trained PP-OCR
models of the ``rapidocr_onnxruntime`` wheel (``pip download`` into --ppocr-cache, once), as the wheel ships them and
(``NAME_prep``) at opset 13 through onnxruntime's recommended ``quant_pre_process``.

Producers. In this interpreter (the project's venv): onnxruntime's quantize_static (QDQ and QOperator, per-tensor
and per-channel, A16W8, contrib Q/DQ, int4 weights, FP8), quantize_dynamic, MatMulNBitsQuantizer, NNCF (quantize,
compress_weights). In their own interpreters, through benchmarks/producer_recipes.py, which imports nothing of the
project: PyTorch FX QAT and Brevitas (``--torch-python``), AMD Quark (``--quark-python``: it pins onnx <= 1.22) and
onnx-neural-compressor (``--inc-python``: it pins numpy < 2). ``--python RECIPE=PY`` sets one recipe's interpreter
(recipes: torch-floats, torch-fx-qat, brevitas, quark, inc). A producer whose interpreter lacks it is reported as
not installed.

For each quantized model it reports (the issue-20 criteria):

- crash: anything but the project's own errors out of lift, check, run or lower;
- lift: whole, or each node left with its reason, and any quantization node left that the lift does not name;
- run: the lifted model on the reference evaluator against onnxruntime's unoptimized run (ORT_DISABLE_ALL) of the
  original, tensor by tensor: every operator given onnxruntime's values of its quantized inputs (max steps per
  operator, the criterion is <= 1), end to end (max steps over the quantized tensors, and the float outputs'
  largest difference); for files with a producer's custom operators, the producer's interpreter ran onnxruntime
  with its custom-op library and the final outputs are compared; for Brevitas's QONNX files (onnxruntime has no
  QONNX operators) onnxruntime's run of the same net's QCDQ export stands in for the original;
- lower: lower + onnxruntime against onnxruntime on the original (raised to the lowered model's opset 21 when
  lower), bit for bit, of every file lifted whole or with only nodes onnxruntime runs left, in lower's default
  form: the form of the file lift read (qoperator for a QOperator or quantize_dynamic file, matmulnbits for a
  MatMulNBits one, qdq otherwise), so that the lowered model runs the kernels its original runs;
- check: every finding of ``check`` on the producer's own file (the file is clean: each finding is suspect), on the
  lifted form, and for Quark's XINT8 files under the ``vitis-ai-dpu`` profile; per-channel DequantizeLinear before
  opset 13 in the file and whether QT412 reported it.

Exit status 1 when any model crashed, else 0. Every model, its test input (``<file>.feeds.npz``) and its lifted form
(DIR/lifted) stay in DIR, so each row's command can be rerun by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict

import numpy as np
import onnx
from onnx import helper, numpy_helper, version_converter

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from onnx_qtypes.interop import LiftResult, lift_model
from onnx_qtypes.interop.lower import lower_model
from onnx_qtypes.interop.recognise import QDQ_DOMAINS
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.reference_ops import ReferenceEvaluator
from onnx_qtypes.reference_ops.producer_ops import QUARK_DOMAIN
from producer_recipes import Reader, quiet, samples_of, write_samples

from onnx_qtypes import diagnose, quantized_tensors

RECIPES_SCRIPT = ROOT / "benchmarks" / "producer_recipes.py"
STAGE_SECONDS = 600  # one stage (lift, check, run, lower) of one model; past it the stage is reported as a hang


# --- float models -------------------------------------------------------------------------------------------------


def corpus_floats(folder: pathlib.Path) -> None:
    """The test corpora's float models, with calibration samples and a test input."""
    from tests import corpus, corpus_producers, corpus_real_inputs

    for name, model in corpus.float_models().items():
        onnx.save(model, folder / f"{name}.onnx")
        write_samples(folder / f"{name}.npz", corpus.calibration_samples(name), corpus.corpus_feeds(name))
    for opset in (13, 21):
        for name, make in corpus_producers.FLOAT_MODELS.items():
            onnx.save(make(opset), folder / f"{name}{opset}.onnx")
            write_samples(folder / f"{name}{opset}.npz", [corpus_producers.feeds(1000 + k) for k in range(4)],
                          corpus_producers.feeds(0))
    for name, make in corpus_real_inputs.FLOAT_MODELS.items():
        onnx.save(make(), folder / f"{name}.onnx")
        write_samples(folder / f"{name}.npz", [corpus_real_inputs.feeds(name, 0, seed=100 + k) for k in range(4)],
                      corpus_real_inputs.feeds(name, 0, seed=0))


PPOCR_SHAPES = {"ppocr_det": (1, 3, 64, 64), "ppocr_rec": (1, 3, 48, 160), "ppocr_cls": (1, 3, 48, 192)}


def ppocr_floats(folder: pathlib.Path, cache: pathlib.Path) -> None:
    """The three trained PP-OCR models of the rapidocr_onnxruntime wheel, as the wheel ships them."""
    from bench_calibration_accuracy import PPOCR, _ppocr_files, _prepared, _text_page

    files = _ppocr_files(cache)
    for key, path in files.items():
        name = key.replace("-", "_")
        onnx.save(onnx.load(path), folder / f"{name}.onnx")
        with tempfile.TemporaryDirectory() as work:  # as onnxruntime recommends: opset 13, quant_pre_process
            onnx.save(onnx.load(_prepared(pathlib.Path(path), pathlib.Path(work))), folder / f"{name}_prep.onnx")
        shape, norm = PPOCR_SHAPES[name], PPOCR[key][2]
        rng = np.random.default_rng(len(name))

        def page():
            rgb = _text_page(rng, *shape[2:])[None] * rng.uniform(0.9, 1.0, (3, 1, 1)) / 255.0
            if norm == "imagenet":
                rgb = (rgb - np.array([0.485, 0.456, 0.406])[:, None, None]) / np.array([0.229, 0.224, 0.225])[:, None, None]
            else:
                rgb = (rgb - 0.5) / 0.5
            return {"x": rgb[None].astype(np.float32)}

        write_samples(folder / f"{name}.npz", [page() for _ in range(4)], page())
        (folder / f"{name}_prep.npz").write_bytes((folder / f"{name}.npz").read_bytes())


def _floats(folder: pathlib.Path) -> dict[str, tuple[pathlib.Path, list, dict]]:
    return {p.stem: (p, *samples_of(p.with_suffix(".npz"))) for p in sorted(folder.glob("*.onnx"))}


# --- producers in this interpreter --------------------------------------------------------------------------------


SETTINGS: set[str] | None = None  # --settings: the in-process producers' settings to make (None: all)


def _attempt(made: dict, label: str, target: pathlib.Path, float_name: str, make) -> None:
    if SETTINGS is not None and label not in SETTINGS:
        return
    try:
        with quiet():
            make()
        onnx.load(target, load_external_data=False)
        made[target.stem] = {"path": target, "float": float_name}
        print(f"  {target.stem}", flush=True)
    except ImportError:
        raise
    except Exception as exc:  # a producer refusing a model is a result
        text = str(exc).splitlines()[0] if str(exc) else ""
        made.setdefault("__refused__", []).append({"float": float_name, "recipe": label,
                                                   "error": f"{type(exc).__name__}: {text}"[:300]})
        print(f"  {target.stem}: refused ({type(exc).__name__}: {text[:140]})", flush=True)


def ort_static(floats, out: pathlib.Path) -> dict:
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
        # the extra options that change the graph's form: weights as float Q / DQ pairs, a pair per consumer,
        # symmetric ranges, activations kept between pairs; 16-bit weights; unsigned 4-bit weights
        "wpair_ded_sym": dict(quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8,
                              extra_options={"AddQDQPairToWeight": True, "DedicatedQDQPair": True,
                                             "ActivationSymmetric": True, "WeightSymmetric": True}),
        "keep_act": dict(quant_format=QuantFormat.QDQ, extra_options={"QDQKeepRemovableActivations": True}),
        "s16s16": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt16, weight_type=QuantType.QInt16,
                       per_channel=True),
        "w4u": dict(quant_format=QuantFormat.QDQ, weight_type=QuantType.QUInt4),
        # more of the options users set (stop 32): 7-bit weights, asymmetric int8 weights, float biases, symmetric
        # calibrated ranges, 16-bit weights and activations, 4-bit activations, contrib Q / DQ with int4 weights,
        # constant-B-only MatMuls, a pair per consumer alone, entropy / percentile calibration, and one activation
        # at 16 bits among 8-bit ones (TensorQuantOverrides: the converting Q / DQ chains it writes)
        "qdq_reduce": dict(quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=True),
        "qop_reduce": dict(quant_format=QuantFormat.QOperator, per_channel=True, reduce_range=True),
        "asym_s8w": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                         extra_options={"WeightSymmetric": False}),
        "no_bias": dict(quant_format=QuantFormat.QDQ, per_channel=True, extra_options={"QuantizeBias": False}),
        "qop_no_bias": dict(quant_format=QuantFormat.QOperator, extra_options={"QuantizeBias": False}),
        "range_sym": dict(quant_format=QuantFormat.QDQ, extra_options={"CalibTensorRangeSymmetric": True}),
        "a16w16u": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt16, weight_type=QuantType.QUInt16),
        "a4w4": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt4, weight_type=QuantType.QInt4),
        "a8w4_contrib": dict(quant_format=QuantFormat.QDQ, weight_type=QuantType.QInt4,
                             extra_options={"UseQDQContribOps": True}),
        "matmul_b_only": dict(quant_format=QuantFormat.QDQ, extra_options={"MatMulConstBOnly": True}),
        "ded_pair": dict(quant_format=QuantFormat.QDQ, extra_options={"DedicatedQDQPair": True}),
        "entropy": dict(quant_format=QuantFormat.QDQ, calibrate_method=CalibrationMethod.Entropy),
        "percentile": dict(quant_format=QuantFormat.QDQ, calibrate_method=CalibrationMethod.Percentile),
        "override16": lambda source: dict(quant_format=QuantFormat.QDQ, extra_options={
            "TensorQuantOverrides": {_first_activation(source): [{"quant_type": QuantType.QUInt16}]}}),
    }
    made: dict = {}
    for name, (source, calib, _) in floats.items():
        for setting, kwargs in settings.items():
            target = out / f"ort-{name}-{setting}.onnx"
            _attempt(made, setting, target, name,
                     lambda source=source, target=target, calib=calib, kwargs=kwargs:
                     quantize_static(source, target, Reader(calib),
                                     **(kwargs(source) if callable(kwargs) else kwargs)))
    return made


def _first_activation(path: pathlib.Path) -> str:
    """The output of the model's first Conv / MatMul / Gemm / Relu / Add (a tensor quantize_static quantizes)."""
    model = onnx.load(path, load_external_data=False)
    return next(n.output[0] for n in model.graph.node if n.op_type in ("Conv", "MatMul", "Gemm", "Relu", "Add"))


def ort_dynamic(floats, out: pathlib.Path) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    made: dict = {}
    for name, (source, _, _) in floats.items():
        for weight in ("QInt8", "QUInt8"):
            target = out / f"ortdyn-{name}-{weight.lower()}.onnx"
            _attempt(made, weight, target, name, lambda source=source, target=target, weight=weight:
                     quantize_dynamic(source, target, weight_type=QuantType[weight]))
    return made


def _constant_matmul(path: pathlib.Path) -> bool:
    model = onnx.load(path, load_external_data=False)
    weights = {t.name for t in model.graph.initializer if len(t.dims) == 2}
    return any(n.op_type == "MatMul" and len(n.input) > 1 and n.input[1] in weights for n in model.graph.node)


def ort_matmul_nbits(floats, out: pathlib.Path) -> dict:
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    made: dict = {}
    for name, (source, _, _) in floats.items():
        if not _constant_matmul(source):
            continue
        # 4-bit blocks of 32 and 16 (symmetric); 8 bits; blocks of 128; accuracy_level 4 (A quantized to int8 inside
        # the kernel); the QDQ form (a blocked DequantizeLinear at opset 21)
        for label, kwargs in (("b32", dict(block_size=32)), ("b16-sym", dict(block_size=16, is_symmetric=True)),
                              ("b32-bits8", dict(block_size=32, bits=8)), ("b128", dict(block_size=128)),
                              ("b32-acc4", dict(block_size=32, accuracy_level=4)),
                              ("b32-qdq", dict(block_size=32, quant_format=QuantFormat.QDQ))):
            target = out / f"nbits-{name}-{label}.onnx"

            def make(source=source, target=target, kwargs=kwargs):
                quantizer = MatMulNBitsQuantizer(onnx.load(source), **kwargs)
                quantizer.process()
                onnx.save(quantizer.model.model, target)

            _attempt(made, label, target, name, make)
    return made


def nncf_models(floats, out: pathlib.Path) -> dict:
    import nncf

    made: dict = {}
    for name, (source, calib, _) in floats.items():
        # the default preset; asymmetric activations (MIXED); the transformer model type (its ignored patterns)
        for label, kwargs in (("ptq", {}), ("ptq-mixed", {"preset": nncf.QuantizationPreset.MIXED}),
                              ("ptq-transformer", {"model_type": nncf.ModelType.TRANSFORMER})):
            target = out / f"nncf-{name}-{label}.onnx"
            _attempt(made, label, target, name, lambda source=source, target=target, calib=calib, kwargs=kwargs:
                     onnx.save(nncf.quantize(onnx.load(source), nncf.Dataset(calib), subset_size=len(calib), **kwargs),
                               target))
        if not _constant_matmul(source):
            continue
        every = {"ratio": 1.0, "all_layers": True}
        modes = (("int8_asym", "INT8_ASYM", {}), ("int4_sym", "INT4_SYM", {**every, "group_size": 8}),
                 ("int8_sym", "INT8_SYM", {}), ("int4_asym", "INT4_ASYM", {**every, "group_size": 8}),
                 ("int4_asym_channel", "INT4_ASYM", {**every, "group_size": -1}),
                 ("int4_sym_half", "INT4_SYM", {"ratio": 0.5, "group_size": 16, "all_layers": True}))
        for label, mode, kwargs in modes:
            target = out / f"nncf-{name}-{label}.onnx"
            _attempt(made, label, target, name, lambda source=source, target=target, mode=mode, kwargs=kwargs:
                     onnx.save(nncf.compress_weights(onnx.load(source), mode=getattr(nncf.CompressWeightsMode, mode),
                                                     **kwargs), target))
    return made


IN_PROCESS = {
    "onnxruntime quantize_static": ("onnxruntime", ort_static),
    "onnxruntime quantize_dynamic": ("onnxruntime", ort_dynamic),
    "onnxruntime MatMulNBitsQuantizer": ("onnxruntime", ort_matmul_nbits),
    "NNCF": ("nncf", nncf_models),
}
ELSEWHERE = {  # producer -> recipe of producer_recipes.py
    "PyTorch FX QAT + torch.onnx.export": "torch-fx-qat",
    "Brevitas": "brevitas",
    "AMD Quark": "quark",
    "onnx-neural-compressor": "inc",
}


def run_recipe(recipe: str, python: str, out: pathlib.Path, floats_dir: pathlib.Path | None,
               models: str | None, log: pathlib.Path, configs: str | None = None) -> tuple[dict | None, str]:
    """Run one recipe of producer_recipes.py in ``python``; (manifest or None, status)."""
    out.mkdir(parents=True, exist_ok=True)
    command = [python, str(RECIPES_SCRIPT), recipe, "--out", str(out)]
    if floats_dir is not None:
        command += ["--floats", str(floats_dir)]
    if models:
        command += ["--models", models]
    if configs and recipe == "quark":
        command += ["--configs", configs]
    started = time.perf_counter()
    with open(log, "w") as sink:
        done = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, cwd=out,  # producers (Quark) write side files into their working folder
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
    manifest_path = out / "manifest.json"
    if done.returncode == 3:
        return None, f"not installed in {python} ({log.read_text().strip().splitlines()[-1]})"
    if not manifest_path.exists():
        return None, f"failed (exit {done.returncode}, see {log})"
    manifest = json.loads(manifest_path.read_text())
    status = (f"{len(manifest['models'])} models, {len(manifest['refused'])} refused, "
              f"{time.perf_counter() - started:.0f} s; {manifest['versions']}")
    if done.returncode:
        status += f"; exit {done.returncode}, see {log}"
    return manifest, status


# --- examining one model ------------------------------------------------------------------------------------------


class StageTimeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int):
    def expire(signum, frame):
        raise StageTimeout(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _error(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1][:400]


def _is_ours(exc: BaseException) -> bool:
    return isinstance(exc, QTypesError)


def _session(model: onnx.ModelProto):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _ort_run(model: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    session = _session(model)
    names = [o.name for o in session.get_outputs()]
    wanted = {i.name for i in session.get_inputs()}
    return dict(zip(names, session.run(names, {k: v for k, v in feeds.items() if k in wanted})))


def _exposed(original: onnx.ModelProto, typed: onnx.ModelProto
             ) -> tuple[onnx.ModelProto, dict[str, str], set[str]]:
    """The original with the integer tensor of every tensor the lifted model types as an extra graph output;
    {typed tensor: original's tensor}; and which of those pairs hold only if onnxruntime hands out an integer there.
    A typed tensor is the QuantizeLinear output's input (QDQ files) or has the same name as a QOperator node's output
    or a Clip's on the stored integers (QCDQ); or any other node's output of that name (a Reshape or Transpose
    between QOperator nodes, whose values the next operator must be given as onnxruntime computed them), exposed
    without a declared type, kept where onnxruntime's value is integers (``_integer_pairs``)."""
    qtypes = quantized_tensors(typed)
    produced = {o: n for n in original.graph.node for o in n.output}
    pairs, unsure = {}, set()
    for node in original.graph.node:
        if node.op_type == "QuantizeLinear" and node.input and node.input[0] in qtypes:
            pairs[node.input[0]] = node.output[0]
    for name in qtypes:
        if name not in pairs and name in produced:
            node = produced[name]
            pairs[name] = name
            if not (node.op_type.startswith(("QLinear", "QGemm")) or node.op_type in (
                    "QuantizeLinear", "QAttention", "Clip")):  # (Clip: QCDQ's clip of the stored integers)
                unsure.add(name)
    copy = onnx.ModelProto()
    copy.CopyFrom(original)
    have = {o.name for o in copy.graph.output}
    opset = next((o.version for o in copy.opset_import if o.domain in STANDARD), 0)
    for typed_name, name in list(pairs.items()):
        storage = qtypes[typed_name].storage_type
        declared = storage.data_type
        # onnxruntime hands no 4- or 2-bit array out: widened first
        if storage.bits < 8 and not storage.is_float and typed_name not in unsure:
            wide = f"{name}__widened"
            if opset >= 21:  # a Cast to the 8-bit type of its sign
                declared = onnx.TensorProto.INT8 if storage.min < 0 else onnx.TensorProto.UINT8
                copy.graph.node.append(helper.make_node("Cast", [name], [wide], to=declared))
            else:  # before Cast-21 reads 4 bits: the com.microsoft DequantizeLinear onnxruntime wrote them with,
                declared = onnx.TensorProto.FLOAT  # at scale 1 and zero point 0 (exact integers in float)
                if "__one" not in have:
                    copy.graph.initializer.append(onnx.numpy_helper.from_array(np.array(1, np.float32), "__one"))
                    have.add("__one")
                copy.graph.node.append(helper.make_node("DequantizeLinear", [name, "__one"], [wide],
                                                        domain="com.microsoft"))
            pairs[typed_name], name = wide, wide
        if name not in have:
            copy.graph.output.append(helper.make_empty_tensor_value_info(name) if typed_name in unsure else
                                     helper.make_tensor_value_info(name, declared, None))
    return copy, pairs, unsure


def _integer_pairs(pairs: dict[str, str], unsure: set[str], theirs: dict) -> dict[str, str]:
    """``pairs`` without those of ``unsure`` where onnxruntime's value is not integers (a float tensor of that name)."""
    return {t: q for t, q in pairs.items()
            if t not in unsure or (q in theirs and np.asarray(theirs[q]).dtype.kind in "iu")}


def _codes(a) -> np.ndarray:
    """Storage values as integers one step apart: integers as they are; float8 / float4 codes by their position
    (sign-magnitude order, +0 and -0 one position apart)."""
    a = np.asarray(a)
    if a.dtype.kind in "iub":
        return a.astype(np.int64)
    if a.dtype.itemsize == 1:  # ml_dtypes float8 / float4 in a byte
        bits = a.view(np.uint8).astype(np.int64)
        magnitude, negative = bits & 0x7F, (bits & 0x80) != 0
        return np.where(negative, -magnitude - 1, magnitude)
    return a.astype(np.int64)


def _like(theirs, ours) -> np.ndarray:
    """onnxruntime's value in our storage dtype: it hands float8 / float4 storage out as raw uint8 bytes."""
    theirs, ours = np.asarray(theirs), np.asarray(ours)
    if ours.dtype.itemsize == 1 and ours.dtype.kind not in "iub" and theirs.dtype == np.uint8:
        return theirs.view(ours.dtype)
    return theirs.astype(ours.dtype)


def _steps(ours, theirs) -> int:
    a, b = _codes(ours), _codes(_like(theirs, ours))
    if a.shape != b.shape:
        raise ValueError(f"shape {list(a.shape)} against onnxruntime's {list(b.shape)}")
    return int(np.abs(a - b).max(initial=0))


def _per_operator(evaluator, ours: dict, theirs: dict, pairs: dict) -> tuple[int, str]:
    """Largest steps of any operator's quantized output when it reads onnxruntime's values of its quantized inputs
    (ours for the rest), and the worst node."""
    known = {typed: np.asarray(theirs[q]) for typed, q in pairs.items() if q in theirs}
    worst, where = 0, ""
    for node in evaluator.rt_nodes_:
        proto = node.onnx_node
        if not any(o in known for o in proto.output) or not any(i in known for i in proto.input):
            continue
        args = [None if not i else _like(known[i], ours[i]) if i in known else ours[i] for i in proto.input]
        for o, value in zip(proto.output, node.run(*args)):
            if o in known:
                steps = _steps(value, known[o])
                if steps > worst:
                    worst, where = steps, f"{proto.op_type} {proto.name or o!r}"
    return worst, where


def _producer_nodes(model: onnx.ModelProto, values_path: pathlib.Path) -> tuple[int, int, str]:
    """(nodes identical, nodes compared, the first that is not) over the producer's own quantization nodes (Quark's
    com.amd.quark), each run by the reference on onnxruntime's value of its input in the producer's run
    (``<file>.ort_nodes.npz``, producer_recipes.py) against onnxruntime's value of its output, byte for byte. A
    dequantize node is compared with its quantize node (bfloat16 storage does not leave onnxruntime's Python API)."""
    stored = np.load(values_path)
    values = {str(n): stored[f"v{i}"] for i, n in enumerate(stored["names"])}
    producers = {o: n for n in model.graph.node for o in n.output}
    constants = {t.name: t for t in model.graph.initializer}
    opsets = list(model.opset_import)
    same = total = 0
    worst = ""
    for node in model.graph.node:
        if node.domain != QUARK_DOMAIN or not node.input or not node.output:
            continue
        group = [node]
        if node.op_type == "ExtendedDequantizeLinear":
            first = producers.get(node.input[0])
            if first is None or first.op_type != "ExtendedQuantizeLinear":
                continue
            group = [first, node]
        elif node.op_type == "ExtendedQuantizeLinear":
            continue  # compared with its dequantize
        source, target = group[0].input[0], node.output[0]
        x = values.get(source)
        if x is None and source in constants:
            x = numpy_helper.to_array(constants[source])
        if x is None or target not in values:
            continue
        needed = [constants[i] for i in dict.fromkeys(i for n in group for i in n.input[1:]) if i in constants]
        graph = helper.make_graph(group, "node", [helper.make_tensor_value_info(source, helper.np_dtype_to_tensor_dtype(
            x.dtype), x.shape)], [onnx.ValueInfoProto(name=target)], needed)
        mini = helper.make_model(graph, opset_imports=opsets, ir_version=model.ir_version)
        ours = np.asarray(ReferenceEvaluator(mini).run(None, {source: x})[0])
        total += 1
        if ours.dtype == values[target].dtype and ours.shape == values[target].shape and (
                ours.tobytes() == values[target].tobytes()):
            same += 1
        elif not worst:
            worst = f"{node.op_type} {node.name or target!r}"
    return same, total, worst


def _output_step(model: onnx.ModelProto, output: str) -> float | None:
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.output and node.output[0] == output and len(node.input) > 1:
            init = inits.get(node.input[1])
            if init is not None and init.data_type == onnx.TensorProto.FLOAT:
                return float(np.max(numpy_helper.to_array(init)))
    return None


def _at_opset(model: onnx.ModelProto, opset: int) -> onnx.ModelProto | None:
    have = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), opset)
    if have >= opset:
        return model
    try:
        raised = version_converter.convert_version(model, opset)
    except Exception:
        return None
    raised.ir_version = max(raised.ir_version, 10)
    return raised


QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
             "MatMulNBits", "Quant", "BipolarQuant", "Trunc", "QuantizeBFP", "DequantizeBFP"}
STANDARD = ("", "ai.onnx", "ai.onnx.ml")


def _quantization_nodes(graph: onnx.GraphProto, typed: set[str]) -> list[onnx.NodeProto]:
    """Quantization nodes still in a lifted graph, judged here apart from the lift: every Q/DQ that is not a typed
    boundary, every QLinear / integer / blocked / QONNX node, every custom-domain node whose name says quant."""
    out = []
    for node in graph.node:
        op = node.op_type
        if op in ("QuantizeLinear", "DequantizeLinear"):
            side = node.output if op == "QuantizeLinear" else node.input
            if side and side[0] in typed:
                continue
            out.append(node)
        elif op == "DynamicQuantizeLinear" and node.output and node.output[0] in typed:
            continue
        elif op in QUANT_OPS or op.startswith(("QLinear", "QGemm", "QAttention", "QEmbed")) or (
                node.domain not in STANDARD and node.domain != "com.microsoft" and (
                    "quant" in op.lower() or op.upper().startswith(("BFP", "MX")))):
            out.append(node)
    return out


def _per_channel_dq_before_13(model: onnx.ModelProto) -> list[str]:
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset >= 13:
        return []
    inits = {t.name: t for t in model.graph.initializer}
    return [n.name or n.output[0] for n in model.graph.node
            if n.op_type in ("DequantizeLinear", "QuantizeLinear") and n.domain in STANDARD and len(n.input) > 1
            and n.input[1] in inits and int(np.prod(inits[n.input[1]].dims)) > 1]


def _findings(diagnosis) -> list[dict]:
    return [{"rule": d.rule, "severity": str(d.severity.value), "message": d.message[:240],
             "where": (d.location.node or d.location.tensor or "")} for d in diagnosis.diagnostics]


def examine(name: str, path: pathlib.Path, feeds: dict, expected: dict | None, folder: pathlib.Path) -> dict:
    row: dict = {"model": name, "file": str(path)}
    model = onnx.load(path)
    row["static_qdq"] = not any(n.op_type.startswith(("QLinear", "QGemm", "QAttention")) or n.op_type in QUANT_OPS - {
        "QuantizeLinear", "DequantizeLinear"} or n.domain not in STANDARD for n in model.graph.node)
    row["per_channel_dq_before_13"] = _per_channel_dq_before_13(model)
    # check on the producer's own file
    try:
        with _deadline(STAGE_SECONDS):
            row["check"] = _findings(diagnose(path))
            if "xint8" in name:
                row["check_vitis"] = _findings(diagnose(path, profile="vitis-ai-dpu"))
    except Exception as exc:
        row["check"] = [{"rule": "CRASH" if not _is_ours(exc) else "refused", "severity": "error",
                         "message": _error(exc), "where": ""}]
    # lift
    try:
        with _deadline(STAGE_SECONDS):
            result = lift_model(model)
    except Exception as exc:  # a crash is what this script looks for
        row["lift"] = ("refused: " if _is_ours(exc) else "CRASH: ") + _error(exc)
        return row
    typed = set(quantized_tensors(result.model))
    row["lift"] = "whole" if not result.left and not result.warnings else "partly"
    row["summary"] = result.summary()
    row["left_nodes"] = [n.line() for n in result.left]
    named = {n.label for n in result.left}
    row["warnings"] = [w for w in result.warnings if not any(w.startswith(label) for label in named)]
    still = _quantization_nodes(result.model.graph, typed)
    row["unnamed_left"] = max(0, len(still) - len(result.left))
    if row["unnamed_left"]:
        row["lift"] = "partly"
        row["unnamed_examples"] = sorted(Counter(f"{n.domain + '.' if n.domain else ''}{n.op_type}" for n in still).items())
    lifted_path = folder / "lifted" / f"{name}.onnx"
    lifted_path.parent.mkdir(exist_ok=True)
    onnx.save(result.model, lifted_path)
    try:
        with _deadline(STAGE_SECONDS):
            row["check_lifted"] = _findings(diagnose(result.model))
    except Exception as exc:
        row["check_lifted"] = [{"rule": "CRASH" if not _is_ours(exc) else "refused", "severity": "error",
                                "message": _error(exc), "where": ""}]
    # run: the reference on the lifted model against onnxruntime's unoptimized run of the original
    outputs = [o.name for o in model.graph.output]
    theirs, pairs = None, {}
    try:
        probe, pairs, unsure = _exposed(model, result.model)
        theirs = _ort_run(probe, feeds)
        pairs = _integer_pairs(pairs, unsure, theirs)
    except Exception:  # the probe may not load; try the file as it is
        pairs = {}
        try:
            theirs = _ort_run(model, feeds)
        except Exception as exc:  # custom operators of the producer
            if expected is not None:
                theirs = expected
            else:
                row["onnxruntime"] = f"cannot run the original: {_error(exc)[:200]}"
    if theirs is not None:
        try:
            with _deadline(STAGE_SECONDS):
                evaluator = ReferenceEvaluator(result.model)
                ours = evaluator.run(None, feeds, intermediate=True)
                run: dict = {"compared_tensors": 0}
                if pairs:
                    run["per_operator"], run["worst_operator"] = _per_operator(evaluator, ours, theirs, pairs)
                    end = [(_steps(ours[t], theirs[q]), t) for t, q in pairs.items() if t in ours and q in theirs]
                    run["compared_tensors"] = len(end)
                    run["end_to_end"] = max(end, default=(0, ""))[0]
                diffs = {}
                for o in outputs:
                    a, b = np.asarray(ours[o], np.float64), np.asarray(theirs[o], np.float64)
                    diffs[o] = float(np.max(np.abs(a - b))) if a.shape == b.shape and a.size else (
                        0.0 if a.shape == b.shape else f"shape {list(a.shape)} vs {list(b.shape)}")
                run["output_max_abs"] = max(diffs.values(), key=lambda v: v if isinstance(v, float) else 1e300)
                step = _output_step(model, outputs[0])
                if step and isinstance(diffs[outputs[0]], float):
                    run["output_steps"] = diffs[outputs[0]] / step
                node_values = path.with_suffix(".ort_nodes.npz")
                if not pairs and node_values.exists():  # a producer's own nodes: each against its library's run
                    same, total, worst = _producer_nodes(model, node_values)
                    if total:
                        run["producer_nodes"] = f"{same} of {total} identical"
                        if same == total:
                            run["per_operator"], run["worst_operator"] = 0, ""
                        else:
                            run["producer_node_differs"] = worst
                row["run"] = run
        except Exception as exc:
            row["run"] = ("refused: " if _is_ours(exc) else "CRASH: " if not isinstance(
                exc, StageTimeout) else "HANG: ") + _error(exc)
    # lower + onnxruntime against the original
    if _lowered(row, result):
        row["lower_form"], row["lower"] = lower_stage(model, result.model, feeds, expected, outputs)
    return row


def _lowered(row: dict, result: LiftResult) -> bool:
    """Whether lower's bit identity is asked of a lifted file: lifted whole, or partly with every node left named
    and run by onnxruntime (a pair kept for its scale of inf), not left with a producer's custom operators."""
    return not row.get("unnamed_left") and all(n.domain in QDQ_DOMAINS for n in result.left)  # onnxruntime's own


def lower_stage(model: onnx.ModelProto, typed: onnx.ModelProto, feeds: dict, expected: dict | None,
                outputs: list[str]) -> tuple[str | None, str]:
    """``lower`` of the lifted model in its default form (the form of the file lift read), run on onnxruntime
    against its run of the original: (the form, "identical" / "differs: ..." / why it could not be compared)."""
    try:
        with _deadline(STAGE_SECONDS):
            result = lower_model(typed)
    except Exception as exc:
        # the file's own error, which onnxruntime refuses too, and nothing kept to compare with instead
        if _is_ours(exc) and expected is None and not _runs_as_written(model, feeds):
            return None, f"not compared (onnxruntime cannot run the original; lower refuses it too: {_error(exc)})"
        return None, ("refused: " if _is_ours(exc) else "CRASH: ") + _error(exc)
    lowered = result.model
    return result.form, _compare_lowered(model, lowered, feeds, expected, outputs)


def _runs_as_written(model: onnx.ModelProto, feeds: dict) -> bool:
    try:
        _ort_run(model, feeds)
    except Exception:  # noqa: BLE001 - onnxruntime refusing the file is the answer
        return False
    return True


def _compare_lowered(model: onnx.ModelProto, lowered: onnx.ModelProto, feeds: dict, expected: dict | None,
                     outputs: list[str]) -> str:
    """onnxruntime's run of the lowered model against its run of the original itself. Where they differ and lower
    wrote another opset, also against the original converted to it (the kernels of another opset may differ in a
    last bit), which the row then names."""
    try:
        base = _ort_run(model, feeds)
    except Exception:
        base = expected
    try:
        mine = _ort_run(lowered, feeds)
    except Exception as exc:
        if base is None:
            return "not compared (onnxruntime cannot run the original)"
        return f"onnxruntime cannot run the lowered model: {_error(exc)[:200]}"
    if base is not None and _same_bits(mine, base, outputs):
        return "identical"
    opset = next((o.version for o in lowered.opset_import if o.domain in ("", "ai.onnx")), 21)
    converted = _at_opset(model, opset)
    try:
        again = _ort_run(converted, feeds) if converted is not None and converted is not model else None
    except Exception:
        again = None
    also = (f"identical to the original converted to opset {opset}"
            if again is not None and _same_bits(mine, again, outputs) else "")
    if base is None:
        return "not compared (onnxruntime cannot run the original" + (f"; {also})" if also else ")")
    return "differs: max abs " + ", ".join(
        f"{float(np.max(np.abs(np.asarray(mine[o], np.float64) - np.asarray(base[o], np.float64)))):.3g}"
        for o in outputs) + (f" ({also})" if also else "")


def _same_bits(mine: dict, base: dict, outputs: list[str]) -> bool:
    """Bit for bit: NaN where the original has NaN (a kept pair's 0 * inf) is the same bits, unlike array_equal's."""
    return all(np.asarray(mine[o]).dtype == np.asarray(base[o]).dtype and np.shape(mine[o]) == np.shape(base[o])
               and np.asarray(mine[o]).tobytes() == np.asarray(base[o]).tobytes() for o in outputs)


def _qcdq_stand_in(path: pathlib.Path) -> dict[str, np.ndarray] | None:
    """For a Brevitas QONNX file (onnxruntime has no QONNX operators): onnxruntime's unoptimized outputs of the same
    net exported as QCDQ (``brevitas-qcdq-N`` beside ``brevitas-qonnx-N``, the same input values), under the QONNX
    file's output names. None when there is no such twin."""
    twin = path.with_name(path.name.replace("brevitas-qonnx-", "brevitas-qcdq-"))
    if twin == path or not twin.exists():
        return None
    model, original = onnx.load(twin), onnx.load(path, load_external_data=False)
    feeds = dict(np.load(twin.with_suffix(".feeds.npz")))
    outputs = _ort_run(model, feeds)
    return dict(zip([o.name for o in original.graph.output], (outputs[o.name] for o in model.graph.output)))


# --- the report ---------------------------------------------------------------------------------------------------


def _failures(row: dict) -> list[tuple[str, str]]:
    """(cause, detail) for every issue-20 criterion the row misses."""
    out = []
    lift = row.get("lift", "")
    if lift.startswith(("CRASH", "refused")):
        out.append(("lift " + lift.split(":")[0], lift.split(": ", 1)[1]))
    for line in row.get("left_nodes", []):
        label, _, reason = line.partition(": ")
        op = re.sub(r" '.*", "", label)
        out.append(("left node", f"{op}: {reason}"))
    for w in row.get("warnings", []):
        out.append(("lift warning", w[:200]))
    if row.get("unnamed_left"):
        out.append(("quantization left without a name", f"{row['unnamed_left']} of {row.get('unnamed_examples')}"))
    if "onnxruntime" in row and "compared_with" not in row:
        out.append(("original not runnable on onnxruntime", row["onnxruntime"]))
    run = row.get("run")
    if isinstance(run, str):
        out.append(("run " + run.split(":")[0], re.sub(r"'[^']*'", "'…'", run.split(": ", 1)[1])[:200]))
    elif isinstance(run, dict) and run.get("per_operator", 0) > 1:
        out.append(("run more than one step per operator", f"{run['per_operator']} steps at {run['worst_operator']}"))
    elif isinstance(run, dict) and run.get("producer_node_differs"):
        out.append(("run: a producer's node differs from its library", f"{run['producer_nodes']}; first: "
                    f"{run['producer_node_differs']}"))
    lowered = row.get("lower", "")
    if lowered and lowered != "identical" and _lower_criterion(row) and _compared(row):
        out.append(("lower + onnxruntime not bit-identical" if lowered.startswith("differs") else
                    "lower " + lowered.split(":")[0], lowered))
    elif lowered.startswith(("CRASH", "refused", "onnxruntime cannot")):
        out.append(("lower " + lowered.split(":")[0], lowered))
    for key in ("check", "check_lifted", "check_vitis"):
        for f in row.get(key, []):
            out.append((f"{key} finding", f"{f['rule']} {f['severity']}: {re.sub(r'[0-9.e+-]{4,}', 'N', f['message'])[:150]}"))
    return out


def _compared(row: dict) -> bool:
    """Whether the row's lowered model was compared with its original (not when onnxruntime cannot run that)."""
    return "lower" in row and not row["lower"].startswith("not compared")


def _lower_criterion(row: dict) -> bool:
    """Whether bit identity after lower is asked of the row: every file lowered in its own form; rows of runs
    before the forms were chosen: static QDQ files only."""
    return bool(row.get("static_qdq")) or "lower_form" in row


def _run_text(run) -> str:
    if isinstance(run, dict):
        per = run.get("per_operator")
        parts = [f"op {per}" if per is not None else "op -", f"e2e {run.get('end_to_end', '-')}"]
        if "producer_nodes" in run:  # the producer's own nodes, each on its own: bit identity, not steps
            parts[0] += f" ({run['producer_nodes']})"
        if "output_steps" in run:
            parts.append(f"out {run['output_steps']:.2f} st")
        elif isinstance(run.get("output_max_abs"), float):
            parts.append(f"out {run['output_max_abs']:.2g}")
        return ", ".join(parts)
    return str(run or "-")[:60]


def _mode(row: dict) -> str:
    """The producer's setting a row's file was made with: the last part of its name (``ort-cnn-qdq_u8`` -> qdq_u8)."""
    parts = row["model"].split("-")
    if parts[0] == "brevitas":
        return "-".join(parts[1:])  # qcdq-8, qonnx-4
    if parts[0] == "nbits":
        return "-".join(parts[2:])  # b32, b16-sym
    return ("fx_qat_" if parts[:2] == ["torch", "fxqat"] else "") + parts[-1]


def by_mode(rows: list[dict]) -> None:
    """One line per producer and setting: the issue-20 criteria, counted."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["producer"], _mode(r))].append(r)
    print("| producer | mode | models | lifted whole | refused (file's error) | nodes left, all named | "
          "run: max steps per operator | lower bit-identical | check findings (file) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (producer, mode), group in groups.items():
        whole = sum(r.get("lift") == "whole" for r in group)
        refused = sum(str(r.get("lift", "")).startswith("refused") for r in group)
        left = sum(len(r.get("left_nodes", [])) for r in group)
        unnamed = sum(r.get("unnamed_left", 0) for r in group)
        steps = [r["run"]["per_operator"] for r in group if isinstance(r.get("run"), dict) and "per_operator" in r["run"]]
        outputs_only = sum(isinstance(r.get("run"), dict) and "per_operator" not in r["run"] for r in group)
        run = (f"{max(steps)} ({len(steps)} files)" if steps else "-") + (
            f"; outputs only: {outputs_only}" if outputs_only else "")
        lowered = [r for r in group if _compared(r)]
        same = sum(r["lower"] == "identical" for r in lowered)
        forms = sorted({r.get("lower_form") or "-" for r in lowered})
        lower_text = f"{same} / {len(lowered)}" + (f" ({', '.join(forms)})" if lowered else "") + (
            "" if all(_lower_criterion(r) for r in lowered) else " (not asked)")
        rules = Counter(f["rule"] for r in group for f in r.get("check", []))
        findings = ", ".join(f"{k} x{v}" for k, v in sorted(rules.items())) or "-"
        print(f"| {producer} | {mode} | {len(group)} | {whole} | {refused or '-'} | "
              f"{left}{'' if not unnamed else f' (+{unnamed} UNNAMED)'} | {run} | {lower_text} | {findings} |")


def report(rows: list[dict], producers: dict[str, str]) -> None:
    for producer, status in producers.items():
        print(f"{producer}: {status}")
    crashes = [r for r in rows if any(str(r.get(k, "")).startswith(("CRASH", "HANG")) for k in ("lift", "run", "lower"))
               or any(f["rule"] == "CRASH" for k in ("check", "check_lifted") for f in r.get(k, []))]
    whole = [r for r in rows if r.get("lift") == "whole"]
    ran = [r for r in rows if isinstance(r.get("run"), dict)]
    # judged per operator: steps per operator, or a producer's node against its library (differing: not within)
    per_operator = [r for r in ran if "per_operator" in r["run"] or "producer_node_differs" in r["run"]]
    within = [r for r in per_operator if r["run"].get("per_operator", 2) <= 1]
    static = [r for r in rows if _lower_criterion(r) and _compared(r)]
    identical = [r for r in static if r["lower"] == "identical"]
    clean = [r for r in rows if not r.get("check") and not r.get("check_lifted")]
    print(f"\n{len(rows)} models: {len(crashes)} crashed or hung; {len(whole)} lifted whole; run compared on "
          f"{len(ran)} ({len(ran) - len(per_operator)} on their outputs only), {len(within)} of {len(per_operator)} "
          f"within one step per operator; lower + onnxruntime bit-identical on {len(identical)} of "
          f"{len(static)} models lowered in their own form; check silent on {len(clean)} (file and lifted form)\n")
    by_mode(rows)
    print()
    print("| producer | model | lift | left (by op) | run vs onnxruntime (steps) | lower | check findings (file / lifted) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        left = Counter(re.sub(r" '.*|\(.*", "", line.split(": ")[0]).strip() for line in r.get("left_nodes", []))
        findings = " / ".join(",".join(f"{k}x{v}" for k, v in sorted(Counter(f["rule"] for f in r.get(key, [])).items()))
                              or "-" for key in ("check", "check_lifted"))
        lift = r.get("lift", "")
        print(f"| {r['producer']} | {r['model']} | {lift[:70]} | {dict(left) or '-'}"
              f"{' +' + str(r['unnamed_left']) + ' unnamed' if r.get('unnamed_left') else ''} | "
              f"{_run_text(r.get('run') or r.get('onnxruntime'))} | {str(r.get('lower', '-'))[:40]} | {findings} |")
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in rows:
        for cause, detail in dict.fromkeys(_failures(r)):
            groups[(cause, detail)].append(r["model"])
    print("\nFailures grouped by cause (cause: detail -> models):")
    for cause in sorted({c for c, _ in groups}):
        details = {d: m for (c, d), m in groups.items() if c == cause}
        total = len({m for ms in details.values() for m in ms})
        print(f"\n## {cause} ({total} models)")
        for detail, models in sorted(details.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(models[:6]) + (f", ... ({len(models)} in all)" if len(models) > 6 else "")
            print(f"- {detail[:220]} -> {shown}")
    flagged = [(r["model"], r["per_channel_dq_before_13"], any(f["rule"] == "QT412" for f in r.get("check", [])))
               for r in rows if r.get("per_channel_dq_before_13")]
    print("\nPer-channel Q/DQ before opset 13 (onnx.checker and onnxruntime refuse it): " +
          (", ".join(f"{m} ({len(n)} nodes, QT412 {'reported' if hit else 'NOT reported'})" for m, n, hit in flagged)
           or "none in this corpus"))


def _expected(path: pathlib.Path, name: str) -> tuple[dict | None, dict | None]:
    """(onnxruntime's outputs of the original that a run kept beside it, else the QCDQ twin's for a Brevitas QONNX
    file; that stand-in or None)."""
    expected_path = path.parent / f"{path.stem}.ort.npz"
    expected = dict(np.load(expected_path)) if expected_path.exists() else None
    stand_in = _qcdq_stand_in(path) if expected is None and name.startswith("brevitas-qonnx-") else None
    return (expected if stand_in is None else stand_in), stand_in


def lower_again(rows: list[dict]) -> None:
    """Each row's lower stage run again, in place, from the model and feeds an earlier run kept (``--keep``)."""
    for row in rows:
        if not row.get("lift", "").startswith(("whole", "partly")):
            continue
        path = pathlib.Path(row["file"])
        expected, _ = _expected(path, row["model"])
        model = onnx.load(path)
        with _deadline(STAGE_SECONDS):
            result = lift_model(model)
        if "lower" not in row and not _lowered(row, result):
            continue
        typed = result.model
        row["lower_form"], row["lower"] = lower_stage(model, typed,
                                                      dict(np.load(path.with_suffix(".feeds.npz"))), expected,
                                                      [o.name for o in model.graph.output])
        print(f"{row['model']}: lower --form {row['lower_form']}: {row['lower'][:60]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="the folder for every model and log (default: a temporary one)")
    parser.add_argument("--json", metavar="FILE", help="write every row as JSON")
    parser.add_argument("--torch-python", help="interpreter for torch-floats, torch-fx-qat and brevitas")
    parser.add_argument("--quark-python", help="interpreter with amd-quark")
    parser.add_argument("--inc-python", help="interpreter with onnx-neural-compressor")
    parser.add_argument("--python", action="append", default=[], metavar="RECIPE=PY",
                        help="interpreter for one recipe of producer_recipes.py")
    parser.add_argument("--ppocr-cache", default=os.path.join(os.path.expanduser("~"), ".cache", "onnx-qtypes-bench"),
                        help="where the rapidocr_onnxruntime wheel is downloaded once")
    parser.add_argument("--no-ppocr", action="store_true", help="leave out the PP-OCR models (no download)")
    parser.add_argument("--producers", help="comma-separated substrings of producer names to run (default: all)")
    parser.add_argument("--models", help="comma-separated float model names (default: all)")
    parser.add_argument("--settings", help="comma-separated settings of the producers in this interpreter (default: "
                        "all; e.g. qdq_u8,qop_u8,QInt8,ptq)")
    parser.add_argument("--quark-configs", help="comma-separated names of Quark preset configs (default: "
                        "producer_recipes.QUARK_CONFIGS)")
    parser.add_argument("--report", nargs="+", metavar="JSON", help="print the report of earlier runs' --json files "
                        "(a model in a later file too: the later file's row)")
    parser.add_argument("--lower-again", action="store_true",
                        help="with --report: run each row's lower stage again from its kept file first (--json FILE: "
                             "write the rows so updated)")
    args = parser.parse_args(argv)
    if args.lower_again and not args.report:
        parser.error("--lower-again re-runs the lower stage of kept runs: give their --report files")
    if args.report:
        runs = [json.loads(pathlib.Path(f).read_text()) for f in args.report]
        # a model a later file has again (a producer run again) is that file's row, in the place of the first
        by_model = {r["model"]: r for run in runs for r in run["rows"]}
        rows = list(by_model.values())
        producers = {k: v for run in runs for k, v in run["producers"].items()}
        if args.lower_again:
            lower_again(rows)
            if args.json:
                pathlib.Path(args.json).write_text(json.dumps({"producers": producers, "rows": rows}, indent=1))
        report(rows, producers)
        return 0
    folder = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="producer-corpus-")).resolve()
    floats_dir = folder / "float"
    floats_dir.mkdir(parents=True, exist_ok=True)
    pythons = {"torch-floats": args.torch_python, "torch-fx-qat": args.torch_python, "brevitas": args.torch_python,
               "quark": args.quark_python, "inc": args.inc_python}
    for item in args.python:
        recipe, _, python = item.partition("=")
        pythons[recipe] = python
    pythons = {k: v or sys.executable for k, v in pythons.items()}
    chosen = set(args.models.split(",")) if args.models else None
    global SETTINGS
    SETTINGS = set(args.settings.split(",")) if args.settings else None
    wanted = (lambda p: True) if not args.producers else (
        lambda p: any(s.lower() in p.lower() for s in args.producers.split(",")))

    producers: dict[str, str] = {}
    corpus_floats(floats_dir)
    print("float models:", flush=True)
    manifest, status = run_recipe("torch-floats", pythons["torch-floats"], floats_dir, None, args.models,
                                  folder / "torch-floats.log")  # (--models: only those; more architectures by name)
    producers["float models: torch / torchvision / transformers"] = status
    if not args.no_ppocr:
        try:
            ppocr_floats(floats_dir, pathlib.Path(args.ppocr_cache))
            producers["float models: PP-OCR (rapidocr_onnxruntime wheel)"] = "3 models"
        except Exception as exc:  # no network: said, not fatal
            producers["float models: PP-OCR (rapidocr_onnxruntime wheel)"] = f"not fetched: {_error(exc)}"
    floats = {k: v for k, v in _floats(floats_dir).items() if chosen is None or k in chosen}
    print(f"  {len(floats)}: {', '.join(floats)}", flush=True)

    made: dict[str, dict] = {}  # producer -> {model: {"path", "float"}}
    for producer, (module, build) in IN_PROCESS.items():
        if not wanted(producer):
            continue
        print(f"{producer}:", flush=True)
        out = folder / module
        out.mkdir(exist_ok=True)
        try:
            started = time.perf_counter()
            models = build(floats, out)
        except ImportError as exc:
            producers[producer] = f"not installed ({exc.name})"
            continue
        refused = models.pop("__refused__", [])
        producers[producer] = f"{len(models)} models, {len(refused)} refused, {time.perf_counter() - started:.0f} s" + (
            "".join(f"\n    refused {r['float']} {r['recipe']}: {r['error'][:150]}" for r in refused))
        made[producer] = models
    for producer, recipe in ELSEWHERE.items():
        if not wanted(producer):
            continue
        print(f"{producer} ({pythons[recipe]}):", flush=True)
        uses_floats = recipe in ("quark", "inc")
        manifest, status = run_recipe(recipe, pythons[recipe], folder / recipe, floats_dir if uses_floats else None,
                                      ",".join(floats) if uses_floats else None, folder / f"{recipe}.log",
                                      args.quark_configs)
        producers[producer] = status
        if manifest is None:
            continue
        producers[producer] += "".join(f"\n    refused {r['float']} {r['recipe']}: {r['error'][:150]}"
                                       for r in manifest["refused"])
        made[producer] = {m["name"]: {"path": folder / recipe / m["file"], "float": m["float"]}
                          for m in manifest["models"]}

    rows = []
    for producer, models in made.items():
        for name, info in models.items():
            path = info["path"]
            npz = floats_dir / f"{info['float']}.npz"
            feeds = samples_of(npz if npz.exists() else path.with_suffix(".npz"))[1]
            np.savez(path.with_suffix(".feeds.npz"), **feeds)
            expected, stand_in = _expected(path, name)
            started = time.perf_counter()
            try:
                row = examine(name, path, feeds, expected, folder)
            except Exception as exc:  # the script's own failure on one model must not end the run
                row = {"model": name, "file": str(path), "lift": f"CRASH (in this script): {_error(exc)}"}
            row["producer"] = producer
            if stand_in is not None:
                row["compared_with"] = "onnxruntime on the same net's QCDQ export"
            row["seconds"] = round(time.perf_counter() - started, 1)
            rows.append(row)
            print(f"  {name}: lift {row.get('lift', '')[:60]}, run {_run_text(row.get('run'))}, "
                  f"lower {str(row.get('lower', '-'))[:40]} ({row['seconds']} s)", flush=True)
    print()
    report(rows, producers)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"producers": producers, "rows": rows}, indent=1, default=str))
    crashed = any(str(r.get(k, "")).startswith(("CRASH", "HANG")) for r in rows for k in ("lift", "run", "lower"))
    return 1 if crashed else 0


if __name__ == "__main__":
    logging.getLogger("nncf").setLevel(logging.ERROR)
    sys.exit(main())
