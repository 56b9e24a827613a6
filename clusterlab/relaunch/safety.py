"""Strict checks on values that end up in scheduler commands: hostnames, paths, reason text.

Hostnames and paths in the store come from logs, which are untrusted. Commands are always argument
lists (never a shell), but a value that does not look like a hostname or a plain path is refused
all the same: a scheduler, a wrapper script or a human copying the command may still interpret it.
"""

from __future__ import annotations

import re

# RFC 1123 labels (letters, digits, hyphens; underscores tolerated: some clusters use them), dot-separated.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}))*")
# An absolute path of plain characters: no spaces, quotes, globs, `$`, `;`, `|`, `&`, commas or `..`.
_PATH = re.compile(r"/(?:[A-Za-z0-9._+@=-]+/?)*")
_REASON_OK = re.compile(r"[^A-Za-z0-9 ._:/#()+=-]")
# Words Slurm reads as something other than one node (`nodename=ALL` is every node, `DEFAULT` a template).
SCHEDULER_KEYWORDS = frozenset({"all", "default", "none", "null"})


class UnsafeValueError(ValueError):
    """A hostname or path taken from the evidence that must not reach a command."""


def check_host(host: object, origin: str = "") -> str:
    """`host` if it names one node (no keyword, no host list like `node[1-3]`), else UnsafeValueError saying why."""
    where = f" (from {origin})" if origin else ""
    if not isinstance(host, str) or len(host) > 253 or not _HOST.fullmatch(host):
        raise UnsafeValueError(f"refusing host {host!r}{where}: not a plain hostname")
    if host.lower() in SCHEDULER_KEYWORDS:
        raise UnsafeValueError(f"refusing host {host!r}{where}: a scheduler keyword, not a node name")
    return host


def check_path(path: object, origin: str = "") -> str:
    """`path` if it is an absolute path of plain characters without `..`, else UnsafeValueError."""
    where = f" (from {origin})" if origin else ""
    if (not isinstance(path, str) or len(path) > 4096 or not _PATH.fullmatch(path)
            or ".." in path.split("/")):
        raise UnsafeValueError(f"refusing path {path!r}{where}: not a plain absolute path")
    return path


def reason_text(text: str, limit: int = 120) -> str:
    """Text safe for a scheduler's reason field: plain characters only, one line, bounded length."""
    return _REASON_OK.sub("_", " ".join(text.split()))[:limit]
