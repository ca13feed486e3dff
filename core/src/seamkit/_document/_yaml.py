"""Reading YAML safely: one document, composed from the parser's events
without recursion, within `Limits` (nesting depth, values added by aliases),
duplicate keys and recursive aliases rejected, then built with PyYAML's safe
constructor; and the index that places a location in the text.

The events come from libyaml when it is installed (its parser keeps its
stack on the heap), so no input, however deep, reaches a recursive
composer: PyYAML's C composer recurses once per level and crashes the
interpreter near 30,000 levels.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.error import MarkedYAMLError
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from .._errors import ManifestError, Problem
from ._limits import ALIAS_VARIABLE, DEPTH_CEILING, DEPTH_VARIABLE, Limits
from ._place import Position
from ._shown import shown

try:
    from yaml import CSafeLoader as _Base
except ImportError:  # PyYAML without libyaml: the pure-Python parser, also iterative
    from yaml import SafeLoader as _Base  # type: ignore[assignment]

__all__ = ["NodePlacements", "read_yaml"]

_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"
_BREAKS = re.compile("\r\n|[\n\r\x85\u2028\u2029]")  # YAML 1.1's line breaks


class _Mark(Protocol):
    """A position as either parser gives it (0-based line and column)."""

    line: int
    column: int


class _Loader(_Base):
    """The safe loader whose constructor reports a value it cannot build (an
    ``!!int`` that is not a number, a timestamp with month 13) as a
    `ConstructorError` at the value, not as a bare ``ValueError``."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """PyYAML's ``construct_object``, every failure placed at ``node``."""
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception as exc:
            plain = isinstance(node, ScalarNode) and node.style is None
            raise ConstructorError(
                None,
                None,
                f"cannot read this value as {_tag_name(node.tag)}: {exc}",
                node.start_mark,
                "quote it to keep it as text" if plain else None,
            ) from None


def read_yaml(text: str, limits: Limits) -> tuple[Any, NodePlacements]:
    """The one document of ``text`` and its index. Raises `ManifestError`
    (without a source) with the problems found, each with line and column."""
    loader = _Loader(text)
    try:
        root = _Composer(loader, limits).document()
        data = loader.construct_document(root) if root is not None else None
    except ReaderError as exc:
        raise ManifestError([_reader_problem(exc, text)]) from None
    except MarkedYAMLError as exc:
        raise ManifestError([_inside(_marked_problem(exc), text)]) from None
    finally:
        loader.dispose()
    return data, NodePlacements(root)


# --- composing ---------------------------------------------------------------


@dataclass(slots=True)
class _Open:
    """A collection being composed: its node and what its children added."""

    node: MappingNode | SequenceNode
    part: Node | int | None  # its key in the parent mapping, or its index
    anchor: str | None
    size: int = 1
    height: int = 0
    key: Node | None = None
    seen: dict[Hashable, Node] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Anchor:
    """An anchored node; ``size`` (values it holds, itself included) and
    ``height`` (collection levels) are ``-1`` while it is still open."""

    node: Node
    size: int = -1
    height: int = -1


