"""Cases for the type, not only the operators (issue 19, Deliver 3): every value of every field of QuantizedType in
a case where getting it wrong changes an output.

Float8 (x4) and float4 storage, int32 saturation, narrowed ranges, the five schemas on static and dynamic types,
per-tensor / per-axis / blocked weights on every operator that reads one (Conv, ConvTranspose, MatMul, Gemm,
Gather), parameters by reference, the version field, negative scales where they are valid (constants and their
data movement), bfloat16, model-local functions with a typed and an untyped body, NaN and infinite inputs. Each
builder's data are chosen so that one wrong feature moves an output by more than its tolerance: per-axis and
blocked scales differ by factors of two and more (an implementation that reads channel 0's scale everywhere
fails), data reach past narrowed ranges and the int32 range, dynamic data are not symmetric, and so on;
tests/test_conformance_mutations.py runs an implementation with each feature broken and requires a failure.
"""

from __future__ import annotations

import numpy as np

from .common import Spec, _bias, far_from_ties

FLOAT8 = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")
SCHEMAS = ("asymmetric", "symmetric", "symmetric_with_unsigned", "asymmetric_pow2_scale", "symmetric_pow2_scale")


def distinct_scales(count: int, top: int, negative: tuple[int, ...] = ()) -> list[float]:
    """``count`` dyadic scales that differ pairwise by at least a factor 1.5 (so that reading one channel's
    scale for another moves an output by many steps), negative at the positions ``negative``."""
    odd = (1, 3, 5, 7, 11, 13, 19, 29)
    out = [odd[k % len(odd)] * 2.0 ** -(top + 3 * (k % 3)) for k in range(count)]
    return [-s if k in negative else s for k, s in enumerate(out)]


