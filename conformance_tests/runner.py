"""``run_suite``: every case on one backend, each judged to pass / fail / unsupported / error.

Nothing a backend does is raised: an exception in ``supports``, ``prepare``
or ``run`` is an *error* outcome carrying the runtime's message on one line
(for a must-reject case it is the refusal the case asks for: a *pass*). That
holds for every BaseException a backend raises (SystemExit, GeneratorExit, a
KeyboardInterrupt of its own): none of them ends or stalls the run. Only the
user's Ctrl-C stops it: ``run_suite`` then raises ``Interrupted`` carrying the
results of the cases that finished. Cases that cannot be read are raised
(CaseError) before anything runs.

``timeout`` gives each case that many seconds: a case still running then is
an error ("timed out"), and its worker thread is abandoned (a daemon thread:
it cannot keep the process alive), so a backend call that never returns
cannot stall the run or its end.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .backends import backend_version
from .execution_cases import REJECT, Case, load_suite
from .judging import ERROR, FAIL, PASS, UNSUPPORTED, judge
from .text import clean_text, one_line  # noqa: F401 (one_line: also imported from here)

# why a case ended as it did, beside its outcome: the runtime declined a case vs the suite has no model in the
# form the backend runs; a refusal (a must-reject case's pass); an error of the runtime, of the case data, or a timeout
DECLINED, NOT_EXPRESSIBLE, REFUSED = "declined", "not-expressible", "refused"
RUNTIME_ERROR, TIMEOUT, CASE_DATA = "runtime-error", "timeout", "case-data"
DEVIATIONS_KEPT = 10  # deviating elements a result keeps over all its outputs (the JSON report's bound)


@dataclasses.dataclass
class CaseResult:
    id: str
    operator: str
    outcome: str
    max_steps: float | None = None
    elements: int = 0  # elements beyond the tolerance, over every output
    message: str = ""
    backend: str = ""
    backend_version: str = ""
    tags: dict = dataclasses.field(default_factory=dict)
    kind: str = "execution"
    reason_class: str = ""  # DECLINED / NOT_EXPRESSIBLE (unsupported), REFUSED, RUNTIME_ERROR / TIMEOUT / CASE_DATA
    seconds: float = 0.0
    tolerance: dict = dataclasses.field(default_factory=dict)
    deviations: list = dataclasses.field(default_factory=list)  # worst elements: {"output", "index", ...}
    actual: dict | None = dataclasses.field(default=None, repr=False, compare=False)  # outputs of a failing case
    known: dict | None = None  # a failure or error a --known entry explains: {"entry": "FILE#deviations[i]", "reason"}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "operator": self.operator, "outcome": self.outcome,
                "reason_class": self.reason_class, "max_steps": _finite(self.max_steps), "elements": self.elements,
                "message": self.message, "backend": self.backend, "backend_version": self.backend_version,
                "tags": self.tags, "tolerance": self.tolerance, "seconds": round(self.seconds, 4),
                "deviations": self.deviations, "known": self.known}


class Interrupted(KeyboardInterrupt):
    """The user stopped the run (Ctrl-C); ``results`` holds the cases that finished, in case-id order."""

    def __init__(self, results: list[CaseResult], total: int) -> None:
        super().__init__(f"interrupted after {len(results)} of {total} case(s)")
        self.results, self.total = results, total


class _UserStop:
    """Tells the user's Ctrl-C from a KeyboardInterrupt a backend raises itself. Signals reach the main thread only,
    so on a worker thread every KeyboardInterrupt is the backend's; on the main thread, a SIGINT handler installed
    for the run marks the real ones (where it cannot be installed, every KeyboardInterrupt there counts as the
    user's)."""

    def __init__(self) -> None:
        self.signalled = threading.Event()
        self.installed = False
        self._previous: Any = None

    def __enter__(self) -> _UserStop:
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self.installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.installed:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: Any) -> None:
        self.signalled.set()
        raise KeyboardInterrupt

    def is_users(self, exc: BaseException) -> bool:
        if not isinstance(exc, KeyboardInterrupt) or threading.current_thread() is not threading.main_thread():
            return False
        return self.signalled.is_set() or not self.installed


_NO_STOP = _UserStop()  # run_case outside run_suite: a KeyboardInterrupt on the main thread is the user's


def _finite(value: float | None) -> float | int | str | None:
    if value is None:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return int(value) if float(value).is_integer() else float(value)


