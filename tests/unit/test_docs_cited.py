"""Every document the code cites exists in the project (issue 24 item 9: comments in
fault/mongo.py and runners/mongo.py cited a seed digest under docs/ that was never in it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITED = re.compile(r"docs/[\w./-]+?\.md")


def test_every_cited_document_exists() -> None:
    missing = []
    for folder in ("dsl", "lab", "runners", "fault", "bench"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                for doc in CITED.findall(line):
                    if not (ROOT / doc).is_file():
                        missing.append(f"{f.relative_to(ROOT)}:{n}: {doc}")
    assert missing == []
