"""Format variants from the wild: every labelled sample in `tests/format_variants/*.toml` is classified as
labelled, and the accuracy of each class is printed at the end of the test run.

Each TOML file is one class (its stem). A case is one excerpt written in a format looked up in a public
source (`source` is that page, kept as a fact), with values of our own:

    [[case]]
    id = "watchdog-2-4"              # unique in the file; becomes the run's name
    source = "https://..."           # where this format was seen
    path = "nodes/gpu-017/dmesg"     # where the excerpt lies in the bundle (default train.log)
    boot_time = "2026-11-24T..."     # optional: a boot_time file next to it (raw dmesg)
    expect = "nccl_timeout"          # a failure mode the case must yield, or "none" for benign text
    expect_host = "gpu-017"          # optional: an event of that mode names this host
    expect_step = 1234               # optional: an event of that mode names this step
    expect_not = ["cuda_error"]      # optional: modes that must not appear
    text = '''...'''

All cases are ingested in one pass (each under `runs/<class>-<id>/`), as a user's bundle would be.
"""

from __future__ import annotations

import json
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from clusterlab import Lab
from clusterlab.diagnose.root_cause import SACCT_VERDICTS
from clusterlab.taxonomy import MODES
from conftest import VARIANT_RESULTS as RESULTS

HERE = Path(__file__).resolve().parent / "format_variants"
# sacct / jobcomp states a case can be labelled with, beyond SACCT_VERDICTS
_STATES = {**SACCT_VERDICTS, "OUT_OF_MEMORY": "host_oom"}


def _cases() -> list[tuple[str, dict]]:
    out = []
    for f in sorted(HERE.glob("*.toml")):
        for case in tomllib.loads(f.read_text())["case"]:
            out.append((f.stem, case))
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("variants")
    for klass, case in CASES:
        target = root / "runs" / f"{klass}-{case['id']}" / case.get("path", "train.log")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(case["text"])
        if "boot_time" in case:
            (target.parent / "boot_time").write_text(case["boot_time"] + "\n")
    with Lab(":memory:") as lab:
        summary = lab.ingest(root)
        events = lab.sql("SELECT run, host, failure_mode, detail, text FROM events WHERE failure_mode IS NOT NULL")
        jobs = lab.sql("SELECT run, split_part(state, ' ', 1) AS state FROM jobs")
    found: dict[str, dict] = defaultdict(lambda: {"modes": set(), "hosts": defaultdict(set), "steps": defaultdict(set)})
    for r in events.iter_rows(named=True):
        v = found[r["run"]]
        v["modes"].add(r["failure_mode"])
        v["hosts"][r["failure_mode"]].add(r["host"])
        step = json.loads(r["detail"] or "{}").get("step")
        if step is not None:
            v["steps"][r["failure_mode"]].add(int(step))
    for r in jobs.iter_rows(named=True):
        if r["state"] in _STATES:
            found[r["run"]]["modes"].add(_STATES[r["state"]])
    request.config.stash[RESULTS] = {}
    found["__errors__"] = {"errors": summary.errors}
    return found


def test_the_samples_are_labelled_with_known_modes_and_unique_ids() -> None:
    assert len(CASES) >= 1
    seen = set()
    for klass, case in CASES:
        key = (klass, case["id"])
        assert key not in seen, f"duplicate case {key}"
        seen.add(key)
        assert case["expect"] == "none" or case["expect"] in MODES, key
        assert case.get("source", "").startswith("http"), f"{key} has no provenance"
        for m in case.get("expect_not", []):
            assert m in MODES, key


@pytest.mark.parametrize(("klass", "case"), CASES, ids=[f"{k}-{c['id']}" for k, c in CASES])
def test_each_sample_is_classified_as_labelled(klass: str, case: dict, verdicts: dict, request) -> None:
    v = verdicts.get(f"{klass}-{case['id']}", {"modes": set(), "hosts": {}, "steps": {}})
    modes = v["modes"] - {"unknown"} if case["expect"] == "none" else v["modes"]
    want = case["expect"]
    ok = not modes if want == "none" else want in modes
    if ok and "expect_host" in case:
        ok = case["expect_host"] in v["hosts"].get(want, set())
    if ok and "expect_step" in case:
        ok = case["expect_step"] in v["steps"].get(want, set())
    if ok and case.get("expect_not"):
        ok = not (set(case["expect_not"]) & v["modes"])
    request.config.stash[RESULTS].setdefault(klass, []).append(ok)
    assert ok, (f"{klass}/{case['id']}: expected {want}"
                f"{' on ' + case['expect_host'] if 'expect_host' in case else ''}"
                f"{' at step ' + str(case['expect_step']) if 'expect_step' in case else ''}, "
                f"got modes {sorted(v['modes'])}, hosts {dict(v['hosts'])}, steps {dict(v['steps'])}; "
                f"ingest errors: {verdicts['__errors__']['errors'][:3]}")
