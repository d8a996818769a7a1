"""Write the execution conformance cases: typed models, their storage-integer inputs and the outputs our
definitional reference computes (run: python conformance_tests/generators/execution_cases.py [OUT_DIR]).

Every operator of reference_ops/ops is crossed with the storage types it runs on (int8, uint8, int16, uint16,
int4, uint4, int2, uint2), per-tensor and per-axis weights, and float32 / float16 expressed types
(execution_gen/operators.py); special cases add rounding ties, saturation and zero points at the range's extremes
(specials.py); small graphs requantize twice, bind dynamic types and run control flow (graphs.py); the type's own
features (float8 / float4 storage, int32 saturation, narrowed ranges, the five schemas static and dynamic,
blocked and per-axis weights on every weight-reading operator, parameters by reference, the version field,
negative scales, bfloat16, model-local functions, NaN and infinite inputs) have cases built so that getting one
of them wrong changes an output (features.py); the cases the RFC's answers to the review's questions name are in decided.py, and
requantizing chains of depth 2 to 8 judged by the chain rule in chains.py.

Each case folder conformance_tests/cases/execution/<id>/ holds case.json (case.schema.json: tolerance and its
reason from onnx_qtypes.conformance.tolerance, tags from .coverage), model.onnx (the typed model, fail-closed
markers), model.qdq.onnx (``onnx_qtypes.lower`` of it, or the plain graph for standard-ONNX-only cases) and
test_data_set_0/ in the ONNX backend-test layout (input_<i>.pb, output_<i>.pb). Data come from fixed seeds (numpy
default_rng), so the files are the same on every run; tests/test_conformance_execution_cases.py regenerates
them and fails when the committed files drift. A combination that ``lower`` refuses or that the reference
cannot run is left out (and printed).
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from execution_gen.build import SKIPPED, build_case  # noqa: E402
from execution_gen.chains import _chains  # noqa: E402
from execution_gen.common import CASES, EXPRESSED, STORAGES, _helpers, _snake, replacing, write_documents  # noqa: E402
from execution_gen.decided import _decided  # noqa: E402
from execution_gen.features import _bfloat16, _features  # noqa: E402
from execution_gen.graphs import MIXED, _graphs  # noqa: E402
from execution_gen.operators import BLOCKED, WEIGHTED, _ops  # noqa: E402
from execution_gen.specials import _specials  # noqa: E402


def _plan(rm):
    ops = _ops(rm)
    for op, build in ops.items():
        variants = (("per-tensor", "per-axis", "blocked") if op in BLOCKED else ("per-tensor", "per-axis")
                    if op in WEIGHTED else ("per-tensor",))
        for storage in STORAGES:
            for expressed in EXPRESSED:
                for variant in variants:
                    case_id = f"{_snake(op)}-{storage}-{expressed}-{variant}"
                    yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, build
    for name, build in _specials(rm).items():
        for storage in STORAGES:
            for expressed in EXPRESSED:
                case_id = f"{name}-{storage}-{expressed}"
                yield case_id, zlib.crc32(case_id.encode()), storage, expressed, name, build
    for op in ("MatMul", "Conv", "Gemm"):  # activations and weights of different storage types
        for storage, weights in MIXED:
            for expressed in EXPRESSED:
                for variant in ("per-tensor", "per-axis"):
                    case_id = f"{_snake(op)}-{storage}-w{weights}-{expressed}-{variant}"
                    yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, ops[op], weights
    for name, (build, storages, variants) in _graphs(rm).items():
        for storage in storages:
            for expressed in EXPRESSED:
                for variant in variants:
                    case_id = f"{name}-{storage}-{expressed}" + (f"-{variant}" if len(variants) > 1 else "")
                    yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, build
    for op, storage, variants in _bfloat16(rm):
        for variant in variants:
            case_id = f"{_snake(op)}-{storage}-bfloat16-{variant}"
            yield case_id, zlib.crc32(case_id.encode()), storage, "bfloat16", variant, ops[op]
    for case_id, storage, expressed, variant, build, weights in _features(rm):
        yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, build, *([weights] if weights else [])
    for case_id, storage, expressed, variant, build in (*_decided(rm), *_chains(rm)):
        yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, build


def case_documents() -> dict[str, tuple[dict, dict[str, bytes]]]:
    """Case id -> (case.json document, {relative path: bytes})."""
    rm = _helpers()
    SKIPPED.clear()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case_id, seed, storage, expressed, variant, build, *weights in _plan(rm):
            if case_id in out:
                raise ValueError(f"case id {case_id!r} is planned twice")
            made = build_case(rm, case_id, seed, storage, expressed, variant, build, pathlib.Path(tmp), *weights)
            if made is not None:
                out[case_id] = made
    return out


def write(folder: pathlib.Path = CASES) -> int:
    """Replace ``folder`` with every case; returns how many were written."""
    documents = case_documents()
    import gguf_cases  # noqa: PLC0415 (beside this file: the LLM weight-format cases, gguf-*, into the same folder)

    with replacing(folder) as new:
        write_documents(new, documents)
        return len(documents) + gguf_cases.write(new)


if __name__ == "__main__":
    from execution_gen.common import output_folder  # noqa: PLC0415 (beside this file)

    out = output_folder(__doc__, CASES, "execution")
    print(f"{write(out)} execution cases in {out}")
    for line in SKIPPED:
        print("left out:", line)
