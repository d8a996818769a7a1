"""Hardware profiles: what a target accepts, as a JSON document.

A profile is validated against ``profile.schema.json`` (jsonschema) and then
against the registry: it may raise a rule's severity, never lower it, and
never switch a rule off. Built-in profiles live in ``profiles/*.json``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
import os
import pathlib
from typing import Any

import jsonschema

from onnx_qtypes.checker.diagnostics import Severity
from onnx_qtypes.proto.errors import QTypeError, QTypesError
from onnx_qtypes.proto.files import require_regular_file
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.proto.validity import range_problem, zero_point_problem

_PACKAGE = "onnx_qtypes.checker"


class ProfileError(QTypesError):
    """A profile that cannot be loaded or is not valid (names the JSON path)."""


@dataclasses.dataclass(frozen=True)
class StorageAllowance:
    """One allowed storage type, optionally with bounds on the declared storage range."""

    type: str
    min: int | None = None
    max: int | None = None
    zero_points: tuple[int, ...] | None = None  # in place of the role's, for this storage type


@dataclasses.dataclass(frozen=True)
class RoleConstraints:
    """What the target accepts for one tensor role."""

    storage: tuple[StorageAllowance, ...] | None = None
    schemas: tuple[str, ...] | None = None
    per_tensor: bool = True
    per_axis: bool | str = True  # True, False or "output-channel"
    blocked: bool | tuple[int, ...] = True
    dynamic: bool = True
    zero_points: tuple[int, ...] | None = None
    pow2_scale: bool = False

    def zero_points_of(self, storage: str) -> tuple[int, ...] | None:
        """The zero points the target takes with ``storage``: the storage entry's own list, else the role's."""
        for allowance in self.storage or ():
            if allowance.type == storage and allowance.zero_points is not None:
                return allowance.zero_points
        return self.zero_points

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RoleConstraints:
        storage = None
        if "storage" in doc:
            storage = tuple(
                StorageAllowance(s) if isinstance(s, str) else StorageAllowance(
                    s["type"], s.get("min"), s.get("max"),
                    tuple(s["zero_points"]) if "zero_points" in s else None)
                for s in doc["storage"]
            )
        gran = doc.get("granularity", {})
        blocked = gran.get("blocked", True)
        return cls(
            storage=storage,
            schemas=tuple(doc["schemas"]) if "schemas" in doc else None,
            per_tensor=gran.get("per_tensor", True),
            per_axis=gran.get("per_axis", True),
            blocked=tuple(blocked) if isinstance(blocked, list) else blocked,
            dynamic=gran.get("dynamic", True),
            zero_points=tuple(doc["zero_points"]) if "zero_points" in doc else None,
            pow2_scale=doc.get("pow2_scale", False),
        )


@dataclasses.dataclass(frozen=True)
class FixedOutput:
    storage: str
    scale: float
    zero_point: int


@dataclasses.dataclass(frozen=True)
class Profile:
    """A parsed, validated profile."""

    name: str
    description: str
    sources: tuple[dict[str, str], ...]
    roles: dict[str, RoleConstraints]
    shared_parameters: frozenset[str] = frozenset()
    fixed_output: dict[str, tuple[FixedOutput, ...]] = dataclasses.field(default_factory=dict)
    supported_ops: frozenset[str] | None = None
    accumulator_bits: int = 32
    wide_accumulator_bits: int = 64  # an input or weight stored in more than 8 bits (16-bit activations)
    bias_shift: bool = False  # a bias in the accumulator's units times 2^k is added by a shift (QT403, QT405)
    severity: dict[str, Severity] = dataclasses.field(default_factory=dict)
    origin: str = ""

    def role(self, role: str) -> RoleConstraints | None:
        """The constraints of ``role`` (activation / weight / bias), or None when the profile sets none."""
        return self.roles.get(role)

    def severity_of(self, rule_id: str, default: Severity) -> Severity:
        return self.severity.get(rule_id, default)

    @classmethod
    def from_json(cls, doc: dict[str, Any], origin: str) -> Profile:
        return cls(
            name=doc["name"],
            description=doc["description"],
            sources=tuple(doc["sources"]),
            roles={role: RoleConstraints.from_json(body) for role, body in doc.get("roles", {}).items()},
            shared_parameters=frozenset(doc.get("shared_parameters", ())),
            fixed_output={
                op: tuple(FixedOutput(e["storage"], float(e["scale"]), int(e["zero_point"])) for e in entries)
                for op, entries in doc.get("fixed_output", {}).items()
            },
            supported_ops=frozenset(doc["supported_ops"]) if "supported_ops" in doc else None,
            accumulator_bits=doc.get("accumulator_bits", 32),
            wide_accumulator_bits=doc.get("wide_accumulator_bits", 64),
            bias_shift=doc.get("bias_shift", False),
            severity={k: Severity.parse(v) for k, v in doc.get("severity", {}).items()},
            origin=origin,
        )


@functools.cache
def schema() -> dict[str, Any]:
    """The profile JSON Schema shipped with the package."""
    return json.loads(importlib.resources.files(_PACKAGE).joinpath("profile.schema.json").read_text("utf-8"))


def builtin_names() -> list[str]:
    folder = importlib.resources.files(_PACKAGE).joinpath("profiles")
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


# A valid profile nests objects and arrays about five levels deep (profile.schema.json closes every object);
# anything much deeper is refused before the schema validator, which recurses once per level, walks it.
MAX_DEPTH = 16
_MESSAGE_CHARS = 300  # a schema error quotes the offending value: keep the line readable


def _too_deep(doc: Any) -> str | None:
    """The JSON path of the first value nested deeper than MAX_DEPTH, or None (no recursion: any depth)."""
    stack: list[tuple[Any, str, int]] = [(doc, "$", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict):
            children = [(v, f"{path}.{k}" if isinstance(k, str) and k.isidentifier() else f"{path}[{k!r}]")
                        for k, v in value.items()]
        elif isinstance(value, list):
            children = [(v, f"{path}[{i}]") for i, v in enumerate(value)]
        else:
            continue
        if depth > MAX_DEPTH:
            return path
        stack.extend((v, p, depth + 1) for v, p in reversed(children))
    return None


# JSON Schema counts 16.0 as an integer; a profile's counts, bounds and zero points are read as Python ints
# (a "16.0-bit accumulator" in a message), so a float there is refused by name instead.
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)),
)


def _short(error: jsonschema.ValidationError) -> str:
    """The validator's message with a long quoted value cut down to its ends."""
    message = error.message
    if len(message) <= _MESSAGE_CHARS:
        return message
    quoted = repr(error.instance)
    if len(quoted) > 80:
        message = message.replace(quoted, f"{quoted[:50]} ... {quoted[-20:]} ({len(quoted)} characters)")
    return message if len(message) <= _MESSAGE_CHARS else message[:_MESSAGE_CHARS] + " ..."


