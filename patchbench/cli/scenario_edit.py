"""Scenarios by command, so that no one edits matrix.yaml by hand to change what is measured:
``comparison new ... --scenario NAME`` takes only the scenarios named, ``scenario set COMPARISON
SCENARIO`` changes one, ``scenario add COMPARISON NAME --like SOURCE`` copies one in from another
comparison or a template. The same settings go with each: the scenario's own OCI bundle's
environment (``--env 5000``, ``--env '{envs}'``, ``--env NAME=value``...) and bind mounts
(``--bind-mounts N``), a scan (``--scan envs=0,1000,5000,20000``), and its runs, rounds and
warmup. Keys are written in the forms docs/matrix.md documents (``bundle: {env: ...}``, ``scan:
{name: ..., values: [...]}``), and the whole matrix is validated before it replaces the old one
(cli/editing.py)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from patchbench import config
from patchbench.cli import editing, templates
from patchbench.config import scenarios as config_scenarios
from patchbench.errors import ConfigError
from patchbench.util.models import NAME_RE, NAME_RULE
from patchbench.util.progress import say
from patchbench.util.suggest import suggest
from patchbench.util.workspace import Workspace

PLACEHOLDER = re.compile(r"^\{([a-z][a-z0-9_]{0,31})\}$")
# whole numbers of at most 18 digits (int() of a longer text may fail), separated by commas
_SCAN = re.compile(r"^([a-z][a-z0-9_]{0,31})=([0-9]{1,18}(?:,+[0-9]{1,18})*,*)$")
_ENV_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
BUNDLE_RUNTIMES = ("runc",)  # runtimes whose scenarios may have a bundle of their own


@dataclass
class Settings:
    """What ``--env``, ``--bind-mounts``, ``--scan``, ``--runs``, ``--rounds`` and ``--warmup``
    ask for (None or empty: left as it is)."""

    env: list[str] = field(default_factory=list)
    bind_mounts: str | None = None
    scan: str | None = None
    runs: int | None = None
    rounds: int | None = None
    warmup: int | None = None

    @property
    def per_scenario(self) -> bool:
        """Settings that make sense for one scenario only (a bundle, a scan)."""
        return bool(self.env) or self.bind_mounts is not None or self.scan is not None

    @property
    def any(self) -> bool:
        return self.per_scenario or any(v is not None for v in (self.runs, self.rounds,
                                                               self.warmup))

    def words(self) -> str:
        parts = []
        if self.env:
            parts.append("env " + " ".join(self.env))
        if self.bind_mounts is not None:
            parts.append(f"bind mounts {self.bind_mounts}")
        if self.scan is not None:
            parts.append(f"scan {self.scan}")
        parts += [f"{k} {v}" for k, v in (("runs", self.runs), ("rounds", self.rounds),
                                          ("warmup", self.warmup)) if v is not None]
        return ", ".join(parts)


def _flow_map(pairs: list[tuple[str, Any]]) -> Any:
    from ruamel.yaml.comments import CommentedMap

    m = CommentedMap(pairs)
    m.fa.set_flow_style()
    return m


def _flow_seq(items: list[Any]) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    s = CommentedSeq(items)
    s.fa.set_flow_style()
    return s


def _quoted(text: str) -> Any:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    return DoubleQuotedScalarString(text)


def _count(text: str, flag: str) -> int | Any:
    """A count (a whole number) or a scan's placeholder (``{name}``), as the bundle takes it."""
    if re.fullmatch(r"[0-9]{1,18}", text):  # ASCII digits: "²".isdigit() too, and int() fails
        return int(text)
    if PLACEHOLDER.match(text):
        return _quoted(text)
    raise ConfigError(f"{flag} {text!r}: expected a count (5000) or a scan's placeholder "
                      "({envs}), or none to remove it")


def _env_value(values: list[str]) -> Any:
    """``--env`` as the bundle's ``env``: one count or placeholder, or NAME=value (repeated);
    None: remove it."""
    if len(values) == 1 and values[0] == "none":
        return None
    if len(values) == 1 and not _ENV_VAR.match(values[0]):
        return _count(values[0], "--env")
    bad = [v for v in values if not _ENV_VAR.match(v)]
    if bad:
        raise ConfigError(f"--env {bad[0]!r}: with several --env, each is NAME=value",
                          hint="--env 5000 (generated variables), --env '{envs}' (a scan's "
                               "placeholder), or --env NAME=value --env NAME2=value")
    return _flow_seq(values)


def parse_scan(text: str) -> tuple[str, list[int]] | None:
    """``--scan NAME=V1,V2,...`` -> (name, values); ``none`` -> None (remove the scan)."""
    if text == "none":
        return None
    m = _SCAN.match(text.replace(" ", ""))
    if not m:
        raise ConfigError(f"--scan {text!r}: expected NAME=V1,V2,... such as envs=0,1000,5000",
                          hint="NAME is the placeholder ({NAME}) the scenario uses; the values "
                               "are whole numbers; --scan none removes the scan")
    values = [int(v) for v in m.group(2).split(",") if v]
    return m.group(1), values


