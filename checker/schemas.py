"""Operator type constraints, straight from onnx.defs (no hand-copied tables)."""

from __future__ import annotations

import functools

from onnx import TensorProto, defs

from onnx_qtypes.checker.context import NodeRef

Variadic = defs.OpSchema.FormalParameterOption.Variadic


@functools.cache
def _lookup(op_type: str, version: int, domain: str) -> defs.OpSchema | None:
    try:
        return defs.get_schema(op_type, version, domain)
    except defs.SchemaError:
        return None


def schema_for(ref: NodeRef) -> defs.OpSchema | None:
    """The operator's schema at the opset in force, or None (unknown op or domain)."""
    domain = ref.domain or ""
    version = ref.opset or defs.onnx_opset_version()
    return _lookup(ref.op_type, version, "" if domain == "ai.onnx" else domain)


def formal(schema: defs.OpSchema, kind: str, index: int) -> defs.OpSchema.FormalParameter | None:
    """The formal parameter an actual input/output binds to (variadic ones repeat the last)."""
    return _formal(schema, kind, index)


@functools.cache
def _formal(schema: defs.OpSchema, kind: str, index: int) -> defs.OpSchema.FormalParameter | None:
    params = schema.inputs if kind == "input" else schema.outputs
    if index < len(params):
        return params[index]
    if params and params[-1].option == Variadic:
        return params[-1]
    return None


@functools.cache
def _constraints(schema: defs.OpSchema) -> dict[str, frozenset[str]]:
    return {c.type_param_str: frozenset(c.allowed_type_strs) for c in schema.type_constraints}


def allowed_types(schema: defs.OpSchema, type_str: str) -> frozenset[str]:
    """Type strings a formal parameter accepts: its constraint's list, or the literal type."""
    return _constraints(schema).get(type_str, frozenset({type_str}))


def is_type_variable(schema: defs.OpSchema, type_str: str) -> bool:
    return type_str in _constraints(schema)


@functools.cache
def type_string(data_type: int) -> str:
    """'tensor(float)' for TensorProto.FLOAT, as onnx.defs spells it."""
    try:
        return f"tensor({TensorProto.DataType.Name(data_type).lower()})"
    except ValueError:  # a number onnx does not define: matches no constraint, so the rule reports it
        return f"tensor(undefined data type {data_type})"


@functools.cache
def tensor_constraint(schema: defs.OpSchema, kind: str, index: int) -> tuple[str, frozenset[str], bool] | None:
    """(type_str, allowed tensor types, binds one type) for an actual input/output; None if not a tensor element type."""
    param = _formal(schema, kind, index)
    if param is None:
        return None
    allowed = allowed_types(schema, param.type_str)
    if not any(a.startswith("tensor(") for a in allowed):
        return None  # sequence / optional parameters
    return param.type_str, allowed, is_type_variable(schema, param.type_str) and param.is_homogeneous
