"""Naming the VM of a cloud's event after the ingest, once the cloud's description of its instances is stored.

A cloud names its VMs by instance id (`i-0abc...`), the job's logs by host name. `collectors.aws_ec2` stores each
EC2 event hostless with the id in its text, and each described instance's host and end reason as facts
(`cloud_instance_id`, `cloud_state_reason`: `i-0abc... Server.SpotInstanceTermination`). After every ingest this
pass gives each such event the host of its instance, and makes the state change (`shutting-down`) of an instance
the cloud terminated for its own reasons (a spot reclaim: its end reason, or its interruption notice minutes
before) the preemption it was, the notice then only its herald; an ordinary tear-down (the user's or the job
manager's `Client.UserInitiatedShutdown`) stays information. Running it again changes nothing.
"""

from __future__ import annotations

import duckdb

from clusterlab.collectors.aws_ec2 import INSTANCE_ID

# The end reasons that are the cloud taking the VM back (EC2's StateReason codes)
RECLAIMED = ("Server.SpotInstanceTermination",)
# How long before an instance's shutdown the cloud's interruption notice comes (EC2: two minutes), with slack
NOTICE_S = 600


def resolve(con: duckdb.DuckDBPyConnection) -> int:
    """Host and reclaim of the stored cloud events; returns how many events changed."""
    if not con.execute("SELECT count(*) FROM events WHERE source = 'aws_ec2'").fetchall()[0][0]:
        return 0
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
    # the notice heralds the reclaim: where the reclaim itself is on record it is the root (the job ran on until the
    # VM went), the notice stays as information
    heralds = con.execute(f"""
        UPDATE events SET failure_mode = NULL, severity = 'info'
        WHERE source = 'aws_ec2' AND kind = 'spot_interruption_warning' AND failure_mode IS NOT NULL
          AND regexp_extract(text, '{INSTANCE_ID}', 1) IN (
              SELECT regexp_extract(r.text, '{INSTANCE_ID}', 1) FROM events r
              WHERE r.source = 'aws_ec2' AND r.kind = 'spot_reclaim')""").fetchall()[0][0]
    return int(named or 0) + int(reclaimed or 0) + int(heralds or 0)
