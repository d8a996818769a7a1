"""Loop: onnx.reference's, with three corrections.

- Without the optional `cond` input onnx.reference runs no iteration; ONNX (and onnxruntime) run M.
- It stacks the scan outputs with numpy.vstack, which concatenates along their first axis: per-iteration
  values of shape [2, 3] over 4 iterations give [8, 3] where ONNX gives [4, 2, 3] (scalars give [4, 1]).
- Iterations and accumulated scan outputs are bounded (_budget): a trip count of 2**62, or a `while true`,
  is refused when it passes MAX_ITERATIONS, not run until the machine gives out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.ops.op_loop import Loop as StockLoop

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Refused


class Loop(StockLoop):
    op_domain = ""

    def __init__(self, onnx_node: Any, run_params: dict) -> None:
        super().__init__(onnx_node, run_params)
        body = self._run_body
        self._scan_outputs: list[list[np.ndarray]] = []

        def counted(*args: Any, **kwargs: Any) -> list:
            self._iterations += 1
            if self._iterations > _budget.max_iterations():
                raise Refused(f"Loop: more than {_budget.max_iterations()} iterations "
                              "(ONNX_QTYPES_RUN_MAX_ITERATIONS)")
            outputs = body(*args, **kwargs)
            if self.K:
                scanned = [np.asarray(v) for v in outputs[-self.K:]]
                self._scan_bytes += sum(v.nbytes for v in scanned)
                if self._scan_bytes > _budget.max_bytes():
                    raise Refused(f"Loop: its scan outputs pass {_budget.max_bytes()} bytes after "
                                  f"{self._iterations} iterations (ONNX_QTYPES_RUN_MAX_BYTES)")
                self._scan_outputs.append(scanned)
            return outputs

        self._run_body = counted

    def _run(self, M: Any, cond: Any = None, *args: Any, **kwargs: Any) -> tuple:  # noqa: N803 - ONNX's name
        if cond is None:
            cond = np.array(True)
        self._iterations, self._scan_bytes, self._scan_outputs = 0, 0, []
        outputs = list(super()._run(M, cond, *args, **kwargs))
        if self.K and self._scan_outputs:
            first = len(self.onnx_node.output) - self.K
            for k in range(self.K):
                values = [step[k] for step in self._scan_outputs]
                if any(v.shape != values[0].shape for v in values):
                    raise Refused(f"Loop: scan output {k} changes shape between iterations "
                                  f"({list(values[0].shape)}, then {next(list(v.shape) for v in values if v.shape != values[0].shape)})")
                outputs[first + k] = np.stack(values)
        self._scan_outputs = []
        return tuple(outputs)
