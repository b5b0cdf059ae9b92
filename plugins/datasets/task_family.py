"""A family of generated tasks that no default was tuned on: ``data.source: task-family``.

Task ``index`` of family ``family`` (both seeds) draws, from its own seeded stream:

* its columns: d from 4 to 60 (log-uniform), each a standard normal, a uniform or a shifted exponential (skewed),
  then scaled by e^U(-1, 2) and shifted by N(0, 3²), so that a model must standardize them;
* the share of the columns that matter, from 10% to 100%; the others are noise;
* its kind: binary, multiclass (3 to 8 classes) or regression, one in three each;
* its label noise, from 0 to 20%: that share of the labels flipped (binary) or moved to another class (multiclass),
  or Gaussian noise of standard deviation 2.5 x that share of the signal's (regression);
* its training rows, from 10⁴ to 10⁶ (log-uniform; ``rows`` given takes its place).

The signal is a random two-layer network on the columns that matter, f_o(z) = Σ_h a_oh tanh(w_ohᵀ z + b_oh) (24
hidden units, one output per class), standardized by constants of the task (made on a pilot sample of its own
stream), so rows and test rows come from the same distribution in chunks of any size.  Binary labels are
1[f > its median], multiclass labels argmax_o f_o, and a regression target f itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kopt.contract.components import DatasetPreset

#: rows per generated chunk (part of the content's key: chunk k's rows depend on k alone)
CHUNK_ROWS = 1 << 17
VERSION = 2
HIDDEN = 24
KINDS = ("binary", "multiclass", "regression")
#: the pilot sample the signal's standardizing constants (and the binary threshold) are made on
PILOT_ROWS = 20_000
_TASK, _SHAPE, _PILOT, _TRAIN, _TEST = 0x7461736B, 0x73686170, 0x70696C6F, 1, 2


@dataclass(frozen=True)
class Task:
    """One task of the family: its draw (what the report names) and the constants its rows are made with."""

    family: int
    index: int
    d: int
    relevant: int
    noise: float
    kind: str
    classes: int | None
    rows: int

    def describe(self) -> dict:
        return {"family": self.family, "index": self.index, "columns": self.d, "relevant": self.relevant,
                "noise": round(self.noise, 4), "kind": self.kind, "classes": self.classes, "rows": self.rows}


def draw(family: int, index: int) -> Task:
    """Task ``index`` of family ``family`` (module docstring)."""
    rng = np.random.default_rng([int(family), int(index), _TASK])
    d = int(round(math.exp(rng.uniform(math.log(4), math.log(60)))))
    relevant = max(1, int(round(rng.uniform(0.1, 1.0) * d)))
    noise = float(rng.uniform(0.0, 0.2))
    kind = KINDS[int(rng.integers(3))]
    classes = int(rng.integers(3, 9)) if kind == "multiclass" else None
    rows = int(round(math.exp(rng.uniform(math.log(1e4), math.log(1e6)))))
    return Task(int(family), int(index), d, relevant, noise, kind, classes, rows)


class _Shape:
    """A task's columns and signal: the column kinds, scales and shifts, the columns that matter, the network's
    weights, and the signal's standardizing constants."""

    def __init__(self, task: Task):
        rng = np.random.default_rng([task.family, task.index, _SHAPE])
        d, rel = task.d, task.relevant
        self.task = task
        self.kinds = rng.integers(0, 3, d)
        self.scale = np.exp(rng.uniform(-1.0, 2.0, d))
        self.shift = rng.normal(0.0, 3.0, d)
        self.which = np.sort(rng.permutation(d)[:rel])
        outputs = task.classes or 1
        self.W = rng.normal(0.0, 1.5 / math.sqrt(rel), (outputs, HIDDEN, rel))
        self.b = rng.normal(0.0, 0.5, (outputs, HIDDEN))
        self.a = rng.normal(0.0, 1.0, (outputs, HIDDEN))
        F = self.signal(self.latent(np.random.default_rng([task.family, task.index, _PILOT]), PILOT_ROWS))
        self.mean, self.std = F.mean(axis=0), F.std(axis=0) + 1e-12
        self.threshold = float(np.median((F[:, 0] - self.mean[0]) / self.std[0]))

    def latent(self, rng, n):
        Z = rng.standard_normal((n, self.task.d))
        uniform, skewed = self.kinds == 1, self.kinds == 2
        Z[:, uniform] = rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), (n, int(uniform.sum())))
        Z[:, skewed] = rng.exponential(1.0, (n, int(skewed.sum()))) - 1.0
        return Z

    def signal(self, Z):
        return np.stack([np.tanh(Z[:, self.which] @ self.W[o].T + self.b[o]) @ self.a[o]
                         for o in range(self.W.shape[0])], axis=1)

    def sample(self, rng, n):
        """``n`` rows (float32) and their labels or targets from ``rng``."""
        Z = self.latent(rng, n)
        F = (self.signal(Z) - self.mean) / self.std
        t = self.task
        if t.kind == "regression":
            y = F[:, 0] + 2.5 * t.noise * rng.standard_normal(n)
        elif t.kind == "binary":
            y = np.where(F[:, 0] > self.threshold, 1.0, 0.0)
            flip = rng.random(n) < t.noise
            y[flip] = 1.0 - y[flip]
        else:
            y = np.argmax(F, axis=1).astype(np.float64)
            move = rng.random(n) < t.noise
            y[move] = (y[move] + rng.integers(1, t.classes, int(move.sum()))) % t.classes
        return (Z * self.scale + self.shift).astype(np.float32), y


