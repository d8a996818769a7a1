"""``run_suite``: every case on one backend, each judged to pass / fail / unsupported / error.

Nothing a backend does is raised: an exception in ``supports``, ``prepare``
or ``run`` is an *error* outcome carrying the runtime's message on one line.
Cases that cannot be read are raised (CaseError) before anything runs.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .backends import backend_version
from .execution_cases import ExecutionCase, load_cases
from .judging import ERROR, FAIL, PASS, UNSUPPORTED, judge


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

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "operator": self.operator, "outcome": self.outcome, "max_steps": _finite(self.max_steps),
                "elements": self.elements, "message": self.message, "backend": self.backend,
                "backend_version": self.backend_version}


def _finite(value: float | None) -> float | int | str | None:
    if value is None:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return int(value) if float(value).is_integer() else float(value)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error(exc: BaseException) -> str:
    text = one_line(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_case(backend: Any, case: ExecutionCase) -> CaseResult:
    result = CaseResult(case.id, case.operator, ERROR, backend=str(getattr(backend, "name", "") or ""),
                        backend_version=backend_version(backend), tags=dict(case.tags))
    try:
        supported = backend.supports(case)
    except Exception as exc:
        result.message = f"supports() raised {_error(exc)}"
        return result
    if supported is not True:
        result.outcome = UNSUPPORTED
        result.message = one_line(supported) if isinstance(supported, str) and supported else "not supported"
        return result
    try:
        feeds, expected = case.feeds(), case.expected()
    except Exception as exc:
        result.message = f"case data: {_error(exc)}"
        return result
    try:
        prepared = backend.prepare(case)
        actual = backend.run(prepared, feeds)
    except Exception as exc:
        result.message = _error(exc)
        return result
    if not isinstance(actual, dict):
        try:
            actual = dict(actual)
        except Exception:
            result.message = f"run() returned {type(actual).__name__}, expected a dict of output name -> array"
            return result
    try:
        verdicts = judge(case, expected, actual)
    except Exception as exc:  # a backend returning something no array can be made of
        result.message = f"judging the outputs: {_error(exc)}"
        return result
    measured = [v.max_steps for v in verdicts if v.max_steps is not None]
    result.max_steps = max(measured) if measured else None
    result.elements = sum(v.elements for v in verdicts)
    failed = [v for v in verdicts if not v.ok]
    result.outcome = FAIL if failed else PASS
    result.message = "; ".join(v.reason for v in failed)
    return result


def run_suite(backend: Any, filter: str | Sequence[str] | None = None, jobs: int = 1, *,
              cases: Iterable[ExecutionCase] | None = None, root: str | os.PathLike | None = None,
              progress: Callable[[int, int, CaseResult], None] | None = None) -> list[CaseResult]:
    """Run every execution case (under ``root``, or the given ``cases``) matching ``filter`` on ``backend``.

    ``jobs`` > 1 runs cases on that many threads. Results come back in case-id order.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    chosen = [c for c in cases if c.matches(filter)] if cases is not None else load_cases(root, filter)
    total = len(chosen)
    results: list[CaseResult | None] = [None] * total
    done = 0
    if jobs == 1 or total <= 1:
        for i, case in enumerate(chosen):
            results[i] = run_case(backend, case)
            done += 1
            if progress:
                progress(done, total, results[i])
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(run_case, backend, case): i for i, case in enumerate(chosen)}
            for future in concurrent.futures.as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                done += 1
                if progress:
                    progress(done, total, results[i])
    return [r for r in results if r is not None]


def failed(results: Iterable[CaseResult]) -> bool:
    return any(r.outcome in (FAIL, ERROR) for r in results)
