"""Every format `lift` names, end to end as a user runs it, in the shapes real GGUF files hold: 1-D tensors, a
tensor of one block, rows of one block, 3-D tensors, rows that are not a multiple of 256. `onnx-qtypes lift` ->
`check` -> `run` (both kernel modes) -> `lower` (both forms) -> onnxruntime, each held to gguf's own dequantizer;
and the spec's mapping table (proposal/spec/llm_formats.md#mapping) held to what the code does."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest

import gguf  # noqa: F401 (in the test extra: an ImportError here is a broken install)

import gguf_files  # noqa: E402
from builders import ROOT  # noqa: E402

import onnx_qtypes  # noqa: E402
from onnx_qtypes.cli import main  # noqa: E402
from onnx_qtypes.interop.gguf import plane_layout  # noqa: E402
from onnx_qtypes.interop.gguf_formats import FORMATS, QK_K  # noqa: E402
from onnx_qtypes.proto.encoding import marked_storage  # noqa: E402
from onnx_qtypes.proto.model import quantized_declarations  # noqa: E402
from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE  # noqa: E402

SPEC = ROOT / "proposal" / "spec" / "llm_formats.md"


@pytest.fixture(scope="module")
def lifted(tmp_path_factory):
    """The odd-shapes GGUF file lifted by the command line, and gguf's values of every tensor."""
    folder = tmp_path_factory.mktemp("shapes")
    source = folder / "shapes.gguf"
    gguf_files.write_gguf(source, gguf_files.odd_shapes(), seed=5)
    assert main(["lift", str(source), str(folder / "typed.onnx")]) == 0
    return folder, gguf_files.gguf_values(source)


@pytest.fixture(scope="module")
def lowered(lifted):
    """`onnx-qtypes lower` of the lifted file, by form."""
    folder = lifted[0]
    out = {}
    for form in ("qdq", "matmulnbits"):
        out[form] = folder / f"lowered-{form}.onnx"
        assert main(["lower", str(folder / "typed.onnx"), str(out[form]), "--form", form]) == 0
    return out


def _same(want: np.ndarray, got: np.ndarray, *, signed_zeros: bool) -> bool:
    """Equal values of one dtype (float32 for every float tensor) and shape; with ``signed_zeros``, bit for bit."""
    want = want.astype(np.float32) if want.dtype.kind == "f" else want
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        return False
    return not signed_zeros or want.dtype != np.float32 or np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_every_tensor_is_typed_and_a_float_output_of_its_name(lifted, capsys):
    folder, want = lifted
    assert main(["check", str(folder / "typed.onnx")]) == 0
    report = capsys.readouterr().out
    # the one warning: QT102 on E8M0 byte 0 (2^-127, subnormal in float32), gguf's scale of an all-zero MXFP4 block
    assert "no findings" in report or " 0 errors" in report and all(
        "QT102" in line and "'mxfp4." in line for line in report.splitlines()[:-1]), report
    model = onnx_qtypes.load(folder / "typed.onnx")
    assert [o.name for o in model.graph.output] == list(want)
    declared = quantized_declarations(model)
    initializers = {t.name for t in model.graph.initializer}
    for name, kind, shape in gguf_files.odd_shapes():
        if not np.prod(shape):  # no block to type: an empty float32 initializer that is the output itself
            assert name in initializers and model.graph.output[list(want).index(name)].type.tensor_type.elem_type == 1
        elif kind in FORMATS:
            msg = declared(f"{name}.q")
            assert f"{name}.q" in initializers and msg is not None and msg.version == 3, name
            assert STORAGE_BY_DATA_TYPE[msg.storage_type].name == FORMATS[kind].storage, name


@pytest.mark.parametrize("kernels", ["definitional", "integer"])
def test_run_gives_ggufs_values(lifted, kernels):
    """`run` of the lifted file: gguf's float32 values (integers as stored); a zero's sign aside, which exact reals
    do not have (llm_formats.md#exactness)."""
    folder, want = lifted
    np.savez(folder / "none.npz")
    out = folder / f"{kernels}.npz"
    assert main(["run", str(folder / "typed.onnx"), "--inputs", str(folder / "none.npz"), "--outputs", str(out),
                 "--kernels", kernels]) == 0
    got = np.load(out)
    assert [n for n in want if not _same(want[n], got[n], signed_zeros=False)] == []


@pytest.mark.parametrize("form", ["qdq", "matmulnbits"])
def test_lowered_onnxruntime_gives_ggufs_float32_bits(lifted, lowered, form):
    """After `lower`, onnxruntime's unoptimized CPU path: gguf's float32 values for every shape (a tensor of one
    block too, whose one-element scale onnxruntime reads as per-tensor); bit for bit, signed zeros included, in
    the qdq form. The matmulnbits form gives a block with d = 0 scale 1 and codes at the zero point (MatMulNBits
    takes no zero scale), so its zeros are +0 where gguf's d * q is -0."""
    import onnxruntime as ort
    want = lifted[1]
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(lowered[form]), options, providers=["CPUExecutionProvider"])
    got = dict(zip(want, session.run(list(want), {})))
    assert [n for n in want if not _same(want[n], np.asarray(got[n]), signed_zeros=form == "qdq")] == []


