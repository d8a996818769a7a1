"""com.microsoft.MatMulNBits (onnxruntime's 2 / 4 / 8-bit weight-only MatMul) to and from a typed blocked weight.

onnxruntime's ``MatMulNBitsQuantizer`` and NNCF write 4-bit LLM weights as one contrib node::

    Y = A @ W (+ bias),  W[k, n] = scales[n, k // block_size] * (code[n, k] - zero_point[n, k // block_size])

with the codes packed N-major: B is uint8 [N, ceil(K / block_size), block_size * bits / 8], each byte
holding 8 / bits codes, the first in the lowest bits. Zero points are packed the same way per row
(uint8 [N, ceil(n_blocks * bits / 8)]), or unpacked in the scales' float type, or absent: then
2^(bits - 1). ``g_idx`` (deprecated) maps each row k to its block; ``bias`` is added last.

``unfuse`` (the lift's first step) rewrites each node as what it means in standard ONNX: the weight as
an integer initializer [K, N] with a DequantizeLinear (axis 0, block_size), a plain MatMul and an Add
for the bias. The DequantizeLinear is marked as written for that MatMul, so the QDQ lift folds it: the
weight becomes a typed blocked tensor read by the unmodified MatMul (parameters above the threshold
stay in initializers, by reference). Codes with explicit zero points are stored unsigned (uint2/4/8)
with those zero points; without zero points they are stored signed (int2/4/8, code - 2^(bits-1)) with
zero point 0, the same values. A node whose meaning the type cannot carry exactly stays as it was,
with a warning naming it and why.

``fuse`` (``lower(form="matmulnbits")``) is the inverse on a lowered QDQ model: every constant 2-D
weight blocked along axis 0 whose DequantizeLinear feeds only MatMul B inputs becomes MatMulNBits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from onnx import ModelProto, NodeProto, TensorProto, helper, numpy_helper

from onnx_qtypes.interop import metadata
from onnx_qtypes.interop.errors import LowerError, MalformedQDQError
from onnx_qtypes.interop.graph import (MS_DOMAIN, STANDARD_DOMAINS, GraphIndex, Names, attributes, infer,
                                      int_attribute, node_label)
from onnx_qtypes.proto.default_domain import not_imported
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.proto.external import IN_ORDER, is_lazy, spill, spill_chunks, spill_deferred, tensor_bytes
from onnx_qtypes.proto.packing import pack, transposed_4bit, unpack
from onnx_qtypes.proto.storage_types import EXPRESSED_BY_DATA_TYPE, STORAGE_BY_DATA_TYPE, STORAGE_TYPES, StorageType

OP = "MatMulNBits"
BITS = (2, 4, 8)
ACCURACY_KEY = metadata.PREFIX + "accuracy_level"  # on the MatMul: MatMulNBits' compute hint, kept for lower
UNFUSED_KEY = metadata.PREFIX + "read_from"  # on the DequantizeLinear unfuse writes (the lift's counts skip it)


def is_matmul_nbits(node: NodeProto) -> bool:
    return node.op_type == OP and node.domain == MS_DOMAIN


def _pad_last(values: np.ndarray, multiple: int, fill: int = 0) -> np.ndarray:
    extra = -values.shape[-1] % multiple
    if not extra:
        return values
    return np.concatenate([values, np.full((*values.shape[:-1], extra), fill, values.dtype)], axis=-1)


# -- lift: MatMulNBits -> DequantizeLinear + MatMul --------------------------------------------------------------
def ensure_domain(model: ModelProto) -> MalformedQDQError | None:
    """Import com.microsoft when a main-graph node uses it without the import (NNCF writes such models).

    Returns the finding (QT313, located at the first such node), whose message the lift also gives as a note.
    """
    if any(o.domain == MS_DOMAIN for o in model.opset_import):
        return None
    users = [i for i, n in enumerate(model.graph.node) if n.domain == MS_DOMAIN]
    if not users:
        return None
    model.opset_import.add(domain=MS_DOMAIN, version=1)
    first = model.graph.node[users[0]]
    return MalformedQDQError(
        f"{node_label(first, users[0])}, {not_imported(MS_DOMAIN, len(users) - 1)}; "
        f"read as {MS_DOMAIN} version 1 (add {{domain: {MS_DOMAIN!r}, version: 1}})", rule="QT313", node=users[0])


@dataclasses.dataclass
class ContribRead:
    """What the lift's first step did: notes, warnings (nodes left), problems (QT313) and nodes unfused."""

    notes: list[str]
    warnings: list[str]
    problems: list[MalformedQDQError]
    unfused: int


