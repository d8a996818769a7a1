"""GGUF files lift into typed models that check clean, run to gguf's own values and lower to standard ONNX that
onnxruntime computes the same (proposal/spec/llm_formats.md). The files are written by gguf's GGUFWriter from
random valid blocks (tests/gguf_files.py); gguf's dequantizer is the reference the values are held to."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest

import gguf  # in the test extra: an ImportError here is a broken install

import gguf_files  # noqa: E402
import onnx_qtypes  # noqa: E402
from onnx_qtypes.checker import iter_diagnostics  # noqa: E402
from onnx_qtypes.interop.gguf import GGUFError, lift_gguf  # noqa: E402
from onnx_qtypes.interop.gguf_formats import FORMATS  # noqa: E402
from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: E402


@pytest.fixture(scope="module")
def every_format(tmp_path_factory):
    """A GGUF file with a tensor of every lifted format, its typed model and gguf's values."""
    folder = tmp_path_factory.mktemp("gguf")
    source = folder / "model.gguf"
    gguf_files.write_gguf(source, gguf_files.every_format(), metadata={"llama.context_length": 4096})
    lift_gguf(source, folder / "model.onnx")
    return source, folder / "model.onnx", gguf_files.gguf_values(source)


def _values_equal(want: np.ndarray, got: np.ndarray) -> bool:
    return want.shape == got.shape and np.array_equal(want.astype(np.float32), np.asarray(got).astype(np.float32))


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_decodes_exactly_as_gguf(name, tmp_path):
    """2,000 random blocks of each format (zero d and dmin included), lifted and dequantized by the type's one
    formula (reference_ops/quant.py), rounded once to float32: gguf's float32 values (llm_formats.md#exactness).
    The only difference allowed is the sign of a zero, which exact reals do not have."""
    fmt = FORMATS[name]
    shape = (250, 8 * fmt.block)  # 2,000 blocks
    gguf_files.write_gguf(tmp_path / "one.gguf", [("w", name, shape)], seed=len(name))
    lift_gguf(tmp_path / "one.gguf", tmp_path / "one.onnx")
    ours = np.asarray(ReferenceEvaluator(onnx_qtypes.load(tmp_path / "one.onnx")).run(["w"], {})[0], np.float32)
    theirs = gguf_files.gguf_values(tmp_path / "one.gguf")["w"].astype(np.float32)
    assert np.array_equal(ours, theirs)
    differ = ours.view(np.uint32) != theirs.view(np.uint32)
    assert (ours[differ] == 0).all()  # +0 here, -0 in gguf where d * 0 has a sign
    planes = fmt.unpack(gguf_files.random_blocks(fmt, 2000, np.random.default_rng(len(name))))
    if fmt.storage != "float4e2m1":  # integer codes within the declared storage range, and all of it in use
        assert planes.codes.min() >= fmt.lo and planes.codes.max() <= fmt.hi
        assert len(np.unique(planes.codes)) == fmt.hi - fmt.lo + 1 or name in gguf_files.QUANTIZED_BY_GGUF


def test_the_lift_checks_clean_and_runs_to_ggufs_values(every_format):
    _, typed, want = every_format
    model = onnx_qtypes.load(typed)
    errors = [d for d in iter_diagnostics(model) if d.severity.value == "error"]
    assert not errors, [str(d) for d in errors]
    assert [o.name for o in model.graph.output] == list(want)  # named exactly as in the file, in its order
    for kernels in ("definitional", "integer"):
        got = ReferenceEvaluator(model, kernels=kernels).run(list(want), {})
        bad = [n for n, g in zip(want, got) if not _values_equal(want[n], g)]
        assert not bad, (kernels, bad)


def test_lowered_onnxruntime_gives_ggufs_float32_bits(every_format):
    """After lower, onnxruntime's unoptimized CPU path computes every weight to gguf's float32 bits (signed zeros
    included: its DequantizeLinear multiplies in float32 as gguf does)."""
    import onnxruntime as ort
    _, typed, want = every_format
    lowered = onnx_qtypes.lower(onnx_qtypes.load(typed))
    assert not any(o.domain not in ("", "ai.onnx") for o in lowered.opset_import)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(lowered.SerializeToString(), options, providers=["CPUExecutionProvider"])
    got = dict(zip(want, session.run(list(want), {})))
    for name, value in want.items():
        assert np.array_equal(np.asarray(got[name]).astype(np.float32).view(np.uint32),
                              value.astype(np.float32).view(np.uint32)), name


