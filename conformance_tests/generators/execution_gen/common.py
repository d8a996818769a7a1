"""Shared pieces of the execution-case generator: the case description (Spec), the seeded draws of types and data
(_Gen) and small tensor helpers. The package's modules each build one family of cases; execution_cases.py (the
entry script) plans, builds and writes them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import os
import pathlib
import shutil
import sys
import tempfile
from collections.abc import Iterator

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[3]
CASES = ROOT / "conformance_tests" / "cases" / "execution"

SPEC = "proposal/spec/semantics.md"
STORAGES = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2")
EXPRESSED = ("float32", "float16")


@dataclasses.dataclass
class Spec:
    """One case before it is written: the node, its tensors and what may deviate."""

    op: str
    inputs: list
    outputs: list
    attrs: dict
    anchor: str = "dequantize-op-quantize"
    note: str = ""
    feeds: dict | None = None  # fixed feeds (special cases); random storage data otherwise
    nodes: list | None = None  # a graph of several nodes: (op, input names, output names, attrs); None: one ``op`` node
    hidden: list = dataclasses.field(default_factory=list)  # the graph's intermediate tensors (T), typed where quantized
    qdq: str = "lower"  # the standard-ONNX form: "lower" (onnx_qtypes.lower), "plain" (the graph without its types)
    steps: dict | None = None  # float output -> the real step it is judged in (case.json "steps")
    inner: list = dataclasses.field(default_factory=list)  # tensors inside If / Loop / Scan bodies (T), typed there
    features: tuple = ()  # what the case exercises beyond its types (tags "feature": nan-inputs, chain, ...)
    functions: list = dataclasses.field(default_factory=list)  # model-local FunctionProtos the nodes call
    opset: tuple | None = None  # (IR, opset) when the case needs other versions than _opset chooses
    model_hook: object = None  # model -> None: a last edit of the typed model (version fields, references ...)


def _storage_info(storage: str):
    from onnx_qtypes.proto.storage_types import STORAGE_TYPES  # noqa: PLC0415

    return STORAGE_TYPES[storage]


def from_tests(module: str):
    """A module of tests/ (the test builders, the GGUF block writer), imported without leaving tests/ on the path."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.pop(0)


def _helpers():
    return from_tests("reference_models")


