"""Finds where a location (``("hooks", 0, "event")``) stands in a YAML/JSON text."""

from __future__ import annotations

__all__ = ["locate"]


def locate(
    text: str, location: tuple[str | int, ...], *, key: bool = False
) -> tuple[int | None, int | None]:
    """1-based ``(line, column)`` of the deepest node on ``location`` that exists:
    of its value, or of its key when ``key`` is true."""
    import yaml

    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None, None
    if node is None:
        return None, None
    mark = node.start_mark
    for part in location:
        child = None
        if isinstance(node, yaml.MappingNode):
            for name, value in node.value:
                if name.value == str(part):
                    child = value
                    mark = name.start_mark if key else value.start_mark
                    break
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            child = node.value[part]
            mark = child.start_mark
        if child is None:
            break
        node = child
    return mark.line + 1, mark.column + 1