def test_metadata_is_kept_as_json(every_format):
    _, typed, _ = every_format
    meta = {p.key: p.value for p in onnx.load(str(typed)).metadata_props}
    assert meta["onnx_qtypes.source"] == "GGUF" and json.loads(meta["gguf.version"]) == 3
    assert json.loads(meta["general.name"]) == "onnx-qtypes test model"
    assert json.loads(meta["tokenizer.ggml.tokens"]) == ["<s>", "</s>", "hello"]
    assert json.loads(meta["llama.context_length"]) == 4096


def test_external_data_written_in_chunks_holds_the_same_values(tmp_path, every_format):
    source, _, want = every_format
    result = lift_gguf(source, tmp_path / "big.onnx", external=True, chunk_values=1024)  # many chunks per tensor
    assert result.external and (tmp_path / "big.onnx.data").stat().st_size >= result.bytes_written  # + alignment
    assert (tmp_path / "big.onnx").stat().st_size < result.bytes_written  # the planes are not in the graph
    got = ReferenceEvaluator(onnx_qtypes.load(tmp_path / "big.onnx")).run(list(want), {})
    assert all(_values_equal(want[n], g) for n, g in zip(want, got))


def test_a_format_no_type_expresses_is_refused_by_name(tmp_path):
    source = tmp_path / "ternary.gguf"
    writer = gguf.GGUFWriter(str(source), "llama")
    weights = np.random.default_rng(0).normal(0, 1, (2, 256)).astype(np.float32)
    writer.add_tensor("blk.0.ffn_up.weight", gguf.quants.quantize(weights, gguf.GGMLQuantizationType.TQ2_0),
                      raw_dtype=gguf.GGMLQuantizationType.TQ2_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    out = tmp_path / "out.onnx"
    done = subprocess.run([sys.executable, "-m", "onnx_qtypes", "lift", str(source), str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "tensor 'blk.0.ffn_up.weight' is GGML type TQ2_0" in done.stderr and len(done.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == [source]  # nothing written


# a block field the type cannot hold: (format, byte offset in the block, bytes written there, message)
UNHOLDABLE = [
    ("MXFP4", 0, b"\xff", "its MXFP4 scale is 0xFF, which OCP MX defines as NaN"),  # 2^128 in ggml
    ("Q8_0", 0, np.float16(np.nan).tobytes(), "its float16 d is nan"),
    ("Q4_1", 2, np.float16(np.inf).tobytes(), "its float16 m is inf"),
    ("Q4_K", 0, np.float16(-np.inf).tobytes(), "its float16 d is -inf"),
    ("Q4_K", 2, np.float16(np.nan).tobytes(), "its float16 dmin is nan"),
]


@pytest.mark.parametrize(("kind", "at", "value", "says"), UNHOLDABLE)
def test_a_block_the_type_cannot_hold_is_refused_by_tensor_and_block(tmp_path, kind, at, value, says):
    """Scales and offsets are finite (QT101, QT140): lift names the tensor and the block rather than write a model
    that check refuses. The file is lifted to external data in chunks of one row, the bad block in the last one."""
    fmt = FORMATS[kind]
    source = tmp_path / "bad.gguf"
    data = gguf_files.tensor_bytes(fmt, (4, 512), np.random.default_rng(1))
    blocks = data.reshape(-1, fmt.block_bytes)
    blocks[-1, at:at + len(value)] = np.frombuffer(value, np.uint8)
    writer = gguf.GGUFWriter(str(source), "llama")
    writer.add_tensor("w", data, raw_dtype=gguf.GGMLQuantizationType[kind])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(GGUFError, match=f"tensor 'w': block {len(blocks) - 1}: {says}"):
        lift_gguf(source, tmp_path / "out.onnx", external=True, chunk_values=512)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.gguf"]


def test_the_command_line(tmp_path, every_format):
    source = every_format[0]
    out = tmp_path / "cli.onnx"
    done = subprocess.run([sys.executable, "-m", "onnx_qtypes", "lift", str(source), str(out), "--format", "json"],
                          capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    assert report["tensors"] == len(gguf_files.every_format()) and report["formats"]["Q4_K"] == 1
    refused = subprocess.run([sys.executable, "-m", "onnx_qtypes", "lift", str(source), str(tmp_path / "s.onnx"),
                              "--statistics", str(source)], capture_output=True, text=True)
    assert refused.returncode == 2 and "--statistics" in refused.stderr  # broken files: test_gguf_bad_files.py


@pytest.mark.parametrize("command", [["check"], ["show"], ["lower", "{tmp}/lowered.onnx"],
                                     ["run", "--inputs", "{tmp}/in.npz", "--outputs", "{tmp}/out.npz"],
                                     ["compare", "--backend", "onnxruntime"]])
def test_a_command_that_reads_onnx_tells_a_gguf_file_to_lift_first(tmp_path, every_format, command):
    np.savez(tmp_path / "in.npz", x=np.zeros(1, np.float32))
    argv = [command[0], str(every_format[0]), *(a.format(tmp=tmp_path) for a in command[1:])]
    done = subprocess.run([sys.executable, "-m", "onnx_qtypes", *argv], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{every_format[0]}: a GGUF file, not an ONNX model: `onnx-qtypes lift {every_format[0]} OUT.onnx`" \
        in done.stderr
    assert not (tmp_path / "lowered.onnx").exists() and not (tmp_path / "out.npz").exists()


@pytest.mark.parametrize("name", ["Q4_K", "Q6_K", "IQ4_XS"])
def test_the_blocked_matmul_kernel_gives_a_float_output_the_definitions_value(name):
    """int8 activations by a GGUF weight into a float32 output: the integer kernel (exact block sums, combined in
    float64, rounded once) and the definition agree to the last float32 bit on these sizes."""
    from builders import load_script  # noqa: PLC0415
    from onnx import TensorProto, helper  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.proto.model import write_qtype  # noqa: PLC0415

    cases = load_script("conformance_tests/generators/gguf_cases.py")
    rng = np.random.default_rng(3)
    inits, infos, weight = cases._weight(name, "b", True, rng)
    a_vi = helper.make_tensor_value_info("a", TensorProto.INT8, [3, 512])
    write_qtype(a_vi, QType("int8", 2.0 ** -5, 3))
    model = cases._model([helper.make_node("MatMul", ["a", weight], ["y"], name="mm")], [a_vi],
                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])], inits, infos, 21, 10)
    feeds = {"a": rng.integers(-128, 128, (3, 512)).astype(np.int8)}
    want = ReferenceEvaluator(model, kernels="definitional").run(None, feeds)[0]
    integer = ReferenceEvaluator(model, kernels="integer")
    got = integer.run(None, feeds)[0]
    assert integer.kernel_log == {"mm": "integer"}
    assert got.dtype == want.dtype == np.float32 and np.array_equal(got, want)


def test_a_big_endian_file_reads_its_plain_tensors_and_refuses_its_blocks(tmp_path):
    """gguf writes big-endian files (s390x) with each plain tensor in that byte order: lift stores them as ONNX's
    little-endian raw data, values unchanged. A quantized block's float16 d is in that order too, which this version
    does not read: refused by tensor, nothing written."""
    plain = {"f": np.arange(-3, 5, dtype=np.float32) / 3, "h": np.arange(6, dtype=np.float16) / 7,
             "i": np.arange(-2, 2, dtype=np.int32)}
    source = tmp_path / "big.gguf"
    writer = gguf.GGUFWriter(str(source), "llama", endianess=gguf.GGUFEndian.BIG)
    for name, value in plain.items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    lift_gguf(source, tmp_path / "big.onnx")
    got = ReferenceEvaluator(onnx_qtypes.load(tmp_path / "big.onnx")).run(list(plain), {})
    assert all(np.array_equal(g, v.astype(np.float32) if v.dtype == np.float16 else v) for g, v in zip(got, plain.values()))
    quantized = tmp_path / "big-q.gguf"
    writer = gguf.GGUFWriter(str(quantized), "llama", endianess=gguf.GGUFEndian.BIG)
    writer.add_tensor("w", gguf_files.tensor_bytes(FORMATS["Q8_0"], (2, 64), np.random.default_rng(0)),
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(GGUFError, match="tensor 'w': a big-endian GGUF file's Q8_0 blocks"):
        lift_gguf(quantized, tmp_path / "q.onnx")
    assert not (tmp_path / "q.onnx").exists()


def test_a_reader_unaware_of_the_extension_refuses_the_lifted_model(every_format):
    """Every version-3 weight's codes carry the marker data type: onnx's full check (its shape inference) and
    onnxruntime, which know no extension, refuse the model rather than read the codes as numbers
    (llm_formats.md#unaware-readers)."""
    import onnxruntime as ort
    typed = every_format[1]
    with pytest.raises(ValueError, match="Invalid tensor data type 10"):
        onnx.checker.check_model(onnx.load(str(typed)), full_check=True)
    with pytest.raises(Exception, match="Load model .* failed"):
        ort.InferenceSession(str(typed), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", ["Q3_K", "Q4_K", "Q6_K", "IQ4_XS"])
def test_the_blocked_matmul_kernel_gives_a_quantized_output_the_definitions_value(name):
    """The same product into an int8 output: the integer kernel's requantization of sign-flipped terms (negative
    sub-block scales in Q3_K / Q6_K, -dmin offsets in Q4_K) gives the definition's storage values."""
    from builders import load_script  # noqa: PLC0415
    from onnx import TensorProto, helper  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.proto.model import write_qtype  # noqa: PLC0415

    cases = load_script("conformance_tests/generators/gguf_cases.py")
    rng = np.random.default_rng(5)
    feeds = {"a": rng.integers(-128, 128, (3, 512)).astype(np.int8)}

    def model(y_type):
        inits, infos, weight = cases._weight(name, "b", True, np.random.default_rng(3))
        a_vi = helper.make_tensor_value_info("a", TensorProto.INT8, [3, 512])
        write_qtype(a_vi, QType("int8", 2.0 ** -5, 3))
        y_vi = helper.make_tensor_value_info("y", TensorProto.INT8 if y_type else TensorProto.FLOAT, [3, 8])
        if y_type:
            write_qtype(y_vi, y_type)
        return cases._model([helper.make_node("MatMul", ["a", weight], ["y"], name="mm")], [a_vi], [y_vi], inits,
                            infos, 21, 10)

    reals = ReferenceEvaluator(model(None)).run(None, feeds)[0].astype(np.float64)
    y_type = QType("int8", float(np.float32(np.abs(reals).max() / 100)), -4)
    typed = model(y_type)
    want = ReferenceEvaluator(typed, kernels="definitional").run(None, feeds)[0]
    integer = ReferenceEvaluator(typed, kernels="integer")
    got = integer.run(None, feeds)[0]
    assert integer.kernel_log == {"mm": "integer"}
    assert len(np.unique(want)) > 12  # of 24 values: the output varies: a wrong sign or offset would show
    assert np.array_equal(np.asarray(got), np.asarray(want))


def test_gguf_bytes_and_a_path_a_shell_splits_get_a_hint_that_works(tmp_path, every_format):
    """Bytes given to the API: the hint names the function that lifts a GGUF file (it named one that does not
    exist, onnx_qtypes.interop.lift_gguf). A path with a space: the command line quotes it as a shell takes it."""
    import importlib

    from onnx_qtypes import diagnose
    from onnx_qtypes.proto.errors import ModelLoadError

    with pytest.raises(ModelLoadError) as raised:
        diagnose(pathlib.Path(every_format[0]).read_bytes())
    hint = str(raised.value)
    function = hint.split("a GGUF file, not an ONNX model: ")[1].split("(")[0]
    module, _, name = function.rpartition(".")
    lifted = tmp_path / "lifted.onnx"
    getattr(importlib.import_module(module), name)(every_format[0], lifted)
    assert lifted.exists()

    spaced = tmp_path / "my model.gguf"
    spaced.write_bytes(pathlib.Path(every_format[0]).read_bytes())
    with pytest.raises(ModelLoadError, match=re.escape(f"`onnx-qtypes lift '{spaced}' OUT.onnx`")):
        diagnose(spaced)
