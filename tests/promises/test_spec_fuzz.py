"""Hypothesis fuzzing of the spec loader (issue 17): random YAML structures, values, anchors and aliases.

Properties, each case under a memory bound (tracemalloc peak) and a hang guard (SIGALRM):
* the loader returns a Spec or raises a SpecError -- never another exception;
* a spec that loads holds only finite numbers within kopt's bounds;
* an alias expansion beyond MAX_NODES is refused before any Python object is built from it.
Derandomized (tests/conftest.py), so CI sees the same cases every run.
"""
from __future__ import annotations

import contextlib
import signal
import tracemalloc

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopt.errors import SpecError
from kopt.spec import load_spec
from kopt.spec import loader as spec_loader
from kopt.spec.bounds import MAX_NODES, find_bad_number

MEMORY_BOUND = 64 * 2**20
HANG_GUARD_S = 60  # a hang guard, not a timing assertion: a case takes milliseconds

GOOD = {
    "name": "fuzz",
    "seed": 0,
    "data": {"source": "dai_synthetic", "options": {"n_train": 50}},
    "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
              "regularizer": {"name": "l2", "lambda": 0.001}},
    "solver": {"name": "krr_exact"},
    "backend": "numpy",
}
PATHS = [("name",), ("seed",), ("data", "options", "n_train"), ("model", "kernel", "bandwidth"),
         ("model", "regularizer", "lambda"), ("model", "loss"), ("solver",), ("solver", "jitter"), ("backend",),
         ("model", "features"), ("model", "features", "count"), ("output",), ("data",), ("extra",)]

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
YAML_TEXT = st.text(alphabet=st.sampled_from(list("&*[]{}:,-?|>!#%@'\" \n\tabn0123456789.e+")), max_size=200)


@contextlib.contextmanager
def bounded():
    """The case's peak Python allocation (tracemalloc) stays under MEMORY_BOUND; SIGALRM ends a hang."""
    def hang(signum, frame):
        raise AssertionError(f"a fuzz case ran for more than {HANG_GUARD_S}s (a hang)")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_GUARD_S)
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
        assert peak < MEMORY_BOUND, f"peak {peak / 2**20:.0f} MiB"
    finally:
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def load_text(tmp_path, text):
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    with bounded():
        try:
            return load_spec(str(path))
        except SpecError as exc:
            assert str(exc) and len(str(exc)) < 4000
            return None


def _with(doc, path, value):
    doc = yaml.safe_load(yaml.safe_dump(doc))
    node = doc
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
    return doc


FUZZ = settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.slow
@FUZZ
@given(path=st.sampled_from(PATHS), value=VALUES)
def test_random_values_load_or_fail_cleanly(tmp_path, path, value):
    spec = load_text(tmp_path, yaml.safe_dump(_with(GOOD, path, value)))
    if spec is not None:
        assert find_bad_number(spec.data) is None


@pytest.mark.slow
@FUZZ
@given(text=YAML_TEXT)
def test_random_yaml_text_parses_or_fails_cleanly(tmp_path, text):
    load_text(tmp_path, text)


@pytest.mark.slow
@FUZZ
@given(text=YAML_TEXT, key=st.sampled_from(["seed", "name", "solver", "model"]))
def test_random_yaml_under_a_key(tmp_path, text, key):
    indented = "\n".join("  " + line for line in text.splitlines())
    load_text(tmp_path, f"{key}:\n{indented}\n" + yaml.safe_dump({k: v for k, v in GOOD.items() if k != key}))


def _bomb(levels, width, key):
    lines = [f"  a0: &a0 [{', '.join(['1'] * width)}]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    rest = yaml.safe_dump({k: v for k, v in GOOD.items() if k != key})
    return f"{key}:\n" + "\n".join(lines) + "\n" + rest


def _expanded(levels, width):
    """Values of the bomb with every alias expanded (each list counts itself and its items)."""
    per = [1 + width]
    for _ in range(1, levels):
        per.append(1 + width * per[-1])
    return 1 + sum(per)


@pytest.mark.slow
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.integers(1, 12), width=st.integers(1, 12), key=st.sampled_from(["seed", "name", "data"]))
def test_alias_expansion_is_refused_before_it_is_built(tmp_path, monkeypatch, levels, width, key):
    built = []
    real = spec_loader.yaml.load

    def spy(*args, **kwargs):
        built.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(spec_loader.yaml, "load", spy)
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(levels, width, key))
    with bounded():
        with pytest.raises(SpecError) as info:  # an expanded list of lists is no valid seed, name or data section
            load_spec(str(path))
    if _expanded(levels, width) > MAX_NODES + 200:
        assert "expands to more than" in str(info.value)
        assert not built
    elif _expanded(levels, width) < MAX_NODES - 200:
        assert "expands to more than" not in str(info.value)


def test_the_expansion_count_is_exact():
    assert _expanded(1, 3) == 5 and _expanded(2, 2) == 1 + 3 + 7
    assert _expanded(9, 9) > 4000 * MAX_NODES  # the 9 x 9 alias bomb is far beyond the bound
