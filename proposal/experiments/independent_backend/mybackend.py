"""A clean-room "typed" backend for onnx-qtypes, written from the specification text only.

Decodes QuantizedType from field 1000 of TypeProto.Tensor (spec/types.md), executes every node by
dequantize -> unmodified ONNX operator (onnx.reference, in float64) -> quantize (spec/semantics.md).
"""

from __future__ import annotations

import math
import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qtypes_decode as qd  # noqa: E402
from qtypes_decode import QT, Refuse, expand_params, expected_count, param_shape  # noqa: E402

# Mutation switches (for the mutation-resistance experiment); all False = the real backend.
MUTATE = set(filter(None, os.environ.get("CLEANROOM_MUTATE", "").split(",")))

NARROW_FOR = {1: {10, 16, 24}, 16: {24}}  # llm_formats.md narrower-parameters
TYPE_RANGES = qd.INT_RANGES


# ================================================================ tensors
def _unpack(raw: bytes, bits: int, n: int, signed: bool):
    b = np.frombuffer(raw, np.uint8)
    per = 8 // bits
    vals = np.stack([(b >> (bits * j)) & ((1 << bits) - 1) for j in range(per)], axis=1).ravel()
    if vals.size < n:
        raise Refuse(f"raw_data holds {vals.size} values, dims need {n}")
    vals = vals[:n].astype(np.int16)
    if signed:
        vals = np.where(vals >= 1 << (bits - 1), vals - (1 << bits), vals)
    return vals


def tensor_array(t: onnx.TensorProto, dt: int | None = None):
    """Values of a TensorProto; a marker data_type (1000 + storage) is read as its storage type."""
    dt = t.data_type if dt is None else dt
    if dt >= 1000:
        dt -= 1000
    dims = tuple(int(d) for d in t.dims)
    n = int(np.prod(dims)) if dims else 1
    if t.HasField("raw_data") or t.data_location == onnx.TensorProto.EXTERNAL:
        raw = t.raw_data
        if dt in (21, 22, 25, 26, 23):
            bits = qd.SUB_BYTE_BITS[dt]
            v = _unpack(raw, bits, n, signed=dt in (22, 26))
            if dt == 23:
                return v.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).reshape(dims)
            return v.astype(qd.INT_NP[dt]).reshape(dims)
        npdt = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "u1", 10: "<f2",
                11: "<f8", 12: "<u4", 13: "<u8"}.get(dt)
        if npdt is not None:
            a = np.frombuffer(raw, npdt)
            if dt == 9:
                a = a.astype(bool)
        elif dt == 16:
            a = np.frombuffer(raw, np.uint16).view(ml_dtypes.bfloat16)
        elif dt in qd.FLOAT_STORAGE:
            a = np.frombuffer(raw, np.uint8).view(qd.FLOAT_STORAGE[dt][0])
        elif dt == 24:
            a = np.frombuffer(raw, np.uint8).view(ml_dtypes.float8_e8m0fnu)
        else:
            raise Refuse(f"tensor {t.name!r}: data type {dt} not readable")
        if a.size != n:
            raise Refuse(f"tensor {t.name!r}: {a.size} values for dims {dims}")
        return a.reshape(dims).copy()
    c = onnx.TensorProto()
    c.CopyFrom(t)
    c.data_type = dt
    try:
        return numpy_helper.to_array(c)
    except Exception as e:  # noqa: BLE001
        raise Refuse(f"tensor {t.name!r} unreadable: {e}") from e


# ================================================================ values
class QV:
    """A quantized value: storage array plus its (static, resolved) type."""

    __slots__ = ("s", "t")

    def __init__(self, s, t: QT):
        self.s = s
        self.t = t


def dequantize(s: np.ndarray, t: QT) -> np.ndarray:
    shape = s.shape
    sc = expand_params(t.scales, shape, t.axis, t.block)
    if "no-per-axis" in MUTATE and t.axis is not None:
        sc = np.asarray(t.scales).ravel()[0]
    if t.is_float:
        v = s.astype(np.float64)
    elif t.codebook is not None:
        v = t.codebook[s.astype(np.int64) - t.smin]
    else:
        zp = expand_params(t.zps, shape, t.axis, t.block)
        if "no-per-axis" in MUTATE and t.axis is not None:
            zp = np.asarray(t.zps).ravel()[0]
        v = s.astype(np.float64) - zp
    r = sc * v
    if t.offsets is not None:
        r = r + expand_params(t.offsets, shape, t.axis, t.block)
    return np.asarray(r, np.float64)


def quantize(x: np.ndarray, t: QT, saturate: bool = True) -> np.ndarray:
    x = np.asarray(x, np.float64)
    shape = x.shape
    sc = expand_params(t.scales, shape, t.axis, t.block)
    if "no-per-axis" in MUTATE and t.axis is not None:
        sc = np.asarray(t.scales).ravel()[0]
    if t.codebook is not None or t.offsets is not None:
        raise Refuse("quantize into a version-3 type (offsets / codebook) is not defined")
    with np.errstate(all="ignore"):
        r = x / sc
        if t.is_float:
            fmax = qd.FLOAT_STORAGE[t.storage][1]
            if saturate or t.storage == 23:
                r = np.clip(r, -fmax, fmax)
            return np.broadcast_to(r, shape).astype(t.np_storage)
        zp = expand_params(t.zps, shape, t.axis, t.block)
        if "no-per-axis" in MUTATE and t.axis is not None:
            zp = np.asarray(t.zps).ravel()[0]
        q = np.rint(r) + zp
        q = np.where(np.isnan(x), zp, q)
        smin, smax = t.smin, t.smax
        if "no-narrow" in MUTATE:
            smin, smax = TYPE_RANGES[t.storage]
        q = np.clip(q, smin, smax)
    return np.broadcast_to(q, shape).astype(t.np_storage)