def validate(doc: Any, origin: str) -> Profile:
    """Check a profile document; raise ProfileError naming the JSON path that is wrong."""
    if (path := _too_deep(doc)) is not None:
        raise ProfileError(
            f"{origin}: invalid profile at {path}: objects and arrays nested more than {MAX_DEPTH} levels deep; "
            "a profile nests a few levels (see profile.schema.json)"
        )
    validator = _Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        raise ProfileError(f"{origin}: invalid profile at {error.json_path}: {_short(error)}")
    from onnx_qtypes.checker.registry import all_rules

    rules = {r.id: r for r in all_rules()}
    for rule_id, level in doc.get("severity", {}).items():
        path = f"$.severity.{rule_id}"
        if rule_id not in rules:
            raise ProfileError(f"{origin}: invalid profile at {path}: no rule {rule_id} (see `onnx-qtypes rule`)")
        default = rules[rule_id].severity
        if Severity.parse(level).rank < default.rank:
            raise ProfileError(
                f"{origin}: invalid profile at {path}: {rule_id} is an {default.value}; "
                "a profile may raise a severity but never lower it"
            )
    for role, body in doc.get("roles", {}).items():
        _check_role(body, f"$.roles.{role}", origin)
    for op, entries in doc.get("fixed_output", {}).items():
        for i, entry in enumerate(entries):
            _check_fixed_output(entry, f"$.fixed_output.{op}[{i}]", origin)
    return Profile.from_json(doc, origin)


