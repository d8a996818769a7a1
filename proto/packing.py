"""Codes of fewer than 8 bits in ONNX's packed layout: element 0 in the lowest bits of byte 0, then the next.

The one home for going between codes and packed bytes (MatMulNBits weights, GGUF planes); onnx.numpy_helper does
the bit work through its own 4- and 2-bit tensor types. Packing works along the last axis: each row of codes must
fill whole bytes (a multiple of 8 / ``bits`` codes), so that a row of codes is a row of bytes.
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


__all__ = ["pack", "unpack"]
