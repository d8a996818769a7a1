"""ReferenceEvaluator: what a typed model computes, executed.

A subclass of ``onnx.reference.ReferenceEvaluator`` with the same call
shape. Every operator keeps onnx.reference's own implementation; the
quantized types only say how its integers are read and written:

- quantized tensors travel between nodes as their storage integers (the
  values the typed model holds; dynamic types carry their run-time
  parameters along, see ``QuantizedArray``);
- a node with quantized inputs gets them dequantized to float64, runs
  onnx.reference's implementation, and every output declared quantized is
  quantized by its type (``kernels="definitional"``, the definition);
- with ``kernels="integer"`` a node runs the integer-only kernel of
  ``reference_ops.ops`` when one exists for its operator and types, and
  falls back to the definition otherwise (``kernel_log`` says which);
- QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear whose integer
  side is typed are the boundary ops: they must use the type's parameters;
- If / Loop / Scan bodies run in evaluators of this class, so typed values
  flow through subgraphs unchanged.

Feeds for quantized graph inputs are storage integers (a dynamic input
takes float values, quantized by its schema); quantized outputs come back
as storage integers. Every feed is checked against the declared inputs
before the run (``feeds.check_feeds``: name, shape, element kind, exact
conversion only), and a model that defines a name twice or declares one
tensor with two types is refused when the evaluator is built.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnx.reference
from onnx import FunctionProto, GraphProto, ModelProto, NodeProto
from onnx.reference.op_run import OpRun

from onnx_qtypes.proto import iter_declarations, iter_graphs, load, read_qtype
from onnx_qtypes.proto.encoding import marker, plain_copy
from onnx_qtypes.proto.model import model_parameters, read_view
from onnx_qtypes.proto.control_flow import CONTROL_FLOW, crossing_problem, crossings
from onnx_qtypes.proto.errors import QTypeError, QTypesError
from onnx_qtypes.proto.names import first_non_utf8_value, not_utf8_error, require_utf8_names
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.reader import every_graph
from onnx_qtypes.reference_ops import quant
from onnx_qtypes.reference_ops.definition import body_dtype, exact_function, operator_input, runs_function_body
from onnx_qtypes.reference_ops.errors import EvaluationError, FeedError
from onnx_qtypes.reference_ops.feeds import InputSpec, check_feeds, input_specs
from onnx_qtypes.reference_ops.feeds import kind as element_kind
from onnx_qtypes.reference_ops.fixed_point import MultiplierError
from onnx_qtypes.reference_ops.operands import boundary_type, operand_qtype
from onnx_qtypes.reference_ops.single_assignment import check_single_assignment

__all__ = ["KERNEL_MODES", "EvaluationError", "FeedError", "QuantizedArray", "ReferenceEvaluator"]

KERNEL_MODES = ("definitional", "integer")


class QuantizedArray(np.ndarray):
    """Storage integers carrying the static type they were quantized with.

    Values of dynamic types travel in this form so that their consumers
    know the parameters chosen at run time; ``qtype`` is that resolved type.
    """

    qtype: QType | None

    def __array_finalize__(self, obj: Any) -> None:
        self.qtype = getattr(obj, "qtype", None)


def attach(storage: np.ndarray, qtype: QType) -> QuantizedArray:
    """``storage`` viewed as a QuantizedArray of resolved type ``qtype``."""
    out = np.asarray(storage).view(QuantizedArray)
    out.qtype = qtype
    return out


def _declared_types(model: ModelProto) -> dict[str, QType]:
    """Every quantized tensor with its type, valid; EvaluationError when two declarations of a name disagree
    (the result would depend on which one is read). Types are keyed by tensor name across the model."""
    out: dict[str, QType] = {}
    where: dict[str, str] = {}
    parameters = model_parameters(model)
    for decl in iter_declarations(model):
        qtype = read_qtype(decl.value_info, decl.pointer, parameters=parameters)
        if qtype is None:
            continue
        if decl.name not in out:
            out[decl.name], where[decl.name] = _validated(decl.name, qtype), decl.pointer
        elif qtype != out[decl.name]:
            raise EvaluationError(
                f"tensor {decl.name!r} is declared as {out[decl.name]} ({where[decl.name]}) and as {qtype} "
                f"({decl.pointer}); the result would depend on which one is read, so give every declaration one type"
            )
    return out


def _check_markers(model: ModelProto) -> None:
    """EvaluationError where a declaration's elem_type names another storage type than its quantized type (the
    marker of another type, or another plain type): which of the two the stored integers are is then unknown
    (checker rule QT119). The version-1 form (UNDEFINED) and the plain storage type itself are still read."""
    for decl in iter_declarations(model):
        tensor_type = decl.value_info.type.tensor_type
        if decl.value_info.type.WhichOneof("value") != "tensor_type" or tensor_type.elem_type == 0:
            continue
        view = read_view(tensor_type, decl.pointer)
        storage = view.quantization.storage_type
        if view.HasField("quantization") and tensor_type.elem_type not in (marker(storage), storage):
            named = onnx.TensorProto.DataType.Name(storage) if storage in onnx.TensorProto.DataType.values() else storage
            raise EvaluationError(
                f"tensor {decl.name!r} ({decl.pointer}): elem_type {tensor_type.elem_type} disagrees with its "
                f"quantized type's storage_type {named}, whose marker is {marker(storage)} (checker rule QT119)")


def _bare(qtype: QType | None) -> QType | None:
    return None if qtype is None else qtype.with_statistics(None)


def _validated(name: str, qtype: QType) -> QType:
    try:
        return qtype.replace()  # validated on the way
    except QTypeError as exc:
        raise EvaluationError(f"tensor {name!r}: its type is invalid: {exc.problem}") from None


def _check_constants_only(model: ModelProto, qtypes: dict[str, QType]) -> None:
    """EvaluationError where a version-3 type (offsets, a codebook, quantized parameters) declares a value that is
    not a constant: nothing defines quantizing into it (checker rule QT142, proposal/spec/llm_formats.md)."""
    constants = {init.name for _, graph in iter_graphs(model) for init in graph.initializer} | {
        o for _, graph in iter_graphs(model) for n in graph.node if n.op_type == "Constant" for o in n.output}
    for name, qtype in qtypes.items():
        if qtype.version >= 3 and name not in constants:
            raise EvaluationError(f"tensor {name!r} has a version-3 type ({qtype}), which declares constants only, "
                                  "but it is not a constant (checker rule QT142)")


def _check_crossings(model: ModelProto, qtypes: dict[str, QType]) -> None:
    """EvaluationError where If / Loop / Scan would hand stored integers to a tensor of another type: passing them
    on would read them at another scale, and no node there could requantize (checker rule QT312)."""
    opsets = {o.domain or "": o.version for o in model.opset_import}
    for _, graph in iter_graphs(model):
        for node in graph.node:
            for crossing in crossings(node, opsets.get("", 0)):  # crossings() reads default-domain nodes only
                problem = crossing_problem(node, crossing, qtypes.get(crossing.inner), qtypes.get(crossing.outer))
                if problem:
                    label = f"node {node.name!r} ({node.op_type})" if node.name else f"{node.op_type} node"
                    raise EvaluationError(f"{label}: {problem}")


class _Session:
    """What every evaluator of one typed model (and its subgraphs) shares."""

    def __init__(self, model: ModelProto, kernels: str) -> None:
        if kernels not in KERNEL_MODES:
            raise EvaluationError(f"kernels={kernels!r}: expected one of {', '.join(KERNEL_MODES)}")
        _check_markers(model)
        model = plain_copy(model)  # onnx.reference reads constants: their storage types, not the markers
        check_single_assignment(model)
        self.model = model
        self.kernels = kernels
        self.qtypes = _declared_types(model)
        _check_crossings(model, self.qtypes)
        _check_constants_only(model, self.qtypes)
        self.functions = {(f.domain, f.name) for f in model.functions}
        # a function whose body declares its inputs' or outputs' types computes on storage itself: its call passes
        # storage through (as control flow does) instead of dequantizing around the body
        self.typed_bodies = {(f.domain, f.name): f for f in model.functions
                             if any(n in self.qtypes for n in (*f.input, *f.output))}
        self.specs: list[InputSpec] = input_specs(model, self.qtypes)
        self.kernel_log: dict[str, str] = {}

    def kernel(self, op_type: str) -> Any:
        if self.kernels != "integer":
            return None
        from onnx_qtypes.reference_ops.ops import kernel  # noqa: PLC0415

        return kernel(op_type)

    def prepare_feeds(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """The feeds checked against the declared inputs (``feeds.check_feeds``: FeedError otherwise),
        quantized inputs as storage (dynamic ones quantized by their schema)."""
        checked = check_feeds(self.specs, feeds)
        declared = {s.name for s in self.specs}
        out: dict[str, Any] = {}
        for name, value in checked.items():
            if name not in declared:
                continue  # <x>.scale / <x>.zero_point: read with x
            qtype = self.qtypes.get(name)
            dynamic = qtype is not None and qtype.is_dynamic
            out[name] = self._dynamic_feed(name, value, qtype, checked) if dynamic else value
        return out

    def _dynamic_feed(self, name: str, value: np.ndarray, qtype: QType, feeds: Mapping[str, Any]) -> np.ndarray:
        # float storage fed as storage (its own ml_dtypes values beside <x>.scale) is storage, not reals:
        # semantics.md#calling-convention takes reals in the expressed type or a wider float only
        float_storage = qtype.storage_type.is_float and value.dtype == qtype.storage_type.np_dtype
        if element_kind(value.dtype) == "f" and not (float_storage and f"{name}.scale" in feeds):
            try:
                storage, resolved = quant.quantize_dynamic(value, qtype, tensor=name)
            except QTypeError as exc:  # e.g. inf or NaN in the data: no parameters to compute
                raise FeedError(f"input {name!r}: {exc.problem}") from None
            return attach(storage, resolved)
        scale, zero_point = np.asarray(feeds[f"{name}.scale"]), feeds.get(f"{name}.zero_point")
        if scale.dtype.kind != "f":
            raise FeedError(f"input {name!r}: {name}.scale holds {scale.dtype} values; give float scales")
        zp = None if zero_point is None else np.asarray(zero_point)
        # float storage: zeros of that type (operand_qtype refuses any other value); else integers
        if zp is not None and zp.dtype.kind not in "iu" and not (float_storage and zp.dtype == value.dtype):
            wanted = f"zeros of {value.dtype}" if float_storage else "integers (nothing is rounded silently)"
            raise FeedError(f"input {name!r}: {name}.zero_point holds {zp.dtype} values; give {wanted}")
        if zp is not None and zp.size != scale.size:
            raise FeedError(f"input {name!r}: {name}.zero_point holds {zp.size} values for {scale.size} scales; "
                            "give one per scale")
        if np.any(scale < 0):  # semantics.md#calling-convention: nothing quantized at run time has a negative scale
            raise FeedError(f"input {name!r}: {name}.scale holds a negative scale; a value quantized at run time "
                            "has positive scales (negative ones are for constants, proposal/spec/types.md#negative-scales)")
        if qtype.axis is None and scale.size != 1:
            raise FeedError(f"input {name!r}: its type {qtype} is per-tensor, so {name}.scale holds one value, "
                            f"not {scale.size}")
        try:
            given = operand_qtype(qtype.storage, scale, zp, value.shape,
                                  axis=qtype.axis if qtype.axis is not None else 1, block_size=qtype.block_size or 0)
            resolved = qtype.replace(scale=given.scale, zero_point=given.zero_point, axis=given.axis,
                                     block_size=given.block_size)
            return attach(quant.to_storage(value, resolved, tensor=name), resolved)
        except QTypeError as exc:
            raise FeedError(f"input {name!r} with {name}.scale / {name}.zero_point: {exc.problem}") from None
        except QTypesError as exc:
            raise FeedError(f"input {name!r} with {name}.scale / {name}.zero_point: {exc}") from None


# the domains onnx.reference computes itself (its own message says what it lacks there)
_STOCK_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training", "experimental"})


class ReferenceEvaluator(onnx.reference.ReferenceEvaluator):
    """Runs a typed model: ``ReferenceEvaluator(model).run(output_names, feeds)``.

    ``model`` is a ModelProto, a path or bytes. ``kernels`` is
    "definitional" (default: dequantize, run onnx.reference's operator,
    quantize) or "integer" (integer-only kernels where available).
    """

    _session: _Session | None = None
    _top = False

    def __new__(cls, proto: Any = None, *args: Any, kernels: str = "definitional", **kwargs: Any) -> ReferenceEvaluator:
        if cls._session is not None:
            return super().__new__(cls)
        where = os.fspath(proto) if isinstance(proto, (str, os.PathLike)) else cls.__name__
        if isinstance(proto, (str, bytes, os.PathLike)):
            proto = load(proto if not isinstance(proto, str) else os.fspath(proto))
        if not isinstance(proto, ModelProto):
            raise EvaluationError(f"ReferenceEvaluator: expected a ModelProto, a path or bytes, got {type(proto).__name__}")
        require_utf8_names(proto, where)
        bound = type(cls.__name__, (cls,), {"_session": _Session(proto, kernels), "__module__": cls.__module__})
        instance = super().__new__(bound)
        instance._top = True
        return instance

    def __init__(
        self,
        proto: Any,
        opsets: dict[str, int] | None = None,
        functions: list[Any] | None = None,
        verbose: int = 0,
        new_ops: list[type[OpRun]] | None = None,
        check_shape_annotations: bool = False,
        *,
        kernels: str = "definitional",
    ) -> None:
        session = self._session
        assert session is not None
        if self._top:
            proto = session.model
        self._typed = (
            self._top
            or isinstance(proto, GraphProto)
            or (isinstance(proto, FunctionProto) and (proto.domain, proto.name) in session.functions)
        )
        from onnx_qtypes.reference_ops.corrected import CORRECTED_OPS  # noqa: PLC0415
        from onnx_qtypes.reference_ops.producer_ops import PRODUCER_OPS  # noqa: PLC0415

        ops = list(new_ops or [])  # a caller's own class wins over ours (onnx.reference keeps the first of a name)
        ops += [op for op in (*CORRECTED_OPS, *PRODUCER_OPS)
                if all((o.op_domain, o.__name__) != (op.op_domain, op.__name__) for o in ops)]
        try:
            super().__init__(proto, opsets, functions, verbose, ops, check_shape_annotations)
        except EvaluationError:
            raise
        except QTypesError as exc:  # a corrected operator refusing its node's attributes
            raise EvaluationError(str(exc)) from exc
        except UnicodeDecodeError as exc:  # a string attribute onnx.reference decodes as text
            raise EvaluationError(_not_text_attribute(session.model, exc.object) or f"cannot prepare the model for "
                                  f"onnx.reference: {exc}") from None
        except (NotImplementedError, RuntimeError, TypeError, ValueError) as exc:
            raise EvaluationError(f"cannot prepare the model for onnx.reference: {exc}") from None

    def _load_impl(self, node: NodeProto, input_types: Any = None) -> Any:
        who = (f"node {node.name!r}" if node.name else f"the node writing {node.output[0]!r}" if node.output
               else "a node")
        if node.domain == "" and "" not in self.opsets and "ai.onnx" in self.opsets:
            # the default domain imported as "ai.onnx" (onnx.checker and onnxruntime read it so); onnx.reference
            # looks up "" only, in the table its __init__ filled from opset_import
            self.opsets_[""] = self.opsets["ai.onnx"]
        if node.domain not in self.opsets:  # (onnx.reference's own message names neither node nor model)
            raise EvaluationError(f"{who} ({node.domain}.{node.op_type}): the model imports no opset of domain "
                                  f"{node.domain!r}")
        try:
            return super()._load_impl(node, input_types)
        except NotImplementedError as exc:
            if node.domain in _STOCK_DOMAINS:
                raise
            # an operator of another domain that no class here computes: the node named, not onnx.reference's list
            raise EvaluationError(f"{who} ({node.domain}.{node.op_type}): the reference computes no operator of that "
                                  "name in that domain (ONNX's own domains, the model's functions, and the "
                                  "producers' operators of reference_ops/producer_ops)") from exc

    def _init(self) -> None:
        super()._init()
        if self._typed:
            self.rt_nodes_ = [_TypedNode(node, self._session) for node in self.rt_nodes_]  # type: ignore[misc]

    @property
    def kernels(self) -> str:
        return self._session.kernels  # type: ignore[union-attr]

    @property
    def input_specs(self) -> list[InputSpec]:
        """The graph inputs as declared (name, shape, element type, quantized type) that feeds are checked against."""
        return list(self._session.specs)  # type: ignore[union-attr]

    @property
    def qtypes(self) -> dict[str, QType]:
        """Every quantized tensor of the model with its declared type."""
        return dict(self._session.qtypes)  # type: ignore[union-attr]

    @property
    def kernel_log(self) -> dict[str, str]:
        """For the last run: node -> "integer" or "definitional: <why no integer kernel ran>"."""
        return dict(self._session.kernel_log)  # type: ignore[union-attr]

    def run(  # type: ignore[override]
        self,
        output_names: Sequence[str] | None,
        feed_inputs: Mapping[str, Any],
        attributes: dict[str, Any] | None = None,
        intermediate: bool = False,
        check_shape_annotations: bool | None = None,
        _bindings: Any = None,
    ) -> Any:
        if not self._top:
            return super().run(output_names, feed_inputs, attributes, intermediate, check_shape_annotations, _bindings)
        session = self._session
        assert session is not None
        session.kernel_log.clear()
        feeds = session.prepare_feeds(feed_inputs)
        parameters = self._convention_outputs(output_names) if output_names and not intermediate else {}
        if not parameters:
            return self._run_checked(output_names, feeds, attributes, intermediate, check_shape_annotations, _bindings)
        asked = list(dict.fromkeys(parameters.get(n, (n, ""))[0] for n in output_names))
        got = dict(zip(asked, self._run_checked(asked, feeds, attributes, intermediate, check_shape_annotations,
                                                _bindings)))
        return [got[n] if n not in parameters else self.parameter_of(got[parameters[n][0]], *parameters[n])
                for n in output_names]

    def _run_checked(self, *args: Any) -> Any:
        try:
            with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are the definition's, not faults to print
                return super().run(*args)
        except QTypesError:
            raise
        except MemoryError:
            raise EvaluationError("not enough memory to run the model") from None
        except Exception as exc:  # onnx.reference's own checks between nodes: one line, no model dump
            raise EvaluationError(_one_line(exc)) from exc

    def _convention_outputs(self, names: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``<y>.scale`` / ``<y>.zero_point`` asked for a dynamic graph output ``y`` -> (y, field): the calling
        convention (semantics.md#dynamic-binding), in which a dynamic output returns its parameters beside it."""
        outputs = {o.name for o in self._session.model.graph.output}  # type: ignore[union-attr]
        found = {}
        for name in names:
            base, _, field = name.rpartition(".")
            qtype = self._session.qtypes.get(base)  # type: ignore[union-attr]
            if name not in outputs and base in outputs and field in ("scale", "zero_point") and qtype is not None \
                    and qtype.is_dynamic:
                found[name] = (base, field)
        return found

    @staticmethod
    def parameter_of(value: Any, tensor: str, field: str) -> np.ndarray:
        """``scale`` or ``zero_point`` of a dynamic output ``value`` as the calling convention returns it
        (semantics.md#dynamic-binding): shape [] per tensor, else the listed form's values in one dimension; the
        expressed type's floats, the storage type's integers."""
        resolved = getattr(value, "qtype", None)
        if resolved is None:
            raise EvaluationError(f"output {tensor!r} has a dynamic type but carries no run-time parameters")
        shape = () if resolved.axis is None else (len(resolved.scale),)
        if field == "scale":
            return np.asarray(resolved.scale, resolved.expressed_type.np_dtype).reshape(shape)
        return np.asarray(resolved.zero_point).astype(resolved.storage_type.np_dtype).reshape(shape)

    def dequantized(self, name: str, value: np.ndarray) -> np.ndarray:
        """The real values of an output ``value`` of tensor ``name`` (float64; unquantized values unchanged)."""
        qtype = self._session.qtypes.get(name)  # type: ignore[union-attr]
        if qtype is None:
            return value
        resolved = getattr(value, "qtype", None) or qtype
        return quant.dequantize(np.asarray(value), resolved, tensor=name)


