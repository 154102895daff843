"""Safety class 2 (docs/safety.md): secrets are never recorded. A password inside GOPROXY (or any
URL) and the values of variables whose names say token, password, secret or key are redacted in the
fingerprint, the manifests, results.json, logs and messages; a credential that changes leaves the
build cache key unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchbench import build, config, redact
from patchbench.build import toolchains
from patchbench.errors import SourceError
from patchbench.util.layout import Layout
from tests.support import TARGET, Project, compare, matrix_data, write_matrix

PASSWORD = "s3cret-pw-4711"
TOKEN = "tok-0815-xyz"


@pytest.mark.parametrize("raw, clean", [
    (f"https://alice:{PASSWORD}@proxy.example/go,direct", "https://<redacted>@proxy.example/go,direct"),
    (f"https://{TOKEN}@github.com/x/y.git", "https://<redacted>@github.com/x/y.git"),
    (f"off|https://u:{PASSWORD}@a.example|https://b.example", "off|https://<redacted>@a.example|https://b.example"),
    (f"https://h.example/x?access_token={TOKEN}&v=1", "https://h.example/x?access_token=<redacted>&v=1"),
    ("ssh://git@github.com/x/y.git", "ssh://git@github.com/x/y.git"),
    ("https://proxy.golang.org,direct", "https://proxy.golang.org,direct"),
])
def test_credentials_in_urls_are_redacted(raw: str, clean: str) -> None:
    assert redact.text(raw) == clean


def test_secret_named_variables_are_redacted() -> None:
    env = {"GITHUB_TOKEN": TOKEN, "NPM_PASSWORD": PASSWORD, "AWS_SECRET_ACCESS_KEY": "a",
           "API_KEY": "b", "MY_PASSWD": "c", "GOPROXY": f"https://u:{PASSWORD}@p.example",
           "GOFLAGS": "-trimpath", "TZ": "UTC"}
    out = redact.env(env)
    assert out["GOFLAGS"] == "-trimpath" and out["TZ"] == "UTC"
    assert out["GOPROXY"] == "https://<redacted>@p.example"
    for name in ("GITHUB_TOKEN", "NPM_PASSWORD", "AWS_SECRET_ACCESS_KEY", "API_KEY", "MY_PASSWD"):
        assert out[name] == "<redacted>"


def target(extra_env: dict[str, str] | None = None) -> config.Target:
    return config.Target.model_validate({
        "url": "https://example.com/x.git", "ref": "v1", "commit": "0" * 40,
        "toolchain": {"kind": "go", "version": "1.21"},
        "build": {"commands": [["go", "build"]], "artifacts": ["x"], "env": extra_env or {}},
    })


def plan_key(monkeypatch: pytest.MonkeyPatch, goproxy: str, token: str) -> str:
    monkeypatch.setenv("GOPROXY", goproxy)
    t = target({"API_TOKEN": token})
    env = toolchains.build_env(t, 0)
    recorded = toolchains.recorded_env(env, t)
    assert PASSWORD not in str(recorded) and TOKEN not in str(recorded)
    checkout: Any = type("C", (), {"commit": "0" * 40})()
    plan = build.BuildPlan(project=None, target_name="x", target=t,  # type: ignore[arg-type]
                           checkout=checkout, layout=Layout(Path("/nonexistent"), Path("/nonexistent")),
                           fingerprint={"kind": "go", "env": recorded})
    return plan.key([])


def test_a_changing_credential_keeps_the_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    a = plan_key(monkeypatch, f"https://alice:{PASSWORD}@proxy.example/go", TOKEN)
    b = plan_key(monkeypatch, "https://alice:another-password@proxy.example/go", "another-token")
    assert a == b
    # the environment is still part of the key: another proxy is another build
    assert plan_key(monkeypatch, f"https://alice:{PASSWORD}@other.example/go", TOKEN) != a


def test_error_messages_do_not_print_credentials() -> None:
    err = SourceError(f"cannot reach https://alice:{PASSWORD}@git.example/x",
                      detail=f"fatal: https://{TOKEN}@git.example/x not found")
    text = err.render()
    assert PASSWORD not in text and TOKEN not in text


@pytest.mark.integration
def test_a_whole_run_records_no_secret(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """A comparison run with a password in GOPROXY and a token in the recipe's environment:
    nothing under builds/ or reports/ contains either."""
    data = matrix_data(project.upstream, project.go_version)
    data["targets"][TARGET]["build"]["env"] = {"API_TOKEN": TOKEN}
    write_matrix(project.root, data)
    # nothing to download (no dependencies), so the proxy is never contacted
    monkeypatch.setenv("GOPROXY", f"https://alice:{PASSWORD}@127.0.0.1:9/go")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    _, run_dir = compare(project.load(), project.options(), "fx", runs=2, rounds=1, warmup=0)
    assert run_dir is not None
    found = []
    for base in (project.builds, project.reports):
        for path in base.rglob("*"):
            if path.is_file() and "/objects/" not in path.as_posix():
                blob = path.read_bytes()
                if PASSWORD.encode() in blob or TOKEN.encode() in blob:
                    found.append(str(path))
    assert found == []
    results = (run_dir / "results.json").read_text()
    assert "<redacted>" in results  # the GOPROXY and API_TOKEN entries are there, redacted


def test_git_config_pins_are_shown_and_secret_git_config_values_hidden() -> None:
    from patchbench import redact

    env = {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "core.abbrev", "GIT_CONFIG_VALUE_0": "12",
           "GIT_CONFIG_KEY_1": "http.extraHeader", "GIT_CONFIG_VALUE_1": "Authorization: Bearer x",
           "GIT_CONFIG_VALUE_7": "orphan value"}
    out = redact.env(env)
    assert out["GIT_CONFIG_KEY_0"] == "core.abbrev" and out["GIT_CONFIG_VALUE_0"] == "12"
    assert out["GIT_CONFIG_KEY_1"] == "http.extraHeader"
    assert out["GIT_CONFIG_VALUE_1"] == redact.REDACTED
    assert out["GIT_CONFIG_VALUE_7"] == redact.REDACTED  # no key beside it: hidden to be safe
    assert redact.tree({"env": env})["env"] == out
