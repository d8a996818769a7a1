"""Reading a backend's intermediate tensors through the conformance ``Backend`` protocol, truthfully.

A backend only returns graph outputs, so the watched tensors are added as outputs of the model it runs. That
can change what it computes: onnxruntime, for one, fuses a QuantizeLinear → DequantizeLinear pair or a
DequantizeLinear → op → QuantizeLinear group only when the tensors inside are not graph outputs, and a fused
kernel rounds differently. So a value read from an exposed model is only taken as what the backend computes on
the model as given when exposing left the backend's own graph outputs bit for bit unchanged:

1. run the model as given (its own outputs only): the baseline;
2. run it with every watched tensor exposed; when its graph outputs equal the baseline's, every value stands;
3. otherwise run it once per watched tensor, that tensor alone exposed: a value stands when that run's graph
   outputs equal the baseline's; a tensor whose exposure changes them is reported as not observable (the
   backend computes the outputs another way when it must keep that tensor).

The backend sees an ``ExecutionCase`` built for the model (``model_path``: the typed model, ``qdq_model_path``:
the standard-ONNX one, ``outputs``: the names to return), written to a temporary folder: the loader's own
dataclass, so ``reference``, ``onnxruntime``, ``openvino`` and ``MODULE:CLASS`` backends run it unchanged.
"""

from __future__ import annotations

import dataclasses
import pathlib
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from onnx_qtypes.conformance import ExecutionCase
from onnx_qtypes.conformance.execution_cases import DATA_SET, widen
from onnx_qtypes.proto.errors import QTypesError

from .sides import Sides, all_names, exposed


class BackendFailed(QTypesError):
    """The backend declined or failed to run the model."""


@dataclasses.dataclass
class Observation:
    values: dict[str, np.ndarray]  # watched tensor (and a dynamic one's parameters) -> the backend's value
    unobservable: dict[str, str]  # watched tensor -> why no value stands for it
    baseline: dict[str, np.ndarray]  # the backend's graph outputs on the model as given
    runs: int
    how: str  # one sentence on how the values were read


def observe(backend: Any, sides: Sides, feeds: Mapping[str, np.ndarray], label: str) -> Observation:
    """The backend's value of every watched tensor, read as the module doc says."""
    constants = sides.backend_constants
    groups = {w.name: w.exposes(constants) for w in sides.watched}
    names = list(dict.fromkeys(n for group in groups.values() for n in group))
    with tempfile.TemporaryDirectory(prefix="onnx-qtypes-compare-") as tmp:
        runner = _Runner(backend, sides, feeds, pathlib.Path(tmp), label)
        baseline = runner.run([])
        missing = [n for n in sides.outputs if n not in baseline]
        if missing:
            raise BackendFailed(f"backend {label} returned no value for graph output {missing[0]!r} of the model as "
                                "given, so nothing it returns can be checked against it")
        together = runner.run(names)
        if _same(baseline, together, sides.outputs):
            return Observation({n: together[n] for n in names if n in together},
                               {n: "the backend returned no value for it" for n in names if n not in together},
                               baseline, runner.count,
                               f"every watched tensor exposed in one run; {label}'s graph outputs stayed bit for "
                               "bit those of the model as given, so exposing them changed nothing it computes")
        values, unobservable = {}, {}
        for name, group in groups.items():
            alone = runner.run(group)
            if any(n not in alone for n in group):
                unobservable[name] = "the backend returned no value for it"
            elif _same(baseline, alone, sides.outputs):
                values.update((n, alone[n]) for n in group)
            else:
                unobservable[name] = (f"exposing it changes {label}'s graph outputs: it computes the model another "
                                      "way when it must keep this tensor")
        return Observation(values, unobservable, baseline, runner.count,
                           f"exposing every watched tensor at once changed {label}'s graph outputs, so each was "
                           "read in a run of its own and kept only where the graph outputs stayed bit for bit those "
                           "of the model as given")


class _Runner:
    def __init__(self, backend: Any, sides: Sides, feeds: Mapping[str, np.ndarray], folder: pathlib.Path,
                 label: str) -> None:
        self.backend, self.sides, self.feeds, self.folder, self.label = backend, sides, feeds, folder, label
        self.count = 0
        self.typed_names = all_names(sides.typed)
        self.standard_names = all_names(sides.standard) if sides.standard is not None else set()

    def run(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        case = self._case(names)
        supported = self.backend.supports(case)
        if supported is not True:
            raise BackendFailed(f"backend {self.label} cannot run this model: {supported or 'it declines it'}")
        try:
            prepared = self.backend.prepare(case)
            out = self.backend.run(prepared, dict(self.feeds))
        except QTypesError as exc:
            raise BackendFailed(f"backend {self.label} failed on this model: {exc}") from None
        except Exception as exc:  # the runtime's own error: the message is what the user needs
            raise BackendFailed(f"backend {self.label} failed on this model ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:400]})") from None
        self.count += 1
        if not isinstance(out, Mapping):
            raise BackendFailed(f"backend {self.label}: run() returned {type(out).__name__}, expected a mapping of "
                                "output names to arrays")
        return {name: widen(np.asarray(value)) for name, value in out.items()}

    def _case(self, names: Sequence[str]) -> ExecutionCase:
        folder = self.folder / f"run-{self.count}"
        folder.mkdir()
        outputs = list(self.sides.outputs) + [n for n in names if n not in self.sides.outputs]
        typed_path = folder / "model.onnx"
        # each model exposes the names it has (a dynamic tensor's parameters are named differently in each)
        _save(exposed(self.sides.typed, [n for n in names if n in self.typed_names]), typed_path)
        standard_path = None
        if self.sides.standard is not None:
            standard_path = folder / "model.qdq.onnx"
            _save(exposed(self.sides.standard, [n for n in names if n in self.standard_names]), standard_path)
        data = folder / DATA_SET  # the case layout, for a backend that reads its inputs from the folder
        data.mkdir()
        for k, value in enumerate(self.feeds.values()):
            (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(np.asarray(value)).SerializeToString())
        return ExecutionCase(id="compare", operator="model", folder=folder, model_path=typed_path,
                             qdq_model_path=standard_path, inputs=tuple(self.feeds), outputs=tuple(outputs),
                             tolerance={n: 0 for n in outputs}, tags={},
                             qdq_unavailable=self.sides.standard_unavailable)


def _save(model: onnx.ModelProto, path: pathlib.Path) -> None:
    """Write ``model``; one past protobuf's 2 GB limit keeps its weights in a file beside it."""
    large = model.ByteSize() > 2**31 - 2**24
    onnx.save(model, path, save_as_external_data=large, location=f"{path.name}.data" if large else None)


def _same(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], names: Sequence[str]) -> bool:
    """Bit for bit equal graph outputs (NaN equal to NaN), every one present on both sides."""
    for name in names:
        if name not in a or name not in b:
            return False
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind == "V":  # ml_dtypes float8 / float4: compare the codes
            x, y = x.view(np.uint8), y.view(np.uint8)
        if x.dtype.kind == "f":
            if not np.array_equal(x, y, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True
