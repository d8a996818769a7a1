"""Running the suite inside your own pytest run.

In a test module of yours::

    import pytest
    from onnx_qtypes.conformance import pytest_cases, check_case
    from my_runtime import MyBackend

    BACKEND = MyBackend()

    @pytest.mark.parametrize("case", **pytest_cases(BACKEND))
    def test_conformance(case):
        check_case(BACKEND, case)

``pytest_cases(backend, filter=None, root=None, tags=None)`` gives
``argvalues`` (one ``pytest.param`` per case, execution and must-reject
alike, id = the case id, unsupported cases marked skip with the backend's
reason) and ``ids``-free keyword arguments for ``pytest.mark.parametrize``.
``check_case`` fails the test with the judge's message on a fail (for a
must-reject case: the backend ran the model instead of refusing it) or an
error, and skips an unsupported case.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from .execution_cases import Case, load_suite
from .judging import ERROR, FAIL, UNSUPPORTED
from .runner import CaseResult, backend_form, run_case


def pytest_cases(backend: Any = None, filter: str | Sequence[str] | None = None,
                 root: str | os.PathLike | None = None, tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments for ``pytest.mark.parametrize("case", **pytest_cases(backend))``."""
    import pytest

    params = []
    for case in load_suite(root, filter, tags=tags):
        marks = []
        if backend is not None:
            form = backend_form(backend)
            try:
                supported = (case.qdq_unavailable if form and case.model_file(form) is None
                             else backend.supports(case))
            except Exception:
                supported = True  # run_case reports the error
            if supported is not True:
                marks.append(pytest.mark.skip(reason=supported if isinstance(supported, str) else "not supported"))
        params.append(pytest.param(case, id=case.id, marks=marks))
    return {"argvalues": params}


def check_case(backend: Any, case: Case) -> CaseResult:
    """Run one case; pass silently, skip when unsupported, otherwise fail the test with the reason."""
    import pytest

    result = run_case(backend, case)
    if result.outcome == UNSUPPORTED:
        pytest.skip(result.message)
    if result.outcome in (FAIL, ERROR):
        pytest.fail(f"{case.id} ({case.operator}) {result.outcome}: {result.message}", pytrace=False)
    return result
