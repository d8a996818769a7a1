"""com.microsoft.MatMulNBits lifts to a typed blocked weight read by an unmodified MatMul, and lowers back.

Every comparison is against onnxruntime's unoptimized path (ORT_DISABLE_ALL) running the file the quantizer
wrote. Row k of A = identity is row k of the weight, computed exactly (one product by 1, the rest by 0), so
the typed weight must equal onnxruntime's dequantized weight bit for bit. Other inputs compare within the
float error of a length-K dot product summed in another order: 2·K·u·Σ|a||w| (u the unit roundoff of the
output type) plus the output's own rounding; with accuracy_level 4 onnxruntime also quantizes A to int8 per
block, which adds half of A's step times Σ|w|.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from corpus import run_onnxruntime
from corpus_matmul_nbits import free_rows, hand_built, identity_feeds, nbits_feeds, nbits_models, refused_models

from onnx_qtypes import diagnose, get_qtype
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.interop import LowerError, lift_model, lower_model, matmul_nbits
from onnx_qtypes.proto import quantized_tensors
from onnx_qtypes.proto.packing import unpack
from onnx_qtypes.reference_ops import ReferenceEvaluator

MODELS = nbits_models()
NAMES = sorted(MODELS)
REFUSED = refused_models()


def _nbits_attributes(model: onnx.ModelProto) -> dict[str, int]:
    node = next(n for n in model.graph.node if n.op_type == "MatMulNBits")
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _lifted(name: str) -> onnx.ModelProto:
    return lift_model(MODELS[name]).model


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return next(iter(run_onnxruntime(model, feeds, optimize=False).values()))


def _tolerance(name: str, feeds: dict[str, np.ndarray], weight: np.ndarray, out: np.ndarray) -> np.ndarray:
    a = np.abs(feeds["A"].astype(np.float64))
    w = np.abs(weight.astype(np.float64))
    k = w.shape[0]
    u = float(np.finfo(out.dtype).eps) / 2
    tol = 2 * k * u * (a @ w) + u * np.abs(out.astype(np.float64))
    if _nbits_attributes(MODELS[name]).get("accuracy_level", 0) == 4:
        block = _nbits_attributes(MODELS[name])["block_size"]
        padded = np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, -k % block)])
        step = padded.reshape(*a.shape[:-1], -1, block).max(axis=-1) / 127
        tol = tol + (np.repeat(step, block, axis=-1)[..., :k] / 2) @ w
    return tol


def _weight(model: onnx.ModelProto) -> np.ndarray:
    """The weight as the typed model means it: the reference run on A = identity."""
    free = free_rows(model)
    return _reference(free, identity_feeds(free)).reshape(-1, _reference(free, identity_feeds(free)).shape[-1])


@pytest.mark.parametrize("name", NAMES)
def test_lift_types_the_weight_of_a_plain_matmul(name: str):
    source = MODELS[name]
    attrs = _nbits_attributes(source)
    result = lift_model(source)
    model = result.model
    assert [n.op_type for n in model.graph.node if n.op_type != "Add"] == ["MatMul"], result.warnings
    assert not any(o.domain == "com.microsoft" for o in model.opset_import)
    (weight,) = quantized_tensors(model)
    assert model.graph.node[0].input[1] == weight
    qtype = get_qtype(model, weight)
    assert (qtype.axis, qtype.block_size, qtype.storage_type.bits) == (0, attrs["block_size"], attrs["bits"])
    init = next(t for t in model.graph.initializer if t.name == weight)
    assert list(init.dims) == [attrs["K"], attrs["N"]]
    assert not [d for d in iter_diagnostics(model) if d.is_error]
    assert not diagnose(source).diagnostics or name.endswith("no-domain-import")


def _assert_same_weight(name: str, ours: np.ndarray, theirs: np.ndarray, model: onnx.ModelProto) -> None:
    """Exactly, except where onnxruntime rounds on the way: A = 1 through int8 (accuracy_level 4), or
    q·s − z·s as two products (float zero points, g_idx) where the typed meaning rounds s·(q − z) once."""
    attrs = _nbits_attributes(model)
    if attrs.get("accuracy_level", 0) == 4:
        flat = ours.reshape(-1, ours.shape[-1])
        assert np.all(np.abs(ours.astype(np.float64) - theirs) <= _tolerance(name, identity_feeds(model), flat, theirs))
    elif "float-zero-points" in name or "g-idx" in name:
        scales = onnx.numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "w_scales"))
        u = float(np.finfo(theirs.dtype).eps) / 2
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=3 * u * ((1 << attrs["bits"]) - 1) * float(scales.max()))
    else:
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_typed_weight_is_what_onnxruntime_dequantizes(name: str):
    free = free_rows(MODELS[name])
    feeds = identity_feeds(free)
    _assert_same_weight(name, _reference(lift_model(free).model, feeds), _ort(free, feeds), free)


@pytest.mark.parametrize("name", NAMES)
def test_reference_agrees_with_onnxruntime(name: str):
    lifted = _lifted(name)
    feeds = nbits_feeds(MODELS[name])
    ours, theirs = _reference(lifted, feeds), _ort(MODELS[name], feeds)
    tol = _tolerance(name, feeds, _weight(lifted), theirs)
    assert np.all(np.abs(ours.astype(np.float64) - theirs.astype(np.float64)) <= tol)


@pytest.mark.parametrize("name", NAMES)
def test_lowered_qdq_runs_in_onnxruntime(name: str):
    lifted = _lifted(name)
    lowered = lower_model(lifted, "qdq").model
    ops = [n.op_type for n in lowered.graph.node]
    assert "DequantizeLinear" in ops and "MatMulNBits" not in ops
    dq = next(n for n in lowered.graph.node if n.op_type == "DequantizeLinear")
    assert {a.name: a.i for a in dq.attribute} == {"axis": 0, "block_size": _nbits_attributes(MODELS[name])["block_size"]}
    feeds = nbits_feeds(MODELS[name], seed=1)
    theirs, ours = _ort(MODELS[name], feeds), _ort(lowered, feeds)
    assert np.all(np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
                  <= _tolerance(name, feeds, _weight(lifted), theirs))
    free = free_rows(lowered)  # the same weight, exactly
    np.testing.assert_array_equal(_ort(free, identity_feeds(free)), _weight(lifted).reshape(_ort(free, identity_feeds(free)).shape))


@pytest.mark.parametrize("name", NAMES)
def test_lower_to_matmul_nbits_round_trips(name: str):
    lifted = _lifted(name)
    result = lower_model(lifted, "matmulnbits")
    again = result.model
    assert [n.op_type for n in again.graph.node if n.op_type != "Add"] == ["MatMulNBits"]
    before, after = _nbits_attributes(MODELS[name]), _nbits_attributes(again)
    assert after == before
    assert any(o.domain == "com.microsoft" for o in again.opset_import)
    free = free_rows(again)
    _assert_same_weight(name, _reference(lift_model(free).model, identity_feeds(free)), _ort(free, identity_feeds(free)),
                        free_rows(MODELS[name]))
    relifted = lift_model(again).model
    assert {n: get_qtype(relifted, n) for n in quantized_tensors(relifted)} == \
        {n: get_qtype(lifted, n) for n in quantized_tensors(lifted)}
    feeds = nbits_feeds(MODELS[name], seed=2)
    theirs = _ort(MODELS[name], feeds)
    assert np.all(np.abs(_ort(again, feeds).astype(np.float64) - theirs.astype(np.float64))
                  <= _tolerance(name, feeds, _weight(lifted), theirs))


@pytest.mark.parametrize("name", ["ort-q4-asym-k40n24b16", "ort-q4-sym-k40n24b16", "ort-q2-asym-k40n24b16"])
def test_lowered_b_pads_the_last_block_past_k_with_its_zero_point(name: str):
    """The codes of B past K are never read; lower writes the block's zero point there (real 0), as it says."""
    again = lower_model(_lifted(name), "matmulnbits").model
    attrs = _nbits_attributes(again)
    k, n, bits, block = attrs["K"], attrs["N"], attrs["bits"], attrs["block_size"]
    inits = {t.name: numpy_helper.to_array(t) for t in again.graph.initializer}
    node = next(x for x in again.graph.node if x.op_type == "MatMulNBits")
    codes = unpack(inits[node.input[1]], bits).reshape(n, -1)
    assert codes.shape[1] > k  # the model has padding to look at
    blocks = codes.shape[1] // block
    if len(node.input) > 3 and node.input[3]:
        zero_points = unpack(inits[node.input[3]], bits)[:, :blocks]
    else:
        zero_points = np.full((n, blocks), 1 << (bits - 1))
    assert np.array_equal(codes[:, k:], np.repeat(zero_points[:, -1:], codes.shape[1] - k, axis=1))


