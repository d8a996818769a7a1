"""Errors a user can cause. Every message names the file, tensor or field
and says what would be valid; the CLI prints ``str(error)`` as its one line."""

from __future__ import annotations


class QTypesError(Exception):
    """Base class: bad input that the user can fix (CLI exit code 2)."""


class QTypeError(QTypesError, ValueError):
    """A quantized type that cannot be constructed as given."""

    def __init__(self, field: str, message: str, tensor: str | None = None) -> None:
        self.field = field
        self.tensor = tensor
        self.problem = message  # what is wrong, without the tensor and field in front
        where = f"tensor {tensor!r}: " if tensor else ""
        super().__init__(f"{where}QType.{field}: {message}")


class ModelLoadError(QTypesError):
    """A model file or buffer that cannot be read as an ONNX model."""


class MalformedExtensionError(QTypesError):
    """The bytes of an onnx-qtypes field do not decode."""


class UnknownTensorError(QTypesError, KeyError):
    """A tensor name that the model does not contain."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class ParameterReferenceError(MalformedExtensionError):
    """A type names an initializer for its parameters that does not hold them (missing, wrong type or shape)."""