def _uses(node: Any, placeholder: str) -> bool:
    """Whether ``{placeholder}`` appears anywhere in the scenario's settings."""
    if isinstance(node, str):
        return "{" + placeholder + "}" in node
    if isinstance(node, dict):
        return any(_uses(v, placeholder) for k, v in node.items() if k != "scan")
    if isinstance(node, list):
        return any(_uses(v, placeholder) for v in node)
    return False


def _put(sc: Any, key: str, value: Any, order: list[str]) -> None:
    """``sc[key] = value``; a new key goes after the last key present that comes before it in
    the kind's documented order (its config model's fields)."""
    if key in sc:
        sc[key] = value
        return
    keys = list(sc.keys())
    before = set(order[:order.index(key)]) if key in order else set(keys)
    pos = max((i + 1 for i, k in enumerate(keys) if k in before), default=len(keys))
    sc.insert(pos, key, value)


def apply(sc: Any, settings: Settings, where: str, runtime: str | None) -> None:
    """Apply ``settings`` to the round-trip mapping of one scenario."""
    name = str(sc.get("name", "?"))
    kind = config_scenarios.kind_of(sc)
    models = config_scenarios.config_models()
    fields = models[kind].model_fields if kind in models else {}
    order = list(fields)
    bundle_keys = [(k, v) for k, v in (("env", settings.env or None),
                                       ("bind_mounts", settings.bind_mounts)) if v is not None]
    if bundle_keys:
        if "bundle" not in fields:
            raise ConfigError(f"{where}: scenario {name} is a {kind} scenario, which has no "
                              "bundle of its own (--env, --bind-mounts)")
        if runtime not in BUNDLE_RUNTIMES:
            raise ConfigError(f"{where}: --env and --bind-mounts set scenario {name}'s own OCI "
                              f"bundle, which needs a target with runtime runc (runc, crun, "
                              f"youki); this one's is {runtime or 'none'}")
        if not _uses({k: v for k, v in sc.items() if k != "bundle"}, "bundle"):
            raise ConfigError(f"{where}: scenario {name} does not run {{bundle}}, so a bundle of "
                              "its own would change nothing",
                              hint="pick a scenario whose command runs -b {bundle} (the "
                                   "templates' run), e.g. --scenario run")
        bundle = sc.get("bundle")
        if bundle is None:
            bundle = _flow_map([])
        for key, raw in bundle_keys:
            value = (_env_value(settings.env) if key == "env" else
                     None if raw == "none" else _count(str(raw), "--bind-mounts"))
            if value is None:
                bundle.pop(key, None)
            else:
                bundle[key] = value
        if len(bundle):
            _put(sc, "bundle", bundle, order)
        else:
            sc.pop("bundle", None)
    if settings.scan is not None:
        if "scan" not in fields:
            raise ConfigError(f"{where}: scenario {name} is a {kind} scenario, which takes no "
                              "scan")
        scan = parse_scan(settings.scan)
        if scan is None:
            sc.pop("scan", None)
        else:
            placeholder, values = scan
            if not _uses(sc, placeholder):
                fix = (f"--env '{{{placeholder}}}' (the bundle's environment grows with it)"
                       if runtime in BUNDLE_RUNTIMES and _uses(sc, "bundle") else
                       f"put {{{placeholder}}} into its command")
                raise ConfigError(f"{where}: scenario {name} does not use {{{placeholder}}}, so "
                                  "scanning it would measure the same thing at every value",
                                  hint=f"give {fix} with --scan {settings.scan}")
            _put(sc, "scan", _flow_map([("name", placeholder), ("values", _flow_seq(values))]),
                 order)
    for key, value in (("warmup", settings.warmup), ("runs", settings.runs),
                       ("rounds", settings.rounds)):
        if value is not None:
            _put(sc, key, value, order)
    runs, rounds = int(sc.get("runs", 30)), int(sc.get("rounds", 5))
    if settings.runs is not None and settings.rounds is None and runs % rounds:
        raise ConfigError(f"{where}: scenario {name}: --runs {runs} is not a multiple of its "
                          f"{rounds} rounds (every round runs each variant equally often)",
                          hint=f"give --rounds too, e.g. --runs {runs} --rounds "
                               f"{next(r for r in range(min(rounds, runs), 0, -1) if runs % r == 0)}")
    if settings.rounds is not None and settings.runs is None and runs % rounds:
        sc["runs"] = runs + rounds - runs % rounds  # the nearest multiple above
        say(f"{where}: scenario {name}: runs {runs} -> {sc['runs']}, a multiple of {rounds} "
            "rounds")


