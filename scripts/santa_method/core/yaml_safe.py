"""YAML read safely: PyYAML's safe loader, on libyaml where it is installed.

Every YAML santa reads (rubrics, the project's config, drafts in a
reviewer's reply) goes through `safe_load`: a safe loader only, one test of
"nested too deeply" (libyaml stops at its nesting limit, the pure-Python
scanner at Python's stack), aliases bounded (a few hundred bytes of nested
aliases, the "billion laughs", expand to a billion nodes that any walk of
the value then visits: refused before anything is built), and, for what a
user writes, duplicate keys refused. It is its own module so the config
(state/) reads YAML by the same rules without importing the rubric code.
Importing it does not import yaml: yaml is slow to import, and most
commands never read any.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from santa_method.core.errors import InputError

__all__ = [
    "ALIAS_CYCLE",
    "ALIAS_GROWTH",
    "MAX_ALIAS_NODES",
    "AliasBomb",
    "alias_bomb",
    "check_aliases",
    "safe_load",
    "yaml_too_deep",
]

#: How many nodes aliases may add to a document beyond those written out.
#: Anchors that share a block of defaults add a few hundred; nine lines of
#: nested aliases add hundreds of millions.
MAX_ALIAS_NODES = 100_000


#: What AliasBomb says: the document's aliases expand it past
#: `MAX_ALIAS_NODES`, or an alias refers to a node that holds it (a value
#: without end).
ALIAS_GROWTH = f"its YAML aliases expand it by more than {MAX_ALIAS_NODES:,} nodes"
ALIAS_CYCLE = "a YAML alias in it refers to a node that holds it"


class AliasBomb(ValueError):
    """A document refused for its aliases (ALIAS_GROWTH or ALIAS_CYCLE)."""


def alias_bomb(what: str, path: object, why: object) -> InputError:
    """The one sentence for a YAML file whose aliases would blow it up
    (`why`: the AliasBomb, or what it said)."""
    where = f" '{path}'" if path is not None else ""
    return InputError(
        f"cannot read {what}{where}: {why}, which no {what.removeprefix('the ')} needs"
    )


def safe_load(text: str, *, unique_keys: bool = False) -> Any:
    """The value of one YAML document, read by the safe loader.

    Raises yaml.YAMLError for what is not YAML (or repeats a key, with
    `unique_keys`), AliasBomb for an alias bomb, RecursionError where
    the pure-Python parser runs out of stack.
    """
    import yaml

    loader = _unique_keys_loader() if unique_keys else _bounded_loader()
    return yaml.load(text, Loader=loader)  # a SafeLoader subclass, C where available


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []  # a scalar
    if value and isinstance(value[0], tuple):  # a mapping's (key, value) pairs
        return [part for pair in value for part in pair]
    return value


def check_aliases(root: Any) -> None:
    """Refuse a composed document whose aliases expand it past the bound.

    An alias is the node it points at, so the document is a graph; its size
    once expanded is counted bottom-up with each node's size remembered,
    which costs one visit per node and edge however large the expansion."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    written = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            sizes[key] = size
            if size - written > MAX_ALIAS_NODES:
                raise AliasBomb(ALIAS_GROWTH)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise AliasBomb(ALIAS_CYCLE)
        open_nodes.add(key)
        written += 1
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


@cache
def _bounded_loader() -> type:
    """PyYAML's safe loader (on libyaml when installed, as it is in PyYAML's
    wheels), checking the aliases of what it composed before building it."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):  # type: ignore[misc, valid-type]
        def construct_document(self, node: Any) -> Any:
            check_aliases(node)
            return super().construct_document(node)

    return _Loader


@cache
def _unique_keys_loader() -> type:
    """The bounded safe loader, refusing duplicate keys.

    PyYAML silently keeps the last of two `pass:` keys (or `reviewers:`); in
    a file a person writes that hides a mistake, so it is an error here. The
    parser is libyaml's where PyYAML has it: the pure-Python scanner takes
    seconds over a few hundred nested brackets, libyaml stops at its nesting
    limit at once.
    """
    import yaml

    class _Loader(_bounded_loader()):  # type: ignore[misc]
        pass

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{key}'", key_node.start_mark
                )
            seen.add(key)
        return loader.construct_mapping(node, deep=True)

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return _Loader


def yaml_too_deep(exc: Exception) -> bool:
    """A YAML error that means nesting past the parser's limit (libyaml's, or Python's stack)."""
    return isinstance(exc, RecursionError) or "nesting depth" in str(exc)
