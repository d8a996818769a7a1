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
    assert sorted(d.rule for d in scope["found"].errors) == ["QT101", "QT307", "QT405"]


def test_shell_examples_exit_as_the_readme_says(tmp_path):
    """Every `onnx-qtypes` line of the README's shell blocks runs, in order, in a folder that has the
    repository's examples/ (so that what a line writes, `calibrate -o`, lands there and the next line reads it);
    a `check` whose comment says "exit 1" exits 1, every other line 0."""
    import subprocess
    import sys

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    segments = [seg.strip() for block in blocks for line in block.splitlines() for seg in line.split("&&")]
    lines = [seg for seg in segments if seg.startswith("onnx-qtypes ")]  # the main command's run included
    assert len(lines) >= 5 and any(seg.startswith("onnx-qtypes conformance") for seg in lines)
    for line in lines:
        command, _, comment = line.partition("#")
        expected = 1 if "exit 1" in comment else 0
        args = command.split()[1:]
        result = subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], cwd=tmp_path, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == expected, (line, result.stdout[-500:], result.stderr)
    written = {p.name for p in tmp_path.iterdir()} - {"examples"}
    assert written == {"calibrated_cnn.onnx", "calibrated_cnn.html"}  # and nothing in the repository