def real(v):
    if isinstance(v, QV):
        return dequantize(v.s, v.t)
    return v


# ---------------------------------------------------------------- expressed-type arithmetic (semantics.md §3)
def _E(v, edt):
    if "dyn-float64" in MUTATE:
        return float(v)
    r = float(np.asarray(v, np.float64).astype(edt).astype(np.float64))
    return r


def _smallest_positive(edt):
    if edt == np.dtype(ml_dtypes.bfloat16):
        return float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_subnormal)
    return float(np.finfo(edt).smallest_subnormal)


def dynamic_parameters(x: np.ndarray, t: QT):
    x = np.asarray(x, np.float64)
    shape = x.shape
    if t.axis is not None and (t.axis >= len(shape)):
        raise Refuse("dynamic type axis out of range")
    count = expected_count(shape, t.axis, t.block)
    idx = np.broadcast_to(expand_params(np.arange(count), shape, t.axis, t.block), shape)
    edt = t.np_expressed
    qmin, qmax = t.smin, t.smax
    scales = np.zeros(count)
    zps = np.zeros(count, np.int64)
    for g in range(count):
        xg = x[idx == g]
        if xg.size and not np.all(np.isfinite(xg)):
            raise Refuse("dynamic parameters of a group holding NaN or infinity do not exist")
        mn = float(xg.min()) if xg.size else 0.0
        mx = float(xg.max()) if xg.size else 0.0
        rmin = _E(min(0.0, mn), edt)
        rmax = _E(max(0.0, mx), edt)

        def ne(r):
            return r if r != 0 else 1.0

        zp = 0
        if t.is_float:
            scale = _E(ne(max(-rmin, rmax)) / qd.FLOAT_STORAGE[t.storage][1], edt)
        elif t.schema in (0, 3):
            scale = _E(ne(_E(rmax - rmin, edt)) / (qmax - qmin), edt)
        elif t.schema in (1, 4):
            qsym = min(-qmin, qmax) if qmin < 0 else qmax
            scale = _E(ne(max(-rmin, rmax)) / qsym, edt)
        else:  # SYMMETRIC_WITH_UNSIGNED
            tmin, tmax = TYPE_RANGES[t.storage]
            mid = (tmin + tmax + 1) // 2
            if mn >= 0 or not (qmin <= mid < qmax):
                zp = qmin
                scale = _E(ne(rmax) / (qmax - qmin), edt)
            else:
                zp = mid
                den = min(mid - qmin, qmax - mid) if qmin < mid else qmax - mid
                scale = _E(ne(max(-rmin, rmax)) / den, edt)
        if t.schema in (3, 4) and scale > 0 and math.isfinite(scale):
            m, e = math.frexp(scale)
            scale = math.ldexp(1.0, e - 1) if m == 0.5 else math.ldexp(1.0, e)
            scale = _E(scale, edt)
        if not math.isfinite(scale):
            raise Refuse("dynamic scale overflows the expressed type")
        if scale == 0:
            scale = _smallest_positive(edt)
        if not t.is_float and t.schema in (0, 3):
            z = _E(qmin - _E(rmin / scale, edt), edt)
            z = min(max(z, qmin), qmax)
            zp = int(np.rint(z))
        scales[g] = scale
        zps[g] = zp
    return t.with_params(scales, zps)


# ================================================================ model-level reading
class Scope:
    """Declarations of one name space (the main graph with its subgraphs, or one function body)."""

    def __init__(self):
        self.raw = {}  # name -> list of (elem_type, RawQType|None, shape dims or None, where)
        self.types = {}  # name -> QT


def _shape_of(vi: onnx.ValueInfoProto):
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        dims.append(int(d.dim_value) if d.HasField("dim_value") else None)
    return dims


def _subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def _walk_graphs(g):
    yield g
    for n in g.node:
        for sg in _subgraphs(n):
            yield from _walk_graphs(sg)


def _nested_check(tp: onnx.TypeProto, where):
    """QT116: field 1000/1001 inside sequence/optional/map."""
    kind = tp.WhichOneof("value")
    if kind == "sequence_type":
        _nested_tensor_check(tp.sequence_type.elem_type, where)
    elif kind == "optional_type":
        _nested_tensor_check(tp.optional_type.elem_type, where)
    elif kind == "map_type":
        _nested_tensor_check(tp.map_type.value_type, where)


def _nested_tensor_check(tp, where):
    if tp.WhichOneof("value") == "tensor_type":
        _, q = qd.decode_tensor_type(tp.tensor_type.SerializeToString(), where)
        if q is not None:
            raise Refuse(f"{where}: a quantized type nested in a sequence/optional/map")
    else:
        _nested_check(tp, where)


def _collect(scope: Scope, vis, where):
    for vi in vis:
        tp = vi.type
        if tp.WhichOneof("value") != "tensor_type":
            _nested_check(tp, where)
            continue
        elem, rq = qd.decode_tensor_type(tp.tensor_type.SerializeToString(), f"{where}:{vi.name}")
        scope.raw.setdefault(vi.name, []).append((elem, rq, _shape_of(vi), f"{where}:{vi.name}"))


