"""The proposal's section numbers are unique and every "§N" a text writes is the section it links to.

tests/test_docs_links.py checks that a link's file and anchor exist; this checks what the reader is told: a
link written `[§2.2](types.md#negative-scales)` must land in section 2.2, a bare "§5.3" must be a section of
its own page, a page numbers each section once, and the backend contract's links resolve too.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from builders import ROOT

DOCS = [ROOT / "README.md", ROOT / "conformance_tests" / "BACKENDS.md", *sorted((ROOT / "proposal").rglob("*.md"))]
NUMBERED = re.compile(r"^#+\s+(\d+(?:\.\d+)*)\.?\s", re.M)
HEADING = re.compile(r"^#+\s+(.*)$")
ANCHOR = re.compile(r'<a id="([^"]+)"')
SECTION_LINK = re.compile(r"\[([^\]\n]*(?:\n[^\]\n]*)?)\]\(([^)\s]*)\)")
# a bare § that names another page's section: the page (or a standard) is written just before it
OTHER_PAGE = re.compile(r"(\.md`?|semantics|types|validity|interop|llm_formats|profiles|calibration|ONNX|StableHLO|"
                        r"TFLite|MLIR|TOSA|RFC)\W{0,3}$")


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sections(path: pathlib.Path) -> dict[str, str | None]:
    """Anchor or heading slug -> the number of the section it is in (an anchor on the line before a heading
    belongs to that heading)."""
    found: dict[str, str | None] = {}
    current: str | None = None
    pending: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = HEADING.match(line)
        if heading:
            number = NUMBERED.match(line)
            current = number.group(1) if number else current
            found.setdefault(_slug(heading.group(1)), current)
        if heading or line.strip():
            for anchor in pending:
                found.setdefault(anchor, current)
            pending = []
        ids = ANCHOR.findall(line)
        if ids and line.strip() == "".join(f'<a id="{a}"></a>' for a in ids):
            pending += ids  # a line of anchors alone: they name what follows
        else:
            for anchor in ids:
                found.setdefault(anchor, current)
    for anchor in pending:
        found.setdefault(anchor, current)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_section_numbers_and_anchors_are_unique(doc):
    text = doc.read_text(encoding="utf-8")
    numbers = NUMBERED.findall(text)
    anchors = ANCHOR.findall(text)
    assert len(numbers) == len(set(numbers)), f"{doc.relative_to(ROOT)}: a section number twice: {numbers}"
    twice = sorted({a for a in anchors if anchors.count(a) > 1})
    assert not twice, f"{doc.relative_to(ROOT)}: anchors defined twice: {twice}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_section_sign_names_the_section_it_links_to(doc):
    text = doc.read_text(encoding="utf-8")
    wrong = []
    for match in SECTION_LINK.finditer(text):
        label, target = match.groups()
        sign = re.search(r"§\s*(\d+(?:\.\d+)*)", label)
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not sign or not anchor or dest.suffix != ".md" or not dest.exists():
            continue
        section = sections(dest).get(anchor)
        number = sign.group(1)
        if section is not None and section != number and not section.startswith(number + "."):
            wrong.append(f"line {text[:match.start()].count(chr(10)) + 1}: [{label}]({target}) is in §{section}")
    assert not wrong, f"{doc.relative_to(ROOT)}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_bare_section_sign_is_a_section_of_its_page(doc):
    text = doc.read_text(encoding="utf-8")
    numbers = set(NUMBERED.findall(text))
    unlinked = SECTION_LINK.sub(lambda m: " " * len(m.group(0)), text)  # links are checked above
    missing = []
    for match in re.finditer(r"§\s*(\d+(?:\.\d+)*)", unlinked):
        line_start = unlinked.rfind("\n", 0, match.start()) + 1
        if OTHER_PAGE.search(unlinked[max(line_start, match.start() - 40):match.start()]):
            continue
        if match.group(1) not in numbers:
            missing.append(f"line {text[:match.start()].count(chr(10)) + 1}: {match.group(0)}")
    if numbers:  # a page without numbered sections cites others' (the RFC cites spec pages' sections)
        assert not missing, f"{doc.relative_to(ROOT)} has no such section: {missing}"


def test_the_backend_contract_s_links_resolve():
    doc = ROOT / "conformance_tests" / "BACKENDS.md"
    broken = []
    for _, target in SECTION_LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in sections(dest)):
            broken.append(target)
    assert not broken, f"conformance_tests/BACKENDS.md: {broken}"


def test_the_check_sees_a_wrong_section_sign(tmp_path):
    page = tmp_path / "page.md"
    page.write_text('## 1. One\n\n<a id="x"></a>\n### 1.1 Sub\n\ntext\n\n## 2. Two\n\n[§2](#x) and §3\n')
    assert sections(page)["x"] == "1.1"
    link = next(SECTION_LINK.finditer(page.read_text()))
    assert link.group(1) == "§2" and sections(page)[link.group(2)[1:]] == "1.1"
