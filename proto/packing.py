"""Codes of fewer than 8 bits in ONNX's packed layout: element 0 in the lowest bits of byte 0, then the next.

The one home for going between codes and packed bytes (MatMulNBits weights, GGUF planes); onnx.numpy_helper does
the bit work through its own 4- and 2-bit tensor types. Packing works along the last axis: each row of codes must
fill whole bytes (a multiple of 8 / ``bits`` codes), so that a row of codes is a row of bytes. Transposing packed
4-bit codes (``transposed_4bit``) is done here on the bytes: onnx has no such step.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper

from onnx_qtypes.proto.storage_types import STORAGE_TYPES


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """codes [..., n] -> uint8 [..., n * bits / 8]. A code counts modulo 2**bits (a signed code by its
    two's-complement bits, as an int4 tensor stores it); 8-bit codes are their bytes."""
    codes = np.asarray(codes)
    unsigned = (codes.astype(np.int16) & ((1 << bits) - 1)).astype(STORAGE_TYPES[f"uint{bits}"].np_dtype)
    stored = numpy_helper.from_array(np.ascontiguousarray(unsigned))
    return np.frombuffer(stored.raw_data, np.uint8).reshape(*codes.shape[:-1], codes.shape[-1] * bits // 8)


def unpack(packed: np.ndarray, bits: int) -> np.ndarray:
    """uint8 [..., n] -> unsigned codes [..., n * 8 / bits] (uint8), the inverse of ``pack``."""
    count = packed.size * 8 // bits
    raw = TensorProto(data_type=STORAGE_TYPES[f"uint{bits}"].data_type, dims=[count],
                      raw_data=np.ascontiguousarray(packed, np.uint8).tobytes())
    return numpy_helper.to_array(raw).astype(np.uint8).reshape(*packed.shape[:-1], packed.shape[-1] * 8 // bits)


def transposed_4bit(packed: np.ndarray) -> np.ndarray:
    """uint8 [r, c / 2] holding 4-bit codes [r, c] (r even) -> uint8 [c, r / 2] holding their transpose [c, r]:
    ``pack(unpack(packed, 4).T, 4)`` without a byte per code. A MatMulNBits weight is packed along K, the typed
    weight along N; a 7B model has billions of codes, and going through one byte per code costs five times as much."""
    rows = packed.shape[0]
    if rows % 2:  # (the last row would pair with nothing and be lost)
        raise ValueError(f"transposed_4bit: {rows} rows; two rows make one byte of the transpose, so an even count")
    even, odd = packed[0::2], packed[1::2]  # codes of rows 2j and 2j + 1: one byte of the transpose per column
    out = np.empty((rows // 2, packed.shape[1], 2), np.uint8)
    out[..., 0] = (even & 0x0F) | (odd << 4)  # columns 2m: the low halves
    out[..., 1] = (even >> 4) | (odd & 0xF0)  # columns 2m + 1: the high halves
    out = out.reshape(rows // 2, -1)
    transposed = np.empty(out.shape[::-1], np.uint8)
    for j in range(0, out.shape[0], _TILE):  # a few rows at a time: numpy's whole-array transpose runs out of cache
        transposed[:, j:j + _TILE] = out[j:j + _TILE].T
    return transposed


_TILE = 32  # rows of bytes transposed at a time (benchmarks/README.md, the 7B model: this round's rows)


__all__ = ["pack", "transposed_4bit", "unpack"]
