"""The ``patchbench`` console script, and what ``tasks.py`` hands every invoke task to: parse with
``cli.spec``, build the workspace from ``--project``, call the command under ``guarded``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchbench.cli import spec
from patchbench.errors import ConfigError, PatchbenchError
from patchbench.util.suggest import suggest

Values = dict[str, Any]


def _ws(v: Values, project: str | None) -> Any:
    from patchbench.cli import commands

    return commands.workspace(
        sources=v.get("source") or [], project=v.get("project") or project,
        matrix=v.get("matrix"), builds=v.get("builds"), reports=v.get("reports"),
        verbose=bool(v.get("verbose")), backend=v.get("backend"))


def _matrix_shown(v: Values, project: str | None) -> str | None:
    import os

    from patchbench import config

    given = v.get("matrix") or os.environ.get("PATCHBENCH_MATRIX")
    proj = v.get("project") or project or os.environ.get("PATCHBENCH_PROJECT")
    if not given and not proj:
        return None  # ./matrix.yaml: the word in the message is already right
    return config.shown(Path(given) if given else Path(proj or ".") / "matrix.yaml")


def _percent(text: object) -> float | None:
    """--until-ci PCT as a fraction (0 < PCT < 100)."""
    if text is None:
        return None
    try:
        value = float(str(text).removesuffix("%"))
    except ValueError:
        raise ConfigError(f"compare --until-ci {text!r}: expected a percentage such as 3 or 2.5"
                          ) from None
    if not 0 < value < 100:
        raise ConfigError(f"compare --until-ci {text!r}: expected a percentage above 0 and below "
                          "100")
    return value / 100


PROFILES = ("syscalls", "cpu")  # compare --profile (the command kind's ``profile`` key)
def _duration(text: object) -> float | None:
    """--budget DURATION in seconds."""
    if text is None:
        return None
    from patchbench.analysis.sequential import parse_duration

    try:
        return parse_duration(str(text))
    except ValueError as exc:
        raise ConfigError(f"compare --budget: {exc}") from None


def _compare(v: Values, project: str | None) -> int:
    from patchbench.cli import commands
    from patchbench.util.workspace import Switches

    if v["gate_allow_inconclusive"] and not v["gate"]:
        raise ConfigError("--gate-allow-inconclusive is an option of --gate; give both")
    if v["max_rounds"] is not None and v["until_ci"] is None and not v["gate"]:
        raise ConfigError("--max-rounds is the cap of the rounds --until-ci or --gate add; "
                          "give one of them too")
    unknown = [p for p in v["profile"] if p not in PROFILES]
    if unknown:
        raise ConfigError(f"--profile {unknown[0]}: not a profile",
                          hint="one of: " + ", ".join(PROFILES))
    if v["budget"] is not None and v["until_ci"] is not None:
        raise ConfigError("--budget and --until-ci both decide when to stop; give one")
    sw = Switches(seed=v["seed"], aa=v["aa"], aa_layout=v["aa_layout"], dry_run=v["dry_run"],
                  runs=v["runs"],
                  rounds=v["rounds"], warmup=v["warmup"], block_warmup=v["block_warmup"],
                  only=tuple(v["scenario"]),
                  gate=v["gate"], gate_allow_inconclusive=v["gate_allow_inconclusive"],
                  until_ci=_percent(v["until_ci"]), max_rounds=v["max_rounds"],
                  profile=tuple(dict.fromkeys(v["profile"])),
                  budget=_duration(v["budget"]), gate_metrics=tuple(v["gate_metric"]))
    return commands.do_compare(_ws(v, project), v["name"], sw, v["summary"])


def _build(v: Values, project: str | None) -> int:
    from patchbench.cli import commands

    return commands.do_build(_ws(v, project), v["patch"], v["target"])


def _patch(v: Values, project: str | None) -> int:
    from patchbench.cli import commands

    return commands.do_patch_check(_ws(v, project), v["series"], v["target"])


def _fetch(v: Values, project: str | None) -> int:
    from patchbench.cli import commands

    return commands.do_fetch(_ws(v, project), v["target"])


def _list(v: Values, project: str | None) -> int:
    from patchbench.cli import commands

    return commands.do_list(_ws(v, project))


def _report(v: Values, project: str | None) -> int:
    from patchbench.cli import commands

    return commands.do_report(_ws(v, project), v["run_dir"], v["comparison"], v["from_"])


def _export(v: Values, project: str | None) -> int:
    from patchbench.cli import runs

    return runs.do_export(v["run"], v["format"] or "csv", v["out"], _ws(v, project).reports)


def _diff(v: Values, project: str | None) -> int:
    from patchbench.cli import runs

    return runs.do_diff(v["run_a"], v["run_b"], _ws(v, project).reports)


def _merge(v: Values, project: str | None) -> int:
    from patchbench.cli import runs

    return runs.do_merge([v["path"], *v["run"]], out=v["out"], summary=v["summary"],
                         gate=v["gate"], allow_differing_builds=v["allow_differing_builds"],
                         reports=_ws(v, project).reports, classes=v["class_"])


def _series(v: Values, project: str | None) -> int:
    from patchbench.cli import scaffold

    action = v["action"]
    if action not in ("new", "add"):
        raise ConfigError(f"series {action!r}: the actions are new and add"
                          f"{suggest(action, ['new', 'add'], show=str)}")
    if not v["target"]:
        raise ConfigError(f"series {action}: --target is required (the target the series is for)")
    if action == "new":
        if v["pr"]:
            raise ConfigError("series new: --pr is for `series add` (a pull request's commits by "
                              "reference)")
        return scaffold.series_new(_ws(v, project), v["name"], v["target"], v["from_"], v["revs"],
                                   forwarded=v["forwarded"])
    if v["from_"]:
        raise ConfigError("series add: --from is for `series new`; give the clone with "
                          "--source TARGET=DIR")
    return scaffold.series_add(_ws(v, project), v["name"], v["target"], v["revs"], pr=v["pr"])


def _comparison(v: Values, project: str | None) -> int:
    from patchbench.cli import scaffold

    if v["action"] != "new":
        raise ConfigError(f"comparison {v['action']!r}: the only action is new")
    if not v["target"] or not v["candidate"]:
        raise ConfigError("comparison new: --target and at least one --candidate are required")
    return scaffold.comparison_new(_ws(v, project), v["name"], v["target"], v["candidate"],
                                   like=v["like"], description=v["description"],
                                   scenarios=v["scenario"], settings=_settings(v))


def _settings(v: Values) -> Any:
    from patchbench.cli import scenario_edit

    return scenario_edit.Settings(env=list(v["env"]), bind_mounts=v["bind_mounts"],
                                  scan=v["scan"], runs=v["runs"], rounds=v["rounds"],
                                  warmup=v["warmup"])


def _scenario(v: Values, project: str | None) -> int:
    from patchbench.cli import scenario_edit

    return scenario_edit.scenario_cmd(_ws(v, project), v["action"], v["comparison"], v["name"],
                                      _settings(v), like=v["like"], as_name=v["as_"])


def _init(v: Values, project: str | None) -> int:
    import os

    from patchbench.cli import init

    # the matrix path as given, links not resolved (the workspace resolves them): init follows none
    proj = v.get("project") or project or os.environ.get("PATCHBENCH_PROJECT") or "."
    given = Path(v.get("matrix") or os.environ.get("PATCHBENCH_MATRIX") or Path(proj) / "matrix.yaml")
    return init.init(_ws({**v, "source": []}, project), runtime=v["runtime"], source=v["source"],
                     ref=v["ref"], toolchain=v["toolchain"], name=v["target"], given=given)


def _target(v: Values, project: str | None) -> int:
    from patchbench.cli import target

    if v["action"] != "new":
        raise ConfigError(f"target {v['action']!r}: the only action is new",
                          hint=f"patchbench target new {v['action']} --runtime R --source "
                               "DIR_OR_URL --ref REF")
    return target.target_new(_ws({**v, "source": []}, project), v["name"], runtime=v["runtime"],
                             source=v["source"], ref=v["ref"], toolchain=v["toolchain"],
                             description=v["description"])


def _templates(v: Values, project: str | None) -> int:
    from patchbench.cli import templates

    return templates.do_templates(v["name"])


HANDLERS: dict[str, Callable[[Values, str | None], int]] = {
    "compare": _compare, "build": _build, "patch": _patch, "fetch": _fetch, "list": _list,
    "report": _report, "export": _export, "diff": _diff, "merge": _merge, "series": _series,
    "comparison": _comparison,
}


def _one_scenario(v: Values, cmd: str) -> str:
    given = v["scenario"] or []
    if len(given) != 1:
        raise ConfigError(f"{cmd}: give --scenario COMPARISON:SCENARIO once",
                          hint="a command scenario (time) or a soak scenario (hangs)")
    return str(given[0])


def _bisect(v: Values, project: str | None) -> int:
    from patchbench.cli import bisect_cmd

    if not v["good"] or not v["bad"]:
        raise ConfigError("bisect: --good REF and --bad REF are required")
    return bisect_cmd.do_bisect(_ws(v, project), v["target"], v["good"], v["bad"],
                                _one_scenario(v, "bisect"), seed=v["seed"],
                                budget=v["budget"] or 4, dry_run=v["dry_run"],
                                runs=v["runs"], rounds=v["rounds"])


def _history(v: Values, project: str | None) -> int:
    from patchbench.cli import bisect_cmd

    return bisect_cmd.do_history(_ws(v, project), v["target"], v["refs"],
                                 _one_scenario(v, "history"), range_=v["range_"],
                                 every=v["every"] or 1, seed=v["seed"], runs=v["runs"],
                                 rounds=v["rounds"], tags=v["tags"], budget=v["budget"] or 4)


def _track(v: Values, project: str | None) -> int:
    from patchbench.cli import track_cmd

    return track_cmd.do_track(_ws(v, project), v["name"], range_=v["range_"],
                              every=v["every"] or 1, db=v["db"], branch=v["branch"],
                              only=v["scenario"], runs=v["runs"], rounds=v["rounds"],
                              seed=v["seed"], budget=v["budget"] or 4)


HANDLERS.update({"bisect": _bisect, "history": _history, "init": _init, "target": _target,
                 "templates": _templates, "scenario": _scenario, "track": _track})


def run(argv: list[str], *, project: str | None = None, prog: str = "patchbench") -> None:
    """Parse ``argv`` (the command name first) and run it; exits with the command's code
    (SystemExit)."""
    from patchbench.cli import commands

    def go() -> int:
        args = list(argv)
        if args and args[0] == "--project" and len(args) > 1:  # `patchbench --project DIR CMD`
            args = [*args[2:], "--project", args[1]]
        elif args and args[0].startswith("--project="):
            args = [*args[1:], args[0]]
        if not args or args[0] in ("-h", "--help", "help"):
            topic = args[1] if len(args) > 1 and args[0] == "help" else None
            print(spec.help_text(spec.command_of(topic), prog) if topic else spec.overview(prog))
            return 0
        if args[0] == "--version":
            from patchbench import __version__

            print(f"patchbench {__version__}")
            return 0
        cmd = spec.command_of(args[0])
        parsed = spec.parse(cmd, args[1:])
        if parsed.help:
            print(spec.help_text(cmd, prog))
            return 0
        try:
            return HANDLERS[cmd.name](parsed.values, project)
        except PatchbenchError as exc:  # messages that say "matrix.yaml" name the file in use
            exc.matrix = _matrix_shown(parsed.values, project)
            raise

    commands.guarded(go)


def main() -> None:  # the console script
    name = Path(sys.argv[0]).name
    # `python3 -m patchbench` runs __main__.py: its usage lines say what to type
    prog = "python3 -m patchbench" if name in ("__main__.py", "") else name
    run(sys.argv[1:], project=None, prog=prog)
