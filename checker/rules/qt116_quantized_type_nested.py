"""A quantized type or statistics sits inside a sequence, optional or map type.

## What it checks
A declaration whose type is `sequence_type`, `optional_type` or `map_type`
carries no `quantization` (1000) or `statistics` (1001) field on a tensor
type nested inside it, at any depth.

## Why
This version of the extension types tensors: the checker, the reference
evaluator, lift and lower read quantized types on tensor declarations only.
A nested one would be read by nothing here, and its `elem_type` (which must
name a storage type for a sequence to be valid ONNX) lets stock runtimes run
the stored integers as plain numbers — silently, the failure the extension
exists to prevent.

## Invalid example
`seq: sequence_type { elem_type { tensor_type { elem_type: INT8
quantization { storage_type: INT8 scale: 0.5 } } } }`.

## Valid example
The same sequence without field 1000, with its tensors' quantization stated
where they are read and written as tensors (`SequenceAt` output, the
`SequenceConstruct` inputs).

## Fix
Move the quantized type to the tensor declarations around the sequence, or
dequantize before building the sequence.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding, Location
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.model import parse_view


def _nested_tensors(type_proto: onnx.TypeProto, path: str) -> Iterator[tuple[str, onnx.TypeProto.Tensor]]:
    kind = type_proto.WhichOneof("value")
    if kind in ("sequence_type", "optional_type"):
        yield from _nested(getattr(type_proto, kind).elem_type, f"{path}/{kind}/elem_type")
    elif kind == "map_type":
        yield from _nested(type_proto.map_type.value_type, f"{path}/map_type/value_type")


def _nested(type_proto: onnx.TypeProto, path: str) -> Iterator[tuple[str, onnx.TypeProto.Tensor]]:
    if type_proto.WhichOneof("value") == "tensor_type":
        yield f"{path}/tensor_type", type_proto.tensor_type
    else:
        yield from _nested_tensors(type_proto, path)


@rule("QT116", "quantized-type-nested", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    for pointer, name, data in ctx.other_types:  # rare: only declarations that are not tensors
        for path, tensor in _nested_tensors(onnx.TypeProto.FromString(data), f"{pointer}/type"):
            view = parse_view(tensor.SerializeToString(), f"{path} (tensor {name!r})")
            container = path.split("/type/", 1)[1].split("/", 1)[0].removesuffix("_type")  # sequence, optional, map
            if view.HasField("quantization"):
                yield Finding(Location(path, tensor=name), f"a quantized type inside the {container} {name!r}: this "
                              "version types tensors only, and stock runtimes would read the stored integers as "
                              "plain numbers")
            elif view.HasField("statistics"):
                yield Finding(Location(path, tensor=name), f"statistics inside the {container} {name!r}: this "
                              "version records statistics on tensor declarations only; nothing reads these")
