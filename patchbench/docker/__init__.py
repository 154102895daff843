"""The Docker engine patchbench talks to, and the build images it makes without a registry."""
