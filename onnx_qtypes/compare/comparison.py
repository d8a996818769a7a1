"""Compare a backend with the reference, tensor by tensor, and find the first tensor that departs.

    result = compare("model.qdq.onnx", "onnxruntime")        # feeds drawn with seed 0
    result.first                                            # the first Row beyond its tolerance, or None

The reference is the definition: ``ReferenceEvaluator`` (definitional kernels) on the typed model. Every tensor a
node of the main graph writes that both sides hold is compared, in the typed model's node order (topological, as
ONNX requires), against its tolerance from the suite's one rule (``onnx_qtypes.conformance.tolerance``,
proposal/spec/semantics.md §8): the operator's own step plus what the deviations the backend's inputs to that node
actually had may grow into (``node_bounds``, given each input's measured deviation). The first tensor beyond it is
where the backend departs; that node's inputs are listed with how far each was.

- a static quantized tensor: its stored values, in storage steps (semantics.md#steps);
- a dynamic one: the real values each side's own bound parameters give, in steps of the reference's scale;
- a float tensor (a value leaving the quantized domain, or one computed in floats downstream): its values, in
  reals, against ``float_limit`` (semantics.md#float-values);
- another graph output, or an integer output of a node reading quantized tensors: exactly, where every input
  agreed.
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
from onnx import ModelProto, numpy_helper

from onnx_qtypes.conformance import backend_version_of, load_backend
from onnx_qtypes.conformance.runner import backend_form
from onnx_qtypes.conformance.tolerance import FLOATS, UNBOUNDED, Bound, ModelView, NodeBound, float_limit, node_bounds
from onnx_qtypes.interop.errors import LowerError, MalformedQDQError
from onnx_qtypes.proto.errors import MalformedExtensionError, QTypesError
from onnx_qtypes.reference_ops import ReferenceEvaluator
from onnx_qtypes.reference_ops.errors import EvaluationError, FeedError
from onnx_qtypes.reference_ops.feeds import check_feeds
from onnx_qtypes.reference_ops.quant import dequantize

from . import sides as sides_module
from .inputs import InputsError, draw
from .observe import observe
from .sides import DYNAMIC, PLAIN, QUANTIZED
from .steps import storage_steps

OK, BEYOND, NOT_OBSERVED, NO_BOUND = "ok", "beyond", "not observed", "no bound"
STEPS, REAL, VALUE = "steps", "real", "value"  # a row's unit: storage steps, reals, or exact values


@dataclasses.dataclass(frozen=True)
class InputState:
    """One input of a node and how far the backend's value of it was from the reference's."""

    name: str
    state: str  # agreed, within tolerance, beyond tolerance, not observed, fed, constant, not compared
    deviation: float | None = None
    unit: str = STEPS


@dataclasses.dataclass(frozen=True)
class Row:
    tensor: str
    node: str  # the producer, as the user's file names it
    op: str  # its op type in the user's file (QLinearConv for a QOperator file)
    status: str  # OK, BEYOND, NOT_OBSERVED, or NO_BOUND (it deviates where the rule gives no bound: not judged)
    deviation: float | None  # the largest, in ``unit``; None: not observed, or shapes differ (``note`` says which)
    beyond: int  # elements beyond the tolerance
    total: int
    tolerance: float  # in ``unit`` (the largest over the elements); UNBOUNDED when no bound is known
    reason: str  # why that tolerance
    inputs: tuple[InputState, ...]
    note: str = ""
    unit: str = STEPS


@dataclasses.dataclass
class Comparison:
    model: str
    backend: str
    backend_version: str
    form: str
    rows: list[Row]
    feeds_how: list[str]
    notes: list[str]
    how: str  # how the backend's values were read
    runs: int

    @property
    def first(self) -> Row | None:
        return next((r for r in self.rows if r.status == BEYOND), None)

    @property
    def exit_code(self) -> int:
        return 1 if self.first is not None else 0


class CompareError(QTypesError):
    """The comparison cannot be made (bad model, inputs or backend): exit 2."""


def compare(model: str | os.PathLike | ModelProto, backend: str | Any,
            feeds: Mapping[str, np.ndarray] | str | os.PathLike | None = None, *, seed: int = 0) -> Comparison:
    """Compare ``backend`` (a conformance backend name, ``MODULE:CLASS``, or a Backend object) with the reference on
    ``model`` (a path or a ModelProto), on ``feeds``: arrays by graph input name, an .npz file of them, or None
    (drawn with ``seed``, see ``inputs``). Raises QTypesError (exit 2 on the command line) when the comparison
    cannot be made."""
    from onnx_qtypes.proto.reader import read_model

    read = read_model(model, "compare")  # as every command reads a model (sizes, names, text, order)
    source = read.source
    runtime = load_backend(backend) if isinstance(backend, str) else backend
    name = str(getattr(runtime, "name", "") or backend)
    try:
        sides = sides_module.build(read)
        evaluator = ReferenceEvaluator(sides.typed)
    except (EvaluationError, MalformedExtensionError, MalformedQDQError, LowerError) as exc:
        raise CompareError(f"{source}: {read.file_text(str(exc))}") from None
    sides = sides_module.for_form(sides, backend_form(runtime))
    if sides.standard is None and backend_form(runtime) != "typed":
        raise CompareError(f"{source}: backend {name} runs standard ONNX, and {sides.standard_unavailable}")
    feeds, feeds_how = _feeds(feeds, sides, evaluator, seed)
    wanted = list(dict.fromkeys(n for node in sides.typed.graph.node for n in node.output if n))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # onnx.reference's numpy warnings are no findings
            warnings.simplefilter("ignore", RuntimeWarning)
            reference = dict(zip(wanted, evaluator.run(wanted, feeds)))
    except (EvaluationError, MalformedExtensionError) as exc:
        raise CompareError(f"{source}: the reference cannot run it: {read.file_text(str(exc))}") from None
    try:
        seen = observe(runtime, sides, feeds, name)
    except QTypesError as exc:
        if sides.standard is None:  # a backend that did not say it runs the typed model met none of the standard form
            raise CompareError(f"{exc}; the backend was handed no standard-ONNX model: "
                               f"{sides.standard_unavailable}") from None
        raise
    rows = _Judge(sides, reference, feeds, seen.values, seen.unobservable).rows()
    if not rows:
        raise CompareError(f"{source}: no tensor that a node writes is held on both sides: nothing to compare")
    if all(r.status == NOT_OBSERVED for r in rows):
        raise CompareError(f"{source}: none of the {len(rows)} tensor(s) could be read from backend {name} "
                           f"({rows[0].note}): nothing was compared")
    return Comparison(source, name, backend_version_of(runtime), sides.form, rows, feeds_how, sides.notes, seen.how,
                      seen.runs)


def _feeds(given: Mapping[str, np.ndarray] | str | os.PathLike | None, sides: sides_module.Sides, evaluator: Any,
           seed: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """The checked feeds and how they came about."""
    specs = evaluator.input_specs
    where = ""
    if given is None:
        feeds, how = draw(sides.typed, specs, seed)
        said = [f"drawn with numpy.random.default_rng({seed}) (--seed {seed}):"] + [f"  {h}" for h in how]
    elif isinstance(given, (str, os.PathLike)):
        from onnx_qtypes.commands.run import read_inputs  # the .npz reader `run` uses: headers checked first

        where = f"{os.fspath(given)}: "
        feeds, said = read_inputs(os.fspath(given), specs), [f"from {os.fspath(given)}"]
    else:
        feeds, said = dict(given), ["as given"]
    try:
        return check_feeds(specs, feeds), said
    except FeedError as exc:
        raise InputsError(f"{where}{exc}") from None


def _fraction(value: float) -> Fraction | None:
    return Fraction(value) if math.isfinite(value) else None


class _Judge:
    """Walks the typed model's main graph once: each node's tolerance from what its inputs measured, each watched
    tensor measured against it."""

    def __init__(self, sides: sides_module.Sides, reference: Mapping[str, np.ndarray], feeds: Mapping[str, np.ndarray],
                 actual: Mapping[str, np.ndarray], unobservable: Mapping[str, str]) -> None:
        self.sides, self.reference, self.actual, self.unobservable = sides, reference, actual, unobservable
        self.view = ModelView(sides.typed)
        graph = sides.typed.graph
        self.constants = {t.name for t in graph.initializer}
        self.fed = {i.name for i in graph.input} - self.constants
        self.watched = {w.name: w for w in sides.watched}
        self.outputs = {o.name for o in graph.output}
        self.values: dict[str, np.ndarray] = {}  # the definition's reals, what data-dependent bounds read
        for name, value in (*feeds.items(), *reference.items()):
            real = self._real(name, value)
            if real is not None:
                self.values[name] = real
        self.measured: dict[str, Bound] = {n: Bound() for n in self.constants | self.fed}
        self.judged: dict[str, Row] = {}

    def _real(self, name: str, value: Any) -> np.ndarray | None:
        qtype = self.view.types.get(name)
        value_qtype = getattr(value, "qtype", None) or qtype
        array = np.asarray(value)
        if qtype is not None:
            if value_qtype is None or value_qtype.is_dynamic:
                return None
            return dequantize(array, value_qtype, tensor=name)
        return array.astype(np.float64) if array.dtype.kind in "fiub" else None

    def rows(self) -> list[Row]:
        rows = []
        for k, node in enumerate(self.sides.typed.graph.node):
            carried = {n: self.measured[n] for n in node.input if n in self.measured}
            answers = node_bounds(self.view, node, carried, self.values)
            for out in node.output:
                if not out or out not in answers:
                    continue
                row = self._row(k, node, out, answers[out]) if out in self.watched else None
                if row is None:  # not compared: taken at its tolerance (what a conformant backend may have there)
                    self.measured[out] = self._at_tolerance(out, answers[out])
                    continue
                self.judged[out] = row
                rows.append(row)
        return rows

    def _at_tolerance(self, name: str, answer: NodeBound) -> Bound:
        if answer.real is None:
            return Bound(UNBOUNDED, None)
        expected = self.reference.get(name)
        qtype = self.view.types.get(name)
        if qtype is None and expected is not None and np.asarray(expected).dtype.kind == "f":
            limit = float_limit(np.asarray(expected), answer)
            return Bound(answer.steps, _fraction(float(np.max(limit, initial=0.0))))
        if answer.near_count:
            return Bound(answer.steps + 1, answer.real + (_largest_scale(qtype) if qtype is not None else 0))
        return Bound(answer.steps, answer.real)

    def _row(self, k: int, node: Any, out: str, answer: NodeBound) -> Row | None:
        watched = self.watched[out]
        where, op = self.sides.places[k]
        inputs = tuple(self._input_state(n) for n in node.input if n)
        expected = np.asarray(self.reference[out])
        if watched.kind == PLAIN and not (expected.dtype.kind == "f" or out in self.outputs or
                                          any(self.view.types.get(n) for n in (*node.input, *node.output) if n)):
            return None  # a plain shape or index computation: not a finding of a quantized model
        unit = STEPS if watched.kind != PLAIN else (REAL if expected.dtype.kind == "f" else VALUE)
        tolerance, reason = _shown(answer, unit, expected)
        if out not in self.actual:
            self.measured[out] = self._at_tolerance(out, answer)
            return Row(out, where, op, NOT_OBSERVED, None, 0, int(expected.size), tolerance, reason, inputs,
                       self.unobservable.get(out, "the backend returned no value for it"), unit)
        got = np.asarray(self.actual[out])
        if got.shape != expected.shape:
            self.measured[out] = Bound(UNBOUNDED, None)
            return Row(out, where, op, BEYOND, None, int(expected.size), int(expected.size), tolerance, reason,
                       inputs, f"the backend's tensor has shape {list(got.shape)}, the reference's "
                       f"{list(expected.shape)}", unit)
        notes = []
        if watched.kind == QUANTIZED:
            diff = storage_steps(expected, got, watched.qtype)
            limit = np.full(diff.shape, answer.steps, np.float64)
            if answer.near is not None and answer.near.shape == diff.shape:
                limit = limit + answer.near
                notes.append(f"{answer.near_count} near-tie element(s) may be one step more (proposal/spec/"
                             "semantics.md#quantize-precision)")
            real = self._real_deviation(expected, got, watched.qtype, watched.qtype)
        elif watched.kind == DYNAMIC:
            diff, limit, real, said = self._dynamic(watched, expected, got, answer)
            notes.extend(said)
        elif answer.open:  # any positive finite value
            with np.errstate(all="ignore"):
                good = np.isfinite(got.astype(np.float64)) & (got.astype(np.float64) > 0)
            diff, limit, real = np.where(good, 0.0, np.inf), np.zeros(got.shape), Fraction(0)
            notes.append(answer.open)
        elif unit == REAL:
            with np.errstate(all="ignore"):
                e64, g64 = expected.astype(np.float64), got.astype(np.float64)
                both = (np.isnan(e64) & np.isnan(g64)) | (e64 == g64)  # NaN matches NaN, inf matches inf
                diff = np.where(both, 0.0, np.abs(g64 - e64))
            diff = np.where(np.isnan(diff), np.inf, diff)
            limit = float_limit(expected, answer)
            real = _fraction(float(diff.max(initial=0.0)))
        else:
            diff = (np.asarray(got) != expected).astype(np.float64)
            limit = np.full(diff.shape, 0.0 if answer.real == 0 else UNBOUNDED)
            real = Fraction(0) if not diff.any() else None
        beyond = int(np.count_nonzero(diff > limit))
        worst = float(diff.max()) if diff.size else 0.0
        if beyond and (hint := _accuracy_hint(node)):
            notes.append(hint)
        steps = worst if unit == STEPS else 0.0
        self.measured[out] = Bound(steps if math.isfinite(steps) else UNBOUNDED, real if math.isfinite(worst) else None)
        unseen = [s.name for s in inputs if s.state == "not observed"]
        if unseen and beyond:
            notes.append(f"input(s) {', '.join(unseen)} not observed, taken at their tolerance: the departure is in "
                         "this node or in the nodes writing them")
        status = BEYOND if beyond else (NO_BOUND if worst and not math.isfinite(tolerance) else OK)
        if status == NO_BOUND:
            notes.append("it deviates and the rule gives no bound here, so it is not judged")
        return Row(out, where, op, status, worst, beyond, int(diff.size), tolerance, reason, inputs, "; ".join(notes),
                   unit)

    def _real_deviation(self, expected: np.ndarray, got: np.ndarray, ref_qtype: Any, own_qtype: Any) -> Fraction | None:
        with np.errstate(all="ignore"):
            difference = np.abs(dequantize(got, own_qtype) - dequantize(expected, ref_qtype))
        worst = float(np.max(difference, initial=0.0))
        return _fraction(worst) if not np.isnan(worst) else None

    def _dynamic(self, watched: Any, expected: np.ndarray, got: np.ndarray, answer: NodeBound
                 ) -> tuple[np.ndarray, np.ndarray, Fraction | None, list[str]]:
        """A dynamic tensor: each side's values dequantized with the parameters that side bound, the difference in
        steps of the reference's scale; the backend's scale may differ from the reference's by the expressed type's
        rounding, which the limit allows at each element's magnitude."""
        ref_qtype = getattr(self.reference[watched.name], "qtype", None)
        own = self._bound_parameters(watched, got)
        if ref_qtype is None or own is None:
            raise CompareError(f"tensor {watched.name!r}: the parameters bound to its dynamic type could not be read")
        reals_ref, reals_own = dequantize(expected, ref_qtype), dequantize(got, own)
        step = np.abs(_scale_array(ref_qtype, expected.shape))
        with np.errstate(all="ignore"):
            diff = np.abs(reals_own - reals_ref) / step
        p = np.finfo(ref_qtype.expressed_type.np_dtype).nmant
        limit = answer.steps + (np.abs(reals_ref) + np.abs(reals_own)) * 2.0 ** -p / step
        notes = []
        if answer.near is not None and answer.near.shape == limit.shape:  # DynamicQuantizeLinear's near ties
            limit = limit + answer.near
            notes.append(f"{answer.near_count} near-tie element(s) may be one step more (proposal/spec/"
                         "semantics.md#quantize-precision)")
        if tuple(own.scale) != tuple(ref_qtype.scale) or tuple(own.zero_point) != tuple(ref_qtype.zero_point):
            notes.append(f"the backend bound {_parameters(own)}, the reference {_parameters(ref_qtype)}")
        real = _fraction(float(np.max(np.abs(reals_own - reals_ref), initial=0.0)))
        return np.where(np.isnan(diff), np.inf, diff), limit, real, notes

    def _bound_parameters(self, watched: Any, got: np.ndarray) -> Any:
        constants = self.sides.backend_constants
        found = []
        for name in watched.parameters:
            if not name:
                found.append(None)
            elif name in constants:
                found.append(numpy_helper.to_array(constants[name]))
            elif name in self.actual:
                found.append(np.asarray(self.actual[name]))
            else:
                return None
        scale, zero = found
        if scale is None:
            return None
        scale = np.asarray(scale, np.float64).ravel()
        zero = np.zeros(scale.shape, np.int64) if zero is None else np.asarray(zero).astype(np.int64).ravel()
        qtype = watched.qtype
        axis = qtype.axis if scale.size > 1 else None
        try:
            return qtype.replace(scale=tuple(scale.tolist()), zero_point=tuple(zero.tolist()), axis=axis,
                                 validate=False)
        except Exception:  # noqa: BLE001 (parameters that make no type: the comparison says so)
            return None

    def _input_state(self, name: str) -> InputState:
        if name in self.constants:
            return InputState(name, "constant")
        if name in self.fed:
            return InputState(name, "fed")
        bound = self.measured.get(name, Bound())
        row = self.judged.get(name)
        unit = row.unit if row is not None else (STEPS if name in self.view.types else REAL)
        shown = bound.steps if unit == STEPS else (None if bound.real is None else float(bound.real))
        if row is None:  # not compared: taken at its tolerance
            return InputState(name, "agreed upstream" if bound.real == 0 and not bound.steps else "not compared",
                              shown, unit)
        if row.status == NOT_OBSERVED:
            return InputState(name, "not observed", shown, unit)
        if row.status == BEYOND:
            return InputState(name, "beyond tolerance", row.deviation, unit)
        return InputState(name, "agreed" if not row.deviation else "within tolerance", row.deviation, unit)


