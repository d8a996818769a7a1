"""A source checkout imports like the editable install: each wing from its own top-level folder.

The wings of ``onnx_qtypes`` live in top-level folders (``interop/`` is
``onnx_qtypes.interop``, ``conformance_tests/`` is ``onnx_qtypes.conformance``),
which the wheel and the editable install map through setuptools' package-dir.
From the repository root, though, Python finds this folder first (the current
directory leads sys.path) and would look for ``onnx_qtypes.interop`` inside
it, even with the wheel installed. When the face is imported from a source
tree (every wing folder beside it, none inside it), ``install`` puts a finder
in front of sys.meta_path that maps each wing to its folder; in an installed
wheel the wings sit inside the face and it does nothing.

``WINGS`` is the mapping; a test holds it equal to pyproject.toml's
[tool.setuptools.package-dir].
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import pathlib
import sys
from collections.abc import Iterable, Sequence

WINGS = {
    "onnx_qtypes.proto": "proto",
    "onnx_qtypes.checker": "checker",
    "onnx_qtypes.reference_ops": "reference_ops",
    "onnx_qtypes.conformance": "conformance_tests",
    "onnx_qtypes.interop": "interop",
    "onnx_qtypes.calibration": "calibration",
}


class WingFinder(importlib.abc.MetaPathFinder):
    """Finds the wings (and only them) of the source tree at ``root``."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        folder = WINGS.get(fullname)
        if folder is None:
            return None  # the wings' own sub-packages are found through the wing's __path__
        init = self.root / folder / "__init__.py"
        return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(init.parent)])


def install(face_path: Iterable[str]) -> None:
    """Add a WingFinder when the face package (its ``__path__``) is a source tree's ``onnx_qtypes/`` folder."""
    for entry in face_path:
        face = pathlib.Path(entry).resolve()
        root = face.parent
        beside = all((root / folder / "__init__.py").is_file() for folder in WINGS.values())
        inside = any((face / name.rpartition(".")[2]).exists() for name in WINGS)
        if beside and not inside:
            if not any(isinstance(f, WingFinder) and f.root == root for f in sys.meta_path):
                sys.meta_path.insert(0, WingFinder(root))  # before another checkout's editable finder
            return
