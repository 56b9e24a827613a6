"""Account: every GPU-hour of a run charged to a category and an incident: ledger, attribution, goodput,
steady state, failure rates and checkpoint advice.

Built on `diagnose`; knows nothing of reports, widgets or the command line.
"""
