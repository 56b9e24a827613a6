"""What clusterlab makes of one pasted excerpt, ingested as a file on its own (the tests of the classes of defect
each round of real excerpts showed: tests/test_excerpt_classes_beyond*.py)."""

from __future__ import annotations

from pathlib import Path

from clusterlab import Lab


def events(tmp_path: Path, text: str, name: str = "excerpt.log") -> list[tuple[str, str | None]]:
    """(kind, failure mode) of each event the excerpt gives, in line order."""
    path = tmp_path / name
    path.write_text(text)
    with Lab(":memory:") as lab:
        lab.ingest(path)
        return [(k, m) for k, m in lab.sql("SELECT kind, failure_mode FROM events ORDER BY line").iter_rows()]


def modes(tmp_path: Path, text: str, name: str = "excerpt.log") -> set[str]:
    """The failure modes the excerpt's events carry."""
    return {m for _, m in events(tmp_path, text, name) if m is not None}
