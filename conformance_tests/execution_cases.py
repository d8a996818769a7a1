"""The case loader: execution and must-reject cases as folders under ``cases/``.

An execution case (``cases/execution/<id>/``) holds ``case.json`` (id, kind "execution", operator, spec,
description, tags, model, qdq_model, inputs, outputs, tolerance, tolerance_reason, optional steps and judge),
the typed ``model.onnx``, its standard-ONNX lowering ``model.qdq.onnx`` (``qdq_model`` null, with
``qdq_unavailable`` saying why, where standard ONNX cannot express the case) and
``test_data_set_0/input_k.pb`` / ``output_k.pb`` (onnx TensorProto, the ONNX backend-test layout; quantized
tensors hold storage integers). Sub-byte integer storage (int4 / uint4 / int2 / uint2) is widened to int8 / uint8
arrays, the form the reference evaluator and ``onnx-qtypes run`` use; float8 and float4 storage are ml_dtypes
arrays (float8_e4m3fn, ..., float4_e2m1fn, one element per byte).

A must-reject case (``cases/reject/<id>/``, kind "reject") holds ``case.json`` (id, rule, reason, spec,
description, tags, model, inputs), the typed ``model.onnx`` a reader MUST refuse and its inputs; it has no
expected outputs. conformance_tests/BACKENDS.md is the contract a backend follows for both kinds.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import numpy as np
import onnx
from onnx import numpy_helper

from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.storage_types import widen  # (judging, repro and compare import it from here)

SUITE_ROOT = Path(__file__).resolve().parent / "cases"
CASES_ROOT = SUITE_ROOT / "execution"
REJECT_ROOT = SUITE_ROOT / "reject"
DATA_SET = "test_data_set_0"
EXECUTION, REJECT = "execution", "reject"
KINDS = (EXECUTION, REJECT)  # the kinds a backend runs (checker cases are for checkers)
FORMS = ("typed", "qdq")  # which model file a backend runs: model.onnx, or the standard-ONNX model.qdq.onnx
JUDGE_MODES = ("value", "positive-finite")  # case.json "judge": output -> how it is judged (default "value")


class CaseError(QTypesError):
    """A case folder cannot be read or does not follow the case format."""


class _CaseData:
    """What every kind of case does alike: its feeds, and whether it matches a selection."""

    id: str
    operator: str
    folder: Path
    inputs: tuple[str, ...]
    tags: dict[str, Any]

    def feeds(self) -> dict[str, np.ndarray]:
        return {name: read_tensor(self.folder / DATA_SET / f"input_{k}.pb") for k, name in enumerate(self.inputs)}

    def matches(self, words: str | Sequence[str] | None) -> bool:
        """True when every word is a substring (case-insensitive) of the id, operator or a tag value (``-k``)."""
        if not words:
            return True
        if isinstance(words, str):
            words = words.split()
        values = [v for t in self.tags.values() for v in (t if isinstance(t, (list, tuple)) else [t])]
        haystack = " ".join([self.id, self.operator, *(str(v) for v in values)]).lower()
        return all(w.lower() in haystack for w in words)

    def has_tags(self, wanted: Mapping[str, str] | None) -> bool:
        """True when every ``key: value`` of ``wanted`` is one of the case's tags exactly (a list tag: one of its
        items; ``operator`` and ``kind`` also match the case's own fields) (``--tags``)."""
        for key, value in (wanted or {}).items():
            have = self.tags.get(key)
            if have is None and key in ("operator", "kind"):
                have = getattr(self, key, None) or None
            items = have if isinstance(have, (list, tuple)) else [have]
            if not any(have is not None and _tag_text(item) == value for item in items):
                return False
        return True


def _tag_text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


@dataclasses.dataclass(frozen=True)
class ExecutionCase(_CaseData):
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
    judge: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)  # output -> mode other than "value"
    kind = EXECUTION

    def model_file(self, form: str) -> Path | None:
        """The model a backend running ``form`` ("typed" or "qdq") runs; None when the suite has no model in that
        form (``qdq_unavailable`` says why)."""
        return self.model_path if form == "typed" else self.qdq_model_path

    def expected(self) -> dict[str, np.ndarray]:
        return {name: read_tensor(self.folder / DATA_SET / f"output_{k}.pb") for k, name in enumerate(self.outputs)}


@dataclasses.dataclass(frozen=True)
class RejectCase(_CaseData):
    """One must-reject case: a typed model a reader MUST refuse (``rule`` names what is wrong, ``reason`` why)."""

    id: str
    folder: Path
    model_path: Path
    inputs: tuple[str, ...]
    tags: dict[str, Any]
    rule: str = ""
    reason: str = ""
    spec: str = ""
    description: str = ""
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    kind = REJECT
    operator = ""  # no operator under test: the summaries list these cases as "(reject)"
    outputs: tuple[str, ...] = ()
    tolerance: dict = dataclasses.field(default_factory=dict, compare=False)
    qdq_model_path = None
    qdq_unavailable = ""

    def model_file(self, form: str) -> Path:
        """model.onnx in every form: an invalid type has no standard-ONNX form, and a runtime without the extension
        meets the typed model itself (its fail-closed markers make such a runtime refuse it)."""
        return self.model_path

    def expected(self) -> dict[str, np.ndarray]:
        return {}


Case = Union[ExecutionCase, RejectCase]


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