def _check_role(body: dict[str, Any], path: str, origin: str) -> None:
    """Storage bounds inside their storage type, zero points that some allowed storage type holds."""
    allowed = []
    for i, entry in enumerate(body.get("storage", [])):
        st = STORAGE_TYPES[entry if isinstance(entry, str) else entry["type"]]
        allowed.append(st)
        if isinstance(entry, str):
            continue
        lo, hi = entry.get("min", st.min), entry.get("max", st.max)
        for k, zero_point in enumerate(entry.get("zero_points", [])):
            if problem := zero_point_problem(zero_point, lo, hi):  # this storage type could not hold it
                raise ProfileError(f"{origin}: invalid profile at {path}.storage[{i}].zero_points[{k}]: {problem}")
        if problem := range_problem(st, lo, hi):
            # a bound outside the storage type is named; otherwise the pair is out of order
            key = next((k for k, v in (("min", lo), ("max", hi)) if k in entry and not st.min <= v <= st.max), "")
            where, why = (f".{key}", problem) if key else ("", f"min {lo} must be < max {hi}")
            raise ProfileError(f"{origin}: invalid profile at {path}.storage[{i}]{where}: {why}")
    lo = min(st.min for st in allowed or STORAGE_TYPES.values())
    hi = max(st.max for st in allowed or STORAGE_TYPES.values())
    for i, zero_point in enumerate(body.get("zero_points", [])):
        if problem := zero_point_problem(zero_point, lo, hi):  # no allowed storage type could hold it
            raise ProfileError(f"{origin}: invalid profile at {path}.zero_points[{i}]: {problem}")
    blocked = body.get("granularity", {}).get("blocked")
    for i, size in enumerate(blocked if isinstance(blocked, list) else []):
        if size >= 2**63:  # block_size is an int64 attribute in ONNX
            raise ProfileError(f"{origin}: invalid profile at {path}.granularity.blocked[{i}]: "
                               f"block size {size} does not fit in int64")


def _check_fixed_output(entry: dict[str, Any], path: str, origin: str) -> None:
    """A fixed output must be a valid quantized type: checked by constructing one, as a model's type is."""
    try:
        QType(entry["storage"], scale=entry["scale"], zero_point=entry["zero_point"])
    except QTypeError as exc:
        message = str(exc).split(f"QType.{exc.field}: ", 1)[-1]
        raise ProfileError(f"{origin}: invalid profile at {path}.{exc.field}: {message}") from None


def _read_json(text: str, origin: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{origin}: not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except RecursionError:  # the reader recurses once per level
        raise ProfileError(
            f"{origin}: not a profile: objects and arrays nested too deeply to read (a profile nests a few levels, "
            f"at most {MAX_DEPTH})"
        ) from None


@functools.cache
def _builtin(name: str) -> Profile:
    text = importlib.resources.files(_PACKAGE).joinpath("profiles", f"{name}.json").read_text("utf-8")
    return validate(_read_json(text, f"built-in profile {name!r}"), name)


def load_profile(spec: Profile | dict | str | os.PathLike | None = None) -> Profile:
    """A profile by built-in name, path to a JSON file, parsed document, or None (generic)."""
    if spec is None:
        return _builtin("generic")
    if isinstance(spec, Profile):
        return spec
    if isinstance(spec, dict):
        return validate(spec, "<profile>")
    if not isinstance(spec, (str, os.PathLike)):
        raise ProfileError(f"profile: expected a name, a path or a Profile, got {type(spec).__name__}")
    text = os.fspath(spec)
    if isinstance(spec, str) and text in builtin_names():
        return _builtin(text)
    path = pathlib.Path(text)
    if not path.exists():
        raise ProfileError(
            f"profile {text!r}: no such file, and not a built-in profile (built-in: {', '.join(builtin_names())})"
        )
    if path.is_dir():
        raise ProfileError(f"{path}: is a directory, expected a profile .json file")
    require_regular_file(path, "a profile .json file", ProfileError)  # before opening: a FIFO blocks
    try:
        content = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot read profile ({exc})") from None
    return validate(_read_json(content, str(path)), str(path))
