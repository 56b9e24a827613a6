"""The sniff hints a chunk's heads hold are found wherever they lie and in any ASCII case (`ingest.heads._hints_in`):
hypothesis draws heads of filler with hints put at any place, in the first 4 KiB or past it, across the mark, with
their letters' case flipped at random (the hints hold regex metacharacters and a letter past ASCII)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from clusterlab.ingest.heads import NEAR_BYTES, _hints, _hints_in

HINTS = _hints()


def _flip(text: str, flips: list[bool]) -> str:
    return "".join(c.swapcase() if c.isascii() and f else c for c, f in zip(text, flips + [False] * len(text),
                                                                               strict=False))


placed = st.tuples(st.sampled_from(HINTS), st.integers(0, 3 * NEAR_BYTES), st.lists(st.booleans(), max_size=30))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(placed, max_size=4), min_size=1, max_size=6), st.integers(NEAR_BYTES // 2, 4 * NEAR_BYTES))
def test_every_hint_a_head_holds_is_found(heads: list[list[tuple[str, int, list[bool]]]], size: int) -> None:
    made = []
    for hints in heads:
        head = bytearray(b"z" * size)
        for hint, at, flips in hints:
            at = min(at, size)
            head[at:at] = _flip(hint, flips).encode()
        made.append(bytes(head))
    got = _hints_in(made)
    for head, found in zip(made, got, strict=True):
        assert found is not None
        # the reference: a hint is there when its bytes are, ASCII letters in any case
        assert found.found == {h for h in HINTS if h.encode().lower() in head.lower()}
