"""JSON documents are read whole and streamed, whatever their line length: a `query_range` answer saved by curl is
one line of megabytes, and its telemetry must not be skipped as an over-long line.

(The 200 MB case, with its peak RSS, is benchmarks/json_document.py.)"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.ingest.reader import MAX_LINE_BYTES

T0 = 1796083200  # 2026-12-01T00:00:00Z
P = 1800  # points a series: 7.5 hours
ROWS = ["ts", "host", "gpu", "metric", "value"]


def response(hosts: int, points: int, kind: str = "matrix") -> dict:
    """A dcgm-exporter query_range answer: one series per host, GPU and metric, a point every 15 s."""
    result = []
    for h in range(hosts):
        for gpu in range(8):
            for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"):
                metric = {"__name__": name, "Hostname": f"tern-{h:03d}", "gpu": str(gpu),
                          "instance": f"10.7.{h}.{gpu}:9400", "job": "dcgm"}
                values = [[T0 + 15 * i, str(40 + (i + gpu + h) % 37)] for i in range(points)]
                result.append({"metric": metric, "values": values})
    return {"status": "success", "data": {"resultType": kind, "result": result}}


def _ingest(path: Path) -> tuple[pl.DataFrame, list[str]]:
    with Lab(":memory:") as lab:
        summary = lab.ingest(path)
        rows = lab.sql(f"SELECT line, {', '.join(ROWS)} FROM telemetry ORDER BY ALL")
    return rows, summary.problems


@pytest.fixture(scope="module")
def big() -> dict:
    doc = response(hosts=6, points=P)  # 96 series of 1,800 points: ~3 MB on one line
    assert len(json.dumps(doc, separators=(",", ":"))) > 2 * MAX_LINE_BYTES
    return doc


def test_a_one_line_answer_over_the_old_line_limit_is_read_whole(tmp_path: Path, big: dict) -> None:
    path = tmp_path / "query_range.json"
    path.write_text(json.dumps(big, separators=(",", ":")))  # as curl saves it: one line, no newline at the end
    rows, problems = _ingest(path)
    assert not any("longer than" in p for p in problems), problems
    assert rows.height == 96 * P and set(rows["line"]) == {1}
    assert rows["host"].n_unique() == 6 and set(rows["metric"]) == {"gpu_temp_c", "power_w"}
    first = rows.filter(pl.col("host") == "tern-002", pl.col("gpu") == 3, pl.col("metric") == "gpu_temp_c")
    assert first["value"].to_list()[:3] == [45.0, 46.0, 47.0]
    assert first["ts"][0].isoformat() == "2026-12-01T00:00:00"


def test_pretty_printed_gzipped_and_one_a_line_give_the_same_rows(tmp_path: Path, big: dict) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps(big, separators=(",", ":")) + "\n")
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(big, indent=2))
    zipped = tmp_path / "one.json.gz"
    zipped.write_bytes(gzip.compress(one.read_bytes()))
    # the same series as responses of one host each, one a line (read line by line, as before)
    lines = tmp_path / "lines.json"
    per_host = [dict(big, data=dict(big["data"], result=big["data"]["result"][h * 16:(h + 1) * 16])) for h in range(6)]
    lines.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in per_host))
    want = _ingest(lines)[0].drop("line").sort(ROWS)
    assert want.height == 96 * P
    for path in (one, pretty, zipped):
        got, problems = _ingest(path)
        assert not problems, (path.name, problems)
        assert got.drop("line").sort(ROWS).equals(want), path.name


def test_a_cut_answer_keeps_what_precedes_the_cut_and_names_file_and_line(tmp_path: Path, big: dict) -> None:
    text = json.dumps(big, separators=(",", ":"))
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    rows, problems = _ingest(path)
    assert 40 * P < rows.height < 96 * P  # the whole series before the cut, and the points read of the cut one
    assert any("cut.json:1:" in p and "cut short" in p for p in problems), problems


def test_an_answer_that_is_no_matrix_is_counted_and_the_matrix_beside_it_read(tmp_path: Path, big: dict) -> None:
    vector = response(hosts=12, points=1)
    for s in vector["data"]["result"]:  # an instant query: one "value" a series, no "values"
        s["value"] = s.pop("values")[0]
    vector["data"]["resultType"] = "vector"
    path = tmp_path / "answers.json"
    path.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in (big, vector)))
    rows, problems = _ingest(path)
    assert rows.height == 96 * P
    assert problems == ["answers.json:2: not a Prometheus matrix response (vector)"]


def test_sacct_json_on_one_line_over_the_old_limit_gives_the_jobs_pretty_printed_output_gives(tmp_path: Path) -> None:
    sample = json.loads((Path(__file__).parent.parent / "data_samples" / "sacct" / "json_23_11.txt").read_text())
    jobs = []
    for k in range(400):  # the sample's jobs again and again under new ids: ~1 MB of JSON
        for job in sample["jobs"]:
            jobs.append(json.loads(json.dumps(job).replace(f'"job_id": {job["job_id"]}', f'"job_id": {90000 + k}')))
    doc = dict(sample, jobs=jobs)
    one, pretty = tmp_path / "one" / "sacct.json", tmp_path / "pretty" / "sacct.json"
    for path, text in ((one, json.dumps(doc, separators=(",", ":"))), (pretty, json.dumps(doc, indent=2))):
        path.parent.mkdir()
        path.write_text(text)
    assert one.stat().st_size > MAX_LINE_BYTES
    got = {}
    for path in (one, pretty):
        with Lab(":memory:") as lab:
            summary = lab.ingest(path)
            got[path] = lab.sql("SELECT * EXCLUDE (file_id, line) FROM jobs ORDER BY ALL")
        assert not summary.problems, summary.problems
    assert got[one].height >= 400 and got[one].equals(got[pretty])


def test_odd_points_and_labels_in_a_streamed_answer_are_counted_never_a_crash() -> None:
    from clusterlab.collectors import prometheus_range
    from clusterlab.collectors._base import Context

    temp = '{"__name__":"DCGM_FI_DEV_GPU_TEMP","Hostname":"tern-001","gpu":"0"}'
    text = ('{"status":"success","data":{"resultType":"matrix","result":['
            '{"metric":5,"values":"x"},'  # no labels, no points
            '{"metric":{"__name__":1},"values":[[1,2,3],["a"],5,[]]},'  # a name that is no string, odd points
            f'{{"values":[[1796083200,"NaN"],[1e300,"1"],[1796083215,"+Inf"],[1796083230,"61"],[1796083245]],'
            f'"metric":{temp}}}]}}}}')  # labels after the points; a time no datetime holds; a point with no value
    out = list(prometheus_range.parse_document(iter([(1, text.encode())]), Context(path="odd.json")))
    rows = [r for p in out if "telemetry" in p.tables for r in p.tables["telemetry"].select("host", "value").rows()]
    assert rows == [("tern-001", 61.0)]
    assert sum(p.unparsed for p in out) == 2  # the two series without a name
