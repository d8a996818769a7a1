"""A .gguf file that is not one, or is broken, gets one located line and exit 2 from `onnx-qtypes lift`: no
traceback, no internal error, and nothing written (proposal/spec/llm_formats.md#lift). The files are gguf's own
GGUFWriter output, then cut short or with one header field overwritten where the GGUF layout puts it."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import gguf  # in the test extra: an ImportError here is a broken install

from onnx_qtypes.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A two-tensor GGUF file ('a.weight' Q8_0 [4, 64], then 'b.weight' F32 [8, 256]) and where, in its bytes, the
    first tensor's info starts (its dims follow the name)."""
    path = tmp_path_factory.mktemp("gguf") / "good.gguf"
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), "llama")
    q = gguf.quants.quantize(rng.standard_normal((4, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("a.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("b.weight", rng.standard_normal((8, 256)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    data = path.read_bytes()
    dims_at = data.find(b"a.weight") + len(b"a.weight") + 4  # then n_dims (uint32), dims (uint64 each), type, offset
    return data, dims_at


def _patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


BROKEN = {  # name -> (how to break the good file's bytes, what the message says)
    "empty": (lambda d, at: b"", "not a GGUF file: it is empty"),
    "not-gguf": (lambda d, at: b"PK\x03\x04" + d[4:], "not a GGUF file: it starts with b'PK\\x03\\x04'"),
    "magic-only": (lambda d, at: d[:4], "the GGUF header is cut short or corrupt: it reads bytes up to 8 of a 4-byte"),
    "header-cut": (lambda d, at: d[:at], "the GGUF header is cut short or corrupt"),
    "data-cut": (lambda d, at: d[:-100], "tensor 'b.weight': its data (bytes "),
    "huge-tensor-count": (lambda d, at: _patched(d, 8, "<Q", 1 << 50), "the GGUF header is cut short or corrupt"),
    "offset-past-end": (lambda d, at: _patched(d, at + 8 * 2 + 4, "<Q", 1 << 40),
                        "tensor 'a.weight': its data (bytes 1099511"),
    "huge-dims": (lambda d, at: _patched(d, at, "<Q", 1 << 40), "tensor 'a.weight': its data (bytes "),
    "row-not-whole-blocks": (lambda d, at: _patched(d, at, "<Q", 48),
                             "tensor 'a.weight': its rows hold 48 values, not a multiple of Q8_0's block of 32"),
    "unknown-ggml-type": (lambda d, at: _patched(d, at + 8 * 2, "<I", 99),
                          "tensor 'a.weight' has GGML type id 99, which the gguf package does not know"),
    "unknown-version": (lambda d, at: _patched(d, 4, "<I", 99), "version 99"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_gguf_file_is_one_located_error_and_nothing_is_written(name, good, tmp_path, capsys):
    data, dims_at = good
    breaks, says = BROKEN[name]
    source = tmp_path / "model.gguf"
    source.write_bytes(breaks(data, dims_at))
    assert main(["lift", str(source), str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"onnx-qtypes: error: {source}: ") and says in err, err
    assert len(err.splitlines()) == 1 and "internal error" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["model.gguf"]  # no OUT, no OUT.data, no temporary file


def test_the_good_file_lifts(good, tmp_path):
    """The near miss of every case above: the same bytes unbroken."""
    source = tmp_path / "model.gguf"
    source.write_bytes(good[0])
    assert main(["lift", str(source), str(tmp_path / "out.onnx")]) == 0
    assert (tmp_path / "out.onnx").stat().st_size > 0
