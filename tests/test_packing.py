"""proto.packing: the one home of ONNX's sub-byte layout, against the layout the ONNX spec states and onnx's own
signed 4- and 2-bit tensors."""

import ml_dtypes
import numpy as np
import pytest
from onnx import numpy_helper

from onnx_qtypes.proto.packing import pack, transposed_4bit, unpack


def test_first_element_in_the_lowest_bits():
    # ONNX IR: "the first element is stored in the 4 LSB" (4-bit), 2-bit alike: 1, 2, 3, 0 -> 0b00_11_10_01
    assert pack(np.array([1, 2, 15, 0]), 4).tolist() == [0x21, 0x0F]
    assert pack(np.array([1, 2, 3, 0]), 2).tolist() == [0b00111001]
    assert pack(np.array([[5, 250]]), 8).tolist() == [[5, 250]]


@pytest.mark.parametrize(("bits", "dtype"), [(4, ml_dtypes.int4), (2, ml_dtypes.int2)])
def test_signed_codes_pack_as_onnx_stores_signed_tensors(bits, dtype):
    rng = np.random.default_rng(bits)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    codes = rng.integers(lo, hi + 1, size=(3, 16))
    onnx_bytes = numpy_helper.from_array(codes.astype(dtype)).raw_data  # onnx's own packing of the signed tensor
    assert pack(codes, bits).tobytes() == onnx_bytes


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_unpack_inverts_pack_row_by_row(bits):
    codes = np.random.default_rng(0).integers(0, 1 << bits, size=(4, 3, 8)).astype(np.uint8)
    packed = pack(codes, bits)
    assert packed.shape == (4, 3, 8 * bits // 8)
    assert np.array_equal(unpack(packed, bits), codes)
    assert np.array_equal(unpack(packed[1:2], bits), codes[1:2])  # a row of codes is a row of bytes


@pytest.mark.parametrize("shape", [(2, 1), (4, 3), (6, 16), (64, 40), (130, 24)])  # (130: tiles and a partial one)
def test_transposed_4bit_is_the_packed_transpose(shape):
    rows, columns = shape[0], shape[1] * 2
    codes = np.random.default_rng(rows).integers(0, 16, size=(rows, columns)).astype(np.uint8)
    transposed = transposed_4bit(pack(codes, 4))
    assert transposed.shape == (columns, rows // 2)
    assert np.array_equal(unpack(transposed, 4), codes.T)  # every code where the transpose puts it


def test_transposed_4bit_refuses_an_odd_row_count_instead_of_losing_a_row():
    with pytest.raises(ValueError, match="3 rows"):
        transposed_4bit(np.zeros((3, 2), np.uint8))