class TaskFamily(DatasetPreset):
    """Task ``index`` of the generated family ``family`` (module docstring): rows generated once into
    ``$KOPT_DATA/generated/`` and memory-mapped."""

    name = "task-family"
    task = "binary, multiclass or regression (drawn)"
    summary = ("a generated task drawn from a seeded family: 4-60 columns, 10-100% of them relevant, 0-20% label "
               "noise, binary, multiclass or regression (generated)")
    params = {
        "family": {"type": "integer", "minimum": 0, "default": 0, "description": "the family's seed"},
        "index": {"type": "integer", "minimum": 0, "default": 0, "description": "the task's index in the family"},
        "rows": {"type": ["integer", "null"], "minimum": 2, "maximum": 10_000_000, "default": None,
                 "description": "training rows (null: the task's own draw, 10^4 to 10^6)"},
        "test_rows": {"type": "integer", "minimum": 1, "maximum": 10_000_000, "default": 20_000,
                      "description": "test rows (the same whatever rows is)"},
    }

    def drawn(self) -> Task:
        task = draw(self.options.family, self.options.index)
        if self.options.rows is not None:
            task = Task(**{**task.__dict__, "rows": int(self.options.rows)})
        return task

    def layout(self):
        from kopt.data.generated import Layout

        t = self.drawn()
        key = {"generator": self.name, "version": VERSION, "family": t.family, "index": t.index,
               "test_rows": self.options.test_rows}
        return Layout(f"{self.name}-{t.family}-{t.index}", key, t.rows, t.d, "float32", CHUNK_ROWS,
                      info={"task": t.describe()})

    def generate(self, data_spec):
        from kopt.data import Dataset
        from kopt.data.generated import materialize

        t = self.drawn()
        shape = _Shape(t)

        def chunk(k, lo, hi):  # a whole chunk's draws, cut: the rows do not depend on how many are asked for
            X, y = shape.sample(np.random.default_rng([t.family, t.index, _TRAIN, k]), CHUNK_ROWS)
            return X[:hi - lo], y[:hi - lo]

        def test():
            return shape.sample(np.random.default_rng([t.family, t.index, _TEST]), self.options.test_rows)

        X, y, Xt, yt, where = materialize(self.layout(), chunk, test, progress=data_spec.get("progress"))
        info = {"train": f"task-family(family={t.family}, index={t.index}, rows={t.rows})",
                "test": f"{self.options.test_rows} generated test rows", "split": "generated", "task": t.describe(),
                "n_train": X.shape[0], "n_test": Xt.shape[0], "n_features": t.d,
                **{f"generated_{k}": v for k, v in where.items()}}
        return Dataset(X, y, Xt, yt, info=info)

    @classmethod
    def supports(cls):
        return "generator, binary / multiclass / regression, memory-mapped"
