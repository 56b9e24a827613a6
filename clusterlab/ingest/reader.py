"""Streaming a log file (plain or gzip) as batches of numbered lines, in constant memory."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import xxhash

CHUNK_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20  # longer lines are skipped and reported: no log line is 1 MiB
HEAD_BYTES = 64 << 10
SALVAGE_BYTES = 4 << 10  # piece size when reading what precedes the damage in a gzip
GZIP_MAGIC = b"\x1f\x8b"


class InputError(Exception):
    """Bad input the user must hear about: a file that cannot be read as a log."""

    def __init__(self, path: str, message: str, line: int | None = None):
        self.path, self.line, self.message = path, line, message
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")


class Unzipped(bytes):
    """A small gzip's whole content, decompressed once with its head (`gunzip_small`)."""


def gunzip_small(raw: bytes) -> Unzipped | None:
    """The content of a whole small gzip, one sound member of at most MAX_LINE_BYTES decompressed (None: read it
    as any other gzip, which reports its damage). Bounded: a bomb stops at the limit."""
    unzip = zlib.decompressobj(31)
    try:
        data = unzip.decompress(raw, MAX_LINE_BYTES + 1)
    except zlib.error:
        return None
    if not unzip.eof or unzip.unused_data or len(data) > MAX_LINE_BYTES:
        return None
    return Unzipped(data)


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def content_hash(path: Path, prefix_bytes: int | None = None) -> tuple[str, str | None]:
    """xxh3-128 of the raw file, and of its first `prefix_bytes` bytes (to recognise a log that grew)."""
    whole, prefix, done = xxhash.xxh3_128(), None, 0
    # NOTE: read into one buffer per thread, not a new 8 MiB block a read: a fleet's files are small and many
    buf = _hash_buffer()
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            block = buf[:n]
            if prefix_bytes is not None and prefix is None and done + len(block) >= prefix_bytes:
                cut = prefix_bytes - done
                whole.update(block[:cut])
                prefix = whole.copy().hexdigest()
                whole.update(block[cut:])
            else:
                whole.update(block)
            done += len(block)
    return whole.hexdigest(), prefix


_LOCAL = threading.local()


def _hash_buffer() -> memoryview:
    if not hasattr(_LOCAL, "buf"):
        _LOCAL.buf = memoryview(bytearray(CHUNK_BYTES))
    return _LOCAL.buf


def _open_text_stream(path: Path):
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def read_head(path: Path) -> bytes:
    """The first 64 KiB of the decompressed content (what collectors sniff)."""
    return read_head_checked(path)[0]


def read_head_checked(path: Path) -> tuple[bytes, str | None]:
    """The first 64 KiB of the decompressed content, and why a gzip stopped short of it (None: it did not)."""
    try:
        with _open_text_stream(path) as f:
            return f.read(HEAD_BYTES), None
    except (EOFError, OSError, zlib.error) as e:
        # A truncated or corrupt gzip still has a readable head; the full read reports the error.
        head, _ = _salvage(path, 0, HEAD_BYTES)
        return head, _gzip_why(e)


def _gzip_why(e: BaseException) -> str:
    return "ends before its end of stream" if isinstance(e, EOFError) else f"corrupt ({e})"


def _salvage(path: Path, start: int, limit: int) -> tuple[bytes, bool]:
    """What a damaged gzip still gives from decompressed offset `start` (at most `limit` bytes), read in
    small pieces so that little is lost before the damage; and whether it ended cleanly."""
    out = bytearray()
    with gzip.open(path, "rb") as f:
        try:
            _skip(f, start)
            while len(out) < limit and (b := f.read(SALVAGE_BYTES)):
                out += b
        except (EOFError, OSError, zlib.error):
            return bytes(out), False
    return bytes(out), True


@dataclass
class ReadState:
    """Where a read got to, so that a grown file can be resumed and the user told what was odd."""

    text_bytes: int = 0  # decompressed bytes consumed
    lines: int = 0  # lines numbered so far (the last may be open: no newline yet)
    last_line_open: bool = False
    last_line_start: int = 0  # decompressed offset where the last line starts
    invalid_utf8_lines: int = 0
    long_lines: list[int] = field(default_factory=list)
    damage: tuple[int, str] | None = None  # a gzip unreadable after line N: (N, what is wrong)


