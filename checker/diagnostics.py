"""What the checker reports: Severity, Location, Diagnostic, ValidationError."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class Severity(enum.Enum):
    """How bad a finding is. Errors make ``check`` exit 1; warnings do not."""

    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {Severity.WARNING: 1, Severity.ERROR: 2}[self]

    @classmethod
    def parse(cls, value: Severity | str) -> Severity:
        return value if isinstance(value, Severity) else cls(str(value).lower())


@dataclasses.dataclass(frozen=True)
class Location:
    """Where a finding is: a JSON pointer into the ModelProto plus names.

    The pointer uses onnx.proto field names (``/graph/node/3/input/1``); the
    extension's fields continue it below a declaration
    (``/graph/value_info/2/type/tensor_type/quantization/scale/0``).
    """

    pointer: str
    node: str | None = None
    tensor: str | None = None
    op_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pointer": self.pointer, "node": self.node, "tensor": self.tensor}

    def describe(self) -> str:
        """'node 'conv' (Conv), tensor 'w'' — the human part of a location."""
        parts = []
        if self.node is not None:
            parts.append(f"node {self.node!r}" + (f" ({self.op_type})" if self.op_type else ""))
        elif self.op_type:
            parts.append(f"{self.op_type} node")
        if self.tensor is not None:
            parts.append(f"tensor {self.tensor!r}")
        return ", ".join(parts)


@dataclasses.dataclass(frozen=True)
class Finding:
    """What a rule yields: a message at a location (the engine adds the rule's identity)."""

    location: Location
    message: str
    related: tuple[Location, ...] = ()


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One finding of one rule, as every report format carries it."""

    rule: str  # "QT101"
    name: str  # "scale-not-positive"
    severity: Severity
    message: str
    location: Location
    help: str  # "proposal/spec/validity.md#qt101"
    related: tuple[Location, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "location": self.location.to_dict(),
            "help": self.help,
        }
        if self.related:
            out["related"] = [r.to_dict() for r in self.related]
        return out

    def __str__(self) -> str:
        where = self.location.describe()
        return f"{self.location.pointer}: {self.rule} {self.name} [{self.severity.value}] " + (
            f"({where}) " if where else ""
        ) + self.message


class ValidationError(Exception):
    """Raised by ``check_model`` when a model breaks at least one error rule.

    ``diagnostics`` holds every error (not only the first); warnings are in
    ``warnings``.
    """

    def __init__(self, diagnostics: list[Diagnostic], warnings: list[Diagnostic] | None = None) -> None:
        self.diagnostics = list(diagnostics)
        self.warnings = list(warnings or [])
        shown = "\n".join(f"  {d}" for d in self.diagnostics[:20])
        more = f"\n  ... and {len(self.diagnostics) - 20} more" if len(self.diagnostics) > 20 else ""
        super().__init__(f"model breaks {len(self.diagnostics)} onnx-qtypes rule(s):\n{shown}{more}")