@contextlib.contextmanager
def replacing(folder: pathlib.Path) -> Iterator[pathlib.Path]:
    """A new, empty folder beside ``folder`` for the generator to fill; it takes ``folder``'s place when the block
    ends, and is removed if the block raises: a generator that fails part-way leaves the cases as they were, never
    an empty or half-written folder."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    new = pathlib.Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    mask = os.umask(0)
    os.umask(mask)
    new.chmod(0o777 & ~mask)  # (mkdtemp makes it private) as a folder made by mkdir is
    try:
        yield new
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    old = new.with_name(new.name.replace(".new-", ".old-", 1))
    if folder.exists():
        folder.rename(old)
    try:
        new.rename(folder)
    except BaseException:  # the old cases back in their place
        if old.exists():
            old.rename(folder)
        shutil.rmtree(new, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_documents(folder: pathlib.Path, documents: dict[str, tuple[dict, dict[str, bytes]]]) -> None:
    """Each case's folder: case.json and its files (models, test_data_set_0/*.pb)."""
    for case_id, (doc, files) in documents.items():
        target = folder / case_id
        (target / "test_data_set_0").mkdir(parents=True)
        (target / "case.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for name, data in files.items():
            (target / name).write_bytes(data)


class _Gen:
    """Draws types and data for one case from its own seed."""

    def __init__(self, seed: int, storage: str, expressed: str) -> None:
        from onnx_qtypes.proto.storage_types import STORAGE_TYPES  # noqa: PLC0415

        self.rng = np.random.default_rng(seed)
        self.storage = storage
        self.expressed = expressed
        self.info = STORAGE_TYPES[storage]
        from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES  # noqa: PLC0415

        self.fdtype = EXPRESSED_TYPES[expressed].np_dtype
        self.fdt = EXPRESSED_TYPES[expressed].data_type
        self.auto: list = []
        self.weight_storage = storage  # mixed cases (16-bit activations, 8-bit weights ...) set another

    def scale(self) -> float:
        """A dyadic scale (exact in float16 and float32), small enough that 16-bit storage fits float16."""
        bits = self.info.bits
        top = {2: 1, 4: 2, 8: 5, 16: 13}[bits]
        return float(int(self.rng.integers(1, 32)) * 2.0 ** -int(self.rng.integers(top, top + 4)))

    def out(self, width: float, fitted: bool = True, storage: str | None = None):
        """An output type whose range is about ``width`` reals wide (some values saturate, most do not); fitted
        to what the operator computes when ``fitted`` (graph outputs only); ``storage``: another than the case's."""
        from onnx_qtypes import QType  # noqa: PLC0415

        if storage is not None and storage != self.storage:
            other = _Gen.__new__(_Gen)
            other.__dict__.update(self.__dict__, storage=storage, info=_storage_info(storage))
            qtype = other.out(width, fitted=False)
            if fitted:
                self.auto.append(qtype)
            return qtype
        target = width / (self.info.max - self.info.min)
        exponent = int(np.floor(np.log2(target)))
        if self.expressed == "float16":
            exponent = max(exponent, -14 + 4)
        scale = float(int(self.rng.integers(16, 32)) * 2.0 ** (exponent - 4))
        qtype = QType(self.storage, scale, self.zero_point(), expressed=self.expressed)
        if fitted:
            self.auto.append(qtype)  # replaced by one fitted to the reals the operator computes (``fit``)
        return qtype

    def fit(self, reals: np.ndarray, storage: str | None = None, min_scale: float = 0.0):
        """An output type covering the middle of ``reals`` (a few percent saturate at each end); its scale at
        least ``min_scale``."""
        from onnx_qtypes import QType  # noqa: PLC0415

        if storage is not None and storage != self.storage:
            other = _Gen.__new__(_Gen)
            other.__dict__.update(self.__dict__, storage=storage, info=_storage_info(storage))
            return other.fit(reals, min_scale=min_scale)
        reals = np.asarray(reals, np.float64).ravel()
        lo, hi = float(np.percentile(reals, 4)), float(np.percentile(reals, 96))
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        span = max(hi - lo, 2.0 ** -8)
        target = max(span / (self.info.max - self.info.min), min_scale)
        exponent = int(np.floor(np.log2(target)))
        if self.expressed == "float16":
            exponent = max(exponent, -14 + 4)
        scale = float(int(np.ceil(target / 2.0 ** (exponent - 4))) * 2.0 ** (exponent - 4))
        zero_point = int(np.clip(round(self.info.min - lo / scale), self.info.min, self.info.max))
        return QType(self.storage, scale, zero_point, expressed=self.expressed)

    def width(self, qtype) -> float:
        """How wide the reals of ``qtype`` are."""
        return float(max(qtype.scale)) * (qtype.storage_max - qtype.storage_min)

    def zero_point(self) -> int:
        lo, hi = self.info.min, self.info.max
        quarter = (hi - lo) // 4
        return int(self.rng.integers(lo + quarter, hi - quarter + 1))

    def q(self, count: int | None = None, axis: int | None = None, storage: str | None = None,
          block: int | None = None, **fixed):
        from onnx_qtypes import QType  # noqa: PLC0415

        storage = storage or self.storage
        if block is not None:  # ``count`` parameters, blocks of ``block`` along ``axis``
            return QType(storage, [self.scale() for _ in range(count)], [self.zero_point() for _ in range(count)],
                         axis=axis, block_size=block, expressed=self.expressed)
        if axis is None:
            return QType(storage, fixed.get("scale", self.scale()), fixed.get("zero_point", self.zero_point()),
                         expressed=self.expressed)
        scales = [self.scale() for _ in range(count)]
        zps = [self.zero_point() for _ in range(count)]
        return QType(storage, scales, zps, axis=axis, expressed=self.expressed)

    def weight(self, shape, axis=None, block: int | None = None):
        """A symmetric weight type (zero point 0), per-tensor, per-axis or blocked along ``axis``."""
        from onnx_qtypes import QType  # noqa: PLC0415

        if block is not None:
            count = int(np.prod([-(-d // block) if i == axis else d for i, d in enumerate(shape)]))
            return QType(self.weight_storage, [self.scale() for _ in range(count)], [0] * count, axis=axis,
                         block_size=block, schema="symmetric", expressed=self.expressed)
        if axis is None:
            return QType(self.weight_storage, self.scale(), 0, schema="symmetric", expressed=self.expressed)
        n = shape[axis]
        return QType(self.weight_storage, [self.scale() for _ in range(n)], [0] * n, axis=axis, schema="symmetric",
                     expressed=self.expressed)

    def data(self, qtype, shape):
        lo, hi = qtype.storage_min, qtype.storage_max
        return self.rng.integers(lo, hi + 1, size=shape).astype(np.int64)

    def real(self, shape, spread=2.0):
        return (self.rng.normal(0, spread, shape)).astype(self.fdtype)


def _i64(T, name, values):
    from onnx import TensorProto  # noqa: PLC0415

    return T(name, (len(values),), dtype=TensorProto.INT64, value=np.array(values, np.int64))


def _bias(g, xq, wq, m):
    from onnx_qtypes import QType  # noqa: PLC0415

    ws = list(wq.scale) if wq.axis is not None else [wq.scale[0]] * m
    product = [float(np.float32(xq.scale[0]) * np.float32(s)) for s in ws]
    if wq.axis is None:
        return QType("int32", product[0], 0, schema="symmetric", expressed=g.expressed)
    return QType("int32", product, [0] * m, axis=0, schema="symmetric", expressed=g.expressed)


def _storage_array(values, qtype) -> np.ndarray:
    """Stored values in the storage type's numpy type (integers exactly; float8 / float4 values representable)."""
    if qtype.storage_type.is_float:
        return np.asarray(values).astype(qtype.storage_type.np_dtype)
    return np.asarray(values).astype(np.int64).astype(qtype.storage_type.np_dtype)


def _snake(op: str) -> str:
    """The operator's file name in reference_ops/ops (MatMul -> matmul, ConvTranspose -> conv_transpose)."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in op).lstrip("_")
    return snake.replace("mat_mul", "matmul").replace("n_d", "nd")


def far_from_ties(x: np.ndarray, qtype) -> np.ndarray:
    """``x`` (in its float type) with every near-tie element for quantizing to ``qtype`` moved to a quarter step
    off its half-integer, so that a QuantizeLinear of it is exact in every expressed-type division
    (semantics.md#quantize-precision); exact ties stay."""
    from onnx_qtypes.conformance.tolerance import near_ties  # noqa: PLC0415
    from onnx_qtypes.reference_ops.quant import broadcast_parameters  # noqa: PLC0415

    x = np.asarray(x)
    scale, _ = broadcast_parameters(qtype, x.shape)
    scale = np.broadcast_to(scale, x.shape)
    near = near_ties(x, scale, qtype.expressed)
    if not near.any():
        return x
    moved = (np.floor(x.astype(np.float64) / scale) + 0.25) * scale
    return np.where(near, moved.astype(x.dtype), x)


def output_folder(doc: str, default: pathlib.Path, kind: str) -> pathlib.Path:
    """The one argument of a generator script: the folder its cases replace (``default``: the committed ones). A
    folder that holds anything but case folders of ``kind`` (each with a case.json saying so), or that is a
    symbolic link, is refused with exit 2, never emptied."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    parser.add_argument("out", nargs="?", type=pathlib.Path, default=default,
                        help=f"the folder of cases to write (default: {default.relative_to(ROOT)})")
    out = parser.parse_args().out
    if out.is_symlink():
        parser.error(f"{out} is a symbolic link; give the folder itself")
    if out.exists() and not out.is_dir():
        parser.error(f"{out} is not a folder")
    strangers = sorted(p.name for p in out.iterdir() if _kind(p) != kind) if out.is_dir() else []
    if strangers:
        parser.error(f"{out} holds {len(strangers)} entries that are not {kind} case folders (first: "
                     f"{strangers[0]!r}); the generator replaces the folder: give a new or empty one, or one of "
                     f"{kind} cases")
    return out


def _kind(entry: pathlib.Path) -> str | None:
    """The ``kind`` an entry's case.json declares; None for anything else."""
    try:
        return json.loads((entry / "case.json").read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
