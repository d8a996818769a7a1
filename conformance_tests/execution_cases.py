"""The case loader: execution cases as folders under ``cases/execution``.

Each folder holds ``case.json`` (id, kind "execution", operator, spec,
description, tags, model, qdq_model, inputs, outputs, tolerance and an
optional tolerance_reason), the typed ``model.onnx``, its standard-ONNX
lowering ``model.qdq.onnx`` (``qdq_model`` null, with ``qdq_unavailable``
saying why, where standard ONNX cannot express the case) and ``test_data_set_0/input_k.pb`` /
``output_k.pb`` (onnx TensorProto, the ONNX backend-test layout; quantized
tensors hold storage integers). Sub-byte storage (int4 / uint4 / int2 /
uint2) is widened to int8 / uint8 arrays, the form the reference evaluator
and ``onnx-qtypes run`` use.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from onnx_qtypes.proto.errors import QTypesError

CASES_ROOT = Path(__file__).resolve().parent / "cases" / "execution"
DATA_SET = "test_data_set_0"
_SUB_BYTE = {"int4": np.int8, "int2": np.int8, "uint4": np.uint8, "uint2": np.uint8}


class CaseError(QTypesError):
    """A case folder cannot be read or does not follow the execution-case format."""


@dataclasses.dataclass(frozen=True)
class ExecutionCase:
    """One execution case: a model, its feeds and the outputs the definition gives."""

    id: str
    operator: str
    folder: Path
    model_path: Path
    qdq_model_path: Path | None
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    tolerance: dict[str, float]
    tags: dict[str, Any]
    spec: str = ""
    description: str = ""
    tolerance_reason: str = ""
    qdq_unavailable: str = ""  # why there is no model.qdq.onnx (qdq_model_path is None)
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def feeds(self) -> dict[str, np.ndarray]:
        return {name: read_tensor(self.folder / DATA_SET / f"input_{k}.pb") for k, name in enumerate(self.inputs)}

    def expected(self) -> dict[str, np.ndarray]:
        return {name: read_tensor(self.folder / DATA_SET / f"output_{k}.pb") for k, name in enumerate(self.outputs)}

    def matches(self, words: str | Sequence[str] | None) -> bool:
        """True when every word is a substring (case-insensitive) of the id, operator or a tag value."""
        if not words:
            return True
        if isinstance(words, str):
            words = words.split()
        haystack = " ".join([self.id, self.operator, *(str(v) for v in self.tags.values())]).lower()
        return all(w.lower() in haystack for w in words)


def widen(array: np.ndarray) -> np.ndarray:
    """Sub-byte storage (onnx's int4 / uint4 / int2 / uint2 numpy types) as int8 / uint8; anything else as is."""
    array = np.asarray(array)
    wide = _SUB_BYTE.get(array.dtype.name)
    return array.astype(wide) if wide is not None else array


def read_tensor(path: Path) -> np.ndarray:
    try:
        tensor = onnx.TensorProto()
        tensor.ParseFromString(Path(path).read_bytes())
        return widen(numpy_helper.to_array(tensor))
    except FileNotFoundError:
        raise CaseError(f"{path}: missing") from None
    except Exception as exc:  # protobuf DecodeError, bad data type, OSError ...
        raise CaseError(f"{path}: not a readable onnx TensorProto ({type(exc).__name__}: {exc})") from None


def _require(data: dict, key: str, kind: type | tuple[type, ...], where: Path) -> Any:
    if key not in data:
        raise CaseError(f"{where}: missing field {key!r}")
    if not isinstance(data[key], kind):
        raise CaseError(f"{where}: field {key!r} has the wrong type ({type(data[key]).__name__})")
    return data[key]


def read_case_json(folder: Path) -> dict:
    where = folder / "case.json"
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CaseError(f"{where}: missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CaseError(f"{where}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CaseError(f"{where}: expected a JSON object")
    return data


def load_case(folder: str | os.PathLike) -> ExecutionCase:
    """Read one case folder (case.json only; models and tensors are read when a backend needs them)."""
    folder = Path(folder)
    data = read_case_json(folder)
    where = folder / "case.json"
    if data.get("kind") != "execution":
        raise CaseError(f"{where}: kind is {data.get('kind')!r}, expected 'execution'")
    inputs = _require(data, "inputs", list, where)
    outputs = _require(data, "outputs", list, where)
    if not all(isinstance(n, str) for n in [*inputs, *outputs]) or not outputs:
        raise CaseError(f"{where}: 'inputs' and 'outputs' must list graph tensor names (at least one output)")
    tolerance = data.get("tolerance", {})
    if not isinstance(tolerance, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in tolerance.values()):
        raise CaseError(f"{where}: 'tolerance' must map output names to non-negative step counts")
    unknown = sorted(set(tolerance) - set(outputs))
    if unknown:
        raise CaseError(f"{where}: 'tolerance' names {unknown[0]!r}, which is not an output")
    tags = data.get("tags", {})
    if not isinstance(tags, dict):
        raise CaseError(f"{where}: 'tags' must be an object")
    case_id = _require(data, "id", str, where)
    qdq_model = data.get("qdq_model", None)
    if qdq_model is not None and not isinstance(qdq_model, str):
        raise CaseError(f"{where}: field 'qdq_model' must be a file name or null")
    qdq_unavailable = data.get("qdq_unavailable", "")
    if qdq_model is None and not (isinstance(qdq_unavailable, str) and qdq_unavailable):
        raise CaseError(f"{where}: 'qdq_model' is null without a 'qdq_unavailable' reason")
    return ExecutionCase(
        id=case_id,
        operator=_require(data, "operator", str, where),
        folder=folder,
        model_path=folder / _require(data, "model", str, where),
        qdq_model_path=None if qdq_model is None else folder / qdq_model,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        tolerance={name: tolerance.get(name, 0) for name in outputs},
        tags=tags,
        spec=str(data.get("spec", "")),
        description=str(data.get("description", "")),
        tolerance_reason=str(data.get("tolerance_reason", "")),
        qdq_unavailable=str(qdq_unavailable or ""),
        metadata=data,
    )


def iter_cases(root: str | os.PathLike | None = None, filter: str | Sequence[str] | None = None) -> Iterator[ExecutionCase]:
    """Every execution case under ``root`` (default: the package's cases/execution), sorted by id.

    Folders whose case.json says another kind are skipped; a folder without
    case.json, or one that cannot be read, raises CaseError.
    """
    root = Path(root) if root is not None else CASES_ROOT
    if not root.is_dir():
        raise CaseError(f"{root}: no such case folder")
    folders = _case_folders(root)
    cases = []
    for folder in folders:
        data = read_case_json(folder)
        if data.get("kind") != "execution":
            continue
        case = load_case(folder)
        if case.matches(filter):
            cases.append(case)
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise CaseError(f"{case.folder}: case id {case.id!r} appears twice under {root}")
        seen.add(case.id)
    yield from sorted(cases, key=lambda c: c.id)


def _case_folders(root: Path) -> list[Path]:
    if (root / "case.json").is_file():
        return [root]
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise CaseError(f"{root}: cannot list ({exc.strerror or exc})") from None
    out = []
    for child in children:
        if (child / "case.json").exists():
            out.append(child)
        else:
            out.extend(p.parent for p in sorted(child.rglob("case.json")))
    return out


def load_cases(root: str | os.PathLike | None = None, filter: str | Sequence[str] | None = None) -> list[ExecutionCase]:
    return list(iter_cases(root, filter))
