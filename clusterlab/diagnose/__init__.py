"""Diagnose: from stored evidence to incidents: the timeline, root cause, counter-evidence, telemetry, checkpoints.

Reads the store; never parses a file and never prices time (that is `account`).
"""