class _Composer:
    """Composes one document from ``loader``'s events, with an explicit stack."""

    def __init__(self, loader: _Loader, limits: Limits) -> None:
        self.loader = loader
        self.limits = limits
        self.stack: list[_Open] = []
        self.anchors: dict[str, _Anchor] = {}
        self.aliased = 0
        self.duplicates: list[Problem] = []
        self.keys = SafeConstructor()  # builds scalar keys to compare them
        resolve: Callable[[type[Node], str | None, Any], str] = loader.resolve
        self.resolve = resolve

    def document(self) -> Node | None:
        """The root node (``None`` for an empty stream). Raises `ManifestError`."""
        get = self.loader.get_event
        get()  # stream start
        if isinstance(get(), StreamEndEvent):
            return None
        root = self._node()
        get()  # document end
        event: Any = get()  # libyaml's events and marks are not PyYAML's classes
        if not isinstance(event, StreamEndEvent):
            raise ManifestError(
                [
                    _problem(
                        (),
                        "more than one YAML document in the file",
                        event.start_mark,
                        "a manifest is one document: remove the '---' line that starts "
                        "the second, or move it to its own file",
                    )
                ]
            )
        if self.duplicates:
            raise ManifestError(self.duplicates)
        return root

    def _node(self) -> Node:
        stack = self.stack
        get = self.loader.get_event
        while True:
            event: Any = get()  # libyaml's events and marks are not PyYAML's classes
            kind = type(event)
            start: Any = event.start_mark
            if kind is ScalarEvent:
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(ScalarNode, event.value, event.implicit)
                node: Node = ScalarNode(tag, event.value, start, event.end_mark, style=event.style)
                size, height = 1, 0
                if event.anchor is not None:
                    self._anchor(event.anchor, node, start)
                    self.anchors[event.anchor] = _Anchor(node, 1, 0)
            elif kind is AliasEvent:
                node, size, height = self._alias(event.anchor, start)
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                self._open(event)
                continue
            elif kind is SequenceEndEvent or kind is MappingEndEvent:
                frame = stack.pop()
                node = frame.node
                node.end_mark = event.end_mark
                size, height = frame.size, frame.height + 1
                if frame.anchor is not None:
                    self.anchors[frame.anchor] = _Anchor(node, size, height)
            else:  # pragma: no cover - the parser gives no other event inside a document
                raise ManifestError([_problem((), "unexpected YAML event", event.start_mark)])
            if not stack:
                return node
            self._attach(stack[-1], node, size, height)

    def _open(self, event: Any) -> None:
        stack = self.stack
        if len(stack) >= self.limits.max_depth:
            raise ManifestError([self._too_deep(event.start_mark)])
        sequence = isinstance(event, SequenceStartEvent)
        kind = SequenceNode if sequence else MappingNode
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(kind, None, event.implicit)
        node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
        part = self._raw_part(stack[-1]) if stack else None
        if event.anchor is not None:
            self._anchor(event.anchor, node, event.start_mark)
            self.anchors[event.anchor] = _Anchor(node)
        stack.append(_Open(node, part, event.anchor))

    def _attach(self, parent: _Open, node: Node, size: int, height: int) -> None:
        parent.size += size
        if height > parent.height:
            parent.height = height
        if isinstance(parent.node, SequenceNode):
            parent.node.value.append(node)
        elif parent.key is None:
            parent.key = node
        else:
            self._check_key(parent, parent.key)
            parent.node.value.append((parent.key, node))
            parent.key = None

    def _anchor(self, name: str, node: Node, mark: _Mark) -> None:
        first = self.anchors.get(name)
        if first is not None:
            line, column = _position(first.node.start_mark)
            raise ManifestError(
                [
                    _problem(
                        self._path(),
                        f"anchor &{shown(name)} is defined twice (first at line {line}, "
                        f"column {column})",
                        mark,
                        "give each anchor its own name",
                    )
                ]
            )

    def _alias(self, name: str, mark: _Mark) -> tuple[Node, int, int]:
        anchor = self.anchors.get(name)
        path = self._path()
        if anchor is None:
            raise ManifestError(
                [
                    _problem(
                        path,
                        f"alias *{shown(name)} names no anchor",
                        mark,
                        f"define &{shown(name)} on a value before this alias uses it",
                    )
                ]
            )
        if anchor.size < 0:
            raise ManifestError(
                [
                    _problem(
                        path,
                        f"alias *{shown(name)} is inside the value it repeats, which would "
                        "make the value contain itself",
                        mark,
                        "a manifest cannot hold a cycle: repeat the value without the alias",
                    )
                ]
            )
        self.aliased += anchor.size
        if self.aliased > self.limits.max_alias_nodes:
            raise ManifestError(
                [
                    _problem(
                        path,
                        f"YAML aliases repeat more than {self.limits.max_alias_nodes:,} values "
                        f"in all (*{shown(name)} here repeats {anchor.size:,})",
                        mark,
                        "write the values out, or nest fewer aliases inside each other; "
                        f"{ALIAS_VARIABLE} raises the limit",
                    )
                ]
            )
        if len(self.stack) + anchor.height > self.limits.max_depth:
            raise ManifestError([self._too_deep(mark)])
        return anchor.node, anchor.size, anchor.height

    def _check_key(self, parent: _Open, key: Node) -> None:
        if not isinstance(key, ScalarNode) or key.tag == _MERGE:
            return
        identity: Hashable = key.value  # a string key is its text
        if key.tag != _STR:
            try:
                identity = self.keys.construct_object(key)
                hash(identity)
            except Exception:  # unreadable: the constructor reports it later, in place
                identity = (key.tag, key.value)
        first = parent.seen.get(identity)
        if first is None:
            parent.seen[identity] = key
            return
        line, column = _position(first.start_mark)
        self.duplicates.append(
            _problem(
                (*self._open_path(), shown(str(key.value))),
                f"duplicate key '{shown(str(key.value))}' (first at line {line}, column {column})",
                key.start_mark,
                "a mapping takes each key once: remove one of them, or merge their values",
            )
        )

    def _raw_part(self, parent: _Open) -> Node | int | None:
        """Where the next child of ``parent`` goes: its key node or its index."""
        if isinstance(parent.node, SequenceNode):
            return len(parent.node.value)
        return parent.key

    def _open_path(self) -> tuple[str | int, ...]:
        """The location of the innermost open collection."""
        return tuple(_named(frame.part) for frame in self.stack[1:])

    def _path(self) -> tuple[str | int, ...]:
        """The location of the value being composed."""
        if not self.stack:
            return ()
        return (*self._open_path(), _named(self._raw_part(self.stack[-1])))

    def _too_deep(self, mark: _Mark) -> Problem:
        limit = self.limits.max_depth
        return _problem(
            self._path()[:4],
            f"nested more than {limit} levels deep",
            mark,
            f"flatten this value; {DEPTH_VARIABLE} raises the limit (at most {DEPTH_CEILING})"
            if limit < DEPTH_CEILING
            else "flatten this value",
        )