def _shown(answer: NodeBound, unit: str, expected: np.ndarray) -> tuple[float, str]:
    """The tolerance as a row shows it (the largest over the elements) and its reason."""
    if answer.open:
        return UNBOUNDED, answer.open
    if answer.real is None and unit != STEPS:
        return UNBOUNDED, answer.reason
    if unit == REAL:
        limit = float_limit(expected, answer)
        extra = (f"; as a float value: the rule's bound in reals plus one unit in the last place, plus "
                 f"{'32 units in the last place of the largest magnitude (computed in floats)' if answer.computes else 'nothing more'} "
                 f"({FLOATS})")
        return float(np.max(limit, initial=0.0)), answer.reason + extra
    if unit == VALUE:
        return (0.0 if answer.real == 0 else UNBOUNDED), answer.reason
    return float(answer.steps), answer.reason


_ACCURACY = {"2": "float16", "3": "bfloat16", "4": "int8"}  # com.microsoft.MatMulNBits' accuracy_level -> A's type


def _accuracy_hint(node: Any) -> str:
    """Why a MatMulNBits may depart: its accuracy_level (kept by the lift) lets onnxruntime compute A in a
    narrower type; "" for any other node."""
    from onnx_qtypes.interop.matmul_nbits import ACCURACY_KEY

    level = next((e.value for e in node.metadata_props if e.key == ACCURACY_KEY), None)
    if level not in _ACCURACY:
        return ""
    return (f"the file's MatMulNBits has accuracy_level {level}: onnxruntime may compute its input A in "
            f"{_ACCURACY[level]} (the attribute's own meaning in com.microsoft), where the reference computes A "
            "exactly")


def _largest_scale(qtype: Any) -> Fraction:
    return max((abs(Fraction(s)) for s in qtype.scale), default=Fraction(0))


def _scale_array(qtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    from onnx_qtypes.reference_ops.quant import broadcast_parameters  # noqa: PLC0415

    scale, _ = broadcast_parameters(qtype, shape)
    return np.asarray(scale, np.float64)


def _parameters(qtype: Any) -> str:
    scale = ", ".join(f"{s:.6g}" for s in qtype.scale[:4]) + (" ..." if len(qtype.scale) > 4 else "")
    zero = ", ".join(str(z) for z in qtype.zero_point[:4]) + (" ..." if len(qtype.zero_point) > 4 else "")
    return f"scale {scale} / zero point {zero}"