class Model:
    def __init__(self, path):
        self.m = onnx.load(path)
        m = self.m
        self.opsets = {o.domain: o.version for o in m.opset_import}
        self.functions = {(f.domain, f.name): f for f in m.functions}
        self.inits = {}
        self.const_names = set()
        for g in _walk_graphs(m.graph):
            for t in g.initializer:
                self.inits[t.name] = t
                self.const_names.add(t.name)
            for n in g.node:
                if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                    self.const_names.update(n.output)
        for f in m.functions:
            for n in f.node:
                if n.op_type == "Constant":
                    self.const_names.add((f.domain, f.name, n.output[0]))
        self.main = Scope()
        for g in _walk_graphs(m.graph):
            _collect(self.main, list(g.input) + list(g.output) + list(g.value_info), "graph " + g.name)
        self.fscopes = {}
        for key, f in self.functions.items():
            sc = Scope()
            _collect(sc, list(getattr(f, "value_info", [])), f"function {f.name}")
            self.fscopes[key] = sc
        self.resolving = set()
        for sc, fkey in [(self.main, None)] + [(s, k) for k, s in self.fscopes.items()]:
            for name in list(sc.raw):
                self._resolve_name(sc, name, fkey)
        self._check_initializers()
        self.evals = {}

    # ------------------------------------------------------------------ declarations
    def _resolve_name(self, sc: Scope, name, fkey):
        if name in sc.types or name not in sc.raw:
            return sc.types.get(name)
        if name in self.resolving:
            raise Refuse(f"{name}: circular parameter reference")
        self.resolving.add(name)
        decls = sc.raw[name]
        qts = []
        plain = []
        for elem, rq, shape, where in decls:
            if rq is None:
                plain.append(elem)
                continue
            is_const = (name in self.const_names) if fkey is None else ((fkey[0], fkey[1], name) in self.const_names)
            if shape is None and fkey is None and name in self.inits:
                shape = [int(d) for d in self.inits[name].dims]
            qts.append(self._resolve(rq, elem, shape, where, is_const, fkey is not None))
        if qts:
            k0 = qts[0].identity_key()
            for q in qts[1:]:
                if q.identity_key() != k0:
                    raise Refuse(f"{name}: declarations carry different quantized types")
            if any(e != 0 for e in plain):
                raise Refuse(f"{name}: a declaration without field 1000 but with elem_type of a quantized value")
            sc.types[name] = qts[0]
        self.resolving.discard(name)
        return sc.types.get(name)

    def _param_init(self, name, where, in_function):
        if in_function:
            raise Refuse(f"{where}: a type in a function body cannot reference initializers")
        t = self.inits.get(name)
        if t is None:
            raise Refuse(f"{where}: parameter initializer {name!r} does not exist")
        return t

    def _param_dims_ok(self, dims, pshape, granularity):
        dims = tuple(dims)
        if granularity == "tensor":
            return dims in ((), (1,))
        return pshape is None or dims == tuple(pshape)

    def _read_float_param(self, ref, rq, where, in_function, version, pshape, gran, what):
        """Scales / offsets read from an initializer: (values float64 flattened, from_quantized)."""
        t = self._param_init(ref, where, in_function)
        dt = t.data_type
        if not self._param_dims_ok(t.dims, pshape, gran):
            raise Refuse(f"{where}: {what} initializer {ref!r} has dims {list(t.dims)}, not the parameter shape")
        if dt == rq.expressed_type:
            vals = tensor_array(t).astype(np.float64).ravel()
            if "ref-reversed" in MUTATE:
                vals = vals[::-1].copy()
            return vals, False
        if dt >= 1000 or ref in self.main.raw:
            qt = self._resolve_name(self.main, ref, None) if ref in self.main.raw else None
            if qt is None:
                raise Refuse(f"{where}: {what} initializer {ref!r} has data type {dt}")
            if version < 3:
                raise Refuse(f"{where}: a quantized parameter tensor needs version 3")
            if qt.expressed != rq.expressed_type:
                raise Refuse(f"{where}: parameter tensor {ref!r} has another expressed type")
            if qt.dynamic:
                raise Refuse(f"{where}: parameter tensor {ref!r} is dynamic")
            if qt.is_v3 and getattr(qt, "param_quantized", False):
                raise Refuse(f"{where}: parameter tensor {ref!r} has quantized parameters itself (one level only)")
            s = tensor_array(t)
            self._check_storage_values(s, qt, ref)
            return dequantize(s, qt).ravel(), True
        if version >= 3 and dt in NARROW_FOR.get(rq.expressed_type, ()):
            a = tensor_array(t).astype(np.float64).ravel()
            return a, False
        raise Refuse(f"{where}: {what} initializer {ref!r} has data type {dt}, not the expressed type")

    def _resolve(self, rq, elem, shape, where, is_const, in_function) -> QT:
        # version (types.md §1.1 step 4-5)
        version = 1 if rq.version is None else rq.version
        if version not in (1, 2, 3):
            raise Refuse(f"{where}: unknown extension version {version}")
        if "ignore-version" not in MUTATE:
            for fn in rq.present:
                need = qd.FIELD_VERSION.get(fn, 1)
                if fn == 12 and "strict-version-field" not in MUTATE:
                    continue
                if need > version:
                    raise Refuse(f"{where}: field {fn} needs version {need}, the type declares {version}")
        if rq.schema not in (0, 1, 2, 3, 4):
            raise Refuse(f"{where}: schema value {rq.schema} is not defined")
        st = rq.storage_type
        if st is None or (st not in qd.INT_RANGES and st not in qd.FLOAT_STORAGE):
            raise Refuse(f"{where}: storage type {st} not allowed")
        if elem not in (0, 1000 + st):
            raise Refuse(f"{where}: elem_type {elem} is not the marker {1000 + st}")
        if rq.expressed_type not in (1, 10, 16):
            raise Refuse(f"{where}: expressed type {rq.expressed_type} is not a float type")
        is_float = st in qd.FLOAT_STORAGE
        if is_float:
            fmax = qd.FLOAT_STORAGE[st][1]
            tmin, tmax = -fmax, fmax
            if rq.storage_min is not None and rq.storage_min != -fmax:
                raise Refuse(f"{where}: float storage cannot narrow its range")
            if rq.storage_max is not None and rq.storage_max != fmax:
                raise Refuse(f"{where}: float storage cannot narrow its range")
            smin, smax = int(-fmax), int(fmax)
        else:
            tmin, tmax = qd.INT_RANGES[st]
            smin = tmin if rq.storage_min is None else rq.storage_min
            smax = tmax if rq.storage_max is None else rq.storage_max
            if not (tmin <= smin < smax <= tmax):
                raise Refuse(f"{where}: storage range [{smin}, {smax}] invalid for type range [{tmin}, {tmax}]")
        # granularity
        axis, block = rq.axis, rq.block_size
        if block is not None:
            if block <= 0:
                raise Refuse(f"{where}: block_size {block} must be > 0")
            if axis is None:
                raise Refuse(f"{where}: block_size without axis")
        rank = None if shape is None else len(shape)
        if axis is not None:
            if axis < 0:
                raise Refuse(f"{where}: negative axis")
            if rank is not None and axis >= rank:
                raise Refuse(f"{where}: axis {axis} out of range for rank {rank}")
            if rank == 0:
                raise Refuse(f"{where}: per-axis/blocked on a rank-0 tensor")
        gran = "tensor" if axis is None else ("axis" if block is None else "block")
        pshape = None
        if shape is not None and axis is not None and shape[axis] is not None:
            known = [d if d is not None else 1 for d in shape]
            if all(d is not None for d in shape) or block is None:
                pshape = param_shape(known, axis, block)
        # scales
        if rq.scale and rq.scale_tensor is not None:
            raise Refuse(f"{where}: scales both listed and referenced")
        if rq.zero_point and rq.zero_point_tensor is not None:
            raise Refuse(f"{where}: zero points both listed and referenced")
        if rq.offset and rq.offset_tensor is not None:
            raise Refuse(f"{where}: offsets both listed and referenced")
        dynamic = not rq.scale and rq.scale_tensor is None
        param_quantized = False
        v3_used = bool(rq.offset) or rq.offset_tensor is not None or bool(rq.codebook)
        if dynamic:
            if rq.zero_point or rq.zero_point_tensor is not None:
                raise Refuse(f"{where}: a dynamic type carries zero points")
            if rq.offset or rq.offset_tensor is not None:
                raise Refuse(f"{where}: a dynamic type carries offsets")
            if rq.codebook:
                raise Refuse(f"{where}: a codebook type needs scales")
            if is_const:
                raise Refuse(f"{where}: a constant has a dynamic type")
            qt = QT(st, rq.expressed_type, None, None, axis, block, rq.schema, smin, smax, version)
            return qt
        if rq.scale:
            scales = np.asarray(rq.scale, np.float64)
            if not np.all(np.isfinite(scales)) or np.any(scales == 0):
                raise Refuse(f"{where}: a listed scale is zero or not finite")
            if "round-scale" in MUTATE:
                scales = scales.astype(qd.EXPRESSED_NP[rq.expressed_type]).astype(np.float64)
        else:
            scales, pq = self._read_float_param(rq.scale_tensor, rq, where, in_function, version, pshape, gran,
                                                "scale")
            param_quantized |= pq
            if pq or self.inits[rq.scale_tensor].data_type != rq.expressed_type:
                v3_used = True
            if not np.all(np.isfinite(scales)):
                raise Refuse(f"{where}: a referenced scale is not finite")
            if np.any(scales == 0) and version < 3:
                raise Refuse(f"{where}: a scale of 0")
        n = scales.size
        if gran == "tensor" and n != 1:
            raise Refuse(f"{where}: per-tensor type with {n} scales")
        if pshape is not None and n != int(np.prod(pshape)):
            raise Refuse(f"{where}: {n} scales, the shape needs {int(np.prod(pshape))}")
        # zero points
        if rq.zero_point:
            zps = np.asarray(rq.zero_point, np.int64)
        elif rq.zero_point_tensor is not None:
            t = self._param_init(rq.zero_point_tensor, where, in_function)
            if t.data_type not in (st, st + 1000):
                raise Refuse(f"{where}: zero point initializer has data type {t.data_type}")
            if not self._param_dims_ok(t.dims, pshape, gran):
                raise Refuse(f"{where}: zero point initializer has wrong dims")
            zarr = tensor_array(t)
            if is_float:
                zf = zarr.astype(np.float64).ravel()
                if np.any(zf != 0):
                    raise Refuse(f"{where}: float storage zero point not 0")
                zps = np.zeros(zf.size, np.int64)
            else:
                zps = zarr.astype(np.int64).ravel()
        else:
            zps = np.zeros(n, np.int64)
        if zps.size != n:
            raise Refuse(f"{where}: {zps.size} zero points for {n} scales")
        if np.any(zps < smin) or np.any(zps > smax):
            raise Refuse(f"{where}: zero point outside [{smin}, {smax}]")
        if is_float and np.any(zps != 0):
            raise Refuse(f"{where}: float storage zero point not 0")
        # schema
        if rq.schema in (1, 4) and np.any(zps != 0):
            raise Refuse(f"{where}: symmetric schema with a non-zero zero point")
        if rq.schema == 2:
            ftmin, ftmax = (qd.INT_RANGES[st] if not is_float else (0, 0))
            mid = (ftmin + ftmax + 1) // 2 if not is_float else 0
            ok = (zps == mid) | (zps == smin) if not is_float else (zps == 0)
            if not np.all(ok):
                raise Refuse(f"{where}: symmetric_with_unsigned zero point not the midpoint or storage_min")
            if not is_float and np.any((zps == smin) & (zps != mid) & (scales < 0)):
                raise Refuse(f"{where}: negative scale in the unsigned form")
        if rq.schema in (3, 4):
            for s in scales:
                m, _ = math.frexp(s)
                if s <= 0 or m != 0.5:
                    raise Refuse(f"{where}: power-of-two schema with scale {s}")
        # version 3: offsets, codebook
        offsets = None
        if rq.offset:
            offsets = np.asarray(rq.offset, np.float64)
        elif rq.offset_tensor is not None:
            offsets, pq = self._read_float_param(rq.offset_tensor, rq, where, in_function, version, pshape, gran,
                                                 "offset")
            param_quantized |= pq
            v3_used = True
        if offsets is not None:
            if offsets.size != n:
                raise Refuse(f"{where}: {offsets.size} offsets for {n} scales")
            if not np.all(np.isfinite(offsets)):
                raise Refuse(f"{where}: offset not finite")
        codebook = None
        if rq.codebook:
            codebook = np.asarray(rq.codebook, np.float64)
            if is_float:
                raise Refuse(f"{where}: a codebook on float storage")
            if codebook.size != smax - smin + 1:
                raise Refuse(f"{where}: codebook of {codebook.size} entries, range needs {smax - smin + 1}")
            if not np.all(np.isfinite(codebook)):
                raise Refuse(f"{where}: codebook entry not finite")
            if np.any(zps != 0):
                raise Refuse(f"{where}: codebook type with a non-zero zero point")
        if (v3_used or version == 3) and not is_const:  # declaring version 3 is enough (validity.md#qt142)
            raise Refuse(f"{where}: a version-3 type declares a non-constant")
        qt = QT(st, rq.expressed_type, scales, zps, axis, block, rq.schema, smin, smax, version, offsets, codebook,
                v3_used)
        qt.param_quantized = param_quantized  # type: ignore[attr-defined]
        return qt

    def _check_storage_values(self, s, qt: QT, name):
        if qt.is_float:
            if not np.all(np.isfinite(s.astype(np.float64))):
                raise Refuse(f"{name}: float-storage constant holds NaN or infinity")
            return
        v = s.astype(np.int64)
        if v.size and (v.min() < qt.smin or v.max() > qt.smax):
            raise Refuse(f"{name}: stored value outside [{qt.smin}, {qt.smax}]")

    def _check_initializers(self):
        self.qinit = {}
        for name, t in self.inits.items():
            qt = self.main.types.get(name)
            if qt is None:
                continue
            if t.data_type not in (qt.storage + 1000, qt.storage):
                raise Refuse(f"initializer {name!r} has data type {t.data_type}, not the storage marker")
            s = tensor_array(t)
            self._check_storage_values(s, qt, name)
            for elem, rq, shape, where in self.main.raw[name]:
                if shape is not None and len(shape) == s.ndim:
                    if any(d is not None and d != e for d, e in zip(shape, s.shape)):
                        raise Refuse(f"initializer {name!r} dims disagree with its declaration")
                elif shape is not None:
                    raise Refuse(f"initializer {name!r} rank disagrees with its declaration")
            self._check_count(qt, s.shape, name)
            self.qinit[name] = QV(s, qt)

    @staticmethod
    def _check_count(qt: QT, shape, name):
        if qt.dynamic:
            return
        if qt.axis is not None and qt.axis >= len(shape):
            raise Refuse(f"{name}: axis {qt.axis} out of range")
        n = expected_count(shape, qt.axis, qt.block)
        if qt.scales.size != n:
            raise Refuse(f"{name}: {qt.scales.size} parameters, the shape {list(shape)} needs {n}")