def _error(exc: BaseException) -> str:
    text = one_line(exc)
    name = clean_text(type(exc).__name__)
    return f"{name}: {text}" if text else name


def _name(backend: Any) -> str:
    return clean_text(getattr(backend, "name", "") or "")


def backend_form(backend: Any) -> str | None:
    """The model form a backend says it runs ("typed" / "qdq"), or None when it does not say."""
    form = getattr(backend, "form", None)
    return form if form in ("typed", "qdq") else None


def run_case(backend: Any, case: Case, _stop: _UserStop = _NO_STOP) -> CaseResult:
    """One case on ``backend``, timed; never raises for what the backend does (only the user's Ctrl-C passes)."""
    started = time.perf_counter()
    result = _run_case(backend, case, _stop)
    result.seconds = time.perf_counter() - started
    return result


def _run_case(backend: Any, case: Case, stop: _UserStop) -> CaseResult:
    result = CaseResult(case.id, case.operator, ERROR, backend=_name(backend),
                        backend_version=backend_version(backend), tags=dict(case.tags), kind=case.kind,
                        tolerance=dict(case.tolerance))
    form = backend_form(backend)
    if form is not None and case.model_file(form) is None:  # the suite has no model in the form the backend runs
        result.outcome, result.reason_class, result.message = UNSUPPORTED, NOT_EXPRESSIBLE, case.qdq_unavailable
        return result
    try:
        supported = backend.supports(case)
    except BaseException as exc:
        if stop.is_users(exc):
            raise
        result.reason_class, result.message = RUNTIME_ERROR, f"supports() raised {_error(exc)}"
        return result
    if supported is not True:
        result.outcome = UNSUPPORTED
        result.message = one_line(supported) if isinstance(supported, str) and supported else "not supported"
        not_expressible = case.qdq_unavailable and result.message == one_line(case.qdq_unavailable)
        result.reason_class = NOT_EXPRESSIBLE if not_expressible else DECLINED
        return result
    try:
        feeds, expected = case.feeds(), case.expected()
    except Exception as exc:
        result.reason_class, result.message = CASE_DATA, f"case data: {_error(exc)}"
        return result
    try:
        prepared = backend.prepare(case)
        actual = backend.run(prepared, feeds)
    except BaseException as exc:
        if stop.is_users(exc):
            raise
        # an unfinished backend (NotImplementedError) refuses nothing, nor does one trying to end the process
        if case.kind == REJECT and isinstance(exc, Exception) and not isinstance(exc, NotImplementedError):
            result.outcome, result.reason_class, result.message = PASS, REFUSED, f"refused: {_error(exc)}"
        else:
            result.reason_class, result.message = RUNTIME_ERROR, _error(exc)
        return result
    if case.kind == REJECT:
        result.outcome, result.actual = FAIL, actual if isinstance(actual, dict) else None
        result.message = (f"ran a model a reader must refuse ({case.rule}: {one_line(case.reason)}) and returned "
                          f"{_outputs_named(actual)} instead of raising")
        return result
    if not isinstance(actual, dict):
        try:
            actual = dict(actual)
        except BaseException as exc:
            if stop.is_users(exc):
                raise
            result.reason_class = RUNTIME_ERROR
            result.message = f"run() returned {type(actual).__name__}, expected a dict of output name -> array"
            return result
    try:
        verdicts = judge(case, expected, actual)
    except BaseException as exc:  # a backend returning something no array can be made of
        if stop.is_users(exc):
            raise
        result.reason_class, result.message = RUNTIME_ERROR, f"judging the outputs: {_error(exc)}"
        return result
    measured = [v.max_steps for v in verdicts if v.max_steps is not None]
    result.max_steps = max(measured) if measured else None
    result.elements = sum(v.elements for v in verdicts)
    failed = [v for v in verdicts if not v.ok]
    result.outcome = FAIL if failed else PASS
    result.message = "; ".join(v.reason for v in failed)
    if failed:
        result.actual = actual
        ranked = sorted(({"output": v.name, **w} for v in failed for w in v.worst),
                        key=lambda w: -_rank(w.get("steps")))
        result.deviations = ranked[:DEVIATIONS_KEPT]
    return result


def _rank(steps: Any) -> float:
    if steps is None:
        return float("inf")
    try:
        return float(steps)
    except (TypeError, ValueError):
        return float("inf")


