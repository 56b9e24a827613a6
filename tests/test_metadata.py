"""Bundle metadata (inventory.toml, run.toml, boot_time): a bad value is one line naming file and key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterlab import Lab
from conftest import SAMPLES

PROVIDER = {"usd_per_gpu_hour": "2.0", "support": '"tickets"'}
CLUSTER = {"provider": '"p"', "gpu": '"H100"', "gpus_per_node": "8", "interconnect": '"IB"', "nodes": '"n[1-2]"',
           "contracted_nodes": "2", "contract_start": "2026-11-01", "timezone": '"America/Chicago"',
           "delivered": '{ "n2" = 2026-11-03 }'}
RUN = {"cluster": '"c"', "gpus": "16", "tokens_per_step": "1024", "flops_per_token": "1.7e10", "params": "8030261248",
       "layers": "32", "hidden": "4096", "seq_len": "4096", "checkpoint_dir": '"/ckpt"', "launcher": '"slurm"',
       "launch_command": '"sbatch job.sbatch"'}
# Values of the wrong type or out of range for every key of their kind (TOML literals).
BAD = {
    "int": ['"eight"', "inf", "nan", "-1", "1e400", "1" + "0" * 30, "[1, 2]", "true", "1.5", "{ a = 1 }",
            "1979-05-27", "-inf"],
    "number": ['"cheap"', "nan", "inf", "-inf", "-1.0", "[1]", "true", "1e400", "{ a = 1 }"],
    "text": ["8", "[1, 2]", "true", "1.5", "{ a = 1 }", "1979-05-27", "nan", '"a\\u0000b"'],
    "date": ['"soon"', "8", "1.5", "true", "07:32:00", "[2026-11-01]"],
    "zone": ['"Mars/Olympus"', '""', '"../../etc/passwd"', "8", '"UTC+25"', '"America/"'],
    "hosts": ['"n[1-999999999999]"', '"n[2-1]"', '"n[1-2"', "8", "[1, 2]"],
    "delivered": ['"2026-11-27"', '{ "n9" = 2026-11-27 }', '{ "n1" = "soon" }', "8"],
}
KIND = {"usd_per_gpu_hour": "number", "flops_per_token": "number", "contract_start": "date", "timezone": "zone",
        "nodes": "hosts", "delivered": "delivered", "support": "text", "provider": "text", "gpu": "text",
        "interconnect": "text", "cluster": "text", "checkpoint_dir": "text", "launcher": "text",
        "launch_command": "text"}


def _table(name: str, fields: dict[str, str]) -> str:
    return (f"[{name}]\n" if name else "") + "".join(f"{k} = {v}\n" for k, v in fields.items())


def make_bundle(root: Path, provider: dict | None = None, cluster: dict | None = None, run: dict | None = None,
                boot_time: str | None = None) -> Path:
    """A bundle: inventory (provider p, cluster c), run r's run.toml, and a host's dmesg -T log (local time)."""
    if root.exists():
        shutil.rmtree(root)
    (root / "runs" / "r").mkdir(parents=True)
    (root / "nodes" / "n1").mkdir(parents=True)
    (root / "inventory.toml").write_text(_table("providers.p", provider or PROVIDER) + "\n"
                                         + _table("clusters.c", cluster or CLUSTER))
    (root / "runs" / "r" / "run.toml").write_text(_table("", run or RUN))
    shutil.copy(SAMPLES / "kernel" / "dmesg_T.log", root / "nodes" / "n1" / "dmesg")
    if boot_time is not None:
        (root / "nodes" / "n1" / "boot_time").write_text(boot_time)
    return root


def ingest(root: Path) -> tuple[list[str], int, Lab]:
    """Ingest a bundle into memory: the problems, the kernel events kept, the lab."""
    lab = Lab(":memory:")
    summary = lab.ingest(root)
    json.dumps(summary.to_dict())
    return summary.problems, summary.rows["events"], lab


def test_a_good_bundle_loads_every_key(tmp_path: Path) -> None:
    problems, events, lab = ingest(make_bundle(tmp_path / "b"))
    assert problems == [] and events > 0
    c = lab.sql("SELECT * FROM clusters").to_dicts()[0]
    assert (c["gpus_per_node"], c["contracted_nodes"], c["timezone"]) == (8, 2, "America/Chicago")
    r = lab.sql("SELECT gpus, params, flops_per_token FROM runs").to_dicts()[0]
    assert r == {"gpus": 16, "params": 8030261248, "flops_per_token": 1.7e10}
    assert lab.sql("SELECT host, delivered FROM nodes WHERE delivered IS NOT NULL")["host"].to_list() == ["n2"]


def test_a_word_for_gpus_per_node_names_file_table_and_key(tmp_path: Path) -> None:
    problems, events, _ = ingest(make_bundle(tmp_path / "b", cluster={**CLUSTER, "gpus_per_node": '"eight"'}))
    assert len(problems) == 1 and events > 0
    assert problems[0].endswith("inventory.toml: clusters.c.gpus_per_node: expected a positive integer, got 'eight'")


@pytest.mark.parametrize(("key", "literal", "why"), [
    ("gpus", "inf", "expected a positive integer, got inf"),
    ("params", "1e400", "expected a positive integer, got inf"),
    ("gpus", "-4", "expected a positive integer, got -4"),
    ("tokens_per_step", "1" + "0" * 30, "expected a positive integer of at most"),
    ("flops_per_token", "nan", "expected a finite positive number, got nan"),
    ("cluster", "[1, 2]", "expected a name of printable characters, got [1, 2]"),
    ("checkpoint_dir", "[1, 2]", "expected a string, got [1, 2]"),
])
def test_a_bad_run_toml_value_is_one_line_and_the_rest_is_ingested(tmp_path: Path, key: str, literal: str,
                                                                    why: str) -> None:
    problems, events, lab = ingest(make_bundle(tmp_path / "b", run={**RUN, key: literal}))
    assert len(problems) == 1 and events > 0, problems
    assert "run.toml: " + key + ": " + why in problems[0]
    assert lab.sql("SELECT count(*) AS n FROM clusters")["n"][0] == 1  # the inventory still went in


@pytest.mark.parametrize(("table", "key", "literal", "why"), [
    ("cluster", "contracted_nodes", "[1, 2]", "clusters.c.contracted_nodes: expected a non-negative integer"),
    ("cluster", "contracted_nodes", "-3", "clusters.c.contracted_nodes: expected a non-negative integer, got -3"),
    ("cluster", "gpus_per_node", "inf", "clusters.c.gpus_per_node: expected a positive integer, got inf"),
    ("provider", "usd_per_gpu_hour", "nan", "providers.p.usd_per_gpu_hour: expected a finite non-negative number"),
    ("cluster", "timezone", '"Mars/Olympus"', "clusters.c.timezone: unknown time zone, got 'Mars/Olympus'"),
    ("cluster", "contract_start", "07:32:00", "clusters.c.contract_start: expected a date"),
])
def test_a_bad_inventory_value_names_table_and_key(tmp_path: Path, table: str, key: str, literal: str,
                                                   why: str) -> None:
    fields = {"provider": {**PROVIDER}, "cluster": {**CLUSTER}}
    fields[table][key] = literal
    problems, events, lab = ingest(make_bundle(tmp_path / "b", provider=fields["provider"],
                                               cluster=fields["cluster"]))
    assert len(problems) == 1 and events > 0, problems
    assert "inventory.toml: " + why in problems[0]
    assert lab.sql("SELECT count(*) AS n FROM runs")["n"][0] == 1  # run.toml still went in


@pytest.mark.parametrize(("name", "table", "key"), [
    ("inventory", "cluster", "vm_size"), ("inventory", "cluster", "gpus_per_nod"), ("inventory", "provider", "region"),
    ("run", None, "model_name")])
def test_an_unknown_key_is_told_and_ignored_the_rest_of_its_file_stored(tmp_path: Path, name: str, table: str | None,
                                                                        key: str) -> None:
    # a provider's VM size or the team's own note beside the known keys: refusing the file for it lost every host's
    # cluster and provider (MFU, cost) or the run's facts
    fields = {"provider": {**PROVIDER}, "cluster": {**CLUSTER}, None: {**RUN}}
    fields[table][key] = '"Standard_ND96isr_H100_v5"'
    lab = Lab(":memory:")
    summary = lab.ingest(make_bundle(tmp_path / "b", provider=fields["provider"], cluster=fields["cluster"],
                                     run=fields[None]))
    assert not summary.problems and len(summary.warnings) == 1, (summary.problems, summary.warnings)
    assert f"{name}.toml: " in summary.warnings[0] and f"{key}: unknown key, ignored" in summary.warnings[0]
    assert lab.sql("SELECT count(*) AS n FROM clusters WHERE provider IS NOT NULL")["n"][0] == 1
    assert lab.sql("SELECT count(*) AS n FROM nodes")["n"][0] > 0
    assert lab.sql("SELECT gpus FROM runs")["gpus"][0] is not None


def test_a_key_or_name_holding_control_characters_stays_one_line(tmp_path: Path) -> None:
    problems, events, _ = ingest(make_bundle(tmp_path / "b", run={**RUN, '"a\\nb"': "1", "cluster": '"c\\u001b[2J"'}))
    assert len(problems) == 1 and events > 0 and "\n" not in problems[0] and "\x1b" not in problems[0]
    assert "run.toml: cluster: expected a name of printable characters, got 'c\\x1b[2J'" in problems[0]
    assert "a\\nb: unknown key" in problems[0]


def test_an_impossible_date_is_a_toml_error_naming_its_line(tmp_path: Path) -> None:
    problems, events, _ = ingest(make_bundle(tmp_path / "b", cluster={**CLUSTER, "contract_start": "2026-13-45"}))
    assert len(problems) == 1 and events > 0
    assert "inventory.toml: not valid TOML" in problems[0] and "line 12" in problems[0]


def test_a_hostlist_of_a_trillion_nodes_is_refused_at_once(tmp_path: Path) -> None:
    problems, _, _ = ingest(make_bundle(tmp_path / "b", cluster={**CLUSTER, "nodes": '"n[1-999999999999]"'}))
    assert len(problems) == 1 and "clusters.c.nodes: names 999999999999 hosts, more than" in problems[0]


@pytest.mark.parametrize("text", ["inf", "nan", "1e20", "-1e20", "btime 99999999999999", "99999-01-01T00:00:00",
                                  "10000-01-01", "0x10", ""])
def test_a_boot_time_out_of_range_is_one_line_naming_the_file(tmp_path: Path, text: str) -> None:
    problems, events, _ = ingest(make_bundle(tmp_path / "b", boot_time=text))
    assert events > 0  # the dmesg -T lines carry their own time
    assert len(problems) == 1 and "n1/boot_time: " in problems[0] and "epoch seconds or an ISO 8601" in problems[0]


def test_a_good_boot_time_is_read_as_utc(tmp_path: Path) -> None:
    from clusterlab.ingest.bundle import read_boot_time

    (tmp_path / "boot_time").write_text("btime 1764043200\n")
    assert read_boot_time(tmp_path / "boot_time").isoformat() == "2025-11-25T04:00:00"


def _literal(data: st.DataObject, key: str) -> str:
    kind = KIND.get(key, "int")
    return data.draw(st.sampled_from(BAD[kind]), label=key)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(["provider", "cluster", "run"]))
def test_fuzzed_metadata_never_escapes_ingest_and_names_file_and_key(tmp_path: Path, data: st.DataObject,
                                                                     which: str) -> None:
    base = {"provider": PROVIDER, "cluster": CLUSTER, "run": RUN}[which]
    keys = data.draw(st.lists(st.sampled_from(sorted(base)), min_size=1, max_size=3, unique=True), label="keys")
    bad = {k: _literal(data, k) for k in keys}
    fields = {w: dict(v) for w, v in (("provider", PROVIDER), ("cluster", CLUSTER), ("run", RUN))}
    fields[which].update(bad)
    problems, events, lab = ingest(make_bundle(tmp_path / "b", **fields))
    lab.close()
    assert events > 0, problems  # the log went in whatever the metadata said
    assert len(problems) == 1, problems
    name, prefix = ("run.toml", "") if which == "run" else ("inventory.toml", {"provider": "providers.p.",
                                                                               "cluster": "clusters.c."}[which])
    assert f"{name}: " in problems[0] and "Traceback" not in problems[0] and "\n" not in problems[0]
    assert "not valid TOML" in problems[0] or any(f"{prefix}{k}" in problems[0] for k in keys), problems[0]
