"""Both a built wheel and an editable install import every sub-package."""

from __future__ import annotations

import pathlib
import site
import subprocess
import sys
import tomllib
import venv

import pytest
from builders import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = PYPROJECT["tool"]["setuptools"]["packages"]
PACKAGE_DIR = PYPROJECT["tool"]["setuptools"]["package-dir"]


def _source_dir(package: str) -> pathlib.Path:
    parts = package.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in PACKAGE_DIR:
            return ROOT / PACKAGE_DIR[prefix] / pathlib.Path(*parts[i:])
    raise AssertionError(f"{package} is not mapped in [tool.setuptools.package-dir]")


def test_every_source_package_is_listed():
    """A folder with __init__.py under a mapped root must be in `packages`, or the wheel drops it."""
    listed = {_source_dir(p).resolve() for p in PACKAGES}
    for root in {ROOT / d for d in PACKAGE_DIR.values()}:
        for init in root.rglob("__init__.py"):
            if "tests" in init.parts[len(ROOT.parts):] or "__pycache__" in init.parts:
                continue
            assert init.parent.resolve() in listed, f"{init.parent} has __init__.py but is not in pyproject packages"


IMPORT_ALL = (
    "import importlib, json, sys; pkgs = json.loads(sys.argv[1]); "
    "print(json.dumps({p: importlib.import_module(p).__file__ for p in pkgs}))"
)


def _venv(path: pathlib.Path) -> pathlib.Path:
    """A fresh venv that sees this environment's dependencies (onnx, numpy, ...) but not its onnx_qtypes."""
    venv.EnvBuilder(with_pip=False).create(path)
    (inner,) = path.glob("lib/python*/site-packages")
    outer = [p for p in site.getsitepackages() if pathlib.Path(p).is_dir()]
    (inner / "_outer_deps.pth").write_text("\n".join(outer) + "\n")  # appended after inner: inner wins
    return path / "bin" / "python"


def _pip(python: pathlib.Path, *args: str) -> None:
    # the outer interpreter's pip installs into the inner venv via --python
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", *args],
                   check=True, timeout=600)


def _imported_files(python: pathlib.Path, cwd: pathlib.Path) -> dict[str, str]:
    import json

    out = subprocess.run([str(python), "-c", IMPORT_ALL, json.dumps(PACKAGES)], capture_output=True, text=True,
                         cwd=cwd, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)], check=True,
                   timeout=600)
    (found,) = out.glob("onnx_qtypes-*.whl")
    return found


def test_wheel_installs_and_imports_every_sub_package(wheel, tmp_path):
    python = _venv(tmp_path / "venv")
    _pip(python, str(wheel))
    files = _imported_files(python, tmp_path)
    site = str(tmp_path / "venv")
    for package, file in files.items():
        assert file.startswith(site), f"{package} imported from {file}, not from the installed wheel"
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "onnx_qtypes/proto/onnx_qtypes.proto" in names
    assert "onnx_qtypes/proto/onnx_qtypes_pb2.py" in names
    for shipped in ("BACKENDS.md", "template_backend.py", "cases/reject/reject-unknown-version/model.onnx"):
        assert f"onnx_qtypes/conformance/{shipped}" in names, shipped  # the backend contract and its cases


def test_the_source_tree_finder_maps_the_wings_as_pyproject_does():
    from onnx_qtypes._source_tree import WINGS

    assert PACKAGE_DIR == {"onnx_qtypes": "onnx_qtypes", **WINGS}


def test_from_the_repository_root_a_wheel_install_imports_the_source_tree(wheel, tmp_path):
    """The root's onnx_qtypes/ shadows the installed package; its wings must still import (from the same tree)."""
    python = _venv(tmp_path / "venv")
    _pip(python, str(wheel))
    version = subprocess.run([str(python), "-m", "onnx_qtypes", "--version"], capture_output=True, text=True,
                             cwd=ROOT, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("onnx-qtypes "), version
    both = subprocess.run([str(python), "-c", "import onnx_qtypes.interop, onnx_qtypes.checker"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert both.returncode == 0, both.stderr
    for package, file in _imported_files(python, ROOT).items():  # not half source, half wheel
        expected = _source_dir(package) / "__init__.py"
        assert pathlib.Path(file).resolve() == expected.resolve(), f"{package} imported from {file}"
    elsewhere = subprocess.run(  # away from the root the wheel is used as it is, with no finder added
        [str(python), "-c", "import onnx_qtypes, sys; print([type(f).__name__ for f in sys.meta_path])"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert elsewhere.returncode == 0 and "WingFinder" not in elsewhere.stdout, elsewhere


def test_editable_install_imports_every_sub_package_from_the_source_tree(tmp_path):
    python = _venv(tmp_path / "venv")
    _pip(python, "-e", str(ROOT))
    files = _imported_files(python, tmp_path)
    for package, file in files.items():
        expected = _source_dir(package) / "__init__.py"
        assert pathlib.Path(file).resolve() == expected.resolve(), f"{package} imported from {file}"
