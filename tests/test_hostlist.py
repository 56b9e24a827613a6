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
