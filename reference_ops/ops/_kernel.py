"""What an integer kernel sees of its node: storage, resolved types, attributes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx.reference.op_run import OpRun

from onnx_qtypes.proto.qtype import QType


class Unsupported(Exception):  # noqa: N818 - a signal, not an error: the definition runs instead
    """The kernel does not cover this node's types or attributes (the message says which)."""


class KernelContext:
    """One node's run: its inputs as given (storage for quantized tensors) and their types.

    ``input_qtypes`` are the resolved (static) types of the quantized inputs,
    None for plain tensors; ``output_qtypes`` are the declared output types.
    ``shapes`` (export only) gives input shapes when no data is at hand.
    """

    def __init__(
        self,
        node: onnx.NodeProto,
        inner: OpRun,
        inputs: Sequence[Any],
        input_qtypes: Sequence[QType | None],
        output_qtypes: Sequence[QType | None],
        kwargs: dict[str, Any] | None = None,
        shapes: Sequence[tuple[int, ...] | None] | None = None,
    ) -> None:
        self.node = node
        self.inner = inner
        self.inputs = list(inputs) + [None] * (len(node.input) - len(inputs))
        self.input_qtypes = list(input_qtypes) + [None] * (len(node.input) - len(input_qtypes))
        self.output_qtypes = list(output_qtypes)
        self.kwargs = kwargs or {}
        self._shapes = list(shapes) if shapes is not None else None

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def opset(self) -> int:
        return int(self.inner.run_params["opsets"].get("", 0))

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute's value (onnx.reference fills in the schema defaults)."""
        value = getattr(self.inner, name, default)
        return default if value is None else value

    def value(self, index: int) -> Any:
        return self.inputs[index] if index < len(self.inputs) else None

    def shape(self, index: int) -> tuple[int, ...]:
        value = self.value(index)
        if value is not None:
            return tuple(np.shape(value))
        if self._shapes is not None and index < len(self._shapes) and self._shapes[index] is not None:
            return tuple(self._shapes[index])  # type: ignore[arg-type]
        raise Unsupported(f"the shape of input {index} is unknown")

    def input_type(self, index: int, *, llm_formats: bool = False) -> QType:
        """The resolved type of a quantized input; Unsupported for a plain one, and for a version-3 type (offsets,
        a codebook: proposal/spec/llm_formats.md) unless the kernel reads those (``llm_formats``)."""
        qtype = self.input_qtypes[index] if index < len(self.input_qtypes) else None
        if qtype is None:
            raise Unsupported(f"input {index} ({self.node.input[index] if index < len(self.node.input) else '?'}) is not quantized")
        if not qtype.is_affine and not llm_formats:
            raise Unsupported(f"input {index} has offsets or a codebook, which this kernel does not read")
        return qtype

    def typed_input(self, index: int, *, llm_formats: bool = False) -> tuple[np.ndarray, QType]:
        """(storage as int64, resolved type) of a quantized input."""
        qtype = self.input_type(index, llm_formats=llm_formats)
        return np.asarray(self.inputs[index]).astype(np.int64), qtype

    def output_type(self, index: int = 0) -> QType:
        qtype = self.output_qtypes[index] if index < len(self.output_qtypes) else None
        if qtype is None:
            raise Unsupported(f"output {index} is not quantized")
        if qtype.is_dynamic:
            raise Unsupported("a dynamic output type needs the real result to choose its parameters")
        return qtype

    def reference(self, *arrays: Any) -> tuple:
        """onnx.reference's own implementation of this node, on the given arrays."""
        return self.inner.run(*arrays, **self.kwargs)

    def cache(self) -> dict:
        """Per-node storage for tables and multipliers that depend only on types."""
        store = self.inner.__dict__.setdefault("_qtypes_kernel_cache", {})
        return store
