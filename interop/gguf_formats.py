"""The GGUF block formats a quantized type expresses, one table row each: how a block's bytes unpack into planes
(codes, scales, offsets) and which type reads the planes back (proposal/spec/llm_formats.md#mapping).

A GGUF tensor stores self-contained blocks, the float16 ``d`` (and ``dmin`` / ``m``), the 6-bit sub-block codes
and the packed codes interleaved. A typed model keeps each kind in its own tensor (a plane), because ONNX external
data gives a tensor one contiguous byte range: the codes are one tensor of the storage type, a K-quant's
sub-block scales another (itself quantized against its float16 super-block scale ``d``), and so on. Unpacking is
exact: every value the planes stand for is the value the block stands for.

``FORMATS`` maps the GGUF type name to its ``Format``; ``Format.unpack(blocks)`` takes a ``(n, bytes per block)``
uint8 array and returns ``Planes`` laid out per block. What the planes mean is the type's one formula,
``reference_ops/quant.py``'s dequantize on the lifted type (tests hold it to gguf's own dequantizer).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

QK_K = 256  # values of a K-quant super-block
# IQ4_NL's 16 non-linear levels (llama.cpp's kvalues_iq4nl), the codebook of its type
IQ4_NL_LEVELS = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


@dataclasses.dataclass(frozen=True)
class Level:
    """A quantized parameter tensor: codes of ``storage`` in [lo, hi], ``per`` of them sharing one float16
    super-block scale (``negate``: the scale is minus the stored float16, a K-quant's ``-dmin``)."""

    storage: str
    lo: int
    hi: int
    per: int
    negate: bool = False


@dataclasses.dataclass
class Planes:
    """One tensor's blocks unpacked, per GGUF block (n blocks): ``codes`` (n, values per block) integers (float4
    bit patterns for MXFP4); ``scale`` (n, sub-blocks): float16 values, E8M0 bytes or the sub-block codes of a
    ``Level``; ``scale_d`` (n, super-blocks) float16 (``Level`` only); ``offset`` / ``offset_d`` likewise."""

    codes: np.ndarray
    scale: np.ndarray
    scale_d: np.ndarray | None = None
    offset: np.ndarray | None = None
    offset_d: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class Format:
    """One GGUF block format as a quantized type: codes in ``storage`` [lo, hi], ``sub_block`` values per scale,
    scales plain (``"float16"`` values, ``"e8m0"`` bytes) or a ``Level``, offsets none, plain float16 or a
    ``Level``, an optional codebook."""

    name: str
    block: int  # values per GGUF block
    block_bytes: int
    storage: str
    lo: int
    hi: int
    sub_block: int
    scale: str | Level
    offset: str | Level | None
    unpack: Callable[[np.ndarray], Planes]
    halves: tuple[int, ...] = ()  # byte offsets of the block's float16 fields (d, dmin / m)
    codebook: tuple[float, ...] = ()
    note: str = ""


# --- unpacking: bytes of n blocks (n, block_bytes) -> planes ---------------------------------------------------


def _f16(blocks: np.ndarray, at: int) -> np.ndarray:
    """The float16 at byte ``at`` of every block, as (n, 1)."""
    return np.ascontiguousarray(blocks[:, at:at + 2]).view(np.float16)


def _nibbles_split(qs: np.ndarray) -> np.ndarray:
    """32 codes from 16 bytes: the low nibbles are values 0-15, the high nibbles 16-31 (Q4_0, Q4_1, IQ4_NL, MXFP4)."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1)


def _high_bits(qh: np.ndarray, count: int) -> np.ndarray:
    """Bit j of the little-endian bytes ``qh`` for j < count: (n, count) of 0 / 1."""
    return np.unpackbits(qh, axis=1, bitorder="little")[:, :count]


def _q4_0(blocks: np.ndarray) -> Planes:
    return Planes(_nibbles_split(blocks[:, 2:18]).astype(np.int8) - 8, _f16(blocks, 0))


def _q4_1(blocks: np.ndarray) -> Planes:
    return Planes(_nibbles_split(blocks[:, 4:20]), _f16(blocks, 0), offset=_f16(blocks, 2))


def _five_bit(qh: np.ndarray, qs: np.ndarray) -> np.ndarray:
    return _nibbles_split(qs) | (_high_bits(qh, 32) << 4)


def _q5_0(blocks: np.ndarray) -> Planes:
    return Planes(_five_bit(blocks[:, 2:6], blocks[:, 6:22]).astype(np.int8) - 16, _f16(blocks, 0))


def _q5_1(blocks: np.ndarray) -> Planes:
    return Planes(_five_bit(blocks[:, 4:8], blocks[:, 8:24]), _f16(blocks, 0), offset=_f16(blocks, 2))


def _q8_0(blocks: np.ndarray) -> Planes:
    return Planes(np.ascontiguousarray(blocks[:, 2:34]).view(np.int8), _f16(blocks, 0))


def _crumbs(qs: np.ndarray, chunk: int) -> np.ndarray:
    """2-bit codes: each run of ``chunk`` bytes holds 4 * chunk values, shift 2s giving values s*chunk .. (Q2_K, Q3_K)."""
    n = len(qs)
    runs = qs.reshape(n, -1, 1, chunk) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    return (runs & 3).reshape(n, -1)


def _nibble_runs(qs: np.ndarray, chunk: int) -> np.ndarray:
    """4-bit codes: each run of ``chunk`` bytes holds 2 * chunk values, low nibbles first (Q4_K, Q5_K, Q6_K)."""
    n = len(qs)
    runs = qs.reshape(n, -1, 1, chunk) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)
    return (runs & 0x0F).reshape(n, -1)


def _q2_k(blocks: np.ndarray) -> Planes:
    scales = blocks[:, 0:16]
    return Planes(_crumbs(blocks[:, 16:80], 32), scales & 0x0F, _f16(blocks, 80), scales >> 4, _f16(blocks, 82))


def _q3_k(blocks: np.ndarray) -> Planes:
    n = len(blocks)
    hmask, qs, packed = blocks[:, 0:32], blocks[:, 32:96], blocks[:, 96:108]
    low = (packed[:, 0:8].reshape(n, 1, 8) >> np.array([0, 4], np.uint8).reshape(1, 2, 1)).reshape(n, 16) & 0x0F
    high = (packed[:, 8:12].reshape(n, 1, 4) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 4, 1)).reshape(n, 16) & 3
    scales = (low | (high << 4)).astype(np.int8) - 32  # 6-bit codes with an offset of 32: signed [-32, 31]
    bit = (hmask.reshape(n, 1, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 1, 8, 1)).reshape(n, QK_K) & 1
    codes = _crumbs(qs, 32).astype(np.int8) - 4 * (1 - bit.astype(np.int8))  # the high bit set means no -4
    return Planes(codes, scales, _f16(blocks, 108))


def _six_bit_pairs(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eight 6-bit scale and min codes a Q4_K / Q5_K super-block packs in 12 bytes."""
    d, m, both = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    scales = np.concatenate([d & 0x3F, (both & 0x0F) | ((d >> 2) & 0x30)], axis=1)
    mins = np.concatenate([m & 0x3F, (both >> 4) | ((m >> 2) & 0x30)], axis=1)
    return scales, mins


def _q4_k(blocks: np.ndarray) -> Planes:
    scales, mins = _six_bit_pairs(blocks[:, 4:16])
    return Planes(_nibble_runs(blocks[:, 16:144], 32), scales, _f16(blocks, 0), mins, _f16(blocks, 2))


def _q5_k(blocks: np.ndarray) -> Planes:
    n = len(blocks)
    scales, mins = _six_bit_pairs(blocks[:, 4:16])
    bit = (blocks[:, 16:48].reshape(n, 1, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 1, 8, 1)).reshape(n, QK_K)
    codes = _nibble_runs(blocks[:, 48:176], 32) | ((bit & 1) << 4)
    return Planes(codes, scales, _f16(blocks, 0), mins, _f16(blocks, 2))


def _q6_k(blocks: np.ndarray) -> Planes:
    low = _nibble_runs(blocks[:, 0:128], 64)
    high = _crumbs(blocks[:, 128:192], 32)
    codes = (low | (high << 4)).astype(np.int8) - 32
    return Planes(codes, np.ascontiguousarray(blocks[:, 192:208]).view(np.int8), _f16(blocks, 208))


def _iq4_nl(blocks: np.ndarray) -> Planes:
    return Planes(_nibbles_split(blocks[:, 2:18]), _f16(blocks, 0))


def _iq4_xs(blocks: np.ndarray) -> Planes:
    n = len(blocks)
    high = (np.ascontiguousarray(blocks[:, 2:4]).view(np.uint16) >> (2 * np.arange(8, dtype=np.uint16))) & 3
    low = (blocks[:, 4:8].reshape(n, 4, 1) >> np.array([0, 4], np.uint8).reshape(1, 1, 2)).reshape(n, 8) & 0x0F
    scales = (low | (high.astype(np.uint8) << 4)).astype(np.int8) - 32  # 6-bit codes - 32: signed [-32, 31]
    qs = blocks[:, 8:136].reshape(n, 8, 16)
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(n, QK_K)  # per 32: low nibbles, then high
    return Planes(codes, scales, _f16(blocks, 0))


def _mxfp4(blocks: np.ndarray) -> Planes:
    return Planes(_nibbles_split(blocks[:, 1:17]), blocks[:, 0:1].copy())  # nibble = FLOAT4E2M1 bit pattern


SIX_BIT = Level("uint8", 0, 63, 8)
FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("Q4_0", 32, 18, "int4", -8, 7, 32, "float16", None, _q4_0, (0,),
           note="codes stored as q - 8 (int4) so that no zero point is stored"),
    Format("Q4_1", 32, 20, "uint4", 0, 15, 32, "float16", "float16", _q4_1, (0, 2)),
    Format("Q5_0", 32, 22, "int8", -16, 15, 32, "float16", None, _q5_0, (0,), note="5-bit codes - 16 in int8 [-16, 15]"),
    Format("Q5_1", 32, 24, "uint8", 0, 31, 32, "float16", "float16", _q5_1, (0, 2), note="5-bit codes in uint8 [0, 31]"),
    Format("Q8_0", 32, 34, "int8", -128, 127, 32, "float16", None, _q8_0, (0,)),
    Format("Q2_K", QK_K, 84, "uint2", 0, 3, 16, Level("uint4", 0, 15, 16), Level("uint4", 0, 15, 16, negate=True),
           _q2_k, (80, 82)),
    Format("Q3_K", QK_K, 110, "int4", -4, 3, 16, Level("int8", -32, 31, 16), None, _q3_k, (108,),
           note="3-bit codes in int4 [-4, 3]; 6-bit scale codes - 32 in int8 [-32, 31]"),
    Format("Q4_K", QK_K, 144, "uint4", 0, 15, 32, SIX_BIT, dataclasses.replace(SIX_BIT, negate=True), _q4_k, (0, 2)),
    Format("Q5_K", QK_K, 176, "uint8", 0, 31, 32, SIX_BIT, dataclasses.replace(SIX_BIT, negate=True), _q5_k, (0, 2),
           note="5-bit codes in uint8 [0, 31]"),
    Format("Q6_K", QK_K, 210, "int8", -32, 31, 16, Level("int8", -128, 127, 16), None, _q6_k, (208,),
           note="6-bit codes - 32 in int8 [-32, 31]"),
    Format("IQ4_NL", 32, 18, "uint4", 0, 15, 32, "float16", None, _iq4_nl, (0,), codebook=tuple(map(float, IQ4_NL_LEVELS))),
    Format("IQ4_XS", QK_K, 136, "uint4", 0, 15, 32, Level("int8", -32, 31, 8), None, _iq4_xs, (0,),
           codebook=tuple(map(float, IQ4_NL_LEVELS)), note="IQ4_NL's codebook; 6-bit scale codes - 32 in int8"),
    Format("MXFP4", 32, 17, "float4e2m1", -6, 6, 32, "e8m0", None, _mxfp4,
           note="FLOAT4E2M1 codes, E8M0 block scales kept in one byte"),
)}