def blocked(storage: str, expressed: str, shape: tuple, axis: int, block: int, top: int):
    """A symmetric weight type blocked along ``axis`` with distinct scales (one per block of every other index)."""
    from onnx_qtypes import QType  # noqa: PLC0415

    count = int(np.prod([-(-d // block) if i == axis else d for i, d in enumerate(shape)]))
    return QType(storage, distinct_scales(count, top), [0] * count, axis=axis, block_size=block, schema="symmetric",
                 expressed=expressed)


def _float_values(storage: str, rng, shape) -> np.ndarray:
    """Finite values of a float storage type that reach every magnitude class up to its largest finite value,
    both signs, so that a runtime decoding any of them wrongly (4 and 6 of float4e2m1, 448 of float8e4m3fn) fails.

    A tensor that can hold every finite value of the type (float4e2m1 from 16 elements) holds each once. A smaller
    one holds +max and -max, then one value of each binade (the powers of two [2^(e-1), 2^e) the values fall in,
    subnormals included) with a random sign, then each binade again with the other sign, then 0; where the
    binades outnumber the elements (float8e5m2's 32 in 24), one value of every width-th binade from a random
    offset, so that no two adjacent binades are both left out while the elements number more than half the
    binades. Whatever room is left is drawn uniformly over the type's finite codes, and the whole is shuffled:
    seeded, so the same every run."""
    from onnx_qtypes.proto.storage_types import STORAGE_TYPES  # noqa: PLC0415

    st = STORAGE_TYPES[storage]
    codes = np.arange(2 ** st.bits, dtype=np.uint8).view(st.np_dtype)
    finite = codes[np.isfinite(codes.astype(np.float64))].astype(np.float64)
    count = int(np.prod(shape))
    if count >= finite.size:
        picks = list(finite)
    else:
        positive = np.unique(finite[finite > 0])
        exponents = np.frexp(positive)[1]
        binades = [positive[exponents == e] for e in sorted(set(exponents.tolist()), reverse=True)]  # top first
        room = count - 2
        if len(binades) > room:  # every width-th binade from a random offset: no two adjacent ones left out
            width, offset = len(binades) / room, rng.uniform(0, len(binades) / room)
            binades = [binades[int(k * width + offset)] for k in range(room)]
        signs = rng.choice([-1.0, 1.0], len(binades))
        picks = [float(st.max), -float(st.max)]
        picks += [sign * rng.choice(b) for sign, b in zip(signs, binades)]
        picks += [-sign * rng.choice(b) for sign, b in zip(signs, binades)]
        picks += [0.0]
    picks = picks[:count] + list(rng.choice(finite, max(0, count - len(picks))))
    return np.asarray(picks, np.float64)[rng.permutation(count)].reshape(shape).astype(st.np_dtype)


def _features(rm):
    from onnx import TensorProto, helper  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.proto.storage_types import STORAGE_TYPES  # noqa: PLC0415
    from onnx_qtypes.reference_ops import dynamic_parameters  # noqa: PLC0415

    T = rm.T

    # -- float storage: float8 x4, float4 ---------------------------------------------------------------------
    def dequantize_float(g, v):
        per_axis = v == "per-axis"
        x = QType(g.storage, distinct_scales(4, 2) if per_axis else 2.0 ** -3, axis=2 if per_axis else None,
                  expressed=g.expressed)
        scale = np.asarray(x.scale if per_axis else x.scale[0], g.fdtype)
        inputs = [T("x", (2, 3, 4), x), T("s", scale.shape, dtype=g.fdt, value=scale)]
        feeds = {"x": _float_values(g.storage, g.rng, (2, 3, 4))}
        return Spec("DequantizeLinear", inputs, [T("y", (2, 3, 4), dtype=g.fdt)], {"axis": 2} if per_axis else {},
                    anchor="float-storage", feeds=feeds, note="float storage, values of every magnitude")

    def quantize_float(g, v):
        st = STORAGE_TYPES[g.storage]
        y = QType(g.storage, 2.0 ** -2, 0, expressed=g.expressed)
        x = g.rng.normal(0, 1, (2, 3, 4)) * st.max * 0.25 * np.array([0.01, 0.1, 1, 6])[g.rng.integers(0, 4, (2, 3, 4))]
        x.ravel()[:4] = [st.max * 0.25 * 1.5, -st.max * 0.25 * 3, 0.0, -0.0]  # beyond the largest value: saturate
        inputs = [T("x", (2, 3, 4), dtype=g.fdt), T("s", (), dtype=g.fdt, value=np.asarray(0.25, g.fdtype))]
        return Spec("QuantizeLinear", inputs, [T("y", (2, 3, 4), y)], {"output_dtype": st.data_type},
                    anchor="float-storage", feeds={"x": x.astype(g.fdtype)},
                    note="rounding to the nearest representable value, saturation at the largest finite one")

    def matmul_float_weight(g, v):
        a = QType("int8", 2.0 ** -5, 3, expressed=g.expressed)
        blocked = v == "blocked"
        if blocked:  # microscaling: power-of-two scales per block of 4 along K
            b = QType(g.storage, [2.0 ** -k for k in (3, 1, 6, 2, 4, 0)], [0] * 6, axis=0, block_size=4,
                      schema="symmetric_pow2_scale", expressed=g.expressed)  # (8, 3): (2, 3) blocks
        else:
            b = QType(g.storage, distinct_scales(3, 4), [0] * 3, axis=1, schema="symmetric", expressed=g.expressed)
        value = _float_values(g.storage, g.rng, (8, 3))
        y = g.out(1.0, storage="int8")
        inputs = [T("a", (2, 8), a), T("b", (8, 3), b, value=value)]
        return Spec("MatMul", inputs, [T("y", (2, 3), y)], {}, anchor="float-storage",
                    note=f"{g.storage} weights ({v}), int8 activations")

    def float_relu(g, v):
        x = QType(g.storage, 2.0 ** -4, 0, expressed=g.expressed)
        return Spec("Relu", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), x)], {}, anchor="float-storage",
                    feeds={"x": _float_values(g.storage, g.rng, (2, 3, 4))}, note="float storage moved exactly")

    def float_add(g, v):
        a, b = (QType(g.storage, s, 0, expressed=g.expressed) for s in (2.0 ** -4, 2.0 ** -6))
        y = QType(g.storage, 2.0 ** -3, 0, expressed=g.expressed)
        feeds = {"a": _float_values(g.storage, g.rng, (2, 3, 4)), "b": _float_values(g.storage, g.rng, (2, 3, 4))}
        return Spec("Add", [T("a", (2, 3, 4), a), T("b", (2, 3, 4), b)], [T("y", (2, 3, 4), y)], {},
                    anchor="float-storage", feeds=feeds, note="float storage requantized (one position)")

    def float_dynamic_output(schema):
        """y = Add(a, b) into a dynamic float-storage graph output: its values, y.scale and y.zero_point. Float
        storage has zero point 0, so the parameters take the symmetric form whatever ``schema`` declares
        (semantics.md#dynamic-parameters): lower writes no such form, only a typed reader runs it."""
        def build(g, v):
            a, b = (QType(g.storage, s, 0, expressed=g.expressed) for s in (2.0 ** -4, 2.0 ** -6))
            y = QType(g.storage, schema=schema, expressed=g.expressed)
            feeds = {"a": _float_values(g.storage, g.rng, (2, 3, 4)), "b": _float_values(g.storage, g.rng, (2, 3, 4))}
            # -max in a and b at one place: max|y| / max = 2^-4 + 2^-6 = 1.25 * 2^-4, whose power of two is 2^-3
            # rounded up (the definition) but 2^-4 rounded down or to the nearest (log2 1.25 = 0.32 < 0.5)
            for x in feeds.values():
                flat = x.reshape(-1)
                k = int(np.flatnonzero(flat.astype(np.float64) == -STORAGE_TYPES[g.storage].max)[0])
                flat[[0, k]] = flat[[k, 0]]
            return Spec("Add", [T("a", (2, 3, 4), a), T("b", (2, 3, 4), b)], [T("y", (2, 3, 4), y)], {},
                        anchor="dynamic-parameters", feeds=feeds, features=("dynamic", "dynamic-output"),
                        qdq="typed-only", note=f"a dynamic {schema} {g.storage} graph output (symmetric parameters "
                        "whatever the schema): its values, y.scale and y.zero_point")
        return build

    def float_dynamic_input(g, v):
        """x: a dynamic float-storage graph input fed as storage with x.scale and x.zero_point (0 in the storage
        type, as y.zero_point is returned; semantics.md#calling-convention), times a static weight of the same
        storage into a static int8 y. Fed as storage, no parameters are chosen at run time, so lower writes it
        (DequantizeLinear of x by x.scale and x.zero_point, both graph inputs of the lowered model)."""
        x = QType(g.storage, schema="symmetric", expressed=g.expressed)
        w = QType(g.storage, 2.0 ** -3, 0, schema="symmetric", expressed=g.expressed)
        feeds = {"x": _float_values(g.storage, g.rng, (2, 3, 4)), "x.scale": np.asarray(3 * 2.0 ** -6, g.fdtype),
                 "x.zero_point": np.zeros((), STORAGE_TYPES[g.storage].np_dtype)}
        inputs = [T("x", (2, 3, 4), x), T("w", (4, 5), w, value=_float_values(g.storage, g.rng, (4, 5)))]
        return Spec("MatMul", inputs, [T("y", (2, 3, 5), g.out(1.0, storage="int8"))], {},
                    anchor="calling-convention", feeds=feeds, features=("dynamic", "dynamic-input-storage"),
                    note=f"a dynamic {g.storage} graph input fed as storage with x.scale and x.zero_point")

    def float_dynamic_input_reals(g, v):
        """x: a dynamic float-storage graph input fed as reals: the reader quantizes them with the symmetric
        parameters float storage takes (max |x| / the largest finite value, semantics.md#dynamic-parameters), then
        MatMul with a static weight into a static int8 y. Lower writes no such quantization: typed readers only."""
        x = QType(g.storage, expressed=g.expressed)  # asymmetric by default: float storage is symmetric regardless
        w = QType(g.storage, 2.0 ** -3, 0, schema="symmetric", expressed=g.expressed)
        reals = (g.rng.normal(0.5, 2.0, (2, 3, 4))).astype(g.fdtype)
        inputs = [T("x", (2, 3, 4), x), T("w", (4, 5), w, value=_float_values(g.storage, g.rng, (4, 5)))]
        return Spec("MatMul", inputs, [T("y", (2, 3, 5), g.out(1.0, storage="int8"))], {},
                    anchor="calling-convention", feeds={"x": reals}, features=("dynamic", "dynamic-input-reals"),
                    qdq="typed-only", note=f"a dynamic {g.storage} graph input fed as reals, quantized symmetrically")

    # -- int32 saturation, narrowed ranges -------------------------------------------------------------------------
    def int32_saturation(g, v):
        a, b = QType("int8", 2.0 ** -3, 0, expressed=g.expressed), QType("int8", 2.0 ** -2, -5, expressed=g.expressed)
        y = QType("int32", 2.0 ** -27, 0, schema="symmetric", expressed=g.expressed)  # |reals| > 16 saturate
        return Spec("Add", [T("a", (2, 3, 4), a), T("b", (2, 3, 4), b)], [T("y", (2, 3, 4), y)], {},
                    features=("saturation",), note="an int32 output beyond the int32 range saturates")

    def narrowed_quantize(g, v):
        lo, hi = {"int8": (-127, 127), "uint8": (16, 239), "int4": (-7, 7), "int16": (-32767, 32767)}[g.storage]
        y = QType(g.storage, 2.0 ** -4, 0 if lo < 0 else 128, storage_min=lo, storage_max=hi, expressed=g.expressed)
        x = g.rng.normal(0, 1, (2, 3, 4)) * (hi - lo) * 2.0 ** -4 * 0.6
        inputs = [T("x", (2, 3, 4), dtype=g.fdt), T("s", (), dtype=g.fdt, value=np.asarray(2.0 ** -4, g.fdtype)),
                  T("z", (), value=np.asarray(y.zero_point[0]).astype(g.info.np_dtype))]
        return Spec("QuantizeLinear", inputs, [T("y", (2, 3, 4), y)], {}, anchor="quantize", features=("saturation",),
                    feeds={"x": far_from_ties(x.astype(g.fdtype), y)}, note=f"a narrowed range [{lo}, {hi}]")

    def narrowed_add(g, v):
        a, b = g.q(), g.q()
        lo, hi = {"int8": (-100, 100), "uint8": (16, 239), "int4": (-7, 7), "int16": (-30000, 30000)}[g.storage]
        y = QType(g.storage, (g.width(a) + g.width(b)) / (hi - lo) / 3, (lo + hi) // 2, storage_min=lo, storage_max=hi,
                  expressed=g.expressed)
        y = y.replace(scale=float(2.0 ** np.ceil(np.log2(y.scale[0]))))
        return Spec("Add", [T("a", (2, 3, 4), a), T("b", (2, 3, 4), b)], [T("y", (2, 3, 4), y)], {},
                    features=("saturation",), note=f"the output saturates at a narrowed range [{lo}, {hi}]")

    def narrowed_conv(g, v):
        x = QType("int8", 2.0 ** -4, -3, expressed=g.expressed)
        w = QType("int8", distinct_scales(3, 5), [0] * 3, axis=0, schema="symmetric", storage_min=-127,
                  storage_max=127, expressed=g.expressed)
        y = QType("int8", 2.0 ** -2, 0, schema="symmetric", storage_min=-127, storage_max=127, expressed=g.expressed)
        wv = g.rng.integers(-127, 128, (3, 2, 3, 3))
        inputs = [T("x", (1, 2, 5, 5), x), T("w", (3, 2, 3, 3), w, value=wv)]
        return Spec("Conv", inputs, [T("y", (1, 3, 3, 3), y)], {"kernel_shape": [3, 3]}, features=("saturation",),
                    note="symmetric [-127, 127] weights and output (the output saturates there)")

    # -- schemas: static and dynamic ------------------------------------------------------------------------------
    def static_schemas(g, v):
        if g.storage == "uint8":
            a = QType("uint8", 2.0 ** -5, 128, schema="symmetric_with_unsigned", expressed=g.expressed)
            b = QType("uint8", 3 * 2.0 ** -7, 0, schema="symmetric_with_unsigned", expressed=g.expressed)
            y = QType("uint8", 2.0 ** -4, 40, schema="asymmetric_pow2_scale", expressed=g.expressed)
        else:
            a = QType("int8", 5 * 2.0 ** -7, 0, schema="symmetric", expressed=g.expressed)
            b = QType("int8", 2.0 ** -6, 17, schema="asymmetric_pow2_scale", expressed=g.expressed)
            y = QType("int8", 2.0 ** -4, 0, schema="symmetric_pow2_scale", expressed=g.expressed)
        return Spec("Add", [T("a", (2, 3, 4), a), T("b", (2, 3, 4), b)], [T("y", (2, 3, 4), y)], {},
                    anchor="proposal/spec/types.md#schemas", note="static types of several schemas (their zero "
                    "points and scales as declared)")

    def dynamic_schema(schema, positive=False):
        """x -> Identity -> h (dynamic, ``schema``) -> Identity -> y (float): y is h's reals, which the
        parameters the schema chooses decide."""
        def build(g, v):
            h = QType(g.storage, schema=schema, expressed=g.expressed)
            x = g.rng.normal(1.0, 2.0, (2, 3, 4))
            x = np.abs(x) + 0.25 if positive else x
            x = x.astype(g.fdtype)
            for _ in range(3):  # keep every element off a near-tie of the parameters the data choose
                x = far_from_ties(x, dynamic_parameters(x, h))
            nodes = [("Identity", ["x"], ["h"], {}), ("Identity", ["h"], ["y"], {})]
            step = abs(dynamic_parameters(x, h).scale[0])  # y is judged in h's steps
            return Spec("Identity", [T("x", (2, 3, 4), dtype=g.fdt)], [T("y", (2, 3, 4), dtype=g.fdt)], {},
                        nodes=nodes, hidden=[T("h", (2, 3, 4), h)], anchor="dynamic-parameters", feeds={"x": x},
                        features=("dynamic",), steps={"y": step},
                        note=f"a dynamic {schema} type ({'non-negative' if positive else 'mixed-sign'} data) between "
                             "a float input and a float output")
        return build

    # -- granularity on every operator that reads a weight ----------------------------------------------------------
    def conv_blocked(g, v):
        x = g.q()
        w = blocked(g.weight_storage, g.expressed, (3, 4, 3, 3), 1, 2, 4)  # blocks of 2 input channels
        y = g.out(g.width(x) * 0.5)
        inputs = [T("x", (1, 4, 4, 4), x), T("w", (3, 4, 3, 3), w, value=g.data(w, (3, 4, 3, 3)))]
        return Spec("Conv", inputs, [T("y", (1, 3, 4, 4), y)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
                    anchor="proposal/spec/types.md#granularity", note="weights blocked along the input channels")

    def conv_transpose_blocked(g, v):
        x = g.q()
        w = blocked(g.weight_storage, g.expressed, (4, 3, 2, 2), 0, 2, 4)  # blocks of 2 input channels
        y = g.out(g.width(x) * 0.5)
        inputs = [T("x", (1, 4, 3, 3), x), T("w", (4, 3, 2, 2), w, value=g.data(w, (4, 3, 2, 2)))]
        return Spec("ConvTranspose", inputs, [T("y", (1, 3, 6, 6), y)], {"kernel_shape": [2, 2], "strides": [2, 2]},
                    anchor="proposal/spec/types.md#granularity", note="weights blocked along the input channels")

    def gemm_blocked(g, v):
        a = g.q()
        b = blocked(g.weight_storage, g.expressed, (5, 4), 1, 2, 4)  # with transB: blocks of 2 along K
        y = g.out(g.width(a) * 0.5)
        inputs = [T("a", (3, 4), a), T("b", (5, 4), b, value=g.data(b, (5, 4)))]
        return Spec("Gemm", inputs, [T("y", (3, 5), y)], {"transB": 1}, anchor="proposal/spec/types.md#granularity",
                    note="weights blocked along K")

    def gather_weight(g, v):
        """An embedding table: rows picked by index, requantized to one output type."""
        if v == "per-tensor":
            w = QType(g.storage, 2.0 ** -5, 0, schema="symmetric", expressed=g.expressed)
        elif v == "per-axis":
            w = QType(g.storage, distinct_scales(6, 2), [0] * 6, axis=0, schema="symmetric", expressed=g.expressed)
        else:
            w = blocked(g.storage, g.expressed, (6, 4), 1, 2, 2)
        y = g.out(1.0)
        idx = T("idx", (4,), dtype=TensorProto.INT64)
        feeds = {"idx": np.array([5, 0, 3, 1], np.int64)}
        return Spec("Gather", [T("w", (6, 4), w, value=g.data(w, (6, 4))), idx], [T("y", (4, 4), y)], {"axis": 0},
                    anchor="proposal/spec/types.md#granularity", feeds=feeds,
                    note=f"a {v} weight table read by Gather, requantized")

    # -- parameters by reference, the version field -----------------------------------------------------------------
    def by_reference(g, v):
        x = QType("int8", 3 * 2.0 ** -6, -7, expressed=g.expressed, scale_tensor="x_scale",
                  zero_point_tensor="x_zero_point")
        w = QType("int8", distinct_scales(3, 5), [0] * 3, axis=0, schema="symmetric", expressed=g.expressed,
                  scale_tensor="w_scale")
        y = g.out(2.0)
        inputs = [T("x", (1, 2, 5, 5), x), T("w", (3, 2, 3, 3), w, value=g.data(w, (3, 2, 3, 3)))]
        return Spec("Conv", inputs, [T("y", (1, 3, 3, 3), y)], {"kernel_shape": [3, 3]},
                    anchor="proposal/spec/types.md#references",
                    note="the activation's scale and zero point and the weight's scales in initializers (version 2)")

    def dequantize_by_reference(g, v):
        x = QType("int8", distinct_scales(4, 3), [3, -9, 0, 21], axis=2, expressed=g.expressed, scale_tensor="x_scale",
                  zero_point_tensor="x_zero_point")
        inputs = [T("x", (2, 3, 4), x)]
        nodes = [("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["y"], {"axis": 2})]
        return Spec("DequantizeLinear", inputs, [T("y", (2, 3, 4), dtype=g.fdt)], {}, nodes=nodes,
                    anchor="proposal/spec/types.md#references",
                    note="a per-axis type whose parameters are the initializers the DequantizeLinear reads")

    def versioned(version):
        def hook(model):
            from onnx_qtypes.proto import iter_declarations  # noqa: PLC0415
            from onnx_qtypes.proto.model import read_view, write_view  # noqa: PLC0415

            for decl in iter_declarations(model):
                tensor_type = decl.value_info.type.tensor_type
                view = read_view(tensor_type, decl.pointer)
                if view.HasField("quantization"):
                    view.quantization.version = version
                    write_view(tensor_type, view)

        def build(g, v):
            a, b = g.q(), g.q()
            y = g.out((g.width(a) + g.width(b)) * 0.75)
            return Spec("Add", [T("a", (2, 3, 4), a), T("b", (2, 3, 4), b)], [T("y", (2, 3, 4), y)], {},
                        anchor="proposal/spec/types.md#versioning", model_hook=hook,
                        note=f"every type writes version {version} (parameters listed)")
        return build

    # -- negative scales (constants and their data movement) -----------------------------------------------------------
    def conv_negative(g, v):
        x = QType(g.storage, 2.0 ** -4, 5, expressed=g.expressed)
        w = QType(g.storage, distinct_scales(3, 5, negative=(1,)), [0] * 3, axis=0, schema="symmetric",
                  expressed=g.expressed)
        y = g.out(3.0)
        inputs = [T("x", (1, 2, 5, 5), x), T("w", (3, 2, 3, 3), w, value=g.data(w, (3, 2, 3, 3))),
                  T("b", (3,), _bias(g, x, w, 3), value=np.array([-97, 40, 194], np.int32))]
        return Spec("Conv", inputs, [T("y", (1, 3, 5, 5), y)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
                    anchor="proposal/spec/types.md#negative-scales", note="a negative weight scale on channel 1")

    def matmul_negative(g, v):
        a = QType(g.storage, 2.0 ** -4, 2, expressed=g.expressed)
        b = QType(g.storage, -3 * 2.0 ** -6, 0, schema="symmetric", expressed=g.expressed)
        y = g.out(2.0)
        inputs = [T("a", (2, 3, 4), a), T("b", (4, 5), b, value=g.data(b, (4, 5)))]
        return Spec("MatMul", inputs, [T("y", (2, 3, 5), y)], {}, anchor="proposal/spec/types.md#negative-scales",
                    note="a negative per-tensor weight scale")

    def gemm_negative(g, v):
        a = QType(g.storage, 2.0 ** -4, -6, expressed=g.expressed)
        b = QType(g.storage, distinct_scales(5, 5, negative=(0, 3)), [0] * 5, axis=0, schema="symmetric",
                  expressed=g.expressed)
        y = g.out(2.0)
        inputs = [T("a", (3, 4), a), T("b", (5, 4), b, value=g.data(b, (5, 4)))]
        return Spec("Gemm", inputs, [T("y", (3, 5), y)], {"transB": 1, "alpha": 0.5},
                    anchor="proposal/spec/types.md#negative-scales", note="negative scales on two output channels")

    def dequantize_negative(g, v):
        x = QType(g.storage, distinct_scales(4, 3, negative=(0, 2)), [0] * 4, axis=1, schema="symmetric",
                  expressed=g.expressed)
        scale = np.asarray(x.scale, g.fdtype)
        inputs = [T("x", (3, 4), x, value=g.data(x, (3, 4))), T("s", (4,), dtype=g.fdt, value=scale)]
        return Spec("DequantizeLinear", inputs, [T("y", (3, 4), dtype=g.fdt)], {"axis": 1},
                    anchor="proposal/spec/types.md#negative-scales", note="a weight with negative scales, dequantized")

    def moved_negative(g, v):
        """Data movement of a negative-scale weight (Transpose, Gather), then MatMul reads it."""
        w = QType(g.storage, -5 * 2.0 ** -7, 0, schema="symmetric", expressed=g.expressed)
        a = QType(g.storage, 2.0 ** -4, 1, expressed=g.expressed)
        y = g.out(2.0)
        nodes = [("Transpose", ["w"], ["wt"], {"perm": [1, 0]}), ("Gather", ["wt", "idx"], ["wg"], {"axis": 0}),
                 ("MatMul", ["a", "wg"], ["y"], {})]
        inputs = [T("w", (5, 4), w, value=g.data(w, (5, 4))), T("a", (3, 4), a),
                  T("idx", (4,), dtype=TensorProto.INT64, value=np.array([3, 0, 2, 1], np.int64))]
        return Spec("Transpose", inputs, [T("y", (3, 5), y)], {}, nodes=nodes,
                    hidden=[T("wt", (4, 5), w), T("wg", (4, 5), w)], anchor="proposal/spec/types.md#negative-scales",
                    note="a negative-scale weight transposed and gathered (exact), then MatMul")

    # -- model-local functions ---------------------------------------------------------------------------------
    def function_typed(g, v):
        """local.Requant: a typed body (Transpose keeps fx's type, Relu requantizes to fy's): storage in and out."""
        x = g.q()
        y = QType(g.storage, x.scale[0] * 3, x.zero_point[0] // 2, expressed=g.expressed)
        body = helper.make_function(
            "local", "Requant", ["fx"], ["fy"],
            [helper.make_node("Transpose", ["fx"], ["ft"], perm=[0, 2, 1]), helper.make_node("Relu", ["ft"], ["fy"])],
            [helper.make_opsetid("", 21)])
        body.value_info.extend([helper.make_tensor_value_info(n, 0, None) for n in ("fx", "ft", "fy")])
        inner = [T("fx", (2, 3, 4), x), T("ft", (2, 4, 3), x), T("fy", (2, 4, 3), y)]
        nodes = [("Requant", ["x"], ["y"], {}, "local")]
        return Spec("Requant", [T("x", (2, 3, 4), x)], [T("y", (2, 4, 3), y)], {}, nodes=nodes,
                    functions=[(body, inner)], anchor="dequantize-op-quantize",
                    note="a model-local function whose body declares types: it computes on stored values")

    def function_untyped(g, v):
        """local.Poly: y = x * x - x, an untyped body: dequantize, the body on reals, quantize."""
        x = g.q()
        body = helper.make_function(
            "local", "Poly", ["fx"], ["fy"],
            [helper.make_node("Mul", ["fx", "fx"], ["sq"]), helper.make_node("Sub", ["sq", "fx"], ["fy"])],
            [helper.make_opsetid("", 21)])
        y = g.out(g.width(x) ** 2 / 4)
        nodes = [("Poly", ["x"], ["y"], {}, "local")]
        return Spec("Poly", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), y)], {}, nodes=nodes, functions=[(body, [])],
                    note="a model-local function with an untyped body: evaluated on the reals")

    # -- QuantizeLinear near-ties (semantics.md#quantize-precision) -------------------------------------------------------
    def near_tie_quantize(g, v):
        """Elements where dividing in the expressed type (onnx.reference: x / s, then rint; or x * (1 / s)) rounds
        to another integer than the exact quotient, found by search next to every half-integer: each is a
        near-tie, so the case allows one step (and says why); an exact division gets every element right."""
        from fractions import Fraction  # noqa: PLC0415

        f = g.fdtype.type
        s = float(f(0.3)) if g.info.bits <= 8 else float(f(0.3)) * 2.0 ** -6
        zero = 0 if g.info.min < 0 else (g.info.min + g.info.max + 1) // 2
        y = QType(g.storage, s, zero, expressed=g.expressed)
        scale, inverse = f(s), f(1) / f(s)
        found = []
        for k in g.rng.permutation(np.arange(g.info.min - zero, g.info.max - zero)):
            nearest = f((int(k) + 0.5) * s)
            for x in (nearest, np.nextafter(nearest, f(np.inf)), np.nextafter(nearest, f(-np.inf))):
                exact = round(Fraction(float(x)) / Fraction(s))  # half to even, exactly
                if int(np.rint(x / scale)) != exact or int(np.rint(x * inverse)) != exact:
                    found.append(x)
                    break
            if len(found) == 24:
                break
        inputs = [T("x", (24,), dtype=g.fdt), T("s", (), dtype=g.fdt, value=np.asarray(s, f)),
                  T("z", (), value=np.asarray(zero).astype(g.info.np_dtype))]
        return Spec("QuantizeLinear", inputs, [T("y", (24,), y)], {}, anchor="quantize", features=("near-ties",),
                    feeds={"x": np.array(found, f)},
                    note="near-ties where a division in the expressed type misses the exact quotient")

    # -- NaN and infinities ------------------------------------------------------------------------------------
    SPECIALS = [np.nan, np.inf, -np.inf, 0.0, 1.25, -7.5, 1e30, -1e30]

    def nan_add(g, v):
        a = g.q()
        y = g.out(g.width(a), fitted=False)
        b = g.real((2, 4))
        with np.errstate(over="ignore"):  # 1e30 is inf in float16
            b.ravel()[:len(SPECIALS)] = SPECIALS[:b.size]
        return Spec("Add", [T("a", (2, 4), a), T("b", (2, 4), dtype=g.fdt)], [T("y", (2, 4), y)], {},
                    feeds={"b": b.astype(g.fdtype)}, note="a float operand holds NaN and +-inf: NaN gives the zero "
                    "point, +-inf saturate")

    def nan_quantize_float(g, v):
        y = QType(g.storage, 2.0 ** -2, 0, expressed=g.expressed)
        x = np.array(SPECIALS + [0.3, -2.2, 5.0, 1000.0], np.float64).reshape(3, 4)
        inputs = [T("x", (3, 4), dtype=g.fdt), T("s", (), dtype=g.fdt, value=np.asarray(0.25, g.fdtype))]
        return Spec("QuantizeLinear", inputs, [T("y", (3, 4), y)], {"output_dtype": STORAGE_TYPES[g.storage].data_type},
                    anchor="float-storage", feeds={"x": x.astype(g.fdtype)},
                    note="NaN stays NaN in float storage; +-inf and values beyond saturate (saturate=1)")

    out = []

    def add(case_id, storage, expressed, variant, build, weights=None):
        out.append((case_id, storage, expressed, variant, build, weights))

    for storage in (*FLOAT8, "float4e2m1"):
        for variant in ("per-tensor", "per-axis"):
            add(f"dequantize_linear-{storage}-float32-{variant}", storage, "float32", variant, dequantize_float)
        add(f"quantize_linear-{storage}-float32-per-tensor", storage, "float32", "per-tensor", quantize_float)
        add(f"matmul-int8-w{storage}-float32-per-axis", storage, "float32", "per-axis", matmul_float_weight)
        add(f"relu-{storage}-float32-per-tensor", storage, "float32", "per-tensor", float_relu)
        add(f"quantize_linear-nan-inf-{storage}-float32", storage, "float32", "per-tensor", nan_quantize_float)
    add("matmul-int8-wfloat4e2m1-float32-blocked", "float4e2m1", "float32", "blocked", matmul_float_weight)
    add("matmul-int8-wfloat8e4m3fn-float32-blocked", "float8e4m3fn", "float32", "blocked", matmul_float_weight)
    add("add-float8e4m3fn-float32-per-tensor", "float8e4m3fn", "float32", "per-tensor", float_add)
    add("add-float8e5m2-float16-per-tensor", "float8e5m2", "float16", "per-tensor", float_add)
    for storage, schema in (("float8e4m3fn", "asymmetric"), ("float8e5m2", "asymmetric"),
                            ("float4e2m1", "symmetric_pow2_scale")):
        add(f"dynamic-graph-output-add-{storage}-float32", storage, "float32", "dynamic", float_dynamic_output(schema))
        add(f"dynamic-graph-input-storage-matmul-{storage}-float32", storage, "float32", "dynamic",
            float_dynamic_input)
        add(f"dynamic-graph-input-reals-matmul-{storage}-float32", storage, "float32", "dynamic",
            float_dynamic_input_reals)
    add("add-int32-saturation-int8-float32", "int8", "float32", "per-tensor", int32_saturation)
    add("add-int32-saturation-int8-float16", "int8", "float16", "per-tensor", int32_saturation)
    for storage in ("int8", "uint8", "int4", "int16"):
        add(f"quantize_linear-narrowed-{storage}-float32", storage, "float32", "per-tensor", narrowed_quantize)
        add(f"add-narrowed-{storage}-float32", storage, "float32", "per-tensor", narrowed_add)
    add("conv-narrowed-int8-float32-per-axis", "int8", "float32", "per-axis", narrowed_conv)
    for storage in ("int8", "uint8"):
        add(f"add-schemas-{storage}-float32", storage, "float32", "per-tensor", static_schemas)
    for schema in SCHEMAS:
        for storage in ("int8", "uint8"):
            add(f"dynamic-{schema}-{storage}-float32", storage, "float32", "dynamic", dynamic_schema(schema))
        add(f"dynamic-{schema}-int8-float32-positive", "int8", "float32", "dynamic", dynamic_schema(schema, True))
    add("dynamic-symmetric-int4-float16", "int4", "float16", "dynamic", dynamic_schema("symmetric"))
    add("dynamic-symmetric_with_unsigned-uint8-bfloat16", "uint8", "bfloat16", "dynamic",
        dynamic_schema("symmetric_with_unsigned"))
    for storage in ("int8", "uint4"):
        add(f"conv-{storage}-float32-blocked", storage, "float32", "blocked", conv_blocked)
        add(f"conv_transpose-{storage}-float32-blocked", storage, "float32", "blocked", conv_transpose_blocked)
        add(f"gemm-{storage}-float32-blocked", storage, "float32", "blocked", gemm_blocked)
    add("conv-int16-wint8-float16-blocked", "int16", "float16", "blocked", conv_blocked, "int8")
    for variant in ("per-tensor", "per-axis", "blocked"):
        for storage in ("int8", "uint4"):
            add(f"gather-weight-{storage}-float32-{variant}", storage, "float32", variant, gather_weight)
    for expressed in ("float32", "float16"):
        add(f"conv-by-reference-int8-{expressed}-per-axis", "int8", expressed, "per-axis", by_reference)
        add(f"dequantize_linear-by-reference-int8-{expressed}-per-axis", "int8", expressed, "per-axis",
            dequantize_by_reference)
    add("add-version-1-int8-float32", "int8", "float32", "per-tensor", versioned(1))
    add("add-version-2-int8-float32", "int8", "float32", "per-tensor", versioned(2))
    add("conv-negative-weight-scale-int8-float32", "int8", "float32", "per-axis", conv_negative)
    add("conv-negative-weight-scale-int4-float16", "int4", "float16", "per-axis", conv_negative)
    add("matmul-negative-weight-scale-int8-float32", "int8", "float32", "per-tensor", matmul_negative)
    add("gemm-negative-weight-scale-int8-float32", "int8", "float32", "per-axis", gemm_negative)
    add("dequantize_linear-negative-scale-int8-float32-per-axis", "int8", "float32", "per-axis", dequantize_negative)
    add("dequantize_linear-negative-scale-int16-float16-per-axis", "int16", "float16", "per-axis", dequantize_negative)
    add("transpose-gather-negative-scale-int8-float32", "int8", "float32", "per-tensor", moved_negative)
    for storage, expressed in (("int8", "float32"), ("int16", "float16"), ("uint8", "bfloat16")):
        add(f"function-typed-body-{storage}-{expressed}", storage, expressed, "per-tensor", function_typed)
        add(f"function-untyped-body-{storage}-{expressed}", storage, expressed, "per-tensor", function_untyped)
    for storage, expressed in (("int8", "float16"), ("uint8", "float16"), ("int16", "float32"), ("uint16", "float32")):
        add(f"quantize_linear-near-ties-{storage}-{expressed}", storage, expressed, "per-tensor", near_tie_quantize)
    for storage, expressed in (("int8", "float32"), ("uint8", "float16"), ("int16", "float32")):
        add(f"add-nan-inf-{storage}-{expressed}", storage, expressed, "per-tensor", nan_add)
    return out


def _bfloat16(rm):
    """Operator cases in bfloat16: (op, storage, variants) crossed from the operator builders."""
    # ONNX's type constraints at opset 21 take bfloat16 for these (not Conv or AveragePool: QT305)
    return [("Add", "int8", ("per-tensor",)), ("Add", "uint8", ("per-tensor",)), ("Mul", "int8", ("per-tensor",)),
            ("MatMul", "uint8", ("per-axis", "blocked")), ("Gemm", "int8", ("per-tensor",)),
            ("DequantizeLinear", "uint8", ("per-tensor", "per-axis")), ("DequantizeLinear", "int16", ("per-tensor",)),
            ("QuantizeLinear", "int8", ("per-tensor", "blocked")), ("QuantizeLinear", "uint16", ("per-axis",)),
            ("Sigmoid", "int8", ("per-tensor",)), ("Softmax", "uint8", ("per-tensor",)),
            ("ReduceMean", "int16", ("per-tensor",)), ("Transpose", "uint8", ("per-tensor",)),
            ("Relu", "int8", ("per-tensor",)), ("Concat", "int16", ("per-tensor",))]
