from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterlab import hostlist


def test_expand_zero_padded_ranges_and_lists() -> None:
    assert hostlist.expand("east-[001-003,010]") == ["east-001", "east-002", "east-003", "east-010"]
    assert hostlist.expand("a[1-2]b[1-2],login") == ["a1b1", "a1b2", "a2b1", "a2b2", "login"]


def test_bad_hostlist_says_why() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        hostlist.expand("east-[001-003")
    with pytest.raises(ValueError, match="bad range"):
        hostlist.expand("east-[9-1]")


@given(st.sets(st.integers(min_value=0, max_value=999), min_size=1, max_size=40))
def test_compress_round_trips(nums: set[int]) -> None:
    hosts = [f"node{n:03d}" for n in nums]
    assert hostlist.expand(hostlist.compress(hosts)) == sorted(hosts)


_PART = st.tuples(st.sampled_from(["gpu-", "n", "a", ""]),
                  st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5)), min_size=0, max_size=3),
                  st.sampled_from(["", "-ib", "x"]))


def _expr(parts: list) -> str:
    out = []
    for head, brackets, tail in parts:
        text = head + "".join(f"[{lo}-{lo + span}]" if span else f"[{lo}]" for lo, span in brackets) + tail
        out.append(text or "h")
    return ",".join(out)


@given(st.lists(_PART, min_size=1, max_size=4))
def test_size_counts_what_expand_gives(parts: list) -> None:
    expr = _expr(parts)
    assert hostlist.size(expr) == len(hostlist.expand(expr))


@pytest.mark.parametrize("bomb", ["n[1-99][1-99][1-99][1-99]", "gpu-[1-999999999]", "a[1-1000],b[1-99][1-9999]",
                                  "x" + "[1-2]" * 40])
def test_a_host_range_bomb_is_refused_before_it_expands(bomb: str) -> None:
    with pytest.raises(hostlist.HostlistTooLarge, match="more than 100,000"):
        hostlist.expand(bomb)
    assert hostlist.size(bomb) > hostlist.MAX_HOSTS


def test_many_brackets_of_one_value_expand_without_recursion() -> None:
    assert hostlist.expand("n" + "[1]" * 5000) == ["n" + "1" * 5000]
