"""The conformance suite: cases a vendor runtime runs, and their runner.

- ``load_cases(root=None, filter=None)`` / ``iter_cases``: the execution cases
  (default: this package's cases/execution folder);
- ``Backend``: the protocol (``name``, ``supports(case)``, ``prepare(case)``,
  ``run(prepared, feeds)``); ``load_backend(spec)`` builds one by its
  command-line name;
- ``run_suite(backend, filter=None, jobs=1)``: a ``CaseResult`` per case
  (outcome pass / fail / unsupported / error);
- ``pytest_cases(backend)`` / ``check_case(backend, case)``: the suite inside
  your own pytest run;
- ``status``: results records per backend and version, the known deviations
  that explain their failures, and the page (proposal/status.md) they render
  to (``python conformance_tests/publish_status.py``).
"""

from .backends import (
    Backend,
    BackendError,
    OnnxRuntimeBackend,
    OpenVinoBackend,
    ReferenceBackend,
    ResultsBackend,
    backend_version as backend_version_of,
    load_backend,
)
from .execution_cases import CASES_ROOT, CaseError, ExecutionCase, iter_cases, load_case, load_cases
from .judging import ERROR, FAIL, OUTCOMES, PASS, UNSUPPORTED
from .pytest_entry import check_case, pytest_cases
from .runner import CaseResult, run_case, run_suite

__all__ = [
    "Backend", "BackendError", "CASES_ROOT", "CaseError", "CaseResult", "ERROR", "ExecutionCase", "FAIL",
    "OUTCOMES", "OnnxRuntimeBackend", "OpenVinoBackend", "PASS", "ReferenceBackend", "ResultsBackend",
    "UNSUPPORTED", "backend_version_of", "check_case", "iter_cases", "load_backend", "load_case", "load_cases", "pytest_cases",
    "run_case", "run_suite",
]