def test_storage_follows_the_zero_points():
    """Explicit zero points: unsigned codes with them; none: signed codes (code - 2^(bits-1)), zero point 0."""
    asym, sym = _lifted("hand-q4-float16"), _lifted("hand-q4-bias")
    assert get_qtype(asym, next(iter(quantized_tensors(asym)))).storage == "uint4"
    qtype = get_qtype(sym, next(iter(quantized_tensors(sym))))
    assert qtype.storage == "int4" and not any(qtype.zero_point)
    assert get_qtype(asym, next(iter(quantized_tensors(asym)))).expressed == "float16"


@pytest.mark.parametrize("name", ["ort-q4-sym-k64n32b32", "ort-q4-asym-k40n24b16", "hand-q4-n-odd", "hand-q2-packed"])
def test_a_weight_made_a_block_at_a_time_is_the_weight_made_at_once(name: str, monkeypatch):
    whole = lift_model(MODELS[name]).model
    monkeypatch.setattr(matmul_nbits, "_CODES_AT_ONCE", 1)  # one block of K per piece: every seam between pieces
    pieces = lift_model(MODELS[name]).model
    weight = next(iter(quantized_tensors(whole)))
    assert len({t.name for t in whole.graph.initializer} & {weight}) == 1
    assert ({t.name: t.raw_data for t in pieces.graph.initializer}[weight]
            == {t.name: t.raw_data for t in whole.graph.initializer}[weight])


