"""One error hierarchy. Each kind has its own exit code; only the top level catches them."""

from __future__ import annotations

import re

# Messages say "matrix.yaml"; the top level (cli.main) sets ``matrix`` on the error to the file in
# use, and ``render`` names that one.
_MATRIX_WORD = re.compile(r"(?<![\w./-])matrix\.yaml(?![\w.-])")


class PatchbenchError(Exception):
    """A fatal, expected error: printed as one line by the top level, never as a traceback."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, *, hint: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.detail = detail
        self.matrix: str | None = None  # the matrix file in use, as the user would write it

    def render(self) -> str:
        text = f"patchbench: {self.kind}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        if self.detail:
            text += "\n" + "\n".join("  | " + line for line in self.detail.rstrip().splitlines())
        from patchbench.redact import text as redact_text

        if self.matrix is not None:
            shown = self.matrix
            text = _MATRIX_WORD.sub(lambda _: shown, text)
        return redact_text(text)  # a credential in a URL is never printed


class ConfigError(PatchbenchError):
    exit_code = 10
    kind = "config error"


class SourceError(PatchbenchError):
    """Fetching or resolving upstream failed (unreachable, moved ref, missing commit)."""

    exit_code = 11
    kind = "source error"


class PatchError(PatchbenchError):
    exit_code = 12
    kind = "patch error"


class ToolchainError(PatchbenchError):
    """Missing or wrong toolchain, or two builds whose fingerprints differ."""

    exit_code = 13
    kind = "toolchain error"


class BuildError(PatchbenchError):
    exit_code = 14
    kind = "build error"


class BenchmarkError(PatchbenchError):
    """A benchmark command failed, hung or left something behind."""

    exit_code = 15
    kind = "benchmark error"


class RunsFailed(BenchmarkError):
    """Measured runs of one variant exited with an error (``variant``: whose)."""

    def __init__(self, message: str, *, variant: str, hint: str | None = None,
                 detail: str | None = None):
        super().__init__(message, hint=hint, detail=detail)
        self.variant = variant


class RequirementError(PatchbenchError):
    """The machine lacks something the comparison needs (root, Linux, macOS, a package)."""

    exit_code = 16
    kind = "requirement not met"


class CommandError(PatchbenchError):
    """An external command failed or timed out; raised by patchbench.util.cmd.run."""

    exit_code = 17
    kind = "command failed"


class ReportError(PatchbenchError):
    exit_code = 18
    kind = "report error"


class BisectInconclusive(PatchbenchError):
    """A bisect that saved its report but names no single commit: its ends do not differ, or
    the answer is a range (an undecided step, or skipped commits that did not build)."""

    exit_code = 19
    kind = "bisect inconclusive"


INTERRUPTED_EXIT_CODE = 130
BUG_EXIT_CODE = 3
