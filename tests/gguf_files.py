"""GGUF files for the tests, the conformance generator and the benchmark, written with gguf's own GGUFWriter.

Blocks are random but valid: where gguf implements the format's quantizer (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4)
the blocks quantize random normal weights with it; otherwise (the K-quants, IQ4_NL) they are random bytes whose
float16 fields are finite values of varied magnitude, zeros included (an all-zero block has d = 0), which every
bit pattern of the code and sub-block fields decodes.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterable

import numpy as np

from onnx_qtypes.interop.gguf_formats import FORMATS, Format

QUANTIZED_BY_GGUF = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "MXFP4")


def random_blocks(fmt: Format, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` valid blocks of ``fmt`` as (count, bytes per block) uint8."""
    import gguf  # noqa: PLC0415

    kind = gguf.GGMLQuantizationType[fmt.name]
    if fmt.name in QUANTIZED_BY_GGUF:
        weights = rng.normal(0, 1, (count, fmt.block)).astype(np.float32) * np.float32(2.0 ** rng.integers(-6, 3))
        weights[:1] = 0  # an all-zero block
        return gguf.quants.quantize(weights, kind).reshape(count, fmt.block_bytes)
    blocks = rng.integers(0, 256, (count, fmt.block_bytes), dtype=np.uint8)
    for at in fmt.halves:
        values = (rng.normal(0, 1, count) * 2.0 ** rng.integers(-14, -4, count)).astype(np.float16)
        values[:1] = 0  # d = 0 (dmin = 0): a block of zeros (of offsets only)
        blocks[:, at:at + 2] = values.view(np.uint8).reshape(count, 2)
    return blocks


def tensor_bytes(fmt: Format, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A tensor of ``shape`` (numpy order, blocks along the last axis) as gguf's byte array (..., row bytes)."""
    blocks = random_blocks(fmt, int(np.prod(shape)) // fmt.block, rng)
    return blocks.reshape(*shape[:-1], shape[-1] // fmt.block * fmt.block_bytes)


def write_gguf(path: str | pathlib.Path, tensors: Iterable[tuple[str, str, tuple[int, ...]]], seed: int = 0,
               metadata: dict | None = None) -> dict[str, np.ndarray]:
    """Write a GGUF file of ``tensors`` (name, GGML type name, numpy shape); returns each tensor's stored array
    (bytes for quantized types)."""
    import gguf  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "onnx-qtypes test model")
    writer.add_uint32("llama.block_count", 1)
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "hello"])
    for key, value in (metadata or {}).items():
        writer.add_key_value(key, value, gguf.GGUFValueType.get_type(value))
    stored = {}
    for name, kind, shape in tensors:
        if kind in FORMATS:
            data = tensor_bytes(FORMATS[kind], shape, rng)
            writer.add_tensor(name, data, raw_dtype=gguf.GGMLQuantizationType[kind])  # shape: of the bytes
        elif kind == "BF16":  # bfloat16 bytes, as gguf's converter writes them
            data = gguf.quants.quantize(rng.normal(0, 1, shape).astype(np.float32), gguf.GGMLQuantizationType.BF16)
            writer.add_tensor(name, data, raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            dtype = {"F32": np.float32, "F16": np.float16, "I8": np.int8, "I32": np.int32}[kind]
            data = (rng.normal(0, 1, shape) * (1 if kind.startswith("F") else 50)).astype(dtype)
            writer.add_tensor(name, data)
        stored[name] = data
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return stored


def gguf_values(path: str | pathlib.Path) -> dict[str, np.ndarray]:
    """Every tensor of a GGUF file as gguf's own dequantizer gives it (float32), by name."""
    import gguf  # noqa: PLC0415

    reader = gguf.GGUFReader(str(path))
    out = {}
    for t in reader.tensors:
        if t.tensor_type.name in ("I8", "I16", "I32", "I64"):  # integers: gguf has no dequantizer, nor needs one
            out[t.name] = np.array(t.data)
        elif int(t.n_elements) == 0:  # gguf's dequantizer fails on no block at all; its value is no values
            out[t.name] = np.zeros(tuple(reversed(t.shape.tolist())), np.float32)
        else:
            out[t.name] = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
    return out


def every_format(rows: int = 3, k: int = 512) -> list[tuple[str, str, tuple[int, ...]]]:
    """One tensor per lifted format (and an F32 and an F16 one), named as llama.cpp names weights."""
    out = [(f"blk.{i}.{fmt.lower()}.weight", fmt, (rows, k)) for i, fmt in enumerate(FORMATS)]
    return [*out, ("output_norm.weight", "F32", (k,)), ("token_embd.weight", "F16", (rows, 64)),
            ("rope_freqs.weight", "BF16", (2, 32))]


def odd_shapes() -> list[tuple[str, str, tuple[int, ...]]]:
    """Tensors of every lifted format in the shapes a real file also holds: 1-D (a norm or bias), one block alone
    (1-D and one row), rows of one block, 3-D (stacked experts), and for the 32-value formats rows that are not a
    multiple of 256; two empty ones (no block at all); with F32, F16, BF16, I8 and I32 tensors beside them."""
    out = []
    for name, fmt in FORMATS.items():
        b = fmt.block
        shapes = {"1d": (2 * b,), "one": (b,), "row": (1, b), "col": (4, b), "3d": (2, 3, 3 * b)}
        if b < 256:
            shapes["k96"] = (5, 3 * b)  # 96 values a row: no multiple of 256
        out += [(f"{name.lower()}.{kind}", name, shape) for kind, shape in shapes.items()]
    return [*out, ("q4_k.empty", "Q4_K", (0, 256)), ("q8_0.empty", "Q8_0", (0, 32)), ("norm.f32", "F32", (7,)), ("emb.f16", "F16", (3, 5)), ("r.bf16", "BF16", (2, 3, 4)),
            ("ids.i32", "I32", (4,)), ("ids.i8", "I8", (2, 2))]