def strip_trailing_comments(node: Any) -> None:
    """Drop the comment lines that follow the last value of a copied mapping or list: in a
    round-trip document they belong to the key after it (``# added by ...`` of the next
    comparison), and copying them made them pile up. An end-of-line comment stays."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    while isinstance(node, (CommentedMap, CommentedSeq)) and len(node):
        key: Any = list(node.keys())[-1] if isinstance(node, CommentedMap) else len(node) - 1
        entry = node.ca.items.get(key)
        for i, token in enumerate(entry or []):
            if token is None or not hasattr(token, "value"):
                continue
            first = token.value.split("\n", 1)[0]
            if first.strip().startswith("#"):
                token.value = first + "\n"
            elif entry is not None:
                entry[i] = None
        node = node[key]


def pick(scenarios: Any, names: list[str], source: str) -> Any:
    """The scenarios named (in the order given), or all when none is."""
    if not names:
        return scenarios
    have = {str(s.get("name")): s for s in scenarios}
    missing = [n for n in names if n not in have]
    if missing:
        raise ConfigError(f"--scenario {missing[0]}: {source} has no such scenario"
                          + suggest(missing[0], list(have)),
                          hint=f"its scenarios: {', '.join(have)}")
    from ruamel.yaml.comments import CommentedSeq

    return CommentedSeq([have[n] for n in dict.fromkeys(names)])


def _runtime(project: config.Project, comp: Any) -> str | None:
    target = project.matrix.targets.get(str(comp.get("target")))
    return comp.get("runtime") or (target.runtime if target is not None else None)


def _comparison(doc: Any, project: config.Project, name: str) -> Any:
    comps = doc["comparisons"]
    if name not in comps:
        raise ConfigError(f"no comparison {name!r} in the matrix"
                          + suggest(name, list(comps)),
                          hint="comparisons: " + (", ".join(comps) or "(none)")
                               + "; or make one: patchbench comparison new NAME --target T "
                                 "--candidate SERIES")
    return comps[name]


def _source_scenarios(doc: Any, like: str) -> tuple[Any, str]:
    if like in doc["comparisons"]:
        return doc["comparisons"][like]["scenarios"], f"comparison {like}"
    if like in templates.names():
        return templates.get(like).comparison()["scenarios"], f"the {like} template"
    raise ConfigError(f"--like {like!r}: no such comparison or template"
                      + suggest(like, [*doc["comparisons"], *templates.names()]),
                      hint=f"templates: {', '.join(templates.names())}")


def scenario_cmd(ws: Workspace, action: str, comparison: str, name: str, settings: Settings, *,
                 like: str | None, as_name: str | None) -> int:
    """``scenario set COMPARISON SCENARIO [settings]`` and ``scenario add COMPARISON SCENARIO
    --like COMPARISON_OR_TEMPLATE [--as NEW] [settings]``."""
    if action not in ("set", "add"):
        raise ConfigError(f"scenario {action!r}: the actions are set and add"
                          + suggest(action, ["set", "add"]))
    new_name = as_name or name
    if not re.fullmatch(NAME_RE, new_name):
        raise ConfigError(f"scenario name {new_name!r}: {NAME_RULE}")
    if action == "set" and (like or as_name):
        raise ConfigError("scenario set changes a scenario in place; --like and --as are for "
                          "scenario add")
    if action == "set" and not settings.any:
        raise ConfigError("scenario set: nothing to change",
                          hint="give --env, --bind-mounts, --scan, --runs, --rounds or --warmup")
    editing.check(ws)
    with editing.locked(ws):
        project = config.load(ws.matrix, pending_series=frozenset())
        doc = editing.read_matrix(ws)
        comp = _comparison(doc, project, comparison)
        scenarios = comp["scenarios"]
        have = [str(s.get("name")) for s in scenarios]
        where = f"comparisons.{comparison}"
        if action == "set":
            if name not in have:
                raise ConfigError(f"comparison {comparison} has no scenario {name!r}"
                                  + suggest(name, have),
                                  hint=f"its scenarios: {', '.join(have)}; or copy one in: "
                                       f"patchbench scenario add {comparison} NAME --like "
                                       "COMPARISON_OR_TEMPLATE")
            sc = scenarios[have.index(name)]
        else:
            if not like:
                raise ConfigError("scenario add: --like names the comparison or template to "
                                  "copy the scenario from",
                                  hint=f"patchbench scenario add {comparison} {name} --like "
                                       f"{templates.names()[0]}")
            if new_name in have:
                raise ConfigError(f"comparison {comparison} has a scenario {new_name!r} already",
                                  hint=f"change it: patchbench scenario set {comparison} "
                                       f"{new_name} ...; or add it under another name: --as "
                                       f"{new_name}-2")
            source, what = _source_scenarios(doc, like)
            (sc,) = pick(source, [name], what)
            sc = copy.deepcopy(sc)
            strip_trailing_comments(sc)
            sc["name"] = new_name
            scenarios.append(sc)
        apply(sc, settings, where, _runtime(project, comp))
        editing.write_matrix(ws, editing.dump(doc))
    done = settings.words()
    print(f"{ws.matrix}: {comparison}: scenario {new_name} "
          + ("changed: " + done if action == "set" else
             f"added from {like}" + (f" ({done})" if done else "")))
    say(f"next: patchbench compare {comparison} --scenario {new_name} --dry-run")
    return 0
