"""The README's Python example runs as written."""

from __future__ import annotations

import os
import re

from builders import ROOT


def test_python_example_runs(tmp_path):
    code = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        scope: dict = {}
        exec(compile(code, "README.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    assert scope["w"].granularity == "per-axis"
    assert scope["y"].shape == (1, 4, 4, 4)
    assert scope["qt"].get_qtype(scope["typed"], "w") == scope["w"]
    assert (tmp_path / "out.onnx").stat().st_size > 0
