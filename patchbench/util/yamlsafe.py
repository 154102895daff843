"""Bounded YAML: plain data only, with limits checked on the parser's event stream before any
node or Python object is built. Details: docs/internals.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

# yaml.safe_load's loader, in C when PyYAML was built with libyaml; both refuse !!python tags
SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 4 << 20  # a matrix is a few kB; 4 MiB is far beyond any real one
    max_nodes: int = 200_000  # scalars, sequences and mappings, every alias expanded
    max_depth: int = 64


DEFAULT_LIMITS = Limits()


class YamlLimitError(Exception):
    """The document passes a limit; ``line`` is 1-based where known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


def _line(event: Any) -> int | None:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def check(text: str, limits: Limits = DEFAULT_LIMITS) -> int:
    """Walk the events of ``text`` and return the number of values it stands for with every
    alias expanded; raise YamlLimitError past a limit, yaml.YAMLError if it is not YAML. The
    cost follows the length of the text, never the size of the expanded tree."""
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise YamlLimitError(f"the file is larger than {limits.max_bytes >> 20} MiB")
    sizes: dict[str, int] = {}  # anchor -> expanded size of its node
    open_anchors: set[str] = set()
    stack: list[list[Any]] = []  # per open collection: [anchor, size so far]
    total = 0

    def add(size: int, event: Any) -> None:
        nonlocal total
        if stack:
            stack[-1][1] += size
        else:
            total += size
        if total + sum(entry[1] for entry in stack) > limits.max_nodes:
            raise YamlLimitError(
                f"the document stands for more than {limits.max_nodes:,} values once its "
                "aliases are expanded (an alias bomb?)", _line(event))

    for event in yaml.parse(text, Loader=SAFE_LOADER):
        if isinstance(event, yaml.ScalarEvent):
            add(1, event)
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(stack) >= limits.max_depth:
                raise YamlLimitError(f"the document nests deeper than {limits.max_depth} levels",
                                     _line(event))
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append([event.anchor, 1])
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, size = stack.pop()
            if anchor is not None:
                open_anchors.discard(anchor)
                sizes[anchor] = size
            add(size, event)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                raise YamlLimitError(f"the alias *{event.anchor} refers to a node that contains "
                                     "it (a recursive alias)", _line(event))
            # an unknown anchor is the composer's error, reported with its own message
            add(sizes.get(event.anchor or "", 1), event)
    return total


def load(text: str, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Plain data from ``text`` with the safe constructor, once ``check`` passes."""
    check(text, limits)
    return yaml.load(text, Loader=SAFE_LOADER)


def compose(text: str, limits: Limits = DEFAULT_LIMITS) -> yaml.Node | None:
    """The node graph of ``text`` (None for an empty document), once ``check`` passes."""
    check(text, limits)
    node: yaml.Node | None = yaml.compose(text, Loader=SAFE_LOADER)
    return node