def iter_batches(
    path: Path, display: str, skip_bytes: int = 0, first_line: int = 1, state: ReadState | None = None
) -> Iterator[pl.DataFrame]:
    """Frames of (`line`, `text`) for `path`, starting `skip_bytes` into the decompressed text."""
    st = state if state is not None else ReadState()
    st.text_bytes = st.last_line_start = pos = skip_bytes  # pos: offset of the first byte not yet numbered
    line_no = first_line
    carry = b""
    in_long_line = False  # inside a line already reported as too long
    try:
        with _open_text_stream(path) as f:
            if skip_bytes:
                _skip(f, skip_bytes)
            while block := f.read(CHUNK_BYTES):
                data = carry + block
                cut = data.rfind(b"\n")
                if cut < 0:
                    carry = data
                    if len(carry) > MAX_LINE_BYTES:
                        if not in_long_line:
                            st.long_lines.append(line_no)
                        in_long_line = True
                        pos += len(carry)
                        carry = b""
                    continue
                body, carry = data[: cut + 1], data[cut + 1 :]
                pos += cut + 1
                if in_long_line:
                    body = body[body.index(b"\n") + 1 :]
                    in_long_line = False
                    line_no += 1
                if body:
                    frame = _frame(body, line_no, st)
                    line_no += body.count(b"\n")
                    if frame.height:
                        yield frame
                st.text_bytes = st.last_line_start = pos
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        # NOTE: the failed read took up to 8 MiB of good text with it: read what precedes the damage
        # again, in small pieces. The line the damage cut is dropped; the lines before it are kept.
        rest, _ = _salvage(path, pos, CHUNK_BYTES + MAX_LINE_BYTES)
        if in_long_line:  # the over-long line ends at the first newline, if the damage spared it
            end = rest.find(b"\n")
            rest, pos, line_no = (b"", pos, line_no) if end < 0 else (rest[end + 1 :], pos + end + 1, line_no + 1)
        cut = rest.rfind(b"\n")
        if cut >= 0:
            frame = _frame(rest[: cut + 1], line_no, st)
            line_no, pos = line_no + rest.count(b"\n", 0, cut + 1), pos + cut + 1
            if frame.height:
                yield frame
        st.lines, st.last_line_open, st.text_bytes, st.last_line_start = line_no - 1, False, pos, pos
        st.damage = (line_no - 1, f"gzip {_gzip_why(e)}")
        return
    st.lines, st.last_line_open = line_no - 1, False
    if in_long_line:
        st.lines, st.text_bytes = line_no, pos
    elif carry:
        st.lines, st.last_line_open, st.text_bytes = line_no, True, pos + len(carry)
        yield _frame(carry + b"\n", line_no, st)


PIECE_BYTES = 1 << 20  # a JSON document is handed to its parser in pieces this long


def iter_pieces(path: Path, skip_bytes: int = 0, first_line: int = 1,
                state: ReadState | None = None) -> Iterator[tuple[int, bytes]]:
    """The decompressed bytes of `path` from `skip_bytes` on, in pieces of at most 1 MiB, each with the line
    it starts on: what a streaming JSON parser reads, whatever the length of a line (no line is skipped).

    The read state ends as `iter_batches` leaves it, so that a grown document is re-read from its open line."""
    st = state if state is not None else ReadState()
    pos, line, last_start, last_nl = skip_bytes, first_line, skip_bytes, True
    st.text_bytes = st.last_line_start = skip_bytes
    try:
        with _open_text_stream(path) as f:
            if skip_bytes:
                _skip(f, skip_bytes)
            while piece := f.read(PIECE_BYTES):
                yield line, piece
                nl = piece.count(b"\n")
                if nl:
                    last_start = pos + piece.rindex(b"\n") + 1
                line, pos, last_nl = line + nl, pos + len(piece), piece.endswith(b"\n")
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        # NOTE: what was read before the damage was handed on already; the document ends there
        st.damage = (line, f"gzip {_gzip_why(e)}")
    st.text_bytes = pos
    # a last line without its newline is open (the next read starts again at its start), as `iter_batches` has it
    st.last_line_open = not last_nl and pos > skip_bytes
    st.lines = line if st.last_line_open else line - 1
    st.last_line_start = last_start if st.last_line_open else pos


def _skip(f, n: int) -> None:
    while n > 0:
        got = f.read(min(n, CHUNK_BYTES))
        if not got:
            break
        n -= len(got)


def _frame(body: bytes, first_line: int, st: ReadState) -> pl.DataFrame:
    """Numbered lines of `body` (which ends with a newline); over-long lines are dropped."""
    # NOTE: splitting one big string in polars is ~7x faster than building a DataFrame column of it
    # and exploding; strict decoding is the ASCII fast path, 'replace' only when a file needs it.
    try:
        text = body[:-1].decode("utf-8")
        bad = False
    except UnicodeDecodeError:
        text, bad = body[:-1].decode("utf-8", errors="replace"), True
    lines = pl.Series("text", [text]).str.split("\n").explode()
    if b"\r" in body:
        lines = lines.str.strip_suffix("\r")
    frame = lines.to_frame().with_row_index("line", offset=first_line).with_columns(pl.col("line").cast(pl.Int64))
    if bad:
        st.invalid_utf8_lines += frame.select(pl.col("text").str.contains("\ufffd", literal=True).sum()).item()
    if len(body) > MAX_LINE_BYTES:
        long = frame.filter(pl.col("text").str.len_bytes() > MAX_LINE_BYTES)
        if long.height:
            st.long_lines.extend(long["line"].to_list())
            frame = frame.filter(pl.col("text").str.len_bytes() <= MAX_LINE_BYTES)
    return frame
