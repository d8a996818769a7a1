"""Writing files atomically: a temporary file beside the target, then a rename.

A reader never sees a half-written model, report or .npz, and a failed write
leaves the old file (if any) untouched and no temporary file behind. A symlink
is written through (the file it points to is replaced, the link kept); a
device, FIFO or socket, or a link to an open descriptor such as /dev/stdout,
is written to directly: renaming over it would replace it with a plain file.
Every file we read must be a regular file (``require_regular_file``): reading
a device may never end, and opening a FIFO blocks. A write that fails (a full
disk, an I/O error, no permission, standard output sent to /dev/full) is one
QTypesError naming the file: "FILE: cannot write: REASON".
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

from onnx_qtypes.proto.errors import QTypesError

NOT_REGULAR = "not a regular file (a device, FIFO or socket)"
_LOOP = "symlink loop (too many levels of symbolic links)"
_DESCRIPTOR = re.compile(r"/(proc/(self|[0-9]+)|dev)/fd/[0-9]+")


def is_special(path: str | os.PathLike) -> bool:
    """True when ``path`` exists (links followed) and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, unreadable or a NUL in the name: the caller's own checks say which
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def file_problem(path: str | os.PathLike, *, must_exist: bool = True) -> str | None:
    """Why ``path`` cannot be read as a regular file, in a few words; None when it can.

    A symlink loop, a dangling link, a missing file, a folder, a device, FIFO or socket, a name the system
    refuses (a NUL byte, too long), and a file this process may not read each get their own words.
    """
    try:
        mode = os.stat(path).st_mode
    except ValueError:
        return "the name contains a NUL byte"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _LOOP
        if exc.errno == errno.ENOENT:
            if os.path.islink(path):
                return f"is a symlink to {os.readlink(path)}, which does not exist"
            return "no such file" if must_exist else None
        return f"cannot read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not stat.S_ISREG(mode):
        return NOT_REGULAR
    if not os.access(path, os.R_OK):
        return "cannot read (permission denied)"
    return None


def require_regular_file(path: str | os.PathLike, give: str, error: type[QTypesError] = QTypesError) -> None:
    """Raise ``error`` ("PATH: WHY; give GIVE") unless ``path`` is a regular file this process may read.

    Checked before opening: opening a FIFO blocks, reading a device may never end, and a symlink loop or a
    folder would otherwise surface as an OSError in the middle of a command.
    """
    problem = file_problem(path)
    if problem:
        raise error(f"{os.fspath(path)}: {problem}; give {give}")


def read_file_bytes(path: str | os.PathLike, give: str, error: type[QTypesError] = QTypesError) -> bytes:
    """The bytes of regular file ``path`` (``require_regular_file``), or ``error`` naming it when reading fails."""
    require_regular_file(path, give, error)
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:  # an I/O error, or the file changed under us
        raise error(f"{os.fspath(path)}: cannot read ({exc.strerror or exc})") from None
    except MemoryError:
        raise error(f"{os.fspath(path)}: cannot read (not enough memory)") from None


def is_stream(path: pathlib.Path) -> bool:
    """A target to write straight into: a device, FIFO or socket, or a link to an open descriptor (/dev/stdout)."""
    if is_special(path):
        return True
    hop = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on a chain of links
        if _DESCRIPTOR.fullmatch(hop):  # /dev/stdout -> /proc/self/fd/1 -> the shell's file: don't rename over it
            return True
        if not os.path.islink(hop):
            return False
        hop = os.path.join(os.path.dirname(hop), os.readlink(hop))
    return False


def writable_target(path: str | os.PathLike) -> tuple[pathlib.Path, pathlib.Path]:
    """(target, folder) for ``path``, a symlink resolved to the file it points to; QTypesError when it cannot
    be a file we write."""
    target = pathlib.Path(os.fspath(path))
    if os.path.islink(target) and file_problem(target, must_exist=False) == _LOOP:
        raise QTypesError(f"{target}: {_LOOP}; write to another file")
    if target.is_symlink() and not is_stream(target):
        target = pathlib.Path(os.path.realpath(target))  # replace the file the link points to, keep the link
    folder = target.parent if str(target.parent) else pathlib.Path(".")
    if not folder.is_dir():
        raise QTypesError(f"{target}: folder {folder} does not exist")
    if target.is_dir():
        raise QTypesError(f"{target}: is a directory, expected a file name")
    return target, folder


