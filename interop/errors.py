"""Errors of lift and lower. Every message names the node or tensor and says
what would be valid; the CLI prints it as its one line (exit 2)."""

from __future__ import annotations

from onnx_qtypes.proto.errors import QTypesError


class MalformedQDQError(QTypesError):
    """A QDQ / QOperator model whose quantization cannot be lifted without changing its meaning.

    Besides the message it says what ``check`` needs to report the problem as a finding in the user's file:
    ``rule``, the checker rule the parameters break (``QT101``); ``node``, the position of the node that
    applies them in its graph; ``tensor``, the quantized (integer) tensor; ``parameter``, the node input
    (a tensor name) or attribute (``axis``, ``block_size``, ``output_dtype``) at fault, when one is;
    ``also``, the node's other, independent problems (a bad scale besides a zero point outside its type),
    each a MalformedQDQError of its own, so that a tolerant reader reports them all.
    """

    def __init__(self, message: str, *, rule: str | None = None, node: int | None = None,
                 tensor: str | None = None, parameter: str | None = None,
                 also: list[MalformedQDQError] | None = None) -> None:
        super().__init__(message)
        self.rule, self.node, self.tensor, self.parameter = rule, node, tensor, parameter
        self.also: list[MalformedQDQError] = list(also or ())

    def every(self) -> list[MalformedQDQError]:
        """This problem and the node's other ones, in the order found."""
        return [self, *self.also]


class LowerError(QTypesError):
    """A typed model that has no faithful standard-ONNX form."""


class StatisticsImportError(QTypesError):
    """Calibration statistics that cannot be read or do not fit their tensor."""