# ================================================================ execution
class Env:
    def __init__(self, parent=None):
        self.d = {}
        self.parent = parent

    def get(self, k):
        e = self
        while e is not None:
            if k in e.d:
                return e.d[k]
            e = e.parent
        raise Refuse(f"value {k!r} is not available")

    def __contains__(self, k):
        e = self
        while e is not None:
            if k in e.d:
                return True
            e = e.parent
        return False


def _is_float_arr(a):
    return isinstance(a, np.ndarray) and (a.dtype.kind == "f" or a.dtype == ml_dtypes.bfloat16)


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


class Runner:
    def __init__(self, model: Model):
        self.M = model

    # ---------------------------------------------------------------- reference evaluation of one node
    def _eval_node(self, node, ins, opsets):
        key = node.SerializeToString()
        ev = self.M.evals.get(key)
        if ev is None:
            names = []
            for i, n in enumerate(node.input):
                if n and n not in names:
                    names.append(n)
            g = helper.make_graph([node], "one", [helper.make_empty_tensor_value_info(n) for n in names],
                                  [helper.make_empty_tensor_value_info(n) for n in node.output if n])
            mm = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
                                   functions=list(self.M.m.functions))
            mm.ir_version = self.M.m.ir_version
            ev = ReferenceEvaluator(mm)
            self.M.evals[key] = (ev, names)
        else:
            ev, names = ev
        feeds = {}
        for n, v in zip(node.input, ins):
            if n:
                feeds[n] = v
        outs = ev.run(None, feeds)
        res = {}
        it = iter(outs)
        for n in node.output:
            if n:
                res[n] = next(it)
        return [res.get(n) for n in node.output]

    # ---------------------------------------------------------------- graph
    def run_graph(self, g, env: Env, scope: Scope, opsets):
        for node in g.node:
            self.run_node(node, env, scope, opsets)

    def run_node(self, node, env: Env, scope: Scope, opsets):
        op = node.op_type
        dom = node.domain if node.domain != "ai.onnx" else ""
        ins = [env.get(n) if n else None for n in node.input]
        if (dom, op) in self.M.functions:
            outs = self._function_call(node, ins, scope, opsets)
        elif dom == "" and op == "Constant":
            decl = scope.types.get(node.output[0])
            if decl is not None:
                t = _attr(node, "value")
                s = tensor_array(t)
                self.M._check_storage_values(s, decl, node.output[0])
                outs = [QV(s, decl)]
            else:
                outs = self._eval_node(node, ins, opsets)
        elif dom == "" and op == "QuantizeLinear":
            outs = self._quantize_linear(node, ins, scope, opsets)
        elif dom == "" and op == "DequantizeLinear":
            outs = self._dequantize_linear(node, ins, scope, opsets)
        elif dom == "" and op == "DynamicQuantizeLinear":
            outs = self._dynamic_ql(node, ins, scope)
        elif dom == "" and op == "If":
            outs = self._if(node, ins, env, scope, opsets)
        elif dom == "" and op == "Loop":
            outs = self._loop(node, ins, env, scope, opsets)
        elif dom == "" and op == "Scan":
            outs = self._scan(node, ins, env, scope, opsets)
        else:
            outs = self._default(node, ins, scope, opsets)
        for n, v in zip(node.output, outs):
            if n:
                env.d[n] = v

    # ---------------------------------------------------------------- default rule (semantics.md §4)
    def _default(self, node, ins, scope, opsets, evaluate=None):
        outdecl = [scope.types.get(n) if n else None for n in node.output]
        has_q = any(isinstance(v, QV) for v in ins) or any(d is not None for d in outdecl)
        evaluate = evaluate or (lambda xs: self._eval_node(node, xs, opsets))
        if not has_q:
            return evaluate(ins)
        expressed = None
        for v in ins:
            if isinstance(v, QV):
                expressed = v.t.np_expressed
                break
        if expressed is None:
            for v in ins:
                if _is_float_arr(v):
                    expressed = v.dtype
                    break
        if expressed is None:
            for d in outdecl:
                if d is not None:
                    expressed = d.np_expressed
                    break
        xs = []
        for i, v in enumerate(ins):
            if isinstance(v, QV):
                xs.append(real(v))
            elif _is_float_arr(v) and not (node.op_type == "Resize" and i in (1, 2)):
                xs.append(v.astype(np.float64))
            else:
                xs.append(v)
        ys = evaluate(xs)
        outs = []
        for y, d in zip(ys, outdecl):
            if d is not None:
                y = np.asarray(y, np.float64)
                t = dynamic_parameters(y, d) if d.dynamic else d
                Model._check_count(t, y.shape, node.output[0])
                outs.append(QV(quantize(y, t), t))
            elif isinstance(y, np.ndarray) and y.dtype == np.float64 and node.op_type != "Cast" and expressed is not None:
                outs.append(y.astype(expressed))
            else:
                outs.append(y)
        return outs

    # ---------------------------------------------------------------- functions
    def _function_call(self, node, ins, scope, opsets):
        key = (node.domain, node.op_type)
        f = self.M.functions[key]
        fsc = self.M.fscopes[key]
        typed = any(n in fsc.types for n in list(f.input) + list(f.output))
        if not typed:
            return self._default(node, ins, scope, opsets)
        env = Env()
        for formal, v in zip(f.input, ins):
            ft = fsc.types.get(formal)
            vt = v.t if isinstance(v, QV) else None
            if (ft is None) != (vt is None) or (ft is not None and not ft.dynamic
                                                 and ft.identity_key() != vt.identity_key()):
                raise Refuse(f"function {f.name}: operand for {formal!r} does not carry the declared type")
            env.d[formal] = v
        fops = {o.domain: o.version for o in f.opset_import}
        for n in f.node:
            self.run_node(n, env, fsc, fops)
        outs = [env.get(o) for o in f.output]
        res = []
        for o, name in zip(outs, node.output):
            d = scope.types.get(name)
            if isinstance(o, QV) and d is not None and not d.dynamic and d.identity_key() != o.t.identity_key():
                raise Refuse(f"function {f.name}: output {name!r} declared with another type")
            res.append(o)
        return res

    # ---------------------------------------------------------------- boundary operators (semantics.md §5)
    @staticmethod
    def _operand_params(shape, scale, zp, axis, block):
        """ONNX QuantizeLinear/DequantizeLinear operands expanded per element."""
        scale = np.asarray(scale)
        r = len(shape)
        if scale.size == 1 and (block in (None, 0)) and scale.ndim <= 1:
            s = scale.reshape(())
            z = None if zp is None else np.asarray(zp).reshape(())
            return s, z
        ax = (axis if axis is not None else 1)
        if ax < 0:
            ax += r
        if block not in (None, 0):
            def ex(a):
                a = np.asarray(a)
                a = np.repeat(a, block, axis=ax)
                sl = [slice(None)] * r
                sl[ax] = slice(0, shape[ax])
                return a[tuple(sl)]
            return ex(scale), (None if zp is None else ex(zp))
        bs = [1] * r
        bs[ax] = shape[ax]
        return scale.reshape(bs), (None if zp is None else np.asarray(zp).reshape(bs))

    def _check_boundary(self, node, shape, qt: QT, scale, zp, axis, block):
        s_op, z_op = self._operand_params(shape, scale, zp, axis, block)
        s_t = expand_params(qt.scales, shape, qt.axis, qt.block)
        sdt = np.asarray(scale).dtype
        a = np.broadcast_to(np.asarray(s_t).astype(sdt), shape)
        b = np.broadcast_to(np.asarray(s_op), shape)
        if not np.array_equal(a.astype(np.float64), b.astype(np.float64)):
            raise Refuse(f"node {node.name!r}: scale operand differs from the type's scales")
        if not qt.is_float:
            z_t = np.broadcast_to(expand_params(qt.zps, shape, qt.axis, qt.block), shape)
            zo = np.zeros(shape) if z_op is None else np.broadcast_to(np.asarray(z_op).astype(np.int64), shape)
            if not np.array_equal(z_t.astype(np.int64), zo.astype(np.int64)):
                raise Refuse(f"node {node.name!r}: zero point operand differs from the type's zero points")
        elif z_op is not None and np.any(np.asarray(z_op).astype(np.float64) != 0):
            raise Refuse(f"node {node.name!r}: float storage zero point not 0")

    @staticmethod
    def _zp_values(v):
        if v is None:
            return None
        if isinstance(v, QV):
            return v.s
        return v

    def _bind(self, qt: QT, shape, scale, zp, axis, block, where):
        scale = np.asarray(scale, np.float64)
        zpv = np.zeros(scale.shape, np.int64) if zp is None else np.asarray(zp).astype(np.int64)
        t = qt.with_params(scale.ravel(), zpv.ravel())
        Model._check_count(t, shape, where)
        if np.any(t.scales <= 0) or not np.all(np.isfinite(t.scales)):
            raise Refuse(f"{where}: bound scale not positive")
        if np.any(t.zps < t.smin) or np.any(t.zps > t.smax):
            raise Refuse(f"{where}: bound zero point out of range")
        if t.schema in (1, 4) and np.any(t.zps != 0):
            raise Refuse(f"{where}: bound zero point violates the schema")
        return t

    def _quantize_linear(self, node, ins, scope, opsets):
        y = node.output[0]
        qt = scope.types.get(y)
        x = ins[0]
        if qt is None:
            xs = [real(x).astype(x.t.np_expressed) if isinstance(x, QV) else x] + [self._zp_values(v) for v in ins[1:]]
            return self._eval_node(node, xs, opsets)
        xr = real(x) if isinstance(x, QV) else np.asarray(x).astype(np.float64)
        scale = ins[1]
        zp = self._zp_values(ins[2]) if len(ins) > 2 else None
        axis = _attr(node, "axis", 1)
        block = _attr(node, "block_size", 0)
        if qt.dynamic:
            t = self._bind(qt, xr.shape, scale, zp, axis, block, y)
        else:
            self._check_boundary(node, xr.shape, qt, scale, zp, axis, block)
            t = qt
        Model._check_count(t, xr.shape, y)
        sat = bool(_attr(node, "saturate", 1))
        return [QV(quantize(xr, t, saturate=sat), t)]

    def _dequantize_linear(self, node, ins, scope, opsets):
        x = ins[0]
        if not isinstance(x, QV):
            return self._eval_node(node, [x] + [self._zp_values(v) for v in ins[1:]], opsets)
        scale = ins[1]
        zp = self._zp_values(ins[2]) if len(ins) > 2 else None
        axis = _attr(node, "axis", 1)
        block = _attr(node, "block_size", 0)
        self._check_boundary(node, x.s.shape, x.t, scale, zp, axis, block)
        od = _attr(node, "output_dtype", 0)
        if od:
            odt = helper.tensor_dtype_to_np_dtype(od)
        else:
            odt = np.asarray(scale).dtype
        r = real(x)
        out = [r.astype(odt)]
        decl = scope.types.get(node.output[0])
        if decl is not None:
            raise Refuse("DequantizeLinear output declared quantized")
        return out

    def _dynamic_ql(self, node, ins, scope):
        x = np.asarray(ins[0]).astype(np.float64)
        base = QT(2, 1, None, None, None, None, 0, 0, 255, 1)
        t = dynamic_parameters(x, base)
        q = quantize(x, t)
        decl = scope.types.get(node.output[0])
        if decl is not None:
            if not (decl.dynamic and decl.storage == 2 and decl.schema == 0 and decl.axis is None
                    and decl.smin == 0 and decl.smax == 255):
                raise Refuse("DynamicQuantizeLinear output type is not dynamic uint8 asymmetric per tensor")
            t2 = decl.with_params(t.scales, t.zps)
            yv = QV(q, t2)
        else:
            yv = q
        return [yv, np.array(t.scales[0], np.float32), np.array(t.zps[0], np.uint8)]

    # ---------------------------------------------------------------- control flow (values cross unchanged)
    def _subgraph_outputs(self, g, env, scope, opsets):
        self.run_graph(g, env, scope, opsets)
        return [env.get(o.name) for o in g.output]

    def _if(self, node, ins, env, scope, opsets):
        cond = bool(np.asarray(real(ins[0])).ravel()[0])
        g = _attr(node, "then_branch" if cond else "else_branch")
        sub = Env(env)
        return self._subgraph_outputs(g, sub, scope, opsets)

    @staticmethod
    def _stack(vals, out_decl):
        if not vals:
            return np.zeros((0,), np.float32)
        if isinstance(vals[0], QV):
            s = np.stack([v.s for v in vals])
            t0 = vals[0].t
            if out_decl is not None and not out_decl.dynamic:
                return QV(s, out_decl)
            t = QT(t0.storage, t0.expressed, t0.scales, t0.zps, None if t0.axis is None else t0.axis + 1, t0.block,
                   t0.schema, t0.smin, t0.smax, t0.version, t0.offsets, t0.codebook)
            return QV(s, t)
        return np.stack(vals)

    def _loop(self, node, ins, env, scope, opsets):
        body = _attr(node, "body")
        M = None if len(ins) < 1 or ins[0] is None else int(np.asarray(ins[0]).ravel()[0])
        cond = True if len(ins) < 2 or ins[1] is None else bool(np.asarray(ins[1]).ravel()[0])
        carried = list(ins[2:])
        ncar = len(carried)
        nscan = len(body.output) - 1 - ncar
        scans = [[] for _ in range(nscan)]
        i = 0
        while (M is None or i < M) and cond:
            sub = Env(env)
            bi = body.input
            sub.d[bi[0].name] = np.array(i, np.int64)
            sub.d[bi[1].name] = np.array(cond, bool)
            for k in range(ncar):
                sub.d[bi[2 + k].name] = carried[k]
            outs = self._subgraph_outputs(body, sub, scope, opsets)
            cond = bool(np.asarray(outs[0]).ravel()[0])
            carried = outs[1:1 + ncar]
            for k in range(nscan):
                scans[k].append(outs[1 + ncar + k])
            i += 1
        res = carried + [self._stack(scans[k], scope.types.get(node.output[ncar + k])) for k in range(nscan)]
        return res

    def _scan(self, node, ins, env, scope, opsets):
        body = _attr(node, "body")
        nsi = _attr(node, "num_scan_inputs")
        nstate = len(ins) - nsi
        state = list(ins[:nstate])
        sins = ins[nstate:]
        in_axes = list(_attr(node, "scan_input_axes", [0] * nsi) or [0] * nsi)
        in_dirs = list(_attr(node, "scan_input_directions", [0] * nsi) or [0] * nsi)
        nout = len(body.output) - nstate
        out_axes = list(_attr(node, "scan_output_axes", [0] * nout) or [0] * nout)
        out_dirs = list(_attr(node, "scan_output_directions", [0] * nout) or [0] * nout)

        def arr(v):
            return v.s if isinstance(v, QV) else v

        def rank(v):
            return arr(v).ndim

        in_axes = [a + rank(v) if a < 0 else a for a, v in zip(in_axes, sins)]
        T = arr(sins[0]).shape[in_axes[0]]
        outs_acc = [[] for _ in range(nout)]
        for it in range(T):
            sub = Env(env)
            for k in range(nstate):
                sub.d[body.input[k].name] = state[k]
            for j, v in enumerate(sins):
                idx = it if in_dirs[j] == 0 else T - 1 - it
                a = np.take(arr(v), idx, axis=in_axes[j])
                if isinstance(v, QV):
                    t0 = v.t
                    ax = t0.axis
                    if ax is not None:
                        if ax == in_axes[j]:
                            raise Refuse("per-axis type along the scanned axis")
                        ax = ax - 1 if ax > in_axes[j] else ax
                    t = scope.types.get(body.input[nstate + j].name) or QT(
                        t0.storage, t0.expressed, t0.scales, t0.zps, ax, t0.block, t0.schema, t0.smin, t0.smax,
                        t0.version)
                    a = QV(a, t)
                sub.d[body.input[nstate + j].name] = a
            outs = self._subgraph_outputs(body, sub, scope, opsets)
            state = outs[:nstate]
            for k in range(nout):
                outs_acc[k].append(outs[nstate + k])
        res = list(state)
        for k in range(nout):
            vals = outs_acc[k]
            if out_dirs[k] == 1:
                vals = vals[::-1]
            decl = scope.types.get(node.output[nstate + k])
            if vals and isinstance(vals[0], QV):
                ax = out_axes[k]
                r = vals[0].s.ndim + 1
                ax = ax + r if ax < 0 else ax
                s = np.stack([v.s for v in vals], axis=ax)
                res.append(QV(s, decl if decl is not None else vals[0].t))
            else:
                ax = out_axes[k]
                r = np.asarray(vals[0]).ndim + 1
                ax = ax + r if ax < 0 else ax
                res.append(np.stack(vals, axis=ax))
        return res


