"""Run every registered rule over a model: iter_diagnostics, check_model."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from collections.abc import Iterable, Iterator
from typing import Any

from onnx import ModelProto

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Diagnostic, Location, Severity, ValidationError
from onnx_qtypes.checker.profile import Profile, load_profile
from onnx_qtypes.checker.registry import Rule, all_rules
from onnx_qtypes.proto.reader import ReadModel, read_model
from onnx_qtypes.proto.errors import MalformedExtensionError, ModelLoadError, QTypesError

ModelLike = str | os.PathLike | bytes | bytearray | memoryview | ModelProto | ReadModel
ProfileLike = Profile | dict | str | os.PathLike | None


def as_model(model: Any) -> ReadModel:
    """``model`` read the one shared way (``proto.reader``): sorted, names and tensor sizes checked."""
    if not isinstance(model, (ReadModel, ModelProto, bytes, bytearray, memoryview, str, os.PathLike)):
        raise QTypesError(f"checker: expected a path, bytes or onnx.ModelProto, got {type(model).__name__}")
    return read_model(model, "checker", external_data="lazy")  # weights read where they lie, one at a time


def in_read_file(d: Diagnostic, read: ReadModel) -> Diagnostic:
    """``d`` located in the file as it was read (a sorted graph's nodes back at their places in the file)."""
    if not read.orders:
        return d
    return dataclasses.replace(d, location=_at(d.location, read), related=tuple(_at(r, read) for r in d.related),
                               message=read.file_text(d.message))


def _at(location: Location, read: ReadModel) -> Location:
    return dataclasses.replace(location, pointer=read.file_pointer(location.pointer))


class _CollectorPause:
    """Python's cyclic garbage collector paused while the checker computes, as the caller set it while it runs.

    A run holds tens of thousands of small objects (declarations, nodes, types, their protobuf messages) until
    it ends and makes no reference cycles, so collections during a run free nothing, yet each visits the
    objects made since the last one (a full one visits every object of the process): on a large model they
    cost as much as several rules, and grow faster than the model. Reference counting frees memory as always
    (the whole index when the run ends); only the cycle collector waits, and whenever a finding is handed to
    the caller it is back in the caller's state.
    """

    def __init__(self) -> None:
        self.paused = False
        self.was_enabled = False

    def pause(self) -> None:
        self.was_enabled, self.paused = gc.isenabled(), True
        gc.disable()

    def resume(self) -> None:
        if self.paused and self.was_enabled:
            gc.enable()
        self.paused = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector paused for a whole computation that hands nothing over until it ends (``diagnose``:
    the in-memory lift, then the checker), as ``_CollectorPause`` says why."""
    collector = _CollectorPause()
    collector.pause()
    try:
        yield
    finally:
        collector.resume()


def iter_diagnostics(
    model: ModelLike, profile: ProfileLike = None, *, rules: Iterable[Rule] | None = None
) -> Iterator[Diagnostic]:
    """Yield every finding of every rule (errors and warnings), rule by rule.

    ``model`` may be a path, serialized bytes or an onnx.ModelProto;
    ``profile`` a built-in name ("generic", "tflite-int8", ...), a path to a
    profile JSON file, a parsed document or a Profile (None: generic);
    ``rules`` the rules to run (None: all; see ``select_rules``).
    This reads typed models; ``onnx_qtypes.diagnose`` also reads the QDQ /
    QOperator models quantizers write.
    Raises QTypesError for input that cannot be read (not a finding). While a
    rule computes, Python's cyclic garbage collector is paused process-wide
    (other threads included); it is as the caller set it whenever a finding
    is handed over and when the run ends.
    """
    read = as_model(model)
    proto, source = read.model, read.source
    collector = _CollectorPause()
    collector.pause()
    try:
        ctx = Context(proto, load_profile(profile), source, qtypes=read.qtypes)
        for rule in all_rules() if rules is None else rules:
            severity = ctx.profile.severity_of(rule.id, rule.severity)
            for finding in rule.check(ctx):
                diagnostic = Diagnostic(
                    rule.id, rule.name, severity, finding.message, finding.location, rule.help, finding.related
                )
                collector.resume()
                yield in_read_file(diagnostic, read)
                collector.pause()
    except (ModelLoadError, MalformedExtensionError) as exc:  # found while indexing or reading a constant
        raise in_file(read.located(exc), source) from None
    finally:
        collector.resume()


def in_file(exc: QTypesError, source: str) -> QTypesError:
    """The error with the model file in front: the context names the pointer and the tensor, not the file."""
    text = str(exc)
    if source.startswith("<") or text.startswith(f"{source}:"):  # <model>, <bytes>: no file to name
        return exc
    return type(exc)(f"{source}: {text}")


def check_model(model: ModelLike, profile: ProfileLike = None) -> list[Diagnostic]:
    """Raise ValidationError carrying every error diagnostic; otherwise return the warnings."""
    diagnostics = list(iter_diagnostics(model, profile))
    errors = [d for d in diagnostics if d.severity is Severity.ERROR]
    warnings = [d for d in diagnostics if d.severity is not Severity.ERROR]
    if errors:
        raise ValidationError(errors, warnings)
    return warnings
