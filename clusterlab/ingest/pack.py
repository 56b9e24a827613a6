"""A worker's parsed chunk, packed for its trip to the writer: one Arrow IPC stream per table for all its files.

Handing back each file's frames one by one costs more than parsing a small file: pickling a polars frame and
rebuilding it in the writer took ~4 s of CPU per 540 MB of step files, and the writer then joined hundreds of
one-file pieces again. A packed chunk crosses as a few byte strings, read back without a copy.

Rows stay tied to their files by `file_id` (unique within a packed chunk), so the writer can store any subset
of a chunk's files (one it found already read, a batch that ends mid-chunk) and the rows stored never depend on
how files were chunked.
"""

from __future__ import annotations

import io
from collections import Counter

import polars as pl

from clusterlab.ingest.parse import PackedRows, ParsedFile

UNMATCHED = "unmatched_lines"  # packed beside the evidence tables: trouble-looking lines no rule matched


def pack(outs: list[ParsedFile]) -> None:
    """Move the in-memory rows of the chunk's stored files into one PackedRows they share (spills stay files)."""
    ids = Counter(out.plan.file_id for out in outs)
    # NOTE: a file listed twice in one call (two paths to it) keeps its own frames: file_id must tell files apart
    packable = [out for out in outs if out.ok and ids[out.plan.file_id] == 1]
    if not packable:
        return
    by_table: dict[str, list[pl.DataFrame]] = {}
    for out in packable:
        for table, parts in out.tables.items():
            by_table.setdefault(table, []).extend(p for p in parts if isinstance(p, pl.DataFrame))
            out.tables[table] = [p for p in parts if not isinstance(p, pl.DataFrame)]
        if out.unmatched is not None:
            by_table.setdefault(UNMATCHED, []).append(out.unmatched)
            out.unmatched = None
    streams = {}
    for table, frames in by_table.items():
        if frames:
            buf = io.BytesIO()
            # rechunked here, in parallel: DuckDB reads an Arrow table of hundreds of one-file chunks 3x slower
            # (the types `to_arrow()` gives: the writer joins these with frames parsed in its own process)
            pl.concat(frames, how="vertical", rechunk=True).write_ipc_stream(
                buf, compression="uncompressed", compat_level=pl.CompatLevel.oldest())
            streams[table] = buf.getvalue()
    packed = PackedRows(streams, frozenset(out.plan.file_id for out in packable))
    for out in packable:
        out.packed = packed


__all__ = ["UNMATCHED", "pack"]
