"""Container log envelopes (CRI files under /var/log/pods, `kubectl logs --timestamps`): taken off before parsing, and
their time dates the lines that print none of their own."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab
from clusterlab.ingest.envelope import sniff_envelope

# what one pod's torchrun printed, as the container runtime stored it
STEP = ("[rank16]:[titan] 2026-03-02 04:10:{s},{ms} - root - INFO - step: {n}  loss:  9.2140  grad_norm:  3.1012  "
        "memory: 55.10GiB(69.60%)  tps: 801  tflops: 390.11  mfu: 39.43%")
PROGRAM = [
    ("2026-03-02T04:10:00.101000000Z", STEP.format(s="00", ms="100", n=10)),
    ("2026-03-02T04:10:26.402311000Z", STEP.format(s="26", ms="402", n=20)),
    ("2026-03-02T04:11:07.750125431Z", "[rank16]: Traceback (most recent call last):"),
    ("2026-03-02T04:11:07.750203377Z", '[rank16]:   File "/srv/train/loop.py", line 88, in fetch'),
    ("2026-03-02T04:11:07.750299101Z", "[rank16]: ValueError: sample 77 has no tokens"),
    ("2026-03-02T04:11:09.310402990Z", "E0302 04:11:09.310211 7 torch/distributed/elastic/multiprocessing/api.py:869] "
                                       "failed (exitcode: 1) local_rank: 0 (pid: 212) of binary: /usr/bin/python3"),
]


def _cri(rows: list[tuple[str, str]]) -> str:
    return "".join(f"{ts} stderr F {line}\n" for ts, line in rows)


def _events(lab: Lab):
    return lab.sql("SELECT line, ts, text, kind FROM events ORDER BY line")


def test_cri_envelope_is_taken_off_and_dates_an_unstamped_traceback(tmp_path: Path) -> None:
    log = tmp_path / "bundle" / "runs" / "exp7" / "pods" / "node-b2" / "ml_exp7-worker-1_5f0c" / "trainer" / "0.log"
    log.parent.mkdir(parents=True)
    log.write_text(_cri(PROGRAM))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "bundle")
        steps = lab.sql("SELECT step, ts FROM steps ORDER BY step")
        ev = _events(lab)
    assert steps["step"].to_list() == [10, 20]
    exc = ev.filter(ev["text"].str.contains("ValueError"))
    # the exception line prints no time: its envelope's is its own (not the step line's forty seconds before)
    assert exc["ts"].to_list() == [dt.datetime(2026, 3, 2, 4, 11, 7, 750299)]
    assert not ev["text"].str.contains("stderr F").any()
    failed = ev.filter(ev["text"].str.contains("failed \\(exitcode"))
    assert failed["ts"].to_list() == [dt.datetime(2026, 3, 2, 4, 11, 9, 310211)]


def test_kubectl_timestamps_and_cri_pieces_are_read_as_the_program_printed_them(tmp_path: Path) -> None:
    rows = [(ts.replace("000Z", "Z"), line) for ts, line in PROGRAM]
    (tmp_path / "kubectl-logs.txt").write_text("".join(f"{ts} {line}\n" for ts, line in rows))
    # a CRI line cut in two pieces (`P` then `F`) is one line again
    at = PROGRAM[4][0]
    cut = PROGRAM[:4] + [(at, "[rank16]: ValueError: sample 77 "), (at, "has no tokens")] + PROGRAM[5:]
    cri = _cri(cut).replace(f"{at} stderr F [rank16]: ValueError", f"{at} stderr P [rank16]: ValueError")
    (tmp_path / "pod.log").write_text(cri)
    for name in ("kubectl-logs.txt", "pod.log"):
        with Lab(":memory:") as lab:
            lab.ingest(tmp_path / name)
            ev = _events(lab)
        exc = ev.filter(ev["text"].str.contains("ValueError"))
        assert exc["text"].to_list() == ["[rank16]: ValueError: sample 77 has no tokens"], name
        assert exc["ts"].dt.second().to_list() == [7], name


def test_a_kernel_journal_with_iso_times_wears_no_envelope() -> None:
    journal = b"".join(b"2026-03-02T04:1%d:00.123456+00:00 node-b2 kernel: nfs: server fs9 not responding, timed out\n"
                       % i for i in range(5))
    assert sniff_envelope(journal) is None
    assert sniff_envelope(_cri(PROGRAM).encode()) == "cri"


def test_container_logs_parsed_together_give_the_rows_of_each_parsed_alone(tmp_path: Path,
                                                                           monkeypatch) -> None:
    import clusterlab.ingest.groups as ingest_groups

    for k in range(3):  # three pods' logs, one with a line cut in CRI pieces
        rows = [(ts, line.replace("rank16", f"rank{8 * k}")) for ts, line in PROGRAM]
        text = _cri(rows)
        if k == 1:
            text = text.replace(" stderr F [rank8]: ValueError: sample 77 has no tokens",
                                " stderr P [rank8]: ValueError: sample 77 \n2026-03-02T04:11:07.750299101Z stderr F "
                                "has no tokens")
        (tmp_path / f"pod-{k}").mkdir()
        (tmp_path / f"pod-{k}/0.log").write_text(text)

    def rows(group: bool) -> list:
        monkeypatch.setattr(ingest_groups, "GROUP_FILES", group)
        with Lab(":memory:") as lab:
            lab.ingest(tmp_path)
            return (lab.sql("SELECT f.path, e.line, e.ts, e.kind, e.text FROM events e JOIN ingested_files f "
                            "USING (file_id) ORDER BY 1, 2, 4").rows()
                    + lab.sql("SELECT line, ts, step FROM steps ORDER BY 1, 2, 3").rows())

    alone = rows(False)
    assert rows(True) == alone
    assert any("sample 77 has no tokens" in str(r) for r in alone)


def test_lokis_logcli_output_is_read_as_the_hosts_own_lines_on_their_own_clock(tmp_path: Path) -> None:
    """`logcli query` prints each entry behind the shipper's receipt time and the stream's labels: a kernel line keeps
    its own stamp and host (a shipper that stalled received it half an hour late), not the envelope's."""
    rows = [("2026-12-01T09:20:08Z", "gpu-a006", "Dec  1 08:53:02 gpu-a006 kernel: [543165.897881] NVRM: Xid "
             "(PCI:0000:4c:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
            ("2026-12-01T09:20:09.5Z", "gpu-a006", "Dec  1 08:53:03 gpu-a006 kernel: [543167.097681] NVRM: GPU "
             "0000:4c:00.0: GPU has fallen off the bus."),
            ("2026-12-01T09:21:00Z", "gpu-a002", "Dec  1 09:20:59 gpu-a002 kernel: [871430.353120] docker0: port 1("
             "veth4) entered forwarding state")]
    text = "".join(f'{t} {{host="{h}", job="varlogs"}} {line}\n' for t, h, line in rows)
    assert sniff_envelope(text.encode()) == "logcli"
    (tmp_path / "kern.logcli.txt").write_text(text)
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "kern.logcli.txt")
        got = lab.sql("SELECT ts, host, failure_mode FROM events WHERE failure_mode IS NOT NULL ORDER BY line").rows()
    assert got[0] == (dt.datetime(2026, 12, 1, 8, 53, 2), "gpu-a006", "gpu_fell_off_bus")
