"""proto.external.spill_deferred: a computed tensor's bytes are made when first read, once, whole or not at all."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_qtypes.proto.external import copy_into, is_lazy, spill_deferred, spill_folder, tensor_bytes
from onnx_qtypes.proto.model import load, save

SIZE = 3 << 20  # above the spill threshold


def _chunks(made: list[int], fail_at: int | None = None):
    def chunks():
        made.append(1)
        for k in range(3):
            if k == fail_at:
                raise OSError("disk full")
            yield bytes([k]) * (SIZE // 3)
    return chunks


def test_the_bytes_are_made_when_first_read_and_only_once(tmp_path):
    made: list[int] = []
    with spill_folder(tmp_path) as folder:
        tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[SIZE])
        assert spill_deferred(tensor, _chunks(made), SIZE)
        assert is_lazy(tensor) and not made and not any(folder.iterdir())  # nothing written yet
        data = np.asarray(tensor_bytes(tensor))
        assert made == [1] and data.size == SIZE
        assert data[0] == 0 and data[SIZE // 3] == 1 and data[-1] == 2
        copy = TensorProto()
        copy.CopyFrom(tensor)  # a copy of the tensor reads the same file: not made again
        out = tmp_path / "copied"
        with open(out, "wb") as fh:
            assert copy_into(copy, fh) == SIZE
        assert made == [1] and out.read_bytes() == data.tobytes()


def test_copying_bytes_not_made_yet_streams_them_from_their_maker_and_leaves_them_deferred(tmp_path):
    made: list[int] = []
    with spill_folder(tmp_path / "spill") as folder:
        tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[SIZE])
        spill_deferred(tensor, _chunks(made), SIZE)
        out = tmp_path / "copied"
        with open(out, "wb") as fh:
            assert copy_into(tensor, fh) == SIZE
        assert made == [1] and not any(folder.iterdir())  # written once, where it goes
        assert out.read_bytes() == np.asarray(tensor_bytes(tensor)).tobytes()  # a later reader: made again
        assert made == [1, 1]


def test_save_writes_a_tensor_whose_bytes_were_never_read(tmp_path):
    made: list[int] = []
    with spill_folder(tmp_path / "spill"):
        tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[SIZE])
        spill_deferred(tensor, _chunks(made), SIZE)
        graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                                  [helper.make_tensor_value_info("y", TensorProto.UINT8, [SIZE])], [tensor])
        save(helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)]),
             tmp_path / "m.onnx")
        assert made == [1]
    back = onnx.numpy_helper.to_array(load(tmp_path / "m.onnx").graph.initializer[0])
    assert back.tobytes() == b"".join(bytes([k]) * (SIZE // 3) for k in range(3))


def test_a_failure_while_making_leaves_no_file_and_the_next_read_makes_it_again(tmp_path):
    made: list[int] = []
    with spill_folder(tmp_path) as folder:
        tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[SIZE])
        spill_deferred(tensor, _chunks(made, fail_at=1), SIZE)
        with pytest.raises(OSError, match="disk full"):
            tensor_bytes(tensor)
        assert not any(folder.iterdir())  # no half-made file for a later reader to take as whole
        with pytest.raises(OSError, match="disk full"):
            tensor_bytes(tensor)
        assert made == [1, 1]


def test_without_a_spill_folder_nothing_is_deferred():
    tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[SIZE])
    assert not spill_deferred(tensor, _chunks([]), SIZE)
    assert not is_lazy(tensor)


def test_a_folder_opened_inside_another_reads_the_outer_folders_deferred_tensors(tmp_path):
    """diagnose opens a spill folder of its own: a model lifted in an open folder must still read there."""
    made: list[int] = []
    with spill_folder(tmp_path / "outer"):
        tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[SIZE])
        spill_deferred(tensor, _chunks(made), SIZE)
        with spill_folder(tmp_path / "inner"):
            assert np.asarray(tensor_bytes(tensor))[-1] == 2
        assert made == [1]


_SCRATCH = TensorProto()  # one message deferred again and again: as the lift's temporaries, whose address repeats


def _deferred_copy(name: str, value: int) -> TensorProto:
    """A tensor deferred, as the graph keeps it: a copy of the message the step deferred."""
    _SCRATCH.Clear()
    _SCRATCH.name, _SCRATCH.data_type = name, TensorProto.UINT8
    _SCRATCH.dims.append(SIZE)
    spill_deferred(_SCRATCH, lambda: [bytes([value]) * SIZE], SIZE)
    kept = TensorProto()
    kept.CopyFrom(_SCRATCH)
    return kept


def test_every_deferred_tensor_has_a_file_of_its_own(tmp_path):
    with spill_folder(tmp_path) as folder:
        first = [_deferred_copy(f"a{k}", k) for k in range(4)]
        tensor_bytes(first[1])  # one made: its entry gone
        later = [_deferred_copy(f"b{k}", 10 + k) for k in range(4)]
        tensors = first + later
        assert len({dict((e.key, e.value) for e in t.external_data)["location"] for t in tensors}) == 8
        assert [int(np.asarray(tensor_bytes(t))[0]) for t in tensors] == [0, 1, 2, 3, 10, 11, 12, 13]
        assert len(list(folder.iterdir())) == 8
