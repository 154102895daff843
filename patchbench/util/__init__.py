"""Plumbing shared by every stage: the command wrapper, files, locks, layout, progress."""
