"""Compare a backend with the reference, tensor by tensor, and find the first tensor that departs.

    result = compare("model.qdq.onnx", "onnxruntime")        # feeds drawn with seed 0
    result.first                                            # the first Row beyond its tolerance, or None

The reference is the definition: ``ReferenceEvaluator`` (definitional kernels) on the typed model. Every
quantized tensor a node of the main graph writes is compared in storage steps, in the typed model's node order
(topological, as ONNX requires), against its tolerance from ``tolerance.allowance``: the operator's own step
(A.2, A.3) plus what the deviations the backend's inputs to that node actually had may grow into (A.4).
The first tensor beyond it is where the backend departs; that node's inputs are listed with how far each was.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import ModelProto

from onnx_qtypes.conformance import backend_version_of, load_backend
from onnx_qtypes.interop.errors import LowerError, MalformedQDQError
from onnx_qtypes.proto import quantized_tensors
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.proto.errors import MalformedExtensionError, QTypesError
from onnx_qtypes.reference_ops import ReferenceEvaluator
from onnx_qtypes.reference_ops.errors import EvaluationError, FeedError
from onnx_qtypes.reference_ops.feeds import check_feeds
from onnx_qtypes.reference_ops.quant import dequantize

from . import sides as sides_module
from .inputs import InputsError, draw
from .observe import observe
from .steps import storage_steps
from .tolerance import NodeFacts, allowance

OK, BEYOND, NOT_OBSERVED = "ok", "beyond", "not observed"


@dataclasses.dataclass(frozen=True)
class InputState:
    """One input of a node and how far the backend's value of it was from the reference's."""

    name: str
    state: str  # agreed, within tolerance, beyond tolerance, not observed, fed, constant, agreed upstream
    steps: float | None = None


@dataclasses.dataclass(frozen=True)
class Row:
    tensor: str
    node: str  # the producer, as the user's file names it
    op: str  # its op type in the user's file (QLinearConv for a QOperator file)
    status: str  # OK, BEYOND or NOT_OBSERVED
    max_steps: float | None  # None: not observed, or shapes differ (``note`` says which)
    beyond: int  # elements beyond the tolerance
    total: int
    tolerance: float  # UNBOUNDED when no bound is known
    reason: str  # why that tolerance
    inputs: tuple[InputState, ...]
    note: str = ""


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
    from onnx_qtypes.proto import load

    source = os.fspath(model) if isinstance(model, (str, os.PathLike)) else "<model>"
    proto = load(model) if isinstance(model, (str, os.PathLike)) else model
    runtime = load_backend(backend) if isinstance(backend, str) else backend
    name = str(getattr(runtime, "name", "") or backend)
    try:
        sides = sides_module.build(proto)
        evaluator = ReferenceEvaluator(sides.typed)
    except (EvaluationError, MalformedExtensionError, MalformedQDQError, LowerError) as exc:
        raise CompareError(f"{source}: {exc}") from None
    feeds, feeds_how = _feeds(feeds, sides, evaluator, seed)
    graph = sides.typed.graph
    quantize_inputs = [n.input[0] for n in graph.node if n.op_type == "QuantizeLinear" and n.input and n.input[0]]
    wanted = list(dict.fromkeys([w.name for w in sides.watched] + quantize_inputs))
    try:
        reference = dict(zip(wanted, evaluator.run(wanted, feeds)))
    except (EvaluationError, MalformedExtensionError) as exc:
        raise CompareError(f"{source}: the reference cannot run it: {exc}") from None
    seen = observe(runtime, sides, feeds, name)
    rows = _rows(sides, reference, seen.values, seen.unobservable)
    if all(r.status == NOT_OBSERVED for r in rows):
        raise CompareError(f"{source}: none of the {len(rows)} quantized tensor(s) could be read from backend {name} "
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


def _rows(sides: sides_module.Sides, reference: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray],
          unobservable: Mapping[str, str]) -> list[Row]:
    graph = sides.typed.graph
    qtypes = quantized_tensors(sides.typed)
    constants = {t.name for t in graph.initializer}
    fed = {i.name for i in graph.input} - constants
    reals: dict[str, np.ndarray] = {}
    for t in graph.initializer:
        reals[t.name] = _real(t, qtypes.get(t.name))
    for name, value in reference.items():
        qtype = qtypes.get(name)
        static = qtype is not None and not qtype.is_dynamic
        reals[name] = dequantize(value, qtype) if static else np.asarray(value, np.float64)
    deviation: dict[str, float | None] = {n: 0.0 for n in constants | fed}
    watched = {w.name: w for w in sides.watched}
    judged: dict[str, Row] = {}
    rows = []
    for k, node in enumerate(graph.node):
        facts = NodeFacts(qtypes, reals, frozenset(constants), deviation)
        for out in node.output:
            if not out:
                continue
            if out not in watched:  # a float value (or one not compared): it inherits agreement, never a bound
                known = [deviation.get(n) for n in node.input if n]
                shape_only = node.op_type in ("Shape", "Size")  # reads no values
                deviation[out] = 0.0 if shape_only or all(d == 0 for d in known) else None
                continue
            row = _row(sides, k, node, out, facts, reference, actual, unobservable, constants, fed, judged)
            # an unobserved tensor is taken at its tolerance (what a conformant backend may have there): a reader
            # beyond even that departs in itself or in the unobserved nodes before it
            deviation[out] = row.max_steps if row.status != NOT_OBSERVED else (
                row.tolerance if math.isfinite(row.tolerance) else None)
            judged[out] = row
            rows.append(row)
    return rows


def _real(tensor: Any, qtype: Any) -> np.ndarray:
    value = tensor_array(tensor)
    if qtype is not None and not qtype.is_dynamic:
        return dequantize(value, qtype)
    return np.asarray(value, np.float64) if value.dtype.kind in "fiub" else np.asarray(value)


def _row(sides: sides_module.Sides, k: int, node: Any, out: str, facts: NodeFacts, reference: Mapping[str, np.ndarray],
         actual: Mapping[str, np.ndarray], unobservable: Mapping[str, str], constants: set[str], fed: set[str],
         judged: Mapping[str, Row]) -> Row:
    where, op = sides.places[k]
    inputs = tuple(_input_state(n, facts, constants, fed, judged) for n in node.input if n)
    allowed = allowance(node, out, facts)
    qtype = facts.qtypes[out]
    expected = np.asarray(reference[out])
    if out not in actual:
        return Row(out, where, op, NOT_OBSERVED, None, 0, int(expected.size), allowed.steps, allowed.reason, inputs,
                   unobservable.get(out, "the backend returned no value for it"))
    got = np.asarray(actual[out])
    if got.shape != expected.shape:
        return Row(out, where, op, BEYOND, None, int(expected.size), int(expected.size), allowed.steps, allowed.reason,
                   inputs, f"the backend's tensor has shape {list(got.shape)}, the reference's {list(expected.shape)}")
    steps = storage_steps(expected, got, qtype)
    limit = np.full(steps.shape, allowed.steps, np.float64)
    if allowed.near_ties is not None and allowed.near_ties.shape == steps.shape:
        limit = limit + allowed.near_ties
    beyond = int(np.count_nonzero(steps > limit))
    worst = float(steps.max()) if steps.size else 0.0
    notes = []
    if allowed.near_ties is not None:
        notes.append(f"{int(np.count_nonzero(allowed.near_ties))} near-tie element(s) may be one step more (A.3)")
    unseen = [s.name for s in inputs if s.state == "not observed"]
    if unseen and beyond:
        notes.append(f"input(s) {', '.join(unseen)} not observed, taken at their tolerance: the departure is in "
                     "this node or in the nodes writing them")
    note = "; ".join(notes)
    return Row(out, where, op, BEYOND if beyond else OK, worst, beyond, int(steps.size), allowed.steps, allowed.reason,
               inputs, note)


def _input_state(name: str, facts: NodeFacts, constants: set[str], fed: set[str], judged: Mapping[str, Row]
                 ) -> InputState:
    if name in constants:
        return InputState(name, "constant")
    if name in fed:
        return InputState(name, "fed")
    steps = facts.deviation.get(name)
    row = judged.get(name)
    if row is None:  # a float value, or a quantized one not compared: agreed when everything it comes from did
        return InputState(name, "agreed upstream" if steps == 0 else "not observed")
    if row.status == NOT_OBSERVED:
        return InputState(name, "not observed", steps)
    if row.status == BEYOND:
        return InputState(name, "beyond tolerance", steps)
    return InputState(name, "agreed" if steps == 0 else "within tolerance", steps)
