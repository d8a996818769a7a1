"""Writing files atomically: a temporary file beside the target, then a rename.

A reader never sees a half-written model, report or .npz, and a failed write
leaves the old file (if any) untouched and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
from collections.abc import Iterator
from typing import IO

from onnx_qtypes.proto.errors import QTypesError


def writable_target(path: str | os.PathLike) -> tuple[pathlib.Path, pathlib.Path]:
    """(target, folder) for ``path``; QTypesError when it cannot be a file we write."""
    target = pathlib.Path(os.fspath(path))
    folder = target.parent if str(target.parent) else pathlib.Path(".")
    if not folder.is_dir():
        raise QTypesError(f"{target}: folder {folder} does not exist")
    if target.is_dir():
        raise QTypesError(f"{target}: is a directory, expected a file name")
    return target, folder


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file for writing; on success it replaces ``path``."""
    target, folder = writable_target(path)
    fd, tmp = tempfile.mkstemp(prefix=".qtypes-", suffix=".tmp", dir=folder)
    try:
        os.chmod(tmp, _mode_for(target))  # mkstemp makes 0600; the file should look like any other we write
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise QTypesError(f"{target}: cannot write ({exc.strerror or exc})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _mode_for(target: pathlib.Path) -> int:
    """The permission bits the target keeps (when it exists) or a new file gets under the process umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0o022)  # reading the umask means setting it; put it straight back
        os.umask(umask)
        return 0o666 & ~umask


def refuse_overwrite(output: str | os.PathLike, **inputs: str | os.PathLike | None) -> None:
    """QTypesError when ``output`` is the same file as one of the named inputs (e.g. model=..., inputs=...)."""
    out = pathlib.Path(os.fspath(output)).resolve()
    for role, path in inputs.items():
        if path is None:
            continue
        source = pathlib.Path(os.fspath(path)).resolve()
        same = source == out or (out.exists() and source.exists() and os.path.samefile(source, out))  # hard links
        if same:
            raise QTypesError(f"{output}: is the {role.replace('_', ' ')} being read; write the output to another file")
