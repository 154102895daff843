"""Secrets are never recorded. Everything patchbench writes down (the fingerprint's environment,
manifests, results.json, logs, error messages) passes through here first: userinfo in URLs,
query parameters and variables whose names say token, password, secret, key, credential or auth
become ``<redacted>``. The credential is dropped entirely, so the build cache key, computed from
the redacted fingerprint, does not change when only a credential does. docs/safety.md, class 2."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"
SECRET_NAME = re.compile(r"(?i)(token|passw|pwd|secret|key|credential|auth|cookie|session)")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/@\s?#]+)@")
_QUERY = re.compile(r"(?i)([?&;][^=&#\s]*(?:token|passw|pwd|secret|key|auth|sig)[^=&#\s]*=)"
                    r"([^&#\s]+)")


_GIT_CONFIG_KEY = re.compile(r"^GIT_CONFIG_KEY_(\d+)$")
_GIT_CONFIG_VALUE = re.compile(r"^GIT_CONFIG_VALUE_(\d+)$")
_SECRET_GIT_KEY = re.compile(r"(?i)(token|passw|secret|key|credential|auth|cookie|header|"
                             r"password|askpass)")


def secret_name(name: str) -> bool:
    """Whether a variable or field called ``name`` holds a secret by its name. git's
    ``GIT_CONFIG_KEY_<n>`` holds a config key's name (such as ``core.abbrev``), not a secret."""
    return not _GIT_CONFIG_KEY.match(name) and bool(SECRET_NAME.search(name))


def _hidden(name: str, variables: Mapping[str, str]) -> bool:
    """``name`` is hidden by its name, or as ``GIT_CONFIG_VALUE_<n>`` whose key names a secret
    (``http.extraHeader``, ``credential.helper``, ...)."""
    m = _GIT_CONFIG_VALUE.match(name)
    if m:
        return bool(_SECRET_GIT_KEY.search(variables.get(f"GIT_CONFIG_KEY_{m.group(1)}", "secret")))
    return secret_name(name)


def text(value: str) -> str:
    """``value`` with credentials inside URLs replaced."""
    def userinfo(m: re.Match[str]) -> str:
        return m.group(0) if m.group(2) == "git" else f"{m.group(1)}{REDACTED}@"

    value = _USERINFO.sub(userinfo, value)
    return _QUERY.sub(lambda m: m.group(1) + REDACTED, value)


def without_credentials(value: str) -> str:
    """``value`` with the userinfo of every URL in it dropped (``http://user:pw@proxy:3128`` ->
    ``http://proxy:3128``): what a build is given of a proxy setting, never its password."""
    return _USERINFO.sub(lambda m: m.group(1), value)


def env(variables: Mapping[str, str]) -> dict[str, str]:
    """A recorded environment: secret-named variables hidden, URLs cleaned in the rest."""
    return {k: REDACTED if _hidden(k, variables) else text(v) for k, v in variables.items()}


def tree(obj: Any, *, env_keys: tuple[str, ...] = ("env",)) -> Any:
    """A JSON-like document with every string cleaned, and every mapping found under a key in
    ``env_keys`` (an environment) redacted by variable name as well."""
    if isinstance(obj, str):
        return text(obj)
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            if k in env_keys and isinstance(v, dict) and all(isinstance(x, str) for x in v):
                out[k] = {name: (REDACTED if _hidden(name, v) else tree(val, env_keys=env_keys))
                          for name, val in v.items()}
            else:
                out[k] = tree(v, env_keys=env_keys)
        return out
    if isinstance(obj, list):
        return [tree(v, env_keys=env_keys) for v in obj]
    if isinstance(obj, tuple):
        return tuple(tree(v, env_keys=env_keys) for v in obj)
    return obj


def paths(obj: Any, names: dict[str, str]) -> Any:
    """Replace this machine's paths (keys of ``names``) by their names in every string, so saved
    reports can be committed."""
    if isinstance(obj, str):
        for path, name in names.items():
            obj = obj.replace(path, name)
        return obj
    if isinstance(obj, dict):
        return {k: paths(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [paths(v, names) for v in obj]
    return obj
