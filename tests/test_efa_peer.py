"""EFA's completion errors name both ends by their EC2 instance ids (`My host id`, `Peer host id`): the peer an error
names is the host whose own errors call that id theirs, so that the peer every other host names is blamed rather
than whichever host printed first (a campaign's seed where the culprit and a peer printed in the same second)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.diagnose import incidents

LINE = ("libfabric:{pid}:1796211031::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 113, message: Unresponsive "
        "receiver. My EFA addr: fi_addr_efa://[fe80::9:abff:fe83:b040]:0:774503700 My host id: {me} Peer EFA addr: "
        "fi_addr_efa://[fe80::f8:6ff:feff:185f]:0:1230686497 Peer host id: {peer} (13)\n")


def test_an_efa_errors_peer_instance_id_names_the_host_that_calls_it_its_own(tmp_path: Path) -> None:
    ids = {"ip-10-1-85-226": "i-0b96a8d1023b35bb8", "ip-10-1-63-78": "i-0c0dee62dc223cd76",
           "ip-10-1-12-87": "i-0ad758221476350da"}
    culprit = "ip-10-1-85-226"
    for i, (host, me) in enumerate(ids.items()):
        d = tmp_path / "b" / "nodes" / host
        d.mkdir(parents=True)
        peers = [p for h, p in ids.items() if h != host] if host == culprit else [ids[culprit]]
        (d / "libfabric.log").write_text("".join(LINE.format(pid=100 + i, me=me, peer=p) for p in peers))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "b")
        ev = lab.sql("SELECT host, peer FROM events WHERE kind = 'ofi_completion_error'")
        named = ev.join(incidents._peer_hosts(lab.con), on="peer", how="left")
    counts = named.group_by("peer_host").len().sort("len", descending=True)
    assert counts.row(0) == (culprit, 2) and counts.filter(pl.col("peer_host").is_null()).height == 0
