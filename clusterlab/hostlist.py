"""Slurm hostlist expressions: `east-[001-064]`, `node[1-3,7],gpu-a[01-02]-b[1-2]`."""

from __future__ import annotations

import itertools
import re

_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {expr!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced '[' in hostlist {expr!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


MAX_HOSTS = 100_000  # hosts one expression may name: the largest clusters have tens of thousands of nodes


class HostlistTooLarge(ValueError):
    """An expression naming more hosts than the limit: log text is untrusted, and `n[1-99][1-99][1-99][1-99]`
    (96 million hosts) in a few bytes would take gigabytes to expand."""


def _items(spec: str, expr: str) -> list[tuple[str, str | None]]:
    """The (lo, hi) of each item in a bracket (hi None for a single number), checked."""
    out: list[tuple[str, str | None]] = []
    for item in spec.split(","):
        item = item.strip()
        if "-" in item:
            lo, hi = item.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"bad range {item!r} in hostlist {expr[:200]!r}")
            out.append((lo, hi))
        elif item.isdigit():
            out.append((item, None))
        else:
            raise ValueError(f"bad item {item!r} in hostlist {expr[:200]!r}")
    return out


def _bracket_size(spec: str, expr: str) -> int:
    return sum(int(hi) - int(lo) + 1 if hi is not None else 1 for lo, hi in _items(spec, expr))


def _range_values(spec: str, expr: str) -> list[str]:
    out = []
    for lo, hi in _items(spec, expr):
        if hi is None:
            out.append(lo)
            continue
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
    return out


def size(expr: str) -> int:
    """How many hosts `expr` names, counted without expanding it (ValueError where it is malformed)."""
    total = 0
    for part in _split_top(expr):
        n = 1
        for spec in _BRACKET.findall(part):
            n *= _bracket_size(spec, expr)
        total += n
    return total


def expand(expr: str, limit: int = MAX_HOSTS) -> list[str]:
    """All host names a hostlist expression names, in order; `HostlistTooLarge` where they are over `limit`."""
    if (n := size(expr)) > limit:
        raise HostlistTooLarge(f"hostlist {expr[:200]!r} names {n:,} hosts, more than {limit:,}")
    hosts: list[str] = []
    for part in _split_top(expr):
        pieces = _BRACKET.split(part)  # text, bracket, text, bracket, ..., text
        values = [[text] if i % 2 == 0 else _range_values(text, expr) for i, text in enumerate(pieces)]
        hosts.extend("".join(p) for p in itertools.product(*values))
    return hosts


def compress(hosts: list[str]) -> str:
    """A compact hostlist for `hosts` (numeric suffixes of equal width folded into ranges)."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for h in sorted(set(hosts)):
        m = re.fullmatch(r"(.*?)(\d+)", h)
        if m:
            groups.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
        else:
            plain.append(h)
    parts = list(plain)
    for (prefix, width), nums in sorted(groups.items()):
        nums.sort()
        runs, start, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        parts.append(f"{prefix}{runs[0]}" if len(runs) == 1 and "-" not in runs[0] else f"{prefix}[{','.join(runs)}]")
    return ",".join(parts)
