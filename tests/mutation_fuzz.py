"""A seeded mutation fuzzer: real models, broken byte by byte and field by field, through every command.

Used by ``test_fuzz.py`` (a few hundred mutants, in CI) and ``fuzz_long.py`` (other seeds, thousands). A
mutant is the serialized bytes of a seed model after one to three mutations, each of one of two kinds:

- bytes: flip bits, overwrite a run with 0x00 / 0xff / random bytes, truncate, delete, duplicate or insert a
  run (what a damaged download or a wrong offset does);
- structure: parse the ModelProto, pick one field anywhere in it (any depth, subgraphs and tensors too) and
  change it: an integer to 0, -1, a huge or a boundary value (2^31, 2^62, ...), a float to NaN / inf, a
  string to another name of the model (rewiring), an op type or domain, raw data cut short or grown, a
  repeated field shuffled, cleared, cut or grown, a message cleared; or graph-level edits: nodes reversed,
  a node reading its own output, an opset version moved.

Every mutant goes through the command line's own code in-process (``cli.build_parser`` then the command's
``run``, without ``main``'s catch-all): check (a profile and report format per mutant), show (table, json,
html in turn), lift, lower (of the mutant, and of the lift's output) and run (definitional or integer
kernels, on zero inputs shaped from the declared inputs). Each call may raise only QTypesError (the
project's own errors); anything else, or a call running past its time guard, is a crash, reported with the
seed file, the mutant's index and its mutations, enough to rebuild it with ``mutant(...)``.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import io
import pathlib
import random
import resource
import signal
import sys
import traceback
from collections.abc import Callable, Iterator

import numpy as np
import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from onnx_qtypes.cli import build_parser
from onnx_qtypes.proto.errors import QTypesError

ROOT = pathlib.Path(__file__).resolve().parents[1]
INTEGERS = [0, 1, -1, 2, 3, 7, 255, 2**15, 2**31 - 1, -(2**31), 2**32, 2**40, 2**62, 2**63 - 1, -(2**63)]
FLOATS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-45, 3.4e38, -1.0, 1e30]
OP_TYPES = ["QuantizeLinear", "DequantizeLinear", "Conv", "MatMul", "Scan", "Loop", "If", "Identity", "Relu",
            "Concat", "Reshape", "Gemm", "QLinearConv", "DynamicQuantizeLinear", "MatMulNBits", "Softmax", "Split"]
DOMAINS = ["", "ai.onnx", "com.microsoft", "qonnx.custom_op.general", "bogus"]


class Hang(Exception):
    """A call ran past its time guard."""


@dataclasses.dataclass(frozen=True)
class Mutant:
    seed: str  # the seed model's path, relative to the repository
    index: int
    fuzz_seed: int
    mutations: tuple[str, ...]
    data: bytes

    @property
    def key(self) -> str:
        """A stable name for the mutant (what KNOWN lists hold)."""
        return f"{self.seed}#{self.fuzz_seed}:{self.index}"


@dataclasses.dataclass(frozen=True)
class Crash:
    mutant: Mutant
    call: str
    error: str  # "ExcType: message" or "hang after N s"
    where: str  # the innermost frame of ours (file:line), the crash site

    def __str__(self) -> str:
        return (f"{self.mutant.key} [{'; '.join(self.mutant.mutations)}] -> {self.call}: {self.error} "
                f"at {self.where}")


# --- seeds -------------------------------------------------------------------------------------------------


def seed_files(sample: int, rng_seed: int = 0) -> list[pathlib.Path]:
    """The examples, and ``sample`` suite models: one execution case per operator first, then checker cases."""
    files = sorted((ROOT / "examples").glob("*.onnx")) + sorted((ROOT / "examples" / "ops").glob("*.onnx"))
    cases = ROOT / "conformance_tests" / "cases"
    by_operator: dict[str, list[pathlib.Path]] = {}
    for folder in sorted((cases / "execution").iterdir()):
        by_operator.setdefault(folder.name.split("-")[0], []).append(folder)
    rng = random.Random(rng_seed)
    picked = [rng.choice(folders) for folders in by_operator.values()]
    checker = sorted((cases / "checker").iterdir())
    picked += rng.sample(checker, min(len(checker), max(sample - len(picked), 0)))
    suite = []
    for folder in picked[:sample]:
        suite += [p for p in (folder / "model.onnx", folder / "model.qdq.onnx") if p.exists()]
    return files + suite


# --- mutations ---------------------------------------------------------------------------------------------


def _bytes_mutation(rng: random.Random, data: bytearray) -> str:
    if not data:
        data.extend(rng.randbytes(8))
        return "bytes: filled an empty file"
    at = rng.randrange(len(data))
    run = rng.randint(1, 16)
    kind = rng.choice(["flip", "zero", "ones", "random", "truncate", "delete", "duplicate", "insert"])
    if kind == "flip":
        data[at] ^= 1 << rng.randrange(8)
    elif kind in ("zero", "ones", "random"):
        fill = {"zero": bytes(run), "ones": b"\xff" * run, "random": rng.randbytes(run)}[kind]
        data[at:at + run] = fill
    elif kind == "truncate":
        del data[at:]
    elif kind == "delete":
        del data[at:at + run]
    elif kind == "duplicate":
        data[at:at] = data[at:at + run]
    else:
        data[at:at] = rng.randbytes(run)
    return f"bytes: {kind} at {at} ({run})"


def _fields(message: Message, path: str, out: list, depth: int = 0) -> None:
    """Every (message, field descriptor, path) below ``message``, set fields and repeated ones alike."""
    if depth > 12:
        return
    for field in message.DESCRIPTOR.fields:
        is_repeated = field.is_repeated
        if not is_repeated and field.message_type is not None and not message.HasField(field.name):
            continue
        out.append((message, field, f"{path}/{field.name}"))
        if field.message_type is None:
            continue
        value = getattr(message, field.name)
        items = list(value)[:64] if is_repeated else [value]
        for k, item in enumerate(items):
            if isinstance(item, Message):
                _fields(item, f"{path}/{field.name}" + (f"/{k}" if is_repeated else ""), out, depth + 1)


def _names(model: onnx.ModelProto) -> list[str]:
    names = {n for node in model.graph.node for n in (*node.input, *node.output)}
    names.update(t.name for t in model.graph.initializer)
    return sorted(n for n in names if isinstance(n, str)) or ["x"]  # a name that is not UTF-8 arrives as bytes


def _scalar(rng: random.Random, field: FieldDescriptor, names: list[str]) -> object:
    t = field.type
    if t in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return rng.choice(FLOATS)
    if t == FieldDescriptor.TYPE_STRING:
        if field.name == "op_type":
            return rng.choice(OP_TYPES)
        if field.name == "domain":
            return rng.choice(DOMAINS)
        return rng.choice([*names, "", "nowhere", names[0] + "_x"])
    if t == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.choice([0, 1, 3, 8, 64]))
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FieldDescriptor.TYPE_ENUM:
        values = [v.number for v in field.enum_type.values]
        return rng.choice(values)  # onnx.proto is proto2: its enums are closed
    bits = 32 if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32,
                       FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32) else 64
    unsigned = t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED32,
                     FieldDescriptor.TYPE_FIXED64)
    lo, hi = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    value = rng.choice([*INTEGERS, rng.randint(-300, 300)])
    return min(max(value, lo), hi)


def _structure_mutation(rng: random.Random, model: onnx.ModelProto) -> str:
    kind = rng.random()
    graph = model.graph
    if kind < 0.06 and len(graph.node) > 1:
        nodes = list(graph.node)[::-1]
        del graph.node[:]
        graph.node.extend(nodes)
        return "graph: nodes reversed"
    if kind < 0.10 and graph.node:
        node = rng.choice(graph.node)
        if node.input and node.output:
            node.input[rng.randrange(len(node.input))] = node.output[0]
            return f"graph: node {node.name!r} reads its own output"
    if kind < 0.14 and model.opset_import:
        model.opset_import[rng.randrange(len(model.opset_import))].version = rng.choice([1, 7, 10, 11, 12, 13, 18,
                                                                                           19, 20, 23, 25, 26, 99])
        return f"opset: version {model.opset_import[0].version}"
    fields: list = []
    _fields(model, "", fields)
    message, field, path = rng.choice(fields)
    names = _names(model)
    if field.is_repeated:
        values = getattr(message, field.name)
        n = len(values)
        action = rng.choice(["clear", "drop", "duplicate", "swap", "append", "set"])
        if action == "clear" or (n == 0 and action != "append"):
            del values[:]
            return f"{path}: cleared"
        if action == "drop":
            del values[rng.randrange(n)]
        elif action == "swap" and n > 1:
            i, j = rng.sample(range(n), 2)
            if field.message_type is None:
                values[i], values[j] = values[j], values[i]
            else:
                a, b = type(values[i])(), type(values[j])()
                a.CopyFrom(values[i])
                b.CopyFrom(values[j])
                values[i].CopyFrom(b)
                values[j].CopyFrom(a)
        elif action == "duplicate" or (action == "swap" and n <= 1):
            k = rng.randrange(n)
            if field.message_type is None:
                values.append(values[k])
            else:
                values.add().CopyFrom(values[k])
        elif action == "append":
            if field.message_type is None:
                with contextlib.suppress(ValueError, TypeError):
                    values.append(_scalar(rng, field, names))
            else:
                values.add()
        else:
            k = rng.randrange(n)
            if field.message_type is None:
                with contextlib.suppress(ValueError, TypeError):
                    values[k] = _scalar(rng, field, names)
            else:
                values[k].Clear()
        return f"{path}: {action}"
    if field.message_type is not None:
        message.ClearField(field.name)
        return f"{path}: cleared"
    value = _scalar(rng, field, names)
    if field.name == "raw_data" and rng.random() < 0.7:  # cut short or grown by a little: sizes that almost fit
        raw = getattr(message, "raw_data")
        value = raw[: max(len(raw) - rng.randint(1, 4), 0)] if rng.random() < 0.5 else raw + bytes(rng.randint(1, 4))
    try:
        setattr(message, field.name, value)
    except (ValueError, TypeError):  # protobuf will not hold it (a closed enum, a type out of range)
        return f"{path}: left (protobuf refuses {value!r})"[:160]
    return f"{path} = {value!r}"[:160]


def _structure_step(rng: random.Random, model: onnx.ModelProto) -> str:
    """``_structure_mutation``, cut short where it reads as text a string an earlier mutation left not UTF-8
    (protobuf raises then; the mutant keeps what was changed before)."""
    try:
        return _structure_mutation(rng, model)
    except UnicodeDecodeError:
        return NOT_TEXT


NOT_TEXT = "(a string not UTF-8 read: mutation cut short)"


def _decodes(data: bytes) -> bool:
    try:
        onnx.ModelProto().ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        return False
    return True


def mutant(seed: pathlib.Path, fuzz_seed: int, index: int, data: bytes | None = None) -> Mutant:
    """Mutant ``index`` of ``seed`` (whose bytes are ``data`` when given) under ``fuzz_seed``: the same
    arguments give the same bytes."""
    data = seed.read_bytes() if data is None else data
    digest = hashlib.sha256(f"{seed.relative_to(ROOT)}#{fuzz_seed}:{index}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "little"))
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        if rng.random() < 0.25:
            for _ in range(4):  # most damaged bytes no longer decode at all: prefer those that still do
                buffer = bytearray(data)
                what = _bytes_mutation(rng, buffer)
                if _decodes(bytes(buffer)):
                    break
            done.append(what)
            data = bytes(buffer)
            continue
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError):
            continue  # an earlier byte mutation broke it: stays broken
        done.append(_structure_step(rng, model))
        try:
            data = model.SerializeToString()
        except Exception:  # noqa: BLE001 - a value protobuf will not encode: keep the last bytes
            done.append("(not serializable: kept)")
    return Mutant(str(seed.relative_to(ROOT)), index, fuzz_seed, tuple(done), data)


def mutants(seeds: list[pathlib.Path], count: int, fuzz_seed: int) -> Iterator[Mutant]:
    """``count`` mutants spread over ``seeds`` in turn (every seed read first: a regenerated case folder may
    vanish for a moment while a long run goes on)."""
    data = [seed.read_bytes() for seed in seeds]
    for i in range(count):
        yield mutant(seeds[i % len(seeds)], fuzz_seed, i // len(seeds), data[i % len(seeds)])


# --- running the commands ----------------------------------------------------------------------------------


@contextlib.contextmanager
def time_guard(seconds: float) -> Iterator[None]:
    """Raise Hang in the main thread when the block runs past ``seconds`` (Python code only: a long C call
    ends first)."""
    def expire(signum, frame):  # noqa: ANN001, ARG001
        raise Hang(f"hang after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def memory_guard(extra_bytes: int) -> Iterator[None]:
    """Limit the address space to what the process maps now plus ``extra_bytes``: a mutant that makes a command
    allocate without bound ends in MemoryError (a crash the report names), not in a machine out of memory."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        mapped = int(fh.read().split()[0]) * resource.getpagesize()
    limit = mapped + extra_bytes if hard == resource.RLIM_INFINITY else min(mapped + extra_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _zero_inputs(path: pathlib.Path, npz: pathlib.Path) -> None:
    """An .npz of zeros for the declared graph inputs (unknown sizes 1), or none when they cannot be read."""
    from onnx_qtypes.proto.reader import read_model
    from onnx_qtypes.proto.encoding import plain_data_type

    try:
        model = read_model(path).model
    except QTypesError:
        return
    inits = {t.name for t in model.graph.initializer}
    arrays = {}
    for vi in model.graph.input:
        if vi.name in inits or vi.type.WhichOneof("value") != "tensor_type":
            continue
        tensor_type = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") and 0 <= d.dim_value <= 64 else 1 for d in tensor_type.shape.dim]
        try:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(plain_data_type(tensor_type.elem_type))
            arrays[vi.name] = np.zeros(dims, dtype)
        except Exception:  # noqa: BLE001 - a type numpy has no dtype for: that input is left out
            continue
    with open(npz, "wb") as fh:
        np.savez(fh, **arrays)


def _command(argv: list[str]) -> Callable[[], object]:
    def call() -> object:
        args = build_parser().parse_args(argv)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return args._run(args)

    return call


PROFILES = ["generic", "tflite-int8", "vitis-ai-dpu", "qnn-htp", "tensorrt-int8", "ethos-u-vela"]
CHECK_FORMATS = ["text", "json", "sarif"]
SHOW_FORMATS = ["table", "json", "html"]


def calls(m: Mutant, folder: pathlib.Path) -> list[tuple[str, Callable[[], object]]]:
    """The command-line calls made on mutant ``m`` (files in ``folder``), each a name and a thunk."""
    path = folder / "mutant.onnx"
    path.write_bytes(m.data)
    for name in ("lifted.onnx", "lowered.onnx", "relowered.onnx", "out.npz", "report.txt", "show.txt"):
        (folder / name).unlink(missing_ok=True)
    k = m.index + len(m.seed)
    npz = folder / "in.npz"
    npz.unlink(missing_ok=True)
    _zero_inputs(path, npz)
    out = [
        ("check", _command(["check", str(path), "--profile", PROFILES[k % len(PROFILES)],
                            "--format", CHECK_FORMATS[k % 3], "-o", str(folder / "report.txt")])),
        (f"show --format {SHOW_FORMATS[k % 3]}",
         _command(["show", str(path), "--format", SHOW_FORMATS[k % 3], "-o", str(folder / "show.txt")])),
        ("lift", _command(["lift", str(path), str(folder / "lifted.onnx")])),
        ("lower", _command(["lower", str(path), str(folder / "lowered.onnx")])),
        ("lower (the lift's output)", lambda: (folder / "lifted.onnx").exists()
         and _command(["lower", str(folder / "lifted.onnx"), str(folder / "relowered.onnx")])()),
    ]
    if npz.exists():
        kernels = "integer" if k % 2 else "definitional"
        out.append((f"run --kernels {kernels}", _command(["run", str(path), "--inputs", str(npz),
                                                          "--outputs", str(folder / "out.npz"),
                                                          "--kernels", kernels])))
    return out


def _site(tb: traceback.StackSummary) -> str:
    ours = [f for f in tb if "/site-packages/" not in f.filename and "mutation_fuzz" not in f.filename]
    frame = (ours or list(tb))[-1]
    try:
        where = str(pathlib.Path(frame.filename).resolve().relative_to(ROOT))
    except ValueError:
        where = frame.filename
    return f"{where}:{frame.lineno}"


def exercise(m: Mutant, folder: pathlib.Path, seconds: float = 20.0,
             outcomes: collections.Counter | None = None) -> list[Crash]:
    """Every call on ``m``; the crashes (anything but QTypesError, or a hang). ``outcomes`` counts
    (command, "ok" | "refused" | "crash") when given."""
    crashes = []
    outcomes = collections.Counter() if outcomes is None else outcomes
    for name, call in calls(m, folder):
        command = name.split()[0]
        try:
            with time_guard(seconds):
                call()
            outcomes[command, "ok"] += 1
        except QTypesError:
            outcomes[command, "refused"] += 1
            continue
        except (Hang, Exception) as exc:  # noqa: BLE001 - what we look for
            text = " ".join(str(exc).split())[:300]
            outcomes[command, "crash"] += 1
            crashes.append(Crash(m, name, f"{type(exc).__name__}: {text}",
                                 _site(traceback.extract_tb(exc.__traceback__))))
    return crashes


def report(crashes: list[Crash], out=sys.stdout) -> None:  # noqa: ANN001
    for crash in crashes:
        print(crash, file=out)
