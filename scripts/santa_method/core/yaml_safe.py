"""YAML read safely: PyYAML's safe loader, on libyaml where it is installed.

Rubrics and the project's config are YAML a user writes, so both are read
with a safe loader only, through one choice of loader and one test of
"nested too deeply" (libyaml stops at its nesting limit, the pure-Python
scanner at Python's stack); a rubric's loader also refuses duplicate keys.
It is its own module so the config (state/) reads YAML by the same rules
without importing the rubric code. Importing it does not import yaml: yaml
is slow to import, and most commands never read any.
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["fast_safe_loader", "unique_keys_loader", "yaml_too_deep"]


@cache
def unique_keys_loader() -> type:
    """A safe loader that refuses duplicate keys.

    PyYAML silently keeps the last of two `pass:` keys; in a rubric that
    hides an authoring mistake, so it is an error here. The parser is
    libyaml's where PyYAML has it: the pure-Python scanner takes seconds
    over a few hundred nested brackets, libyaml stops at its nesting limit at once.
    """
    import yaml

    class _Loader(fast_safe_loader()):  # type: ignore[misc]
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


def fast_safe_loader() -> type:
    """PyYAML's safe loader on libyaml when installed (it is, in PyYAML's wheels)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_too_deep(exc: Exception) -> bool:
    """A YAML error that means nesting past the parser's limit (libyaml's, or Python's stack)."""
    return isinstance(exc, RecursionError) or "nesting depth" in str(exc)