def cannot_write(target: str | os.PathLike, exc: OSError) -> QTypesError:
    """The one-line error for a failed write: the file the user named, then the system's reason."""
    return QTypesError(f"{os.fspath(target)}: cannot write: {exc.strerror or exc}")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file for writing; on success it replaces ``path`` (a stream target is written directly).

    Any OSError on the way (creating the temporary file, writing, syncing, renaming) is ``cannot_write``
    naming ``path``'s target, never the temporary file, which is removed.
    """
    target, folder = writable_target(path)
    encoding = {} if "b" in mode else {"encoding": "utf-8"}
    if is_stream(target):  # atomicity means nothing for a stream, and the rename would replace the device
        try:
            # append: on /dev/stdout redirected with >> to a file, "w" would truncate what the shell kept
            with open(target, mode.replace("w", "a"), **encoding) as fh:
                yield fh
        except OSError as exc:
            raise cannot_write(target, exc) from None
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".qtypes-", suffix=".tmp", dir=folder)
        os.chmod(tmp, _mode_for(target))  # mkstemp makes 0600; the file should look like any other we write
        with os.fdopen(fd, mode, **encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise cannot_write(target, exc) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def standard_output() -> Iterator[IO[str]]:
    """``sys.stdout`` for a command's report, flushed on leaving; a failed write is ``cannot_write`` naming where
    standard output goes (``> /dev/full``: "/dev/full (standard output): cannot write: No space left on device").

    Wrap only the writing: an OSError raised inside is taken to be standard output's. A closed pipe
    (BrokenPipeError) is left to the caller, which stops quietly.
    """
    try:
        yield sys.stdout
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        name = _stdout_name()
        with contextlib.suppress(OSError, ValueError):  # what is still buffered would fail again at exit: drop it
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        raise cannot_write(name, exc) from None


def write_report(output: str | os.PathLike | None, chunks: Iterable[str]) -> None:
    """A command's report: into ``output`` atomically (never half written), or to standard output when None."""
    if output:
        with atomic_write(output, "w") as fh:
            fh.writelines(chunks)
    else:
        with standard_output() as out:
            out.writelines(chunks)


def _stdout_name() -> str:
    try:
        where = os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")  # Linux: the file behind the redirection
    except (OSError, ValueError, AttributeError):
        return "standard output"
    return f"{where} (standard output)" if where.startswith("/") else "standard output"


def _mode_for(target: pathlib.Path) -> int:
    """The permission bits the target keeps (when it exists) or a new file gets under the process umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0o022)  # reading the umask means setting it; put it straight back
        os.umask(umask)
        return 0o666 & ~umask


def keep_when_idle(output: str | os.PathLike, source: str | os.PathLike, why: str) -> str:
    """For a command that had nothing to do with ``source`` (``why`` says so): QTypesError when ``output`` is an
    existing file, which the user more likely swapped with ``source`` than meant to replace by a copy; otherwise
    the warning to print, saying ``output`` was written anyway. A device, FIFO or /dev/stdout is no file to keep."""
    out = os.fspath(output)
    if os.path.exists(out) and not is_stream(pathlib.Path(out)):
        raise QTypesError(f"{os.fspath(source)}: {why}; {out} left unchanged (check the order: IN OUT)")
    return f"{os.fspath(source)}: {why}; {out} written anyway, with nothing converted"


def refuse_overwrite(output: str | os.PathLike, **inputs: str | os.PathLike | None) -> None:
    """QTypesError when ``output`` is the same file as one of the named inputs (e.g. model=..., inputs=...)."""
    out = pathlib.Path(os.path.realpath(os.fspath(output)))  # realpath: a symlink loop is the reader's to name
    for role, path in inputs.items():
        if path is None:
            continue
        source = pathlib.Path(os.path.realpath(os.fspath(path)))
        same = source == out or (out.exists() and source.exists() and os.path.samefile(source, out))  # hard links
        if same:
            raise QTypesError(f"{output}: is the {role.replace('_', ' ')} being read; write the output to another file")
