from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Schema(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ASYMMETRIC: _ClassVar[Schema]
    SYMMETRIC: _ClassVar[Schema]
    SYMMETRIC_WITH_UNSIGNED: _ClassVar[Schema]
    ASYMMETRIC_POW2_SCALE: _ClassVar[Schema]
    SYMMETRIC_POW2_SCALE: _ClassVar[Schema]
ASYMMETRIC: Schema
SYMMETRIC: Schema
SYMMETRIC_WITH_UNSIGNED: Schema
ASYMMETRIC_POW2_SCALE: Schema
SYMMETRIC_POW2_SCALE: Schema

class QuantizedType(_message.Message):
    __slots__ = ("storage_type", "expressed_type", "scale", "zero_point", "axis", "block_size", "schema", "storage_min", "storage_max", "scale_tensor", "zero_point_tensor", "version", "offset", "offset_tensor", "codebook")
    STORAGE_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXPRESSED_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    ZERO_POINT_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    STORAGE_MIN_FIELD_NUMBER: _ClassVar[int]
    STORAGE_MAX_FIELD_NUMBER: _ClassVar[int]
    SCALE_TENSOR_FIELD_NUMBER: _ClassVar[int]
    ZERO_POINT_TENSOR_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    OFFSET_TENSOR_FIELD_NUMBER: _ClassVar[int]
    CODEBOOK_FIELD_NUMBER: _ClassVar[int]
    storage_type: int
    expressed_type: int
    scale: _containers.RepeatedScalarFieldContainer[float]
    zero_point: _containers.RepeatedScalarFieldContainer[int]
    axis: int
    block_size: int
    schema: Schema
    storage_min: int
    storage_max: int
    scale_tensor: str
    zero_point_tensor: str
    version: int
    offset: _containers.RepeatedScalarFieldContainer[float]
    offset_tensor: str
    codebook: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, storage_type: _Optional[int] = ..., expressed_type: _Optional[int] = ..., scale: _Optional[_Iterable[float]] = ..., zero_point: _Optional[_Iterable[int]] = ..., axis: _Optional[int] = ..., block_size: _Optional[int] = ..., schema: _Optional[_Union[Schema, str]] = ..., storage_min: _Optional[int] = ..., storage_max: _Optional[int] = ..., scale_tensor: _Optional[str] = ..., zero_point_tensor: _Optional[str] = ..., version: _Optional[int] = ..., offset: _Optional[_Iterable[float]] = ..., offset_tensor: _Optional[str] = ..., codebook: _Optional[_Iterable[float]] = ...) -> None: ...

class Statistics(_message.Message):
    __slots__ = ("min", "max", "mean", "std", "count", "histogram_edges", "histogram_counts")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    STD_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    HISTOGRAM_EDGES_FIELD_NUMBER: _ClassVar[int]
    HISTOGRAM_COUNTS_FIELD_NUMBER: _ClassVar[int]
    min: float
    max: float
    mean: float
    std: float
    count: int
    histogram_edges: _containers.RepeatedScalarFieldContainer[float]
    histogram_counts: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, min: _Optional[float] = ..., max: _Optional[float] = ..., mean: _Optional[float] = ..., std: _Optional[float] = ..., count: _Optional[int] = ..., histogram_edges: _Optional[_Iterable[float]] = ..., histogram_counts: _Optional[_Iterable[int]] = ...) -> None: ...

class TensorStatistics(_message.Message):
    __slots__ = ("tensor", "axis", "per_axis", "method")
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    PER_AXIS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    tensor: Statistics
    axis: int
    per_axis: _containers.RepeatedCompositeFieldContainer[Statistics]
    method: str
    def __init__(self, tensor: _Optional[_Union[Statistics, _Mapping]] = ..., axis: _Optional[int] = ..., per_axis: _Optional[_Iterable[_Union[Statistics, _Mapping]]] = ..., method: _Optional[str] = ...) -> None: ...

class TensorTypeView(_message.Message):
    __slots__ = ("elem_type", "shape", "quantization", "statistics")
    ELEM_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    QUANTIZATION_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_FIELD_NUMBER: _ClassVar[int]
    elem_type: int
    shape: bytes
    quantization: QuantizedType
    statistics: TensorStatistics
    def __init__(self, elem_type: _Optional[int] = ..., shape: _Optional[bytes] = ..., quantization: _Optional[_Union[QuantizedType, _Mapping]] = ..., statistics: _Optional[_Union[TensorStatistics, _Mapping]] = ...) -> None: ...
