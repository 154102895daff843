"""Variants at other commits of a target: ``bisect`` (which commit changed a scenario's time or
brought its hangs) and ``history`` (a scenario across several commits, each against the first).
See docs/bisect.md."""