# --- placing -----------------------------------------------------------------


class NodePlacements:
    """Places locations in a YAML document by walking its composed nodes; each
    mapping on the way is indexed once, on first use."""

    def __init__(self, root: Node | None) -> None:
        self._root = root
        self._mappings: dict[int, dict[str, tuple[Node, Node]]] = {}

    def find(self, location: tuple[str | int, ...], *, key: bool = False) -> Position:
        """See `Placements.find`."""
        node = self._root
        if node is None:
            return 1, 1
        mark = node.start_mark
        for part in location:
            if isinstance(node, MappingNode):
                pair = self._pairs(node).get(str(part))
                if pair is None:
                    break
                mark = pair[0].start_mark if key else pair[1].start_mark
                node = pair[1]
            elif (
                isinstance(node, SequenceNode)
                and isinstance(part, int)
                and 0 <= part < len(node.value)
            ):
                node = node.value[part]
                mark = node.start_mark
            else:
                break
        return _position(mark)

    def _pairs(self, node: MappingNode) -> dict[str, tuple[Node, Node]]:
        found = self._mappings.get(id(node))
        if found is None:
            found = {str(k.value): (k, v) for k, v in node.value if isinstance(k, ScalarNode)}
            self._mappings[id(node)] = found
        return found


# --- problems ----------------------------------------------------------------


def _named(part: Node | int | None) -> str | int:
    """A location's part: an index, a scalar key's text, or ``?`` for a key
    that is a collection (or a collection used as a key)."""
    if isinstance(part, int):
        return part
    return shown(str(part.value)) if isinstance(part, ScalarNode) else "?"


def _position(mark: _Mark | None) -> Position:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _problem(
    location: tuple[str | int, ...], message: str, mark: _Mark | None, hint: str | None = None
) -> Problem:
    line, column = _position(mark)
    return Problem(location, message, hint, line, column)


def _marked_problem(exc: MarkedYAMLError) -> Problem:
    """A parser's or constructor's error, at its mark, its context as the hint."""
    mark = exc.problem_mark or exc.context_mark
    what = exc.problem or exc.context or "cannot be parsed"
    hint = exc.note
    if exc.context and exc.problem and hint is None:
        line, column = _position(exc.context_mark)
        hint = f"{exc.context}, which starts at line {line}, column {column}"
    return _problem((), f"invalid YAML: {what}", mark, hint)


def _inside(problem: Problem, text: str) -> Problem:
    """``problem`` moved from past the end of ``text`` (where a parser may
    report the end of the stream) to the end of its last line."""
    lines = _BREAKS.split(text)
    if problem.line is None or problem.line <= len(lines):
        return problem
    return Problem(problem.location, problem.message, problem.hint, len(lines), len(lines[-1]) + 1)


def _reader_problem(exc: ReaderError, text: str) -> Problem:
    """A character YAML does not allow (a control character, say), placed
    where it first occurs (libyaml counts its offset in bytes)."""
    character = exc.character if isinstance(exc.character, int) else ord(exc.character)
    offset = text.find(chr(character))
    line = text.count("\n", 0, offset) + 1 if offset >= 0 else 1
    column = offset - text.rfind("\n", 0, offset) if offset >= 0 else 1
    hint = "remove it"
    if character < 0x100:
        hint += f"; inside a double-quoted string write it as \\x{character:02X} if it is meant"
    if character == 0 and text.count("\x00") * 3 > len(text):
        hint = "the file looks like UTF-16 without a byte-order mark: save it as UTF-8"
    return Problem(
        (),
        f"invalid YAML: character U+{character:04X} is not allowed in YAML text",
        hint=hint,
        line=line,
        column=column,
    )


def _tag_name(tag: str) -> str:
    return tag.removeprefix("tag:yaml.org,2002:")
