"""Measuring: interleaved rounds, the launcher, deadlines and hangs, conditions, the machine."""
