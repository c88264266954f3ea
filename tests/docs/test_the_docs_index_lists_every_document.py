"""docs/README.md is the index of the design documents: every Markdown file in docs/ is
linked from its table, and every link there names a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
LINK = re.compile(r"^\| \[[^\]]+\]\(([^)#]+)\)", re.MULTILINE)


def _indexed() -> set[str]:
    return set(LINK.findall((DOCS / "README.md").read_text(encoding="utf-8")))


def test_every_document_in_docs_is_linked_from_the_index() -> None:
    documents = {p.name for p in DOCS.glob("*.md") if p.name != "README.md"}
    assert sorted(documents - _indexed()) == []


def test_every_link_in_the_index_names_an_existing_document() -> None:
    assert sorted(name for name in _indexed() if not (DOCS / name).is_file()) == []