def _outputs_named(actual: Any) -> str:
    try:
        names = list(actual)
    except BaseException:  # noqa: BLE001 - only a description of what the backend returned
        return "a result"
    return "outputs " + ", ".join(map(repr, names[:5])) if names else "no outputs"


def _outcome_error(backend: Any, case: Case, message: str, reason_class: str = RUNTIME_ERROR,
                   seconds: float = 0.0) -> CaseResult:
    return CaseResult(case.id, case.operator, ERROR, message=message, backend=_name(backend),
                      backend_version=backend_version(backend), tags=dict(case.tags), kind=case.kind,
                      reason_class=reason_class, seconds=seconds, tolerance=dict(case.tolerance))


def _timed_out(backend: Any, case: Case, seconds: float) -> CaseResult:
    return _outcome_error(backend, case, f"timed out after {seconds:g} s (--timeout); the call was abandoned",
                          TIMEOUT, seconds)


def run_suite(backend: Any, filter: str | Sequence[str] | None = None, jobs: int = 1, *,
              cases: Iterable[Case] | None = None, root: str | os.PathLike | None = None,
              progress: Callable[[int, int, CaseResult], None] | None = None, timeout: float | None = None,
              tags: Mapping[str, str] | None = None) -> list[CaseResult]:
    """Run every case (under ``root``, default the installed suite: execution and must-reject cases; or the given
    ``cases``) matching ``filter`` (substrings) and ``tags`` (exact) on ``backend``.

    ``jobs`` > 1 calls the backend from that many threads at once. ``timeout`` (seconds per case) runs each
    case on a worker thread and abandons it when time is up. Results come back in case-id order. The user's Ctrl-C
    raises ``Interrupted`` with the results of the cases that finished.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
    if cases is None:
        chosen = load_suite(root, filter, tags=tags)
    else:
        chosen = [c for c in cases if c.matches(filter) and c.has_tags(tags)]
    total = len(chosen)
    results: list[CaseResult | None] = [None] * total
    done = 0

    def finish(i: int, result: CaseResult) -> None:
        nonlocal done
        results[i] = result
        done += 1
        if progress:
            progress(done, total, result)

    with _UserStop() as stop:
        try:
            if timeout is None and jobs == 1:  # in the caller's thread: a backend tied to its thread keeps working
                for i, case in enumerate(chosen):
                    finish(i, run_case(backend, case, stop))
            else:
                _run_on_workers(backend, chosen, jobs, timeout, finish)
        except KeyboardInterrupt:
            raise Interrupted([r for r in results if r is not None], total) from None
    return [r for r in results if r is not None]


def _run_on_workers(backend: Any, chosen: list[Case], jobs: int, timeout: float | None,
                    finish: Callable[[int, CaseResult], None]) -> None:
    """At most ``jobs`` cases at a time, each on its own daemon thread; one past ``timeout`` is finished as an
    error and its thread left behind (a late result from it is dropped)."""
    pending = deque(enumerate(chosen))
    running: dict[int, float] = {}  # case index -> when it started
    finished: queue.Queue = queue.Queue()

    def work(i: int, case: Case) -> None:
        try:
            result = run_case(backend, case)  # on a worker thread every BaseException is the case's error
        except BaseException as exc:  # noqa: BLE001 - the last net: a case that never reports would stall the run
            result = _outcome_error(backend, case, f"the runner: {_error(exc)}")
        finished.put((i, result))

    while pending or running:
        while pending and len(running) < jobs:
            i, case = pending.popleft()
            running[i] = time.monotonic()
            threading.Thread(target=work, args=(i, case), name=f"conformance {case.id}", daemon=True).start()
        wait = None if timeout is None else max(0.0, min(running.values()) + timeout - time.monotonic())
        try:
            i, result = finished.get(timeout=wait)
        except queue.Empty:
            now = time.monotonic()
            for i, started in list(running.items()):
                if now - started >= timeout:  # type: ignore[operator]
                    del running[i]
                    finish(i, _timed_out(backend, chosen[i], timeout))  # type: ignore[arg-type]
            continue
        if i in running:  # else: it timed out already, and its result came too late
            del running[i]
            finish(i, result)


def failed(results: Iterable[CaseResult]) -> bool:
    return any(r.outcome in (FAIL, ERROR) for r in results)
