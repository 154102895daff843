"""docs/matrix.md is generated from the config models (patchbench.config.matrix_doc): every key
has a description, every model reachable from the matrix has its section, and the committed file
is exactly the generated text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from patchbench import scenarios
from patchbench.cli.reference import main
from patchbench.config import matrix_doc
from tests.support import REPO_ROOT

DOC = REPO_ROOT / "docs" / "matrix.md"


def _properties() -> list[tuple[str, str, dict[str, Any]]]:
    root = matrix_doc.schema()
    defs = {**root["$defs"], "Matrix": root}
    return [(model, key, prop) for model, node in defs.items()
            for key, prop in node.get("properties", {}).items()]


def test_every_key_of_every_model_has_a_description() -> None:
    props = _properties()
    assert len(props) > 80  # every model's keys are there, not just the top level
    missing = [f"{m}.{k}" for m, k, p in props if not p.get("description", "").strip()]
    assert missing == []


def test_a_key_without_a_description_stops_the_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    real = matrix_doc.schema

    def without(**_: Any) -> dict[str, Any]:
        root = real()
        del root["$defs"]["Condition"]["properties"]["hogs"]["description"]
        return root

    monkeypatch.setattr(matrix_doc, "schema", without)
    with pytest.raises(matrix_doc.MissingDescription, match=r"Condition\.hogs"):
        matrix_doc.render()
    assert main(["--check", "--out", str(DOC)]) == 1


def squeezed(text: str) -> str:
    """The reference with each table's column padding (report.markdown's tables) taken out."""
    return re.sub(r" {2,}", " ", text)


def test_every_model_and_scenario_kind_has_a_section() -> None:
    text = squeezed(matrix_doc.render())
    for name in matrix_doc.models():
        assert f"\n## {name}\n" in text, name
    for kind in scenarios.KINDS.values():
        assert f"\n## {kind.config.__name__}\n" in text
        assert f"| `kind` | `{kind.name}` |" in text


def test_types_defaults_and_constraints_are_rendered() -> None:
    text = squeezed(matrix_doc.render())
    assert "| `alpha` | number (> 0, < 1) | `0.05` |" in text
    assert ("| `toolchain` | [GoToolchain](#gotoolchain) or [SwiftToolchain](#swifttoolchain) "
            "or [CToolchain](#ctoolchain) or [RustToolchain](#rusttoolchain) (by `kind`)") in text
    assert "| `conditions` | list of [Condition](#condition) (at least 1) | `[{name: default}]` |" in text
    assert "| `list` | list of string (at least 1) | required |" in text  # the alias, not list_cmd
    assert "Where: `comparisons.<name>.scenarios[].conditions[]`." in text


def test_the_committed_reference_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == matrix_doc.render(), (
        "docs/matrix.md is stale: run python3 -m patchbench.cli.reference")


def test_check_mode_tells_stale_from_fresh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "matrix.md"
    assert main(["--check", "--out", str(out)]) == 1  # missing
    assert "is stale" in capsys.readouterr().err
    assert main(["--out", str(out)]) == 0
    assert main(["--check", "--out", str(out)]) == 0
    out.write_text(out.read_text() + "edited by hand\n")
    assert main(["--check", "--out", str(out)]) == 1
