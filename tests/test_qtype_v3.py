"""Extension version 3 on one type: offsets, codebooks, zero scales, versions, and a version-2 reader's refusal
(proposal/spec/llm_formats.md)."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.unknown_fields import UnknownFieldSet

from onnx_qtypes import QType
from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.versions import unknown_field_problem
from onnx_qtypes.reference_ops.quant import dequantize, quantize

LEVELS = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


def test_offsets_add_to_each_block_and_quantize_inverts_them():
    q = QType("uint4", [0.5, 0.25], axis=1, block_size=2, offset=[1.0, -2.0])
    codes = np.array([[0, 3, 4, 15]], np.uint8)
    assert dequantize(codes, q).tolist() == [[1.0, 2.5, -1.0, 1.75]]
    assert quantize(dequantize(codes, q), q).tolist() == codes.tolist()
    assert q.version == 3 and QType.from_proto(q.to_proto()) == q
    assert q.to_proto().version == 3 and list(q.to_proto().offset) == [1.0, -2.0]


def test_a_codebook_stands_for_its_levels_and_has_no_quantize():
    q = QType("int4", 0.5, codebook=LEVELS)  # indexed from storage_min: code -8 is the first level
    assert dequantize(np.array([-8, 7], np.int8), q).tolist() == [-63.5, 56.5]
    with pytest.raises(QTypeError, match="no quantize"):
        quantize(np.array([1.0]), q)
    assert QType.from_proto(q.to_proto()) == q != QType("int4", 0.5)


@pytest.mark.parametrize("fields, problem", [
    ({"offset": [1.0, 2.0, 3.0]}, "4 scales need 4 offsets"),
    ({"offset": [1.0, float("nan"), 0, 0]}, "offset[1] nan must be finite"),
    ({"codebook": LEVELS[:15]}, "has 16 entries"),
    ({"codebook": LEVELS, "zero_point": [8] * 4}, "zero point 8 with a codebook"),
])
def test_invalid_offsets_and_codebooks_are_refused(fields, problem):
    with pytest.raises(QTypeError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        QType("uint4", [0.5, 0.25, 0.125, 1.0], axis=1, block_size=32, **fields)


def test_all_zero_offsets_are_no_offsets():
    assert QType("uint4", [0.5, 0.25], axis=0, offset=[0.0, -0.0]) == QType("uint4", [0.5, 0.25], axis=0)


def test_zero_scales_are_valid_only_read_from_a_version_3_initializer():
    """validity.md QT101: a GGUF block of zeros has d = 0, read from the type's scale_tensor; a listed scale is never 0."""
    assert QType("int4", [0.0, 0.5], axis=0, version=3, scale_tensor="w_d").scale == (0.0, 0.5)
    for kwargs in ({"version": 3}, {"scale_tensor": "w_d"}, {}):
        with pytest.raises(QTypeError, match="finite and non-zero"):
            QType("int4", [0.0, 0.5], axis=0, **kwargs)


def test_a_version_3_field_under_version_2_is_unknown_to_that_version():
    msg = QType("uint4", [0.5, 0.25], axis=0, offset=[1.0, 2.0]).to_proto()
    msg.version = 2
    assert unknown_field_problem(msg).startswith("quantization.offset: field offset belongs to extension version 3")


def _version_2_class():
    """QuantizedType as a reader of version 2 has it: the message without fields 13-15."""
    proto = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(proto)
    message = next(m for m in proto.message_type if m.name == "QuantizedType")
    kept = [f for f in message.field if f.number < 13]
    del message.field[:]
    message.field.extend(kept)
    pool = descriptor_pool.DescriptorPool()  # its own pool: the same names, another definition
    return message_factory.GetMessageClass(pool.Add(proto).message_types_by_name["QuantizedType"])


def test_a_version_2_reader_refuses_a_version_3_type_twice():
    """The version-2 message definition reads a version-3 type's offsets and codebook as unknown fields and its
    version as 3: the version-2 reader's rules (an unknown version, an unknown field: QT115) both refuse it."""
    old = _version_2_class()()
    old.ParseFromString(QType("uint4", 0.5, codebook=range(16), offset=0.25).to_proto().SerializeToString())
    assert old.version == 3  # not one of (1, 2)
    assert sorted(f.field_number for f in UnknownFieldSet(old)) == [13, 15]


def test_dequantize_refuses_unvalidated_offsets_and_codebooks_naming_the_tensor():
    """A version-3 type built unvalidated (the checker's view) with an offset count or codebook that does not fit is
    refused by the one dequantize formula, naming the tensor and the field, never read out of step."""
    codes = np.zeros((32, 4), np.uint8)  # blocks of 32 along axis 0: 4 scales
    offsets = QType("uint4", [0.5] * 4, [0] * 4, axis=0, block_size=32, offset=[0.25] * 3, version=3, validate=False)
    with pytest.raises(QTypeError, match=r"w.*offset.*4 scales need 4 offsets, found 3"):
        dequantize(codes, offsets, tensor="w")
    codebook = QType("uint4", 0.5, 0, codebook=[0.0] * 15, version=3, validate=False)
    with pytest.raises(QTypeError, match=r"w.*codebook.*16 entries .*found 15"):
        dequantize(codes, codebook, tensor="w")
