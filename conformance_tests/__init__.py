"""The conformance suite: cases a vendor runtime runs, and their runner.

- ``load_suite(root=None, filter=None, tags=None)``: every case a backend runs,
  execution and must-reject (default: this package's cases/ folder);
  ``load_cases`` / ``iter_cases``: the execution cases only (cases/execution);
- ``Backend``: the protocol (``name``, ``supports(case)``, ``prepare(case)``,
  ``run(prepared, feeds)``; optional ``version`` and ``form``); a backend
  refuses a model by raising. ``load_backend(spec)`` builds one by its
  command-line name. The contract: conformance_tests/BACKENDS.md;
- ``run_suite(backend, filter=None, jobs=1, timeout=None, tags=None)``: a
  ``CaseResult`` per case (outcome pass / fail / unsupported / error);
- ``pack_sub_byte`` / ``unpack_sub_byte``: the cases' widened 4- and 2-bit
  arrays packed in ONNX's order (element 0 in the lowest bits) and back, what a
  runtime API taking packed tensors (onnxruntime's Int4x2, OpenVINO's i4)
  wants; ``to_bytes`` / ``from_bytes``: the same for every element type numpy
  cannot hand over (float8, bfloat16, float4, 4- and 2-bit integers);
- ``deviations``: known deviations, the project's published list and a
  vendor's own file (``load_known``, ``draft_known``);
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
    RecordedError,
    ReferenceBackend,
    ResultsBackend,
    backend_version as backend_version_of,
    from_bytes,
    load_backend,
    pack_sub_byte,
    to_bytes,
    unpack_sub_byte,
)
from .execution_cases import (
    CASES_ROOT,
    SUITE_ROOT,
    Case,
    CaseError,
    ExecutionCase,
    RejectCase,
    iter_cases,
    load_case,
    load_cases,
    load_suite,
    parse_tags,
)
from .judging import ERROR, FAIL, OUTCOMES, PASS, UNSUPPORTED
from .pytest_entry import check_case, pytest_cases
from .runner import CaseResult, run_case, run_suite

__all__ = [
    "Backend", "BackendError", "CASES_ROOT", "Case", "CaseError", "CaseResult", "ERROR", "ExecutionCase", "FAIL",
    "OUTCOMES", "OnnxRuntimeBackend", "OpenVinoBackend", "PASS", "RecordedError", "ReferenceBackend", "RejectCase",
    "ResultsBackend", "SUITE_ROOT", "UNSUPPORTED", "backend_version_of", "check_case", "from_bytes", "iter_cases",
    "load_backend", "load_case", "load_cases", "load_suite", "pack_sub_byte", "parse_tags", "pytest_cases", "run_case",
    "run_suite", "to_bytes", "unpack_sub_byte",
]
