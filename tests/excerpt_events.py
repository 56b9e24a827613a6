"""What clusterlab makes of one pasted excerpt, ingested as a file on its own (the tests of the classes of defect
each round of real excerpts showed: tests/test_excerpt_classes_beyond*.py)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
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


def alone(path: Path, text: str) -> tuple[set[str], list[str]]:
    """The failure modes of the events one file alone makes (written at `path`), and the ingest's messages."""
    path.write_text(text)
    with Lab(":memory:") as lab:
        summary = lab.ingest(path)
        found = set(lab.sql("SELECT DISTINCT failure_mode FROM events WHERE failure_mode IS NOT NULL")
                    ["failure_mode"].to_list())
    return found, [str(e) for e in summary.errors]


def each_alone(files: list[tuple[Path, str]], workers: int = 2) -> list[tuple[set[str], list[str]]]:
    """`alone` for every (path, text), in that order, on `workers` processes: a file's ingest is mostly one
    Python thread, and hundreds of them one after another were the longest setup of the suite."""
    if workers <= 1 or len(files) < 20:
        return [alone(p, t) for p, t in files]
    # NOTE: spawned, not forked: the parent's DuckDB and polars thread pools do not survive a fork
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        return list(pool.map(alone, *zip(*files, strict=True), chunksize=16))
