"""Naming the VM of a cloud's event after the ingest, once the cloud's description of its instances is stored.

A cloud names its VMs by instance id (`i-0abc...`), the job's logs by host name. `collectors.aws_ec2` stores each
EC2 event hostless with the id in its text, and each described instance's host and end reason as facts
(`cloud_instance_id`, `cloud_state_reason`: `i-0abc... Server.SpotInstanceTermination`). After every ingest this
pass gives each such event the host of its instance, and makes the state change (`shutting-down`) of an instance
the cloud terminated for its own reasons (a spot reclaim: its end reason, or its interruption notice minutes
before) the preemption it was, the notice then only its herald; an ordinary tear-down (the user's or the job
manager's `Client.UserInitiatedShutdown`) stays information. Running it again changes nothing.

Where the cloud's notice is on record and the reclaim itself is not (EventBridge forwarding the warnings alone, a
watcher printing IMDS's `spot/instance-action` answer on the node), the reclaim is still due when the notice says:
EC2 takes the VM two minutes after its warning, and IMDS's answer names the time. That reclaim is made here
(`spot_reclaim_due`, a preemption on the notice's host at the time announced, citing the notice's line), and the
notice becomes its herald: the job ran on until the VM went, so the notice's own time would put the root minutes
early, or lose it to the peers' errors after the VM is gone. (It is made here and not by the collectors: a row of a
later time than its line would date the unstamped lines after it in its file.)
"""

from __future__ import annotations

import duckdb

from clusterlab.collectors.aws_ec2 import INSTANCE_ID, NOTICE_LEAD_S
from clusterlab.collectors.cloud_spot import ACTION

# The end reasons that are the cloud taking the VM back (EC2's StateReason codes)
RECLAIMED = ("Server.SpotInstanceTermination",)
# How long before an instance's shutdown the cloud's interruption notice comes (EC2: two minutes), with slack
NOTICE_S = 600


def resolve(con: duckdb.DuckDBPyConnection) -> int:
    """Host and reclaim of the stored cloud events; returns how many events changed."""
    if not con.execute("SELECT count(*) FROM events WHERE source = 'aws_ec2'").fetchall()[0][0]:
        return _due(con)
    named = con.execute(f"""
        UPDATE events SET host = m.host
        FROM (SELECT value AS iid, min(host) AS host FROM facts
              WHERE key = 'cloud_instance_id' AND host IS NOT NULL GROUP BY value) m
        WHERE events.source = 'aws_ec2' AND events.host IS NULL
          AND regexp_extract(events.text, '{INSTANCE_ID}', 1) = m.iid""").fetchall()[0][0]
    reasons = ", ".join(f"'{r}'" for r in RECLAIMED)
    # NOTE: the cloud's reason for the end, or its own two-minute notice for that instance shortly before
    reclaimed = con.execute(f"""
        UPDATE events SET kind = 'spot_reclaim', failure_mode = 'preemption', severity = 'critical'
        WHERE source = 'aws_ec2' AND kind = 'instance_state' AND text LIKE '% shutting-down'
          AND (regexp_extract(text, '{INSTANCE_ID}', 1) IN (
                   SELECT split_part(value, ' ', 1) FROM facts
                   WHERE key = 'cloud_state_reason' AND split_part(value, ' ', 2) IN ({reasons}))
               OR EXISTS (SELECT 1 FROM events w
                          WHERE w.source = 'aws_ec2' AND w.kind = 'spot_interruption_warning'
                            AND regexp_extract(w.text, '{INSTANCE_ID}', 1)
                                = regexp_extract(events.text, '{INSTANCE_ID}', 1)
                            AND w.ts <= events.ts AND w.ts >= events.ts - to_seconds({NOTICE_S})))"""
                            ).fetchall()[0][0]
    due = _due(con)
    # the notice heralds the reclaim: where the reclaim itself is on record it is the root (the job ran on until the
    # VM went), the notice stays as information, and so does the reclaim it made due
    heralds = con.execute(f"""
        UPDATE events SET failure_mode = NULL, severity = 'info'
        WHERE source = 'aws_ec2' AND kind = 'spot_interruption_warning' AND failure_mode IS NOT NULL
          AND regexp_extract(text, '{INSTANCE_ID}', 1) IN (
              SELECT regexp_extract(r.text, '{INSTANCE_ID}', 1) FROM events r
              WHERE r.source = 'aws_ec2' AND r.kind IN ('spot_reclaim', 'spot_reclaim_due'))""").fetchall()[0][0]
    # ... and a reclaim made due gives way to the one on record
    given_way = con.execute(f"""
        UPDATE events SET failure_mode = NULL, severity = 'info'
        WHERE source = 'aws_ec2' AND kind = 'spot_reclaim_due' AND failure_mode IS NOT NULL
          AND regexp_extract(text, '{INSTANCE_ID}', 1) IN (
              SELECT regexp_extract(r.text, '{INSTANCE_ID}', 1) FROM events r
              WHERE r.source = 'aws_ec2' AND r.kind = 'spot_reclaim')""").fetchall()[0][0]
    return int(named or 0) + int(reclaimed or 0) + int(due or 0) + int(heralds or 0) + int(given_way or 0)


def _due(con: duckdb.DuckDBPyConnection) -> int:
    """The reclaims the stored notices announce where none is on record (see the module's doc); how many rows."""
    if not con.execute(f"""SELECT count(*) FROM events WHERE (source = 'aws_ec2' AND kind = 'spot_interruption_warning')
                            OR (source = 'cloud_spot' AND regexp_matches(text, '{ACTION}'))""").fetchall()[0][0]:
        return 0
    made = con.execute(f"""
        INSERT INTO events
        SELECT * REPLACE (
            CASE WHEN source = 'aws_ec2' THEN ts + to_seconds({NOTICE_LEAD_S})
                 ELSE try_strptime(regexp_extract(text, '{ACTION}', 1), '%Y-%m-%dT%H:%M:%S') END AS ts,
            'spot_reclaim_due' AS kind, 'preemption' AS failure_mode, 'critical' AS severity,
            NULL::TIMESTAMP AS ts_lo, NULL::TIMESTAMP AS ts_hi, NULL::VARCHAR AS dated)
        FROM events e
        WHERE ((source = 'aws_ec2' AND kind = 'spot_interruption_warning' AND ts IS NOT NULL
                AND regexp_extract(text, '{INSTANCE_ID}', 1) NOT IN (
                    SELECT regexp_extract(r.text, '{INSTANCE_ID}', 1) FROM events r
                    WHERE r.source = 'aws_ec2' AND r.kind = 'spot_reclaim'))
               OR (source = 'cloud_spot' AND kind <> 'spot_reclaim_due' AND regexp_matches(text, '{ACTION}')))
          AND NOT EXISTS (SELECT 1 FROM events d WHERE d.kind = 'spot_reclaim_due' AND d.source = e.source
                          AND d.file_id = e.file_id AND d.line = e.line)""").fetchall()[0][0]
    # a notice on the node heralds the reclaim it announced
    heralds = con.execute(f"""
        UPDATE events SET failure_mode = NULL, severity = 'info'
        WHERE source = 'cloud_spot' AND kind <> 'spot_reclaim_due' AND failure_mode IS NOT NULL
          AND regexp_matches(text, '{ACTION}')""").fetchall()[0][0]
    return int(made or 0) + int(heralds or 0)
