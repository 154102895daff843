"""Statistics and verdicts: the round-paired rule, the planted-effect check."""