def read_contrib_weights(model: ModelProto) -> ContribRead:
    """The lift's first step, in place: the contrib domain imported if a node needs it, MatMulNBits unfused.
    The missing import is a note and a problem (QT313)."""
    missing = ensure_domain(model)
    notes, warns, unfused = unfuse(model)
    return ContribRead(([str(missing)] if missing else []) + notes, warns, [missing] if missing else [], unfused)


def from_contrib_op(node: NodeProto) -> bool:
    """Whether ``node`` is a DequantizeLinear ``unfuse`` wrote (not one of the file's own)."""
    return any(p.key == UNFUSED_KEY for p in node.metadata_props)


class _Refused(Exception):
    """This node's meaning has no exact typed form; the message says why."""


def unfuse(model: ModelProto) -> tuple[list[str], list[str], int]:
    """Rewrite the main graph's MatMulNBits nodes as blocked DequantizeLinear + MatMul (+ Add), in place.

    Returns (notes, warnings, nodes rewritten); a node that cannot be rewritten exactly stays, with a warning.
    """
    graph = model.graph
    indices = [i for i, n in enumerate(graph.node) if is_matmul_nbits(n)]
    if not indices:
        return [], [], 0
    ix = GraphIndex(graph, infer(model))
    names = Names(ix.all_names())
    notes, warns = [], []
    replaced: dict[int, list[NodeProto]] = {}
    for i in indices:
        try:
            replaced[i] = _unfuse_node(ix, i, names, notes)
        except _Refused as exc:
            warns.append(f"{ix.label(i)}: {exc}; left as it was")
    if not replaced:
        return notes, warns, 0
    nodes = [n for i, node in enumerate(graph.node) for n in replaced.get(i, [node])]
    del graph.node[:]
    graph.node.extend(nodes)
    read = {name for n in graph.node for name in n.input} | {o.name for o in graph.output}
    gone = {name for i in replaced for name in ix.nodes[i].input[1:5] if name and name not in read}  # B .. g_idx
    for k in reversed([k for k, t in enumerate(graph.initializer) if t.name in gone]):
        del graph.initializer[k]
    notes.append(f"{len(replaced)} {MS_DOMAIN}.{OP} node(s) read as a MatMul with a blocked weight")
    return notes, warns, len(replaced)