@pytest.mark.parametrize("external", [True, False])
def test_cli_lift_of_a_large_weight_with_mirrored_blocks_writes_the_weight_the_lift_makes_in_memory(tmp_path,
                                                                                                  external):
    """A weight of 1 MiB or more goes to the spill folder: made when saved when B is in a file
    (proto.external.spill_deferred), made at once when B is in memory; its mirrored blocks from a bit per block.
    The file holds what the lift in memory (no spill folder: made at once) holds."""
    from onnx_qtypes.cli import main  # noqa: PLC0415

    model = hand_built(k=2048, n=1040, bits=4, block=32, zero_points="none")
    scales = next(t for t in model.graph.initializer if t.name == "w_scales")
    values = numpy_helper.to_array(scales).copy()
    values[::3, ::5] *= -1  # onnxruntime's symmetric quantizer writes negative scales
    scales.CopyFrom(numpy_helper.from_array(values, "w_scales"))
    source, lifted = tmp_path / "model.onnx", tmp_path / "lifted.onnx"
    onnx.save(onnx.ModelProto.FromString(model.SerializeToString()), source, save_as_external_data=external,
              location="model.data", size_threshold=0)  # (a copy: onnx.save moves the model's data out)
    assert main(["lift", str(source), str(lifted)]) == 0
    in_memory = lift_model(model)
    assert any("negative scale" in n for n in in_memory.notes)
    weight = next(iter(quantized_tensors(in_memory.model)))
    held = {t.name: t for t in in_memory.model.graph.initializer}[weight]
    written = {t.name: t for t in onnx.load(lifted).graph.initializer}[weight]
    assert len(held.raw_data) >= 1 << 20  # spilled (and so deferred) when the CLI lifts it
    assert written.raw_data == held.raw_data


