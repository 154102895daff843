"""patchbench: prove, with numbers anyone can reproduce, that a patch makes a container runtime
faster without making it wrong."""

__version__ = "0.3.0"