def _unfuse_node(ix: GraphIndex, i: int, names: Names, notes: list[str]) -> list[NodeProto]:
    node = ix.nodes[i]
    attrs = attributes(node)
    k, n, block = _int_attribute(attrs, "K"), _int_attribute(attrs, "N"), _int_attribute(attrs, "block_size")
    bits = _int_attribute(attrs, "bits", 4)
    if bits not in BITS:
        raise _Refused(f"bits={bits}: the extension stores 2, 4 or 8-bit integers only")
    if _int_attribute(attrs, "weight_prepacked", 0):
        raise _Refused("weight_prepacked: B is in an execution provider's private layout")
    if k <= 0 or n <= 0 or block <= 0 or (block * bits) % 8:
        raise _Refused(f"K={k}, N={n}, block_size={block} do not describe a weight")
    inputs = list(node.input) + [""] * (6 - len(node.input))
    a, b, s, zp, g_idx, bias = inputs[:6]
    blocks, blob = -(-k // block), block * bits // 8
    packed = _constant(ix, b, "B", TensorProto.UINT8)
    if packed.shape != (n, blocks, blob):
        raise _Refused(f"B {b!r} has shape {list(packed.shape)}, not [N, ceil(K / block_size), block_size * bits / 8] "
                       f"= {[n, blocks, blob]}")
    scale_type = ix.constant_dtype(s) if s else None
    if scale_type not in EXPRESSED_BY_DATA_TYPE:
        raise _Refused(f"scales {s!r} are not a float, float16 or bfloat16 constant")
    scales = ix.constant(s)
    if scales.size != n * blocks:
        raise _Refused(f"scales {s!r} hold {scales.size} values, not N * n_blocks = {n * blocks}")
    if ix.elem_type(a) not in (None, scale_type):
        raise _Refused(f"A {a!r} and scales {s!r} differ in type")
    scales = scales.reshape(n, blocks)
    half = 1 << (bits - 1)
    if g_idx:
        groups = ix.constant(g_idx)
        if groups is None or groups.shape != (k,) or not np.array_equal(groups, np.arange(k) // block):
            raise _Refused(f"g_idx {g_idx!r} maps rows to blocks out of order (act-order); a blocked type "
                           "has contiguous blocks along K")
    if not np.all(np.isfinite(scales.astype(np.float64)) & (scales != 0)):
        raise _Refused(f"scales {s!r} hold zero or non-finite values; a quantized type's scale is finite and > 0")
    zero_points = _zero_points(ix, zp, bits, n, blocks, scale_type) if zp else None
    if g_idx and zero_points is not None and np.any(zero_points != half):
        raise _Refused(f"g_idx {g_idx!r} beside zero points other than {half}: onnxruntime 1.32's CPU kernel then "
                       f"reads every zero point as {half} (measured), unlike the operator's text; which one the "
                       "model means is unknown")
    negative = scales < 0  # onnxruntime's symmetric quantizer writes them: s * (c - z) = -s * ((top - c) - (top - z))
    mirrored = None
    if negative.any():
        top = (1 << bits) - 1
        zero_points = np.full((n, blocks), half, np.int64) if zero_points is None else zero_points
        mirrored = negative
        zero_points = np.where(negative, top - zero_points, zero_points)
        scales = np.abs(scales)
        notes.append(f"{ix.label(i)}: {int(negative.sum())} block(s) with a negative scale, stored mirrored "
                     f"(code {top} - c, zero point {top} - z, scale -s: the same values)")
    storage = STORAGE_TYPES[f"uint{bits}" if zero_points is not None else f"int{bits}"]
    weight = names.fresh(b.removesuffix(f"_Q{bits}"))  # onnxruntime's quantizer names B <weight>_Q<bits>
    scale_name = names.fresh(f"{weight}_scale")
    made = [
        _stored_weight(weight, storage, *_reader_of(ix, b, packed), packed.shape, bits, k, block, mirrored),
        numpy_helper.from_array(np.ascontiguousarray(scales.T), scale_name),
    ]
    dq_inputs = [weight, scale_name]
    if zero_points is not None:
        zp_name = names.fresh(f"{weight}_zero_point")
        made.append(numpy_helper.from_array(np.ascontiguousarray(zero_points.T).astype(storage.np_dtype), zp_name))
        dq_inputs.append(zp_name)
    for tensor in made[1:]:  # out of memory into the command's spill folder, if one is open: many weights' worth
        spill(tensor, in_order=True)
    ix.graph.initializer.extend(made)
    dequantized = names.fresh(f"{weight}_DequantizeLinear_Output")
    dq = metadata.mark_inserted(helper.make_node("DequantizeLinear", dq_inputs, [dequantized], axis=0, block_size=block,
                                                 name=names.fresh(f"{weight}_DequantizeLinear")))
    dq.metadata_props.add(key=UNFUSED_KEY, value=OP)
    out = node.output[0]
    product = names.fresh(f"{out}_MatMul_Output") if bias else out
    matmul = helper.make_node("MatMul", [a, dequantized], [product], name=node.name)
    matmul.metadata_props.extend(node.metadata_props)  # the node's own (and check's stamp of where it came from)
    level = _int_attribute(attrs, "accuracy_level", 0)
    if level:
        matmul.metadata_props.add(key=ACCURACY_KEY, value=str(level))
    nodes = [dq, matmul]
    if bias:
        nodes.append(helper.make_node("Add", [product, bias], [out], name=names.fresh(f"{node.name or out}_bias")))
    return nodes


_CODES_AT_ONCE = 1 << 22  # codes unpacked and transposed at a time


def _reader_of(ix: GraphIndex, b: str, packed: np.ndarray) -> tuple[Callable[[], np.ndarray], bool]:
    """B's codes when the typed weight is made, and whether B is in a file: mapped from B's file again then (a map
    held until then would keep every weight's pages resident, the whole model's), or the array read already when B
    is held in memory."""
    source = ix.constant_tensor(b)
    if not is_lazy(source):
        return (lambda: packed), False
    kept, shape = TensorProto(), packed.shape  # (not the map itself)
    kept.CopyFrom(source)  # its name, type and place in its file: no bytes
    return (lambda: tensor_array(kept).reshape(shape)), True


def _stored_weight(name: str, storage, codes_of: Callable[[], np.ndarray], lazy: bool, shape: tuple[int, ...],
                   bits: int, k: int, block: int, mirrored: np.ndarray | None) -> TensorProto:
    """The typed weight W [K, N] of B [N, n_blocks, blob] (``shape``, its codes ``codes_of()``, ``lazy`` when B is
    in a file): codes, mirrored in the blocks of a negative scale, less half the range for signed storage (no zero
    points). Made a few blocks of K at a time into the spill folder when one is open, for B in a file only when read
    (proto.external.spill_deferred): a large weight is never unpacked whole."""
    n, blocks = shape[:2]
    half, top = 1 << (bits - 1), (1 << bits) - 1
    step = max(1, _CODES_AT_ONCE // (n * block))  # blocks of K per piece
    signed = storage.min < 0
    flags = None if mirrored is None else np.packbits(mirrored, axis=1)  # kept until the codes are made: a bit each

    def pieces():
        packed = codes_of()
        mirror = None if flags is None else np.unpackbits(flags, axis=1, count=blocks).astype(bool)
        for b0 in range(0, blocks, step):
            b1 = min(blocks, b0 + step)
            rows = min(k, b1 * block) - b0 * block
            if bits == 4 and n % 2 == 0:  # on the bytes: a mirrored code is c ^ 15, a signed one c - 8 = c ^ 8
                piece = packed[:, b0:b1].reshape(n, -1)
                if mirror is not None:  # (a byte holds two codes of one block: block_size is even)
                    piece = piece ^ np.repeat(mirror[:, b0:b1].astype(np.uint8) * np.uint8(0xFF), block // 2, axis=1)
                if signed:
                    piece = piece ^ np.uint8(0x88)
                yield transposed_4bit(piece)[:rows].tobytes()
                continue
            codes = unpack(packed[:, b0:b1], bits).reshape(n, (b1 - b0) * block)[:, :rows]
            if mirror is not None:
                codes = np.where(np.repeat(mirror[:, b0:b1], block, axis=1)[:, :rows], top - codes, codes)
            stored = codes.astype(np.int16) - half if signed else codes
            yield numpy_helper.from_array(np.ascontiguousarray(stored.T).astype(storage.np_dtype)).raw_data

    tensor = TensorProto(name=name, data_type=storage.data_type, dims=[k, n])
    size = -(-k * n * bits // 8)
    # B in a file: made when read (check and show read no code); B in memory: made now, so that B can go
    if not (spill_deferred(tensor, pieces, size) if lazy else spill_chunks(tensor, pieces(), size)):
        tensor.raw_data = b"".join(pieces())
    return tensor


def _int_attribute(attrs: dict, name: str, default: int | None = None) -> int:
    """An INT attribute's value; _Refused when it is missing (without default) or of another attribute type."""
    value = attrs.get(name, default)
    if value is None:
        raise _Refused(f"attribute {name} is missing")
    if not isinstance(value, int):
        raise _Refused(f"attribute {name} is {value!r}, not an integer")
    return value


def _constant(ix: GraphIndex, name: str, role: str, data_type: int) -> np.ndarray:
    value = ix.constant(name) if name else None
    if value is None or ix.constant_dtype(name) != data_type:
        raise _Refused(f"{role} {name!r} is not a {TensorProto.DataType.Name(data_type).lower()} constant")
    return value


def _zero_points(ix: GraphIndex, name: str, bits: int, n: int, blocks: int, scale_type: int) -> np.ndarray:
    """Integer zero points [N, n_blocks] from packed uint8 or unpacked float ones (which must be integers)."""
    value = ix.constant(name)
    dtype = ix.constant_dtype(name)
    if value is None:
        raise _Refused(f"zero_points {name!r} is not a constant")
    if dtype == TensorProto.UINT8:
        width = -(-blocks * bits // 8)
        if value.size != n * width:
            raise _Refused(f"packed zero_points {name!r} hold {value.size} bytes, not N * ceil(n_blocks * bits / 8) "
                           f"= {n * width}")
        return unpack(value.reshape(n, width), bits)[:, :blocks]
    if dtype != scale_type:
        raise _Refused(f"zero_points {name!r} are neither packed uint8 nor of the scales' type")
    if value.size != n * blocks:
        raise _Refused(f"zero_points {name!r} hold {value.size} values, not N * n_blocks = {n * blocks}")
    real = value.astype(np.float64).reshape(n, blocks)
    hi = (1 << bits) - 1
    bad = ~((real == np.round(real)) & (real >= 0) & (real <= hi))
    if bad.any():
        first = float(real[np.nonzero(bad)][0])
        raise _Refused(f"float zero point {first!r} in {name!r} is not an integer in [0, {hi}]; a quantized type's "
                       "zero point is a stored integer")
    return real.astype(np.int64)


# -- lower: DequantizeLinear (blocked, axis 0) + MatMul -> MatMulNBits ---------------------------------------------
def fuse(model: ModelProto) -> int:
    """Rewrite every eligible blocked weight DequantizeLinear -> MatMul of ``model`` as MatMulNBits; the count."""
    graph = model.graph
    ix = GraphIndex(graph, infer(model))
    names = Names(ix.all_names())
    plans: dict[int, list[NodeProto]] = {}
    drop: set[int] = set()
    for i, node in enumerate(ix.nodes):
        readers = ix.consumers.get(node.output[0], []) if node.output else []
        if not _eligible(ix, node) or not readers or node.output[0] in ix.output_set:
            continue
        if not all(ix.nodes[c].op_type == "MatMul" and ix.nodes[c].domain in STANDARD_DOMAINS and j == 1
                   and ix.elem_type(ix.nodes[c].input[0]) == ix.constant_dtype(node.input[1]) for c, j in readers):
            continue
        packed = _packed(ix, node, names)
        for c, _ in readers:
            plans[c] = [_nbits_node(ix.nodes[c], packed, ix.label(c))]
        drop.add(i)
        graph.initializer.extend(packed["initializers"])
    if not plans:
        return 0
    nodes = [n for i, node in enumerate(ix.nodes) if i not in drop for n in plans.get(i, [node])]
    del graph.node[:]
    graph.node.extend(nodes)
    read = {name for n in graph.node for name in n.input} | {o.name for o in graph.output}
    gone = {name for i in drop for name in ix.nodes[i].input if name and name not in read}
    for k in reversed([k for k, t in enumerate(graph.initializer) if t.name in gone]):
        del graph.initializer[k]
    kept = [vi for vi in graph.value_info if vi.name not in gone and vi.name not in {ix.nodes[i].output[0] for i in drop}]
    del graph.value_info[:]
    graph.value_info.extend(kept)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.add(domain=MS_DOMAIN, version=1)
    return len(plans)


def _eligible(ix: GraphIndex, node: NodeProto) -> bool:
    if node.op_type != "DequantizeLinear" or node.domain not in STANDARD_DOMAINS or len(node.input) < 2:
        return False
    # (absent or mistyped: not this fusion's; the boundary check names a mistyped one)
    block, axis = int_attribute(node, "block_size") or 0, int_attribute(node, "axis")
    storage = STORAGE_BY_DATA_TYPE.get(ix.constant_dtype(node.input[0]))
    shape = ix.shape(node.input[0])
    zp = node.input[2] if len(node.input) > 2 else ""
    return (
        storage is not None and not storage.is_float and storage.bits in BITS and shape is not None and len(shape) == 2
        and axis in (0, -2) and block >= 16 and block & (block - 1) == 0
        and ix.constant_dtype(node.input[1]) in EXPRESSED_BY_DATA_TYPE and (not zp or ix.is_constant(zp))
    )


def _packed(ix: GraphIndex, dq: NodeProto, names: Names) -> dict:
    """The MatMulNBits inputs and attributes standing for blocked weight ``dq``."""
    weight, scale = dq.input[0], dq.input[1]
    zp = dq.input[2] if len(dq.input) > 2 else ""
    storage = STORAGE_BY_DATA_TYPE[ix.constant_dtype(weight)]
    bits, block = storage.bits, int_attribute(dq, "block_size")  # (an eligible node's: an INT)
    k, n = (int(d) for d in ix.constant_tensor(weight).dims)
    columns = _weight_columns(ix, weight, storage, k, n)
    blocks = -(-k // block)
    offset = -storage.min  # signed codes shift up by 2^(bits-1)
    zero_points = (np.zeros((blocks, n), np.int64) if not zp else ix.constant(zp).astype(np.int64)) + offset
    padding = blocks * block - k
    step = max(8, _CODES_AT_ONCE // (blocks * block)) // 8 * 8  # columns of W (rows of B) per piece: whole bytes
    nibbles = _weight_bytes(ix, weight, k, n // 2) if bits == 4 and k % 2 == 0 and n % 2 == 0 else None

    def pieces():  # B [N, blocks, block * bits / 8], a few of its rows at a time
        for n0 in range(0, n, step):
            n1 = min(n, n0 + step)
            if nibbles is not None:  # on the bytes (transposed_4bit): a signed code c is stored c + 8 = c ^ 8
                piece = nibbles[:, n0 // 2:n1 // 2] ^ np.uint8(0x88 if offset else 0)  # [K, (n1 - n0) / 2]
                if padding:  # (K even, so the padding is too: whole bytes of B)
                    pad = pack(zero_points[-1:, n0:n1], 4)  # the zero points held offset already
                    piece = np.concatenate([piece, np.repeat(pad, padding, axis=0)])
                yield transposed_4bit(piece).tobytes()
                continue
            codes = (columns(n0, n1) + offset).T  # [n1 - n0, K]
            if padding:  # the last block's rows past K: its zero point, i.e. real 0 (never read)
                codes = np.concatenate([codes, np.repeat(zero_points[-1:, n0:n1].T, padding, axis=1)], axis=1)
            yield pack(codes.reshape(n1 - n0, blocks, block), bits).tobytes()

    b = TensorProto(name=names.fresh(f"{weight}_Q{bits}"), data_type=TensorProto.UINT8,
                    dims=[n, blocks, block * bits // 8])
    if spill_chunks(b, pieces(), n * blocks * block * bits // 8):  # never all of a model's B in memory
        b.external_data.add(key=IN_ORDER, value="1")  # (save lays the data file out as for B held in memory)
    else:
        b.raw_data = b"".join(pieces())
    s = numpy_helper.from_array(np.ascontiguousarray(ix.constant(scale).T), names.fresh(f"{weight}_scales"))
    spill(s, in_order=True)
    inputs, initializers = [b.name, s.name], [b, s]
    if storage.min == 0 or np.any(zero_points != offset):
        z = numpy_helper.from_array(pack(_pad_last(zero_points.T, 8 // bits), bits), names.fresh(f"{weight}_zero_points"))
        inputs.append(z.name)
        initializers.append(z)
    return {"inputs": inputs, "initializers": initializers,
            "attrs": {"K": k, "N": n, "bits": bits, "block_size": block}}


def _weight_bytes(ix: GraphIndex, weight: str, k: int, row: int) -> np.ndarray | None:
    """The raw bytes of weight W [K, N] as uint8 [K, row] (``row`` bytes per row of W), read where they lie (a file's
    are mapped, not read), or None when W holds its values otherwise."""
    tensor = ix.constant_tensor(weight)
    if not (is_lazy(tensor) or tensor.HasField("raw_data")):
        return None
    raw = tensor_bytes(tensor) if is_lazy(tensor) else np.frombuffer(tensor.raw_data, np.uint8)
    return raw.reshape(k, row) if raw.size == k * row else None


def _weight_columns(ix: GraphIndex, weight: str, storage: StorageType, k: int, n: int
                    ) -> Callable[[int, int], np.ndarray]:
    """columns(n0, n1): the stored values of W[:, n0:n1] (int16, modulo 2^bits). A weight stored in raw bytes (in its
    file or in memory) is read there a slice at a time, unpacked only as far as the slice (``n0`` a multiple of 8): a
    large int4 weight is never held unpacked whole; any other is read whole."""
    bits, row = storage.bits, n * storage.bits
    raw = _weight_bytes(ix, weight, k, row // 8) if row % 8 == 0 else None
    if raw is None:
        values = ix.constant(weight)
        return lambda n0, n1: values[:, n0:n1].astype(np.int16)

    def columns(n0: int, n1: int) -> np.ndarray:  # (signed codes as their two's-complement bits: pack masks them)
        return unpack(raw[:, n0 * bits // 8:-(-n1 * bits // 8)], bits)[:, :n1 - n0].astype(np.int16)

    return columns


def _nbits_node(matmul: NodeProto, packed: dict, label: str) -> NodeProto:
    attrs = dict(packed["attrs"])
    level = {p.key: p.value for p in matmul.metadata_props}.get(ACCURACY_KEY)
    if level:
        if not level.isdigit():
            raise LowerError(f"{label}: metadata {ACCURACY_KEY} is {level!r}, not a MatMulNBits "
                             "accuracy_level (a non-negative integer)")
        attrs["accuracy_level"] = int(level)
    return helper.make_node(OP, [matmul.input[0], *packed["inputs"]], list(matmul.output), name=matmul.name,
                            domain=MS_DOMAIN, **attrs)


__all__ = ["ContribRead", "ensure_domain", "from_contrib_op", "fuse", "is_matmul_nbits", "pack", "read_contrib_weights",
           "unfuse", "unpack"]
