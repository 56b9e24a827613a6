"""What-if: a run's ledger re-priced under another policy or provider, and changes judged before and after."""
