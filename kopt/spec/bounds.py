"""Bounds on what a spec may hold, checked before anything is built from it.

* The YAML text: at most :data:`MAX_BYTES`; its node tree, with every alias
  expanded, at most :data:`MAX_NODES` nodes and :data:`MAX_DEPTH` levels deep.
  Both are counted on the parser's event stream (no recursion, nothing
  expanded), so an alias bomb or a 10,000-level nesting is refused in time
  linear in the text.
* Every number: finite; a non-zero float between :data:`TINY` and :data:`HUGE`
  in magnitude; an integer within int64.  JSON-schema range checks cannot do
  this: every comparison with NaN is false, so ``.nan`` passes ``minimum: 0``.
"""
from __future__ import annotations

import math

import yaml

MAX_BYTES = 1 << 20
MAX_NODES = 100_000
MAX_DEPTH = 64
TINY = 1e-30
HUGE = 1e30
INT_MAX = 2**63 - 1

_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def check_yaml_size(text: str, loader):
    """None, or the sentence saying which bound the YAML ``text`` breaks."""
    if len(text) > MAX_BYTES:
        return f"the spec is {len(text):,} characters; a spec may hold at most {MAX_BYTES:,}"
    sizes = {}  # anchor -> expanded node count
    stack = [[None, 0]]  # [anchor, expanded nodes so far] per open collection
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, _OPEN):
            stack.append([event.anchor, 1])
            if len(stack) - 1 > MAX_DEPTH:
                return f"the spec nests more than {MAX_DEPTH} levels deep"
            continue
        if isinstance(event, _CLOSE):
            anchor, count = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, count = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            anchor, count = None, sizes.get(event.anchor, 1)
        else:
            continue
        if anchor is not None:
            sizes[anchor] = count
        stack[-1][1] += count
        if stack[-1][1] > MAX_NODES:
            return (f"the spec expands to more than {MAX_NODES:,} values (anchors and aliases counted "
                    "as often as they are used)")
    return None


def bad_number(value):
    """None when ``value`` (a parsed spec value) is an acceptable number or not a number;
    else a sentence saying what is wrong with it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if abs(value) > INT_MAX:
            return f"expected an integer between {-INT_MAX - 1} and {INT_MAX}, got {value}"
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"expected a finite number, got {_yaml_float(value)}"
        if value != 0.0 and not TINY <= abs(value) <= HUGE:
            return f"expected 0 or a number between {TINY:g} and {HUGE:g} in magnitude, got {value:g}"
    return None


def find_bad_number(doc, path=()):
    """``(path, sentence)`` of the first out-of-range number in a parsed spec, or None (iterative walk)."""
    todo = [(path, doc)]
    while todo:
        where, node = todo.pop()
        if isinstance(node, dict):
            todo.extend((where + (k,), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            todo.extend((where + (i,), v) for i, v in reversed(list(enumerate(node))))
        else:
            text = bad_number(node)
            if text is not None:
                return where, text
    return None


def _yaml_float(value):
    if math.isnan(value):
        return ".nan"
    return ".inf" if value > 0 else "-.inf"
