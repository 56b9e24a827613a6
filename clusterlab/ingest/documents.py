"""JSON documents read whole and streamed, whatever their line length (a `curl`-saved API answer is one line).

A collector that reads JSON documents may offer, beside `parse(lines)`:

    def document(head: bytes) -> bool
        is this file (first 64 KiB) read as a stream of JSON documents rather than line by line?
    def parse_document(pieces: Iterator[tuple[int, bytes]], ctx: Context) -> Iterator[Parsed]
        the rows of the documents in `pieces` (the file's bytes in order, each piece with the line it
        starts on), handed back a bounded chunk at a time

The engine then reads the file in 1 MiB pieces (`reader.iter_pieces`): no line is skipped for its length,
and memory stays bounded by what the collector holds between two chunks, never by the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from clusterlab.collectors._base import Context, Parsed
from clusterlab.ingest.reader import InputError, ReadState, iter_pieces, read_head


def document_collector(path: Path, chosen: list[ModuleType]) -> ModuleType | None:
    """The collector that reads this file as JSON documents, or None (it is read as lines)."""
    docs = [c for c in chosen if hasattr(c, "parse_document")]
    if len(chosen) != 1 or not docs:
        return None
    # NOTE: a grown file is judged by its head too: a document file stays one (its appended text is a document)
    return docs[0] if docs[0].document(read_head(path)) else None


def document_chunks(path: Path, skip: int, first: int, state: ReadState, ctx: Context,
                    c: ModuleType) -> Iterator[Parsed]:
    """The rows of the file's documents as `c` reads them, a bounded chunk at a time."""
    for parsed in c.parse_document(iter_pieces(path, skip, first, state), ctx):
        if parsed.refuse:
            line, _, why = parsed.refuse.removeprefix("line ").partition(": ")
            raise InputError(ctx.path, why, int(line) if line.isdigit() else None)
        yield parsed
