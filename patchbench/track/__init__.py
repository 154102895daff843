"""Continuous mode (``track``): a comparison's scenarios measured at each new commit of its
target's branch (or at the commits of a range), every commit interleaved round by round with one
pinned reference build, every point stored in a database; change points found on each metric's
series, each confirmed by an interleaved A/B of the commits either side and bisected to its
commit; a dashboard, a markdown summary and ``changes.json`` (docs/track.md).

One module per concern: ``schema`` and ``store`` (the database, SQLite or PostgreSQL, its
migrations in ``migrations/``), ``walk`` (which commits, and each measured against the
reference), ``detect`` (change points on a series), ``confirm`` (the A/B and the bisect behind
each candidate), ``outputs`` (changes.json, summary.md, index.html) and ``run`` (the command)."""
