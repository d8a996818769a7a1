"""Scan: onnx.reference's, with its attributes checked before it builds anything from them and its scan
outputs bounded (_budget). num_scan_inputs = 2**62 made onnx.reference's constructor build lists of 2**62
directions: a climb to 17 GB while the model was merely being prepared."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.ops.op_scan import Scan as StockScan

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Refused


class Scan(StockScan):
    op_domain = ""

    def __init__(self, onnx_node: Any, run_params: dict) -> None:
        inputs = len(onnx_node.input)
        where = f"node {onnx_node.name!r} (Scan)" if onnx_node.name else "Scan node"  # no evaluator names it yet
        for attribute in onnx_node.attribute:
            if attribute.name == "num_scan_inputs" and not 0 < attribute.i <= inputs:
                raise Refused(f"{where}: num_scan_inputs = {attribute.i}, but the node has {inputs} inputs")
            if attribute.name.startswith("scan_") and len(attribute.ints) > inputs + len(onnx_node.output):
                raise Refused(f"{where}: {attribute.name} lists {len(attribute.ints)} values for "
                              f"{inputs} inputs and {len(onnx_node.output)} outputs")
        super().__init__(onnx_node, run_params)
        body = self._run_body

        def counted(*args: Any, **kwargs: Any) -> list:
            outputs = body(*args, **kwargs)
            scanned = outputs[len(outputs) - (len(self.onnx_node.output) - self._states):]
            self._scan_bytes += sum(np.asarray(v).nbytes for v in scanned)
            if self._scan_bytes > _budget.max_bytes():
                raise Refused(f"Scan: its scan outputs pass {_budget.max_bytes()} bytes "
                              "(ONNX_QTYPES_RUN_MAX_BYTES)")
            return outputs

        self._run_body = counted

    def _run(self, *args: Any, **kwargs: Any) -> tuple:
        self._states, self._scan_bytes = len(args) - self.num_scan_inputs, 0
        return super()._run(*args, **kwargs)
