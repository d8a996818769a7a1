"""Generated files are committed with their generator; these tests fail on drift."""

from __future__ import annotations

from builders import ROOT, load_script


def test_proto_bindings_match_the_proto(tmp_path):
    generate = load_script("proto/generate.py")
    for fresh in generate.generate(tmp_path):
        committed = ROOT / "proto" / fresh.name
        assert committed.read_bytes() == fresh.read_bytes(), f"{committed} is stale: run python proto/generate.py"


def test_bundled_examples_match_their_generator(tmp_path):
    make = load_script("examples/make_examples.py")
    make.main(tmp_path)
    for name in [*make.EXAMPLES, *make.DATA]:
        assert (ROOT / "examples" / name).read_bytes() == (tmp_path / name).read_bytes(), (
            f"examples/{name} is stale: run python examples/make_examples.py"
        )


def test_bindings_describe_the_stated_field_numbers():
    from onnx_qtypes.proto import QUANTIZATION_FIELD, STATISTICS_FIELD
    from onnx_qtypes.proto import onnx_qtypes_pb2 as pb

    fields = pb.TensorTypeView.DESCRIPTOR.fields_by_name
    assert fields["elem_type"].number == 1 and fields["shape"].number == 2
    assert fields["quantization"].number == QUANTIZATION_FIELD == 1000
    assert fields["statistics"].number == STATISTICS_FIELD == 1001
    assert "= 1000;" in (ROOT / "proto" / "onnx_qtypes.proto").read_text()