def test_a_weight_in_a_file_is_made_only_when_read_and_one_in_memory_at_once(tmp_path):
    """check and show read a lifted weight's type, not its codes: with B in a file, lifting inside a spill folder
    writes none of them (they are made when read); with B in memory they are made at once, so that B can go."""
    from onnx_qtypes.proto.external import spill_folder, tensor_bytes  # noqa: PLC0415
    from onnx_qtypes.proto.reader import read_model  # noqa: PLC0415

    model = hand_built(k=2048, n=1040, bits=4, block=32, zero_points="none")
    for external in (True, False):
        source = tmp_path / f"model{external}.onnx"
        onnx.save(onnx.ModelProto.FromString(model.SerializeToString()), source, save_as_external_data=external,
                  location=f"model{external}.data", size_threshold=0)  # (a copy: onnx.save moves the data out)
        with spill_folder(tmp_path / f"spill{external}") as folder:
            lifted = lift_model(read_model(source, external_data="lazy")).model
            written = sum(f.stat().st_size for f in folder.iterdir())
            assert (written < 1 << 20) if external else (written >= 2048 * 1040 // 2)
            weight = next(iter(quantized_tensors(lifted)))
            tensor = next(t for t in lifted.graph.initializer if t.name == weight)
            assert np.asarray(tensor_bytes(tensor)).size == 2048 * 1040 // 2  # made when read, whole


def test_a_blocked_float4_weight_is_not_fused_into_matmul_nbits():
    """MatMulNBits holds integer codes: a blocked float4 (or float8) weight stays a DequantizeLinear + MatMul."""
    import ml_dtypes  # noqa: PLC0415

    rng = np.random.default_rng(0)
    k, n, block = 64, 16, 32
    w = rng.choice(np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -2, -6], np.float32), (k, n))
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("DequantizeLinear", ["W", "S"], ["Wd"], axis=0, block_size=block),
         onnx.helper.make_node("MatMul", ["A", "Wd"], ["Y"])], "g",
        [onnx.helper.make_tensor_value_info("A", onnx.TensorProto.FLOAT, [1, k])],
        [onnx.helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(w.astype(ml_dtypes.float4_e2m1fn), "W"),
         numpy_helper.from_array(np.full((k // block, n), 0.25, np.float32), "S")])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 23)], ir_version=11)
    lowered = lower_model(lift_model(model).model, "matmulnbits").model
    assert "MatMulNBits" not in [x.op_type for x in lowered.graph.node]


def test_negative_scales_are_mirrored_with_a_note():
    result = lift_model(MODELS["ort-q4-sym-k64n32b32"])  # onnxruntime's symmetric quantizer writes negative scales
    assert any("negative scale" in n for n in result.notes)
    assert all(s > 0 for s in get_qtype(result.model, next(iter(quantized_tensors(result.model)))).scale)


def test_large_weight_keeps_its_parameters_by_reference():
    model = hand_built(k=1024, n=64, block=32, zero_points="packed")  # 2048 scales, above the threshold
    lifted = lift_model(model).model
    (weight,) = quantized_tensors(lifted)
    qtype = get_qtype(lifted, weight)
    assert qtype.scale_tensor and qtype.zero_point_tensor
    assert lifted.ByteSize() < 1.2 * model.ByteSize()  # no listed scales: about the packed size
    back = lower_model(lifted, "matmulnbits").model
    assert [n.op_type for n in back.graph.node] == ["MatMulNBits"]
    assert back.ByteSize() < 1.05 * model.ByteSize()
    feeds = nbits_feeds(model)
    np.testing.assert_array_equal(_ort(back, feeds), _ort(model, feeds))  # the same codes, scales and zero points


def test_onnxruntime_qdq_blocked_weight_lowers_to_matmul_nbits():
    """The quantizer's QDQ form (DequantizeLinear -> MatMul) lowers to the MatMulNBits its QOperator form writes."""
    from corpus_matmul_nbits import _quiet, float_matmul
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    with _quiet():
        quantizer = MatMulNBitsQuantizer(float_matmul(64, 32, 0), bits=4, block_size=32, quant_format=QuantFormat.QDQ)
        quantizer.process()
    qdq = quantizer.model.model
    back = lower_model(lift_model(qdq).model, "matmulnbits").model
    assert [n.op_type for n in back.graph.node] == ["MatMulNBits"]
    assert _nbits_attributes(back) == _nbits_attributes(MODELS["ort-q4-asym-k64n32b32"])
    feeds = nbits_feeds(back)
    np.testing.assert_allclose(_ort(back, feeds), _ort(MODELS["ort-q4-asym-k64n32b32"], feeds), rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_forms_without_an_exact_type_are_left_with_a_warning(name: str):
    model, reason = REFUSED[name]
    result = lift_model(model)
    assert [n.op_type for n in result.model.graph.node] == ["MatMulNBits"]
    assert len(result.warnings) == 1 and "'proj_nbits'" in result.warnings[0] and reason in result.warnings[0]
    assert not quantized_tensors(result.model)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_missing_domain_import_counts_the_other_nodes_in_words(count: int):
    """One QT313 at the first com.microsoft node, its message counting the others after the domain (the label in
    front is the location's, which check takes off)."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["x0"], name="q0", domain="com.microsoft")]
    for k in range(1, count):
        nodes.append(helper.make_node("DequantizeLinear", [f"x{k - 1}", "s", "z"], [f"f{k}"], name=f"dq{k}",
                                      domain="com.microsoft"))
        nodes.append(helper.make_node("QuantizeLinear", [f"f{k}", "s", "z"], [f"x{k}"], name=f"q{k}"))
    nodes.append(helper.make_node("DequantizeLinear", [f"x{count - 1}", "s", "z"], ["y"], name="last"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
                               numpy_helper.from_array(np.array(0, np.int8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    (finding,) = diagnose(model).diagnostics
    more = {1: "", 2: " (1 more node uses it too)", 3: " (2 more nodes use it too)"}[count]
    assert (finding.rule, finding.location.pointer, finding.location.node) == ("QT313", "/graph/node/0", "q0")
    assert finding.message.startswith(f"uses domain 'com.microsoft'{more}, which is not in opset_import; ")


def test_missing_domain_import_is_a_finding_and_lift_reads_it():
    model = MODELS["hand-q4-no-domain-import"]
    found = diagnose(model).diagnostics
    assert [(d.rule, d.location.pointer) for d in found] == [("QT313", "/graph/node/0")]
    result = lift_model(model)
    assert any("QT313" not in n and "opset_import" in n for n in result.notes)
    assert quantized_tensors(result.model)
    refused = hand_built(import_domain=False, g_idx="act-order")
    kept = lift_model(refused).model  # left as it was, but with the import it needs
    assert any(o.domain == "com.microsoft" for o in kept.opset_import)
    feeds = nbits_feeds(refused)
    np.testing.assert_array_equal(_ort(kept, feeds), _ort(onnx.load_from_string(
        _with_import(refused).SerializeToString()), feeds))


def _with_import(model: onnx.ModelProto) -> onnx.ModelProto:
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    fixed.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    return fixed


def test_cli_lowers_to_matmul_nbits(tmp_path):
    src = tmp_path / "nbits.onnx"
    onnx.save(MODELS["ort-q4-asym-k40n24b16"], src)
    env = {"PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[1])}
    run = lambda *args: subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True,  # noqa: E731
                                       text=True, timeout=120, env={**__import__("os").environ, **env})
    assert run("lift", str(src), str(tmp_path / "typed.onnx")).returncode == 0
    done = run("lower", str(tmp_path / "typed.onnx"), str(tmp_path / "back.onnx"), "--form", "matmulnbits")
    assert done.returncode == 0, done.stderr
    assert [n.op_type for n in onnx.load(tmp_path / "back.onnx").graph.node] == ["MatMulNBits"]


def test_a_bad_accuracy_level_in_metadata_is_a_located_lower_error(tmp_path):
    """lift keeps accuracy_level in the MatMul's metadata; lower --form matmulnbits reads it back, so a hand-edited
    value is a usage error naming the node and the key, not a traceback."""
    typed = lift_model(MODELS["ort-q4-asym-k40n24b16"]).model
    matmul = next(n for n in typed.graph.node if n.op_type == "MatMul")
    matmul.metadata_props.add(key="onnx_qtypes.accuracy_level", value="x")
    with pytest.raises(LowerError, match=r"MatMul .*\(/graph/node/\d+\): metadata onnx_qtypes.accuracy_level is 'x'"):
        lower_model(typed, form="matmulnbits")


def test_accuracy_level_survives_lower_raising_the_opset():
    """A MatMulNBits file at opset 11 (onnxruntime's quantizer keeps the float model's opset; lower keeps 12 and later
    ones): lower raises it to 21 with onnx's version converter, which drops every node's metadata_props, the
    accuracy_level lift kept included. Without it onnxruntime computes in float where the original quantized A to
    int8 (found by the producer corpus at opset 13: 8.8e-05 apart on a 6 x 6 MatMul)."""
    source = MODELS["ort-q4-asym-k96n20b64-accuracy4"]
    old = onnx.ModelProto()
    old.CopyFrom(source)
    next(o for o in old.opset_import if o.domain in ("", "ai.onnx")).version = 11
    lowered = lower_model(lift_model(old).model).model
    assert next(o.version for o in lowered.opset_import if o.domain in ("", "ai.onnx")) == 21
    assert _nbits_attributes(lowered) == _nbits_attributes(old)
    feeds = nbits_feeds(old, seed=2)
    assert _ort(lowered, feeds).tobytes() == _ort(old, feeds).tobytes()


def test_lower_writes_a_lifted_matmul_nbits_model_back_as_matmul_nbits_by_default():
    """lift records that it read MatMulNBits (model metadata), so lower without a form fuses the weight back."""
    lowered = lower_model(_lifted(NAMES[0]))
    assert lowered.form == "matmulnbits"
    assert "MatMulNBits" in [n.op_type for n in lowered.model.graph.node]


@pytest.mark.parametrize("bits, zero_points", [(4, "packed"), (4, "none"), (2, "packed"), (8, "none")])
def test_lower_packs_a_large_weight_a_slice_at_a_time_and_writes_the_file_it_would_from_memory(tmp_path, bits,
                                                                                               zero_points):
    """`lower` packs MatMulNBits' B a few columns of W at a time into its spill folder (never the whole model's B in
    memory): the file it writes is the one saving the in-memory result of the loaded model gives, byte for byte, and
    B is the original's (K = 520 is not a multiple of the block: the last block is padded)."""
    from onnx_qtypes.cli import main  # noqa: PLC0415
    from onnx_qtypes.proto.packing import unpack  # noqa: PLC0415

    n = (-(-(1 << 20) // (17 * 32 * bits // 8)) + 7) // 8 * 8  # B [n, 17 blocks, 32 * bits / 8 bytes]: 1 MiB or more
    model = hand_built(k=520, n=n, bits=bits, block=32, zero_points=zero_points)
    source, lifted, lowered = (tmp_path / f"{n}.onnx" for n in ("model", "lifted", "lowered"))
    onnx.save(model, source)
    assert main(["lift", str(source), str(lifted)]) == 0
    assert main(["lower", str(lifted), str(lowered), "--form", "matmulnbits"]) == 0
    expected = tmp_path / "expected.onnx"
    onnx.save(lower_model(onnx.load(lifted), "matmulnbits").model, expected)
    assert lowered.read_bytes() == expected.read_bytes()
    written = {t.name: t for t in onnx.load(lowered).graph.initializer}
    (b,) = [t for name, t in written.items() if name.endswith(f"_Q{bits}")]
    assert b.ByteSize() >= 1 << 20  # large enough to be spilled
    original = {t.name: t for t in model.graph.initializer}["w_Q"]
    codes = [unpack(onnx.numpy_helper.to_array(t), bits).reshape(n, -1)[:, :520] for t in (b, original)]  # (past K:
    np.testing.assert_array_equal(*codes)  # padding, which MatMulNBits never reads)


@pytest.mark.parametrize("reader", ["MatMul", "Identity"])
def test_a_matmulnbits_file_at_opset_13_lowers_at_opset_13_where_every_blocked_weight_fuses(reader: str):
    """Every blocked weight going back into MatMulNBits needs no blocked DequantizeLinear (opset 21): the file's
    opset 13 is kept, so onnxruntime runs it as the original; one that also feeds an Identity stays a blocked
    DequantizeLinear, and the model is converted to 21 instead."""
    original = hand_built()
    original.opset_import[0].version = 13
    typed = lift_model(original).model
    if reader == "Identity":  # a second reader of the dequantized weight: no MatMulNBits can take it
        matmul = next(n for n in typed.graph.node if n.op_type == "MatMul")
        typed.graph.node.append(helper.make_node("Identity", [matmul.input[1]], ["w_copy"], name="copy"))
        typed.graph.output.append(helper.make_tensor_value_info("w_copy", TensorProto.UNDEFINED, None))
    lowered = lower_model(typed, "matmulnbits")
    version = lowered.model.opset_import[0].version
    fused = "MatMulNBits" in {n.op_type for n in lowered.model.graph.node}
    assert (version, fused) == ((13, True) if reader == "MatMul" else (21, False))
    feeds = nbits_feeds(original)
    if reader == "MatMul":
        assert _ort(lowered.model, feeds).tobytes() == _ort(original, feeds).tobytes()
    else:
        run_onnxruntime(lowered.model, feeds, optimize=False)  # loads and runs at 21