def _mapping_table() -> dict[str, list[str]]:
    """The rows of the spec's mapping table, by GGUF type: the cells after the first."""
    text = SPEC.read_text(encoding="utf-8").split('<a id="mapping"></a>', 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    header, *body = rows
    assert header.startswith("| GGUF type | codes (storage, range) | block | scale | offset | codebook | GGUF bytes "
                             "| typed bytes | lowers to |")
    cells = {}
    for row in body:
        name, *rest = (c.strip() for c in row.strip("|").split("|"))
        cells[name.split()[0]] = rest
    return cells


def _lowered_ops(path, name: str) -> list[str]:
    model = onnx.load(str(path))
    return [n.op_type for n in model.graph.node if any(o.startswith(f"{name}.") for o in n.output)]


@pytest.mark.parametrize("name", FORMATS)
def test_the_spec_mapping_row_is_what_the_code_does(name, lowered):
    """Storage, range, block, offset and codebook columns from the Format; the bytes per 256 values from GGUF's
    block size and the planes lift writes; "lowers to" against the nodes `lower` writes (Add for an offset, Gather
    for a codebook or MXFP4's table)."""
    fmt, table = FORMATS[name], _mapping_table()
    codes, block, _, offset, codebook, gguf_bytes, typed_bytes, lowers = table[name]
    while lowers.startswith("as "):
        lowers = table[lowers.split()[1]][-1]
    storage = re.match(r"(\S+)(?: \[(\S+), (\S+)\])?", codes.replace("−", "-"))
    assert storage[1].lower() == fmt.storage
    if storage[2] is not None:
        assert (int(storage[2]), int(storage[3])) == (fmt.lo, fmt.hi)
    assert int(block) == fmt.sub_block
    assert (offset == "—") == (fmt.offset is None) and (codebook == "—") == (not fmt.codebook)
    assert int(gguf_bytes) == fmt.block_bytes * QK_K // fmt.block
    bits = 0
    for _, _, data_type, dims in plane_layout(fmt, (1, QK_K)):
        storage_type = STORAGE_BY_DATA_TYPE.get(marked_storage(data_type) or data_type)
        width = storage_type.bits if storage_type else {onnx.TensorProto.FLOAT16: 16}.get(data_type, 8)  # E8M0: 8
        bits += width * int(np.prod(dims))
    assert int(typed_bytes) == bits // 8
    ops = _lowered_ops(lowered["qdq"], f"{name.lower()}.col")
    assert ("Add" in ops) == ("Add" in lowers) and ("Gather" in ops) == ("Gather" in lowers), (ops, lowers)


@pytest.mark.parametrize("name", [*FORMATS, "NF4"])
def test_matmulnbits_exactly_where_the_spec_says(name):
    """--form matmulnbits on the format's committed MatMul case: com.microsoft.MatMulNBits of the bit width the
    spec's row names where it names one, the exact DequantizeLinear chain elsewhere; onnxruntime (unoptimized)
    within the case's tolerance either way."""
    import onnxruntime as ort
    from onnx import numpy_helper  # noqa: PLC0415

    lowers = _mapping_table()[name][-1]
    while lowers.startswith("as "):
        lowers = _mapping_table()[lowers.split()[1]][-1]
    folder = ROOT / "conformance_tests" / "cases" / "execution" / f"gguf-matmul-{name.lower()}"
    feeds = {}
    for path in sorted((folder / "test_data_set_0").glob("input_*.pb")):
        tensor = onnx.load_tensor(str(path))
        feeds[tensor.name] = numpy_helper.to_array(tensor)
    expected = numpy_helper.to_array(onnx.load_tensor(str(folder / "test_data_set_0" / "output_0.pb")))
    lowered = onnx_qtypes.lower(onnx_qtypes.load(folder / "model.onnx"), form="matmulnbits")
    fused = [n for n in lowered.graph.node if n.op_type == "MatMulNBits"]
    spec_bits = re.search(r"MatMulNBits (\d)-bit", lowers)
    assert bool(fused) == bool(spec_bits), (name, lowers)
    if fused:
        assert {a.i for n in fused for a in n.attribute if a.name == "bits"} == {int(spec_bits[1])}
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(lowered.SerializeToString(), options, providers=["CPUExecutionProvider"])
    assert np.abs(session.run(None, feeds)[0].astype(np.int64) - expected.astype(np.int64)).max() <= 1, name


def test_the_report_counts_each_tensor_as_it_is_written(tmp_path):
    """An empty quantized tensor has no block to type: written as float32, it is counted as F32, not as its format."""
    from collections import Counter

    from onnx_qtypes.interop.gguf import lift_gguf

    source = tmp_path / "shapes.gguf"
    shapes = gguf_files.odd_shapes()
    gguf_files.write_gguf(source, shapes, seed=5)
    result = lift_gguf(source, tmp_path / "typed.onnx")
    want = Counter("F32" if kind in FORMATS and not np.prod(shape) else kind for _, kind, shape in shapes)
    assert any(kind in FORMATS and not np.prod(shape) for _, kind, shape in shapes)  # the case is there
    assert result.formats == want
