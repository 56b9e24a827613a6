"""Triage: people's judgement stored beside the evidence: annotations on incidents, tickets with providers."""
