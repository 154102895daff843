"""The one rule for the names matrix.yaml gives (targets, comparisons, series, candidates,
scenarios), without pydantic: what reads a kept file in a command that imports no model uses it
too (util/validated.py). A name becomes a folder, a file name and part of others (a build
folder, a container id), so its length is bounded here, where it is validated, not by the file
system's ENAMETOOLONG half-way through a build."""

NAME_MAX = 64  # characters
NAME_RE = rf"^[a-z0-9][a-z0-9._-]{{0,{NAME_MAX - 1}}}$"
NAME_RULE = (f"lower case letters, digits, '.', '_', '-', starting with a letter or digit, at "
             f"most {NAME_MAX} characters")
