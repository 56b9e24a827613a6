"""Weekly provider scorecards and exported incident reports: data first, then HTML and Markdown."""

from clusterlab.reports.incident_report import IncidentReport, incident_report
from clusterlab.reports.scorecard import Scorecard, latest_week, scorecard, week_bounds

__all__ = ["IncidentReport", "Scorecard", "incident_report", "latest_week", "scorecard", "week_bounds"]
