"""Run every registered rule over a model: iter_diagnostics, check_model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from onnx import ModelProto

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Diagnostic, Severity, ValidationError
from onnx_qtypes.checker.profile import Profile, load_profile
from onnx_qtypes.checker.registry import all_rules
from onnx_qtypes.proto import load
from onnx_qtypes.proto.errors import QTypesError

ModelLike = str | os.PathLike | bytes | bytearray | memoryview | ModelProto
ProfileLike = Profile | dict | str | os.PathLike | None


def _as_model(model: Any) -> tuple[ModelProto, str]:
    if isinstance(model, ModelProto):
        return model, "<model>"
    if isinstance(model, (bytes, bytearray, memoryview)):
        return load(bytes(model)), "<bytes>"
    if isinstance(model, (str, os.PathLike)):
        return load(model), os.fspath(model)
    raise QTypesError(f"checker: expected a path, bytes or onnx.ModelProto, got {type(model).__name__}")


def iter_diagnostics(model: ModelLike, profile: ProfileLike = None) -> Iterator[Diagnostic]:
    """Yield every finding of every rule (errors and warnings), rule by rule.

    ``model`` may be a path, serialized bytes or an onnx.ModelProto;
    ``profile`` a built-in name ("generic", "tflite-int8", ...), a path to a
    profile JSON file, a parsed document or a Profile (None: generic).
    Raises QTypesError for input that cannot be read (not a finding).
    """
    proto, source = _as_model(model)
    ctx = Context(proto, load_profile(profile), source)
    for rule in all_rules():
        severity = ctx.profile.severity_of(rule.id, rule.severity)
        for finding in rule.check(ctx):
            yield Diagnostic(
                rule.id, rule.name, severity, finding.message, finding.location, rule.help, finding.related
            )


def check_model(model: ModelLike, profile: ProfileLike = None) -> list[Diagnostic]:
    """Raise ValidationError carrying every error diagnostic; otherwise return the warnings."""
    diagnostics = list(iter_diagnostics(model, profile))
    errors = [d for d in diagnostics if d.severity is Severity.ERROR]
    warnings = [d for d in diagnostics if d.severity is not Severity.ERROR]
    if errors:
        raise ValidationError(errors, warnings)
    return warnings