def load_case(folder: str | os.PathLike) -> Case:
    """Read one case folder (case.json only; models and tensors are read when a backend needs them)."""
    folder = Path(folder)
    data = read_case_json(folder)
    where = folder / "case.json"
    if data.get("kind") == REJECT:
        return _reject_case(folder, data, where)
    if data.get("kind") != EXECUTION:
        raise CaseError(f"{where}: kind is {data.get('kind')!r}, expected one of {', '.join(map(repr, KINDS))}")
    inputs, outputs = _names(data, where, need_outputs=True)
    tolerance = data.get("tolerance", {})
    if not isinstance(tolerance, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in tolerance.values()):
        raise CaseError(f"{where}: 'tolerance' must map output names to non-negative step counts")
    unknown = sorted(set(tolerance) - set(outputs))
    if unknown:
        raise CaseError(f"{where}: 'tolerance' names {unknown[0]!r}, which is not an output")
    judge = data.get("judge", {})
    if not isinstance(judge, dict) or not all(v in JUDGE_MODES for v in judge.values()):
        raise CaseError(f"{where}: 'judge' must map output names to one of {', '.join(JUDGE_MODES)}")
    unknown = sorted(set(judge) - set(outputs))
    if unknown:
        raise CaseError(f"{where}: 'judge' names {unknown[0]!r}, which is not an output")
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
        tags=_tags(data, where),
        spec=str(data.get("spec", "")),
        description=str(data.get("description", "")),
        tolerance_reason=str(data.get("tolerance_reason", "")),
        qdq_unavailable=str(qdq_unavailable or ""),
        metadata=data,
        judge={name: mode for name, mode in judge.items() if mode != "value"},
    )


def _names(data: dict, where: Path, need_outputs: bool) -> tuple[list, list]:
    inputs = _require(data, "inputs", list, where)
    outputs = _require(data, "outputs", list, where) if need_outputs else []
    if not all(isinstance(n, str) for n in [*inputs, *outputs]) or (need_outputs and not outputs):
        raise CaseError(f"{where}: 'inputs' and 'outputs' must list graph tensor names (at least one output)")
    return inputs, outputs


def _tags(data: dict, where: Path) -> dict:
    tags = data.get("tags", {})
    if not isinstance(tags, dict):
        raise CaseError(f"{where}: 'tags' must be an object")
    return tags


def _reject_case(folder: Path, data: dict, where: Path) -> RejectCase:
    inputs, _ = _names(data, where, need_outputs=False)
    reason = _require(data, "reason", str, where)
    if not reason.strip():
        raise CaseError(f"{where}: 'reason' must say why a reader must refuse the model")
    return RejectCase(
        id=_require(data, "id", str, where), folder=folder, model_path=folder / _require(data, "model", str, where),
        inputs=tuple(inputs), tags=_tags(data, where), rule=str(data.get("rule", "")), reason=reason,
        spec=str(data.get("spec", "")), description=str(data.get("description", "")), metadata=data)


def iter_cases(root: str | os.PathLike | None = None, filter: str | Sequence[str] | None = None, *,
               tags: Mapping[str, str] | None = None, kinds: Iterable[str] = (EXECUTION,)) -> Iterator[Case]:
    """Every case of ``kinds`` under ``root`` (default: the package's cases/execution for execution cases only,
    its cases/ folder otherwise) matching ``filter`` (substrings, ``-k``) and ``tags`` (exact, ``--tags``),
    sorted by id.

    Folders whose case.json says another kind are skipped; a folder without case.json, or one that cannot be
    read, raises CaseError.
    """
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise CaseError(f"case kind {unknown[0]!r}: expected one of {', '.join(KINDS)}")
    if root is None:
        root = CASES_ROOT if kinds == (EXECUTION,) else SUITE_ROOT
    root = Path(root)
    if not root.is_dir():
        raise CaseError(f"{root}: no such case folder")
    cases = []
    for folder in _case_folders(root):
        data = read_case_json(folder)
        if data.get("kind") not in kinds:
            continue
        case = load_case(folder)
        if case.matches(filter) and case.has_tags(tags):
            cases.append(case)
    seen: dict[str, Path] = {}
    for case in cases:
        if case.id in seen:
            raise CaseError(f"{case.folder}: case id {case.id!r} appears twice under {root} (also {seen[case.id]})")
        seen[case.id] = case.folder
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


def load_cases(root: str | os.PathLike | None = None, filter: str | Sequence[str] | None = None, *,
               tags: Mapping[str, str] | None = None) -> list[ExecutionCase]:
    """The execution cases (default: the package's cases/execution); see ``iter_cases``."""
    return list(iter_cases(root, filter, tags=tags))  # type: ignore[arg-type]


def load_suite(root: str | os.PathLike | None = None, filter: str | Sequence[str] | None = None, *,
               tags: Mapping[str, str] | None = None) -> list[Case]:
    """Every case a backend runs, execution and must-reject (default: the package's cases/ folder)."""
    return list(iter_cases(root, filter, tags=tags, kinds=KINDS))


def parse_tags(text: str | Sequence[str] | None) -> dict[str, str]:
    """``storage=uint8,expressed=float32`` (or several such strings) as {key: value}; CaseError when malformed."""
    if not text:
        return {}
    out: dict[str, str] = {}
    for part in ([text] if isinstance(text, str) else list(text)):
        for item in part.split(","):
            key, eq, value = (s.strip() for s in item.partition("="))
            if not item.strip():
                continue
            if not eq or not key or not value:
                raise CaseError(f"--tags {part!r}: expected KEY=VALUE pairs separated by commas, got {item.strip()!r}")
            if key in out and out[key] != value:
                raise CaseError(f"--tags: {key} given twice ({out[key]!r} and {value!r}); a case has one value")
            out[key] = value
    return out
