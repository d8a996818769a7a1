"""Relative links in the proposal and READMEs point at files and anchors that exist."""

from __future__ import annotations

import pathlib
import re

import pytest
from builders import ROOT

DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "proposal").rglob("*.md"),
     *(p for p in ROOT.glob("*/README.md") if not p.parent.name.startswith("."))],  # not .pytest_cache/, .venv/
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: pathlib.Path) -> set[str]:
    """Explicit <a id=...> anchors and GitHub-style heading slugs."""
    text = path.read_text()
    found = set(re.findall(r'<a id="([^"]+)"', text))
    for heading in re.findall(r"^#+\s+(.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no anchor #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}:\n" + "\n".join(broken)
