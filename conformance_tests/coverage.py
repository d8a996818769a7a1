"""What the execution cases exercise of the type: every value of every field of QuantizedType, counted.

``case_features`` reads one case's typed model (every declaration, subgraphs and functions included) and its
inputs, and says which (field, value) pairs it holds: storage and expressed types, granularity, schema (of static
and of dynamic types), storage range, scale sign, parameters listed or by reference, the ``version`` field, the
granularity of each weight-reading operator's weight, model-local functions with a typed or an untyped body,
and NaN / infinite inputs. ``matrix`` counts cases per pair over the suite; ``REQUIRED`` lists every value each
field can take (from proto/qtype.py's tables, so a new storage type or schema shows up as uncovered), and
``missing`` the ones no case holds. ``case_tags`` derives a case's tags (case.schema.json) from the same reading, so
tags and the matrix agree. proposal/status.md shows the matrix (status.py); a test fails on a missing value.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto

from onnx_qtypes.proto import iter_declarations, read_qtype
from onnx_qtypes.proto.model import model_parameters, read_view
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES, STORAGE_TYPES
from onnx_qtypes.proto.versions import KNOWN_VERSIONS

__all__ = ["FIELDS", "REQUIRED", "WEIGHT_READERS", "case_features", "case_tags", "matrix", "missing"]

# operators that read a constant weight, and the input positions it takes
WEIGHT_READERS: dict[str, tuple[int, ...]] = {"Conv": (1,), "ConvTranspose": (1,), "MatMul": (0, 1), "Gemm": (0, 1),
                                              "Gather": (0,)}
GRANULARITIES = ("per-tensor", "per-axis", "blocked")
SCHEMAS = tuple(s.name.lower() for s in Schema)

REQUIRED: dict[str, tuple[str, ...]] = {
    "storage": tuple(STORAGE_TYPES),
    "expressed": tuple(EXPRESSED_TYPES),
    "granularity": (*GRANULARITIES, "dynamic"),
    "schema": SCHEMAS,
    "dynamic schema": SCHEMAS,
    "range": ("full", "narrowed"),
    "scale sign": ("positive", "negative"),
    "scale": ("listed", "by reference"),
    "zero point": ("listed", "by reference"),
    "version": ("absent", *map(str, KNOWN_VERSIONS)),
    "offset": ("listed", "by reference"),  # version 3
    "codebook": ("listed",),  # version 3
    "parameter tensor": ("quantized",),  # version 3: a scale or offset initializer with a type of its own
    **{f"{op} weight": GRANULARITIES for op in WEIGHT_READERS},
    "function": ("typed body", "untyped body"),
    "inputs": ("NaN", "+inf", "-inf"),
}
FIELDS = tuple(REQUIRED)


@dataclasses.dataclass
class _Declared:
    name: str
    qtype: QType
    version: int | None  # the version field as written; None when absent
    scope: str  # "graph", "subgraph" or "function"


def _declared(model: ModelProto) -> list[_Declared]:
    parameters = model_parameters(model)
    out, seen = [], set()
    for decl in iter_declarations(model):
        qtype = read_qtype(decl.value_info, decl.pointer, parameters=parameters)
        if qtype is None or (decl.name, decl.pointer.split("/")[1]) in seen:
            continue
        seen.add((decl.name, decl.pointer.split("/")[1]))
        view = read_view(decl.value_info.type.tensor_type, decl.pointer)
        version = view.quantization.version if view.quantization.HasField("version") else None
        scope = "function" if decl.pointer.startswith("/functions") else (
            "graph" if decl.pointer.count("/") == 3 else "subgraph")
        out.append(_Declared(decl.name, qtype, version, scope))
    return out


def _weights(model: ModelProto, types: Mapping[str, QType]) -> list[tuple[str, str]]:
    """(operator, weight tensor) for every weight-reading node of the main graph with a quantized constant."""
    constants = {t.name for t in model.graph.initializer}
    found = []
    for node in model.graph.node:
        for i in WEIGHT_READERS.get(node.op_type, ()):
            if i < len(node.input) and node.input[i] in constants and node.input[i] in types:
                found.append((node.op_type, node.input[i]))
    return found


def _granularity(qtype: QType) -> str:
    return "dynamic" if qtype.is_dynamic else qtype.granularity


def _function_bodies(model: ModelProto, declared: Sequence[_Declared]) -> set[str]:
    called = {(n.domain, n.op_type) for n in model.graph.node}
    typed = {d.name for d in declared if d.scope == "function"}
    out = set()
    for f in model.functions:
        if (f.domain, f.name) in called:
            out.add("typed body" if any(n in typed for n in (*f.input, *f.output)) else "untyped body")
    return out


def case_features(model: ModelProto, feeds: Mapping[str, np.ndarray] | None = None) -> set[tuple[str, str]]:
    """The (field, value) pairs one case holds (see the module doc)."""
    declared = _declared(model)
    out: set[tuple[str, str]] = set()
    for d in declared:
        q = d.qtype
        st = q.storage_type
        out |= {("storage", q.storage), ("expressed", q.expressed), ("granularity", _granularity(q)),
                ("version", "absent" if d.version is None else str(d.version)),
                ("range", "full" if (q.storage_min, q.storage_max) == (st.min, st.max) else "narrowed")}
        out.add(("dynamic schema" if q.is_dynamic else "schema", q.schema.name.lower()))
        if q.scale:
            out.add(("scale sign", "negative" if q.has_negative_scale else "positive"))
            out.add(("scale", "by reference" if q.scale_tensor else "listed"))
            if any(q.zero_point) or q.zero_point_tensor:
                out.add(("zero point", "by reference" if q.zero_point_tensor else "listed"))
        if q.offset or q.offset_tensor:
            out.add(("offset", "by reference" if q.offset_tensor else "listed"))
        if q.codebook:
            out.add(("codebook", "listed"))
    types = {d.name: d.qtype for d in declared}
    if any(name in types for d in declared for name in (d.qtype.scale_tensor, d.qtype.offset_tensor) if name):
        out.add(("parameter tensor", "quantized"))
    for op, weight in _weights(model, types):
        out.add((f"{op} weight", _granularity(types[weight])))
    out |= {("function", body) for body in _function_bodies(model, declared)}
    for value in (feeds or {}).values():
        array = np.asarray(value)
        if array.dtype.kind == "f" or array.dtype.name in ("bfloat16",) or str(array.dtype).startswith("float8"):
            wide = array.astype(np.float64)
            out |= {(f, v) for f, v, hit in (("inputs", "NaN", np.isnan(wide).any()),
                                             ("inputs", "+inf", np.isposinf(wide).any()),
                                             ("inputs", "-inf", np.isneginf(wide).any())) if hit}
    return out


def _activation(model: ModelProto, types: Mapping[str, QType]) -> str | None:
    """The tensor a case's storage / granularity / schema tags describe: its first dynamic graph input or output
    (what a case with one exercises, whatever static inputs feed it), else its first quantized graph input or
    output, else its first quantized tensor."""
    constants = {t.name for t in model.graph.initializer}
    boundary = [vi.name for vi in (*model.graph.input, *model.graph.output)
                if vi.name in types and vi.name not in constants]
    dynamic = [n for n in boundary if types[n].is_dynamic]
    if boundary:  # every dynamic name is a boundary name
        return (dynamic or boundary)[0]
    return next((n for n in types if n not in constants), next(iter(types), None))


def case_tags(model: ModelProto, operator: str, feeds: Mapping[str, np.ndarray] | None = None,
              features: Iterable[str] = ()) -> dict[str, Any]:
    """The case's tags (case.schema.json): the activation's storage, expressed type, granularity and schema, the
    weight's storage and granularity, and whether any type of the case narrows its range, has a negative scale,
    lists its parameters or names them, and which version field it writes; ``feature`` lists ``features`` with
    what the model itself shows (functions, NaN / infinite inputs)."""
    declared = _declared(model)
    types = {d.name: d.qtype for d in declared}
    main = types.get(_activation(model, types) or "")
    held = case_features(model, feeds)
    tags: dict[str, Any] = {"operator": operator}
    if main is not None:
        tags |= {"storage": main.storage, "expressed": main.expressed, "granularity": _granularity(main),
                 "schema": main.schema.name.lower()}
    weights = _weights(model, types)
    if weights:
        weight = types[weights[0][1]]
        tags |= {"weight_storage": weight.storage, "weight_granularity": _granularity(weight)}
    tags |= {
        "range": "narrowed" if ("range", "narrowed") in held else "full",
        "scale_sign": "negative" if ("scale sign", "negative") in held else "positive",
        "parameters": "by-reference" if {("scale", "by reference"), ("zero point", "by reference")} & held
        else "listed",
        "version": next((str(v) for v in sorted(KNOWN_VERSIONS, reverse=True) if ("version", str(v)) in held),
                        "absent"),
    }
    derived = {f"function-{v.replace(' ', '-')}" for f, v in held if f == "function"}
    derived |= {{"NaN": "nan-inputs", "+inf": "inf-inputs", "-inf": "inf-inputs"}[v] for f, v in held if f == "inputs"}
    tags["feature"] = sorted(set(features) | derived)
    return tags


def matrix(cases: Iterable[tuple[str, set[tuple[str, str]]]]) -> dict[str, Counter]:
    """field -> Counter(value -> number of cases holding it), every REQUIRED value present (0 when none)."""
    counts: dict[str, Counter] = {f: Counter({v: 0 for v in values}) for f, values in REQUIRED.items()}
    for _, held in cases:
        for field, value in held:
            counts.setdefault(field, Counter())[value] += 1
    return counts


def missing(counts: Mapping[str, Counter]) -> list[tuple[str, str]]:
    """(field, value) pairs of REQUIRED that no case holds."""
    return [(f, v) for f, values in REQUIRED.items() for v in values if not counts.get(f, Counter())[v]]


def suite_features(root: Path | None = None) -> list[tuple[str, set[tuple[str, str]]]]:
    """(case id, case_features) for every execution case under ``root`` (default: the bundled suite)."""
    from onnx_qtypes.proto import load  # noqa: PLC0415

    from .execution_cases import load_cases  # noqa: PLC0415

    return [(c.id, case_features(load(str(c.model_path)), c.feeds())) for c in load_cases(root)]