def _one_line(exc: BaseException, width: int = 300) -> str:
    """An exception from onnx.reference as one line: its first line (not the model it may append), shortened."""
    text = str(exc).split(", proto is", 1)[0].split("\n", 1)[0].strip() or type(exc).__name__
    text = text if len(text) <= width else text[: width - 1] + "…"
    return f"onnx.reference: {type(exc).__name__}: {text}"


def _shapes(names: Any, values: list[Any]) -> str:
    """Each input as name: shape and dtype ("'w' [8, 4] int8, 's' [8, 1, 1] float32")."""
    return ", ".join(f"{name!r} {list(np.shape(v))} {getattr(v, 'dtype', type(v).__name__)}"
                     for name, v in zip(names, values)) or "none"


class _TypedNode:
    """Wraps one onnx.reference operator: reads and writes the quantized types."""

    def __init__(self, inner: OpRun, session: _Session) -> None:
        self._inner = inner
        self._session = session
        node = inner.onnx_node
        self._node = node
        self._in = [session.qtypes.get(n) if n else None for n in node.input]
        self._out = [session.qtypes.get(n) if n else None for n in node.output]
        self._is_typed = any(self._in) or any(self._out)
        self._kernel = session.kernel(node.op_type) if self._is_typed else None
        if self._is_typed and (node.domain, node.op_type) not in session.typed_bodies:
            exact_function(inner)  # a function body (Gelu, HardSwish, a local function) computes on float64 reals
        self._label = f"node {node.name!r} ({node.op_type})" if node.name else f"{node.op_type} node -> {list(node.output)}"
        self._key = node.name or f"{node.op_type}->{','.join(node.output)}"

    def __getattr__(self, name: str) -> Any:  # need_context, has_linked_attribute, op_type, ...
        return getattr(self._inner, name)

    def run(self, *args: Any, **kwargs: Any) -> tuple:
        try:
            outputs = self._inner.run(*args, **kwargs) if not self._is_typed else self._run(list(args), kwargs)
            wanted = sum(1 for name in self._node.output if name)
            if len(outputs) < len(self._node.output) and wanted > sum(1 for n in self._node.output[:len(outputs)] if n):
                raise EvaluationError(f"{self._label}: onnx.reference computes {len(outputs)} of its "
                                      f"{len(self._node.output)} outputs {list(self._node.output)}")
            return outputs
        except EvaluationError:
            raise
        except QTypeError as exc:
            tensor = f"tensor {exc.tensor!r}: " if exc.tensor else ""
            raise EvaluationError(f"{self._label}: {tensor}{exc.problem}") from exc
        except QTypesError as exc:
            raise EvaluationError(f"{self._label}: {exc}") from exc
        except Exception as exc:  # onnx.reference's own failures, located
            if not str(exc).strip():  # a bare assert in onnx.reference: what it was given is all there is to say
                raise EvaluationError(f"{self._label}: onnx.reference failed ({type(exc).__name__}, no message) "
                                      f"on inputs {_shapes(self._node.input, args)}") from exc
            raise EvaluationError(f"{self._label}: {type(exc).__name__}: {exc}") from exc

    # -- dispatch
    def _run(self, args: list[Any], kwargs: dict[str, Any]) -> tuple:
        op = self._node.op_type
        if op in CONTROL_FLOW:
            return self._pass_through(self._inner.run(*args, **kwargs))
        body = self._session.typed_bodies.get((self._node.domain, op)) if runs_function_body(self._inner) else None
        if body is not None:
            self._same_types_as(body)
            return self._pass_through(self._inner.run(*args, **kwargs))
        if op == "Constant":
            return self._pass_through(self._inner.run(*args, **kwargs))
        resolved = [self._resolve(value, qtype, name) for value, qtype, name in zip(args, self._in, self._node.input)]
        if self._kernel is None and self._session.kernels == "integer":
            self._session.kernel_log[self._key] = f"definitional: no integer kernel for {op}"
        if self._kernel is not None:
            outputs = self._integer(args, resolved, kwargs)
            if outputs is not None:
                return outputs
        if op == "QuantizeLinear" and self._out[0] is not None:
            return self._quantize_linear(args, resolved)
        if op == "DequantizeLinear" and self._in[0] is not None:
            return self._dequantize_linear(args, resolved)
        if op == "DynamicQuantizeLinear" and self._out[0] is not None:
            return self._dynamic_quantize_linear(args, kwargs)
        reals = [
            self._real(np.asarray(v), qt, name) if qt is not None and v is not None else self._widened(v)
            for v, qt, name in zip(args, resolved, self._node.input)
        ]
        return self._finish(self._inner.run(*reals, **kwargs), args, resolved)

    def _widened(self, value: Any) -> Any:
        """A plain float input next to dequantized ones, in float64 too: onnx.reference requires equal
        float types (MatMul(float32 activations, int4 weights) would not run), and the node computes
        in float64 either way. CastLike keeps its target's type; an operator run through a function
        body gets the type its body takes (``definition.body_dtype``, as _real)."""
        wide = body_dtype(self._inner) or np.dtype(np.float64)
        if (isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.dtype != wide
                and self._node.op_type != "CastLike"):
            return value.astype(wide)
        return value

    def _real(self, storage: np.ndarray, qtype: QType, name: str) -> np.ndarray:
        return operator_input(self._inner, quant.dequantize(storage, qtype, tensor=name), qtype)

    def _integer(self, args: list[Any], resolved: list[QType | None], kwargs: dict[str, Any]) -> tuple | None:
        from onnx_qtypes.reference_ops.ops import KernelContext, Unsupported  # noqa: PLC0415

        key = self._key
        floats = sorted({qt.storage for qt in (*resolved, *self._out) if qt is not None and qt.storage_type.is_float})
        if floats:  # integer kernels compute on integers: float8 / float4 values run the definition
            self._session.kernel_log[key] = f"definitional: {', '.join(floats)} storage has no integer kernel"
            return None
        negative_ok = getattr(self._kernel, "reads_negative_scales", None)  # a kernel negating its integer terms
        if any(t is not None and t.has_negative_scale for t in (*resolved, *self._out)) and not (
                negative_ok is not None and negative_ok(resolved, self._out)):
            # the kernels, like the integer kernels of hardware, take the stored order for the real order and
            # multipliers >= 0; a negative scale (a weight, proposal/spec/types.md#negative-scales) breaks both
            self._session.kernel_log[key] = "definitional: a negative scale"
            return None
        ctx = KernelContext(self._node, self._inner, args, resolved, self._out, kwargs)
        try:
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # refused below, not warned
                outputs = self._kernel.run(ctx)
        except (Unsupported, MultiplierError) as why:  # a ratio of scales with no 31-bit fixed-point form too
            self._session.kernel_log[key] = f"definitional: {why}"
            return None
        self._session.kernel_log[key] = "integer"
        return tuple(outputs)

    # -- typed values
    def _resolve(self, value: Any, qtype: QType | None, name: str) -> QType | None:
        if qtype is None or value is None:
            return None
        if not qtype.is_dynamic:
            return qtype
        resolved = getattr(value, "qtype", None)
        if resolved is None:
            raise EvaluationError(f"{self._label}: tensor {name!r} has a dynamic type but carries no run-time parameters")
        return resolved

    def _quantized(self, value: Any, qtype: QType, name: str) -> np.ndarray:
        storage, resolved = quant.quantize_dynamic(np.asarray(value), qtype, tensor=name)
        return attach(storage, resolved) if qtype.is_dynamic else storage

    def _finish(self, outputs: tuple, args: list[Any], resolved: list[QType | None]) -> tuple:
        typed_inputs = [qt for qt in resolved if qt is not None]
        plain_double = any(
            qt is None and isinstance(v, np.ndarray) and v.dtype == np.float64 for v, qt in zip(args, resolved)
        )
        cast_to = typed_inputs[0].expressed_type.np_dtype if typed_inputs and not plain_double else None
        out = []
        for value, qtype, name in zip(outputs, self._out, self._node.output):
            if qtype is not None and value is not None:
                out.append(self._quantized(value, qtype, name))
            elif (cast_to is not None and isinstance(value, np.ndarray) and value.dtype.kind == "f"
                  and value.dtype in (np.float64, body_dtype(self._inner))):
                out.append(value.astype(cast_to))  # the op ran on reals; the result has the expressed type
            else:
                out.append(value)
        return tuple(out)

    def _same_types_as(self, body: Any) -> None:
        """Storage crosses into a typed body unchanged, so the call's operand types must be the body's."""
        pairs = [*zip(self._node.input, body.input), *zip(self._node.output, body.output)]  # a call may omit inputs
        for outer, inner in pairs:
            if not outer:
                continue
            mine, theirs = (self._session.qtypes.get(n) for n in (outer, inner))
            if _bare(mine) != _bare(theirs):  # statistics are no part of what the integers mean
                raise EvaluationError(f"{self._label}: {outer!r} is {mine or 'not quantized'} but the body of "
                                      f"{body.domain}:{body.name} declares {inner!r} as {theirs or 'not quantized'}")

    def _pass_through(self, outputs: tuple) -> tuple:
        """Control flow and Constant: values arrive as storage already (or as reals to quantize)."""
        out = []
        for value, qtype, name in zip(outputs, self._out, self._node.output):
            if qtype is None or value is None:
                out.append(value)
                continue
            array = np.asarray(value)
            if array.dtype.kind == "f":
                out.append(self._quantized(array, qtype, name))
                continue
            resolved = getattr(value, "qtype", None) or qtype
            if resolved.is_dynamic:
                raise EvaluationError(f"{self._label}: output {name!r} has a dynamic type but no run-time parameters")
            storage = quant.to_storage(array, resolved, tensor=name)
            out.append(attach(storage, resolved) if qtype.is_dynamic else storage)
        return tuple(out)

    # -- boundary ops
    def _attr(self, name: str, default: Any) -> Any:
        value = getattr(self._inner, name, default)
        return default if value is None else value

    def _bound(self, declared: QType, args: list[Any], shape: tuple[int, ...], tensor: str) -> QType:
        zero_point = args[2] if len(args) > 2 and args[2] is not None else None
        return boundary_type(declared, np.asarray(args[1]), None if zero_point is None else np.asarray(zero_point), shape,
                             axis=int(self._attr("axis", 1)), block_size=int(self._attr("block_size", 0)), tensor=tensor)

    def _quantize_linear(self, args: list[Any], resolved: list[QType | None]) -> tuple:
        x, name, declared = args[0], self._node.output[0], self._out[0]
        assert declared is not None
        real = quant.dequantize(x, resolved[0], tensor=self._node.input[0]) if resolved[0] else np.asarray(x, np.float64)
        bound = self._bound(declared, args, real.shape, name)
        storage = quant.quantize(real, bound, tensor=name, saturate=bool(self._attr("saturate", 1)))
        return (attach(storage, bound) if declared.is_dynamic else storage,)

    def _dequantize_linear(self, args: list[Any], resolved: list[QType | None]) -> tuple:
        x, name = np.asarray(args[0]), self._node.input[0]
        qtype = resolved[0]
        assert qtype is not None
        self._bound(qtype, args, x.shape, name)
        output_dtype = int(self._attr("output_dtype", 0))
        dtype = onnx.helper.tensor_dtype_to_np_dtype(output_dtype) if output_dtype else np.asarray(args[1]).dtype
        real = quant.dequantize(x, qtype, tensor=name).astype(dtype)
        out_type = self._out[0]
        return (self._quantized(real, out_type, self._node.output[0]) if out_type is not None else real,)

    def _dynamic_quantize_linear(self, args: list[Any], kwargs: dict[str, Any]) -> tuple:
        x = np.asarray(args[0])
        name, declared = self._node.output[0], self._out[0]
        assert declared is not None
        _, scale, zero_point = self._inner.run(x, **kwargs)
        bound = quant.resolve(declared, x, tensor=name)
        if bound.scale != (float(scale),) or bound.zero_point != (int(zero_point),):
            raise EvaluationError(
                f"{self._label}: output {name!r} is typed {declared}, whose parameters for this data are {bound}; "
                f"DynamicQuantizeLinear chose scale {float(scale)!r} and zero point {int(zero_point)}"
            )
        storage = quant.quantize(x, bound, tensor=name)
        return (attach(storage, bound) if declared.is_dynamic else storage, scale, zero_point)


def _not_text_attribute(model: ModelProto, undecoded: bytes) -> str | None:
    """The message naming the string attribute (any graph or function body, any domain: the reader refuses those of
    ONNX's operators) whose value is ``undecoded``, the bytes onnx.reference failed to read as text; None when no
    attribute holds them (a string tensor, say)."""
    for pointer, body in every_graph(model):
        for n, node in enumerate(body.node):
            for a, attr in enumerate(node.attribute):
                if attr.type in (onnx.AttributeProto.STRING, onnx.AttributeProto.STRINGS) and (
                        found := first_non_utf8_value(f"{pointer}/node/{n}/attribute/{a}", attr)) and (
                        found[1] == undecoded):
                    who = f"{node.op_type} {node.name!r}" if node.name else node.op_type
                    return str(not_utf8_error("", found, fix=f"{who} reads it as text"))
    return None
