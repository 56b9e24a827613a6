"""Writing the bundle: files streamed to disk in blocks, optionally gzip, byte-identical every time."""

from __future__ import annotations

import gzip
import io
import os
import shutil
from pathlib import Path
from typing import IO

MARKER = ".clusterlab-generated"  # in every folder `simulate --out` and `demo --out` make: ours to replace
GZIP_LEVEL = 4  # a quarter the time of level 9 for about 10 % more bytes: the corpus is meant to be big
BLOCK = 1 << 20  # bytes buffered before a write


class OutDirError(ValueError):
    """An output folder clusterlab must not replace (one line saying why)."""


def check_out_dir(root: Path, force: bool = False) -> None:
    """Refuse an output folder that holds files clusterlab did not write, unless `force` (OutDirError)."""
    if root.exists() and not root.is_dir():
        raise OutDirError(f"{root}: exists and is not a directory")
    here = Path.cwd().resolve()
    if root.resolve() in (here, *here.parents, Path.home().resolve()):
        raise OutDirError(f"{root}: refusing to replace the current, a parent or the home directory")
    if not force and root.is_dir() and not (root / MARKER).is_file() and any(root.iterdir()):
        raise OutDirError(f"{root}: not empty and not made by clusterlab; it would be deleted (--force to replace it)")


def mark_out_dir(root: Path) -> None:
    """Mark a folder as made by clusterlab, so that a later --out may replace it."""
    (root / MARKER).write_text("made by clusterlab: `clusterlab simulate/demo --out` may replace this folder\n")


class Out:
    """One file being written: text or bytes in, buffered, compressed when its name ends in .gz."""

    def __init__(self, path: Path, gz: bool) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._raw: IO[bytes] = open(path, "wb")  # noqa: SIM115 - closed in close()
        # NOTE: mtime=0 and no file name in the gzip header: the bytes depend on the content only
        self._f: IO[bytes] = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0,
                                           compresslevel=GZIP_LEVEL) if gz else self._raw
        self._buf = io.BytesIO()
        self.bytes_in = 0

    def write(self, data: str | bytes) -> None:
        """Append text (UTF-8) or bytes."""
        b = data.encode() if isinstance(data, str) else data
        self._buf.write(b)
        self.bytes_in += len(b)
        if self._buf.tell() >= BLOCK:
            self.flush()

    def lines(self, lines: list[str]) -> None:
        """Append lines, each with its newline."""
        if lines:
            self.write("\n".join(lines) + "\n")

    def flush(self) -> None:
        """Pass the buffered block on (to the compressor or the file)."""
        self._f.write(self._buf.getvalue())
        self._buf = io.BytesIO()

    def close(self) -> None:
        """Flush and close (the gzip trailer too)."""
        self.flush()
        if self._f is not self._raw:
            self._f.close()
        self._raw.close()

    def __enter__(self) -> Out:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sink:
    """The bundle directory: every file written through it gets the same mtime at the end."""

    def __init__(self, root: Path, gzip_big: bool) -> None:
        self.root = root
        self.gzip_big = gzip_big
        self.paths: list[Path] = []
        self.text_bytes = 0  # before compression
        self._open: list[Out] = []
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)

    def open(self, rel: str, big: bool = False) -> Out:
        """A file under the root; `big` files get `.gz` (and are compressed) when the sink gzips.

        A name that already ends in `.gz` is always compressed (the demo scenario names its own)."""
        suffix = ".gz" if big and self.gzip_big else ""
        path = self.root / (rel + suffix)
        self.paths.append(path)
        out = Out(path, gz=path.name.endswith(".gz"))
        self._open.append(out)
        return out

    def text(self, rel: str, text: str | bytes) -> None:
        """A small file written at once."""
        with self.open(rel) as f:
            f.write(text)

    def finish(self, mtime_s: float) -> int:
        """Stamp every file with `mtime_s` (formats without a year take it from there); total bytes."""
        # NOTE: years of glog, c10d and syslog lines come from the file's mtime at ingest
        self.text_bytes = sum(o.bytes_in for o in self._open)
        self._open = []
        for p in self.paths:
            os.utime(p, (mtime_s, mtime_s))
        return sum(p.stat().st_size for p in self.paths)
