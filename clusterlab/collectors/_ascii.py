"""Regexes with their Perl classes in ASCII: what the prefilter and the sniffs run (`ascii_classes`)."""

from __future__ import annotations

from functools import cache

_WORD, _SPACE = "0-9A-Za-z_", r"\t\n\x0B\x0C\r "
_OUTSIDE = {"d": "[0-9]", "w": f"[{_WORD}]", "s": f"[{_SPACE}]", "D": "[^0-9]", "W": f"[^{_WORD}]",
            "S": f"[^{_SPACE}]", "b": r"(?-u:\b)", "B": r"(?-u:\B)"}
_INSIDE = {"d": "0-9", "w": _WORD, "s": _SPACE, "D": "[^0-9]", "W": f"[^{_WORD}]", "S": f"[^{_SPACE}]"}


@cache
def ascii_classes(pattern: str) -> str:
    """`pattern` with its Perl classes and word boundaries (\\d \\w \\s \\b and their negations) in ASCII.

    NOTE: Unicode's classes are what the regex engine spends its compilation on (a `[ \\w-]{0,30}` is thirty
    copies of \\w's hundreds of ranges, as UTF-8 byte automata) and what makes its lazy DFA large: the kernel
    kind's union of 32 patterns compiled in 60 ms and scanned 3,600 lines in 16 ms, 24 and 14 ms in ASCII, and the
    32 patterns alone in 53 and 24 ms. A log's digits, names and blanks are ASCII; a line that differs only by a
    non-ASCII letter or digit where a class stands is read in both the grouped and the alone parse alike."""
    out, i, depth = [], 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nx = pattern[i + 1]
            out.append(_INSIDE[nx] if depth and nx in _INSIDE else _OUTSIDE[nx] if not depth and nx in _OUTSIDE
                       else pattern[i:i + 2])
            i += 2
            continue
        if ch == "[":
            depth += 1
            out.append(ch)
            i += 1
            for lead in "^]":  # a class may open with a negation, then a literal ]
                if i < len(pattern) and pattern[i] == lead:
                    out.append(lead)
                    i += 1
            continue
        if ch == "]" and depth:
            depth -= 1
        out.append(ch)
        i += 1
    return "".join(out)


__all__ = ["ascii_classes"]