# ================================================================ the backend object (BACKENDS.md)
class MyBackend:
    name = "cleanroom"
    version = "0.1"
    form = "typed"

    def supports(self, case):
        return True

    def prepare(self, case):
        return Model(str(case.model_file("typed")))

    def run(self, prepared: Model, feeds):
        M = prepared
        g = M.m.graph
        env = Env()
        for name, qv in M.qinit.items():
            env.d[name] = qv
        for name, t in M.inits.items():
            if name not in env.d:
                env.d[name] = tensor_array(t)
        for vi in g.input:
            name = vi.name
            qt = M.main.types.get(name)
            if qt is None:
                if name in feeds:
                    env.d[name] = np.asarray(feeds[name])
                continue
            if name not in feeds:
                continue
            f = np.asarray(feeds[name])
            if qt.dynamic:
                if name + ".scale" in feeds:
                    sc = np.asarray(feeds[name + ".scale"], np.float64)
                    zp = feeds.get(name + ".zero_point")
                    t = Runner._bind(None, qt, f.shape, sc, zp, None, None, name)
                    s = f.astype(qt.np_storage)
                    if not qt.is_float and s.size and (s.astype(np.int64).min() < t.smin
                                                       or s.astype(np.int64).max() > t.smax):
                        raise Refuse(f"{name}: fed storage outside the range")
                    env.d[name] = QV(s, t)
                else:
                    x = f.astype(np.float64)
                    t = dynamic_parameters(x, qt)
                    env.d[name] = QV(quantize(x, t), t)
            else:
                Model._check_count(qt, f.shape, name)
                env.d[name] = QV(f.astype(qt.np_storage), qt)
        runner = Runner(M)
        runner.run_graph(g, env, M.main, M.opsets)
        out = {}
        for vo in g.output:
            v = env.get(vo.name)
            if isinstance(v, QV):
                out[vo.name] = np.asarray(v.s)
                decl = M.main.types.get(vo.name)
                if decl is not None and decl.dynamic:
                    sc = v.t.scales.astype(v.t.np_expressed)
                    zp = v.t.zps.astype(v.t.np_storage)  # float storage: zeros of that type (semantics.md §3)
                    if v.t.axis is None and "companion-1d" not in MUTATE:
                        sc, zp = sc.reshape(()), zp.reshape(())
                    if "companion-int64" in MUTATE:
                        zp = zp.astype(np.int64)
                    out[vo.name + ".scale"] = sc
                    out[vo.name + ".zero_point"] = zp
            else:
                out[vo.name] = np.asarray(v)
        return out
