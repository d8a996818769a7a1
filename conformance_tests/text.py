"""Text that comes from a backend (its name, version and messages), made safe to print and to write into reports.

A runtime's message can hold anything: terminal escape sequences, NUL bytes, lone surrogates (bytes Python could
not decode). Consoles, XML 1.0 and UTF-8 files accept none of them, so every such text passes ``clean_text`` where
it enters the runner.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
# C0 controls but tab / newline / carriage return, DEL, C1 controls (0x9b is a terminal's CSI), lone surrogates, and
# the two non-characters XML forbids
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _as_str(text: object) -> str:
    try:
        return text if isinstance(text, str) else str(text)
    except BaseException:  # noqa: BLE001 - an object whose __str__ fails: say so, do not stop the run
        return f"<{type(text).__name__} that cannot be printed>"


def clean_text(text: object) -> str:
    """``text`` as a string with every unsafe character replaced by U+FFFD (never raises)."""
    return _UNSAFE.sub(REPLACEMENT, _as_str(text))


def one_line(text: object) -> str:
    """``clean_text`` on one line: runs of white space (newlines, form feeds included) as one space."""
    return clean_text(" ".join(_as_str(text).split()))
