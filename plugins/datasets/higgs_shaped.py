"""HIGGS-shaped rows with a known best-possible accuracy: 28 float32 features, labels 0/1, up to 10^7 rows.

The features are independent standard normals.  The first ``relevant`` columns, z_1 .. z_k, decide
the class through

    f(z) = sum_{i=1..k} sin(1.5 z_i + z_{i+1})        (z_{k+1} is z_1),

the clean label is 1 when f(z) > 0 and 0 otherwise, and each label is then flipped with probability
``noise``, independently of the features.  f is odd in z, so the classes are balanced, and f(z) = 0
has probability zero, so the best any classifier can do -- the Bayes accuracy -- is exactly
1 - noise (90% by default): the noise-free rule 1[f(z) > 0] reaches it, and no rule can beat it,
because a flipped label is independent of x.  The other 28 - k columns are pure noise.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.components import DatasetPreset

N_FEATURES = 28
#: rows per generated chunk (part of the content's key: chunk k's rows depend on k alone)
CHUNK_ROWS = 1 << 18
VERSION = 1
_TRAIN, _TEST = 1, 2


def decision(X, relevant=6):
    """The noise-free decision function f(z) on the first ``relevant`` columns of ``X`` (float64)."""
    z = np.asarray(X[:, :relevant], dtype=np.float64)
    return np.sin(1.5 * z + np.roll(z, -1, axis=1)).sum(axis=1)


def bayes_accuracy(noise) -> float:
    """The best accuracy any classifier reaches on these rows: 1 - noise."""
    return 1.0 - float(noise)


def sample(rng, n, relevant, noise):
    """``n`` rows and their labels from ``rng``."""
    X = rng.standard_normal((n, N_FEATURES), dtype=np.float32)
    clean = decision(X, relevant) > 0
    flip = rng.random(n) < noise
    return X, (clean ^ flip).astype(np.float64)


class HiggsShaped(DatasetPreset):
    """28-feature binary rows (labels 0/1, as UCI HIGGS) with an exact best-possible accuracy of 1 - noise.

    ``rows`` training rows (up to 10,000,000) and ``test_rows`` test rows (a separate seeded stream: the
    same test rows whatever ``rows``), generated once into ``$KOPT_DATA/generated/`` and memory-mapped
    (kopt/data/generated.py); the decision function is in this module's docstring and ``decision``.
    """

    name = "higgs-shaped"
    task = "binary"
    summary = "HIGGS-shaped synthetic rows (28 features, 0/1) with an exact Bayes accuracy of 1 - noise (generated)"
    params = {
        "rows": {"type": "integer", "minimum": 2, "maximum": 10_000_000, "default": 100_000,
                 "description": "training rows (up to 10^7), generated once and memory-mapped"},
        "test_rows": {"type": "integer", "minimum": 1, "maximum": 10_000_000, "default": 100_000,
                      "description": "test rows (the same whatever rows is)"},
        "relevant": {"type": "integer", "minimum": 2, "maximum": N_FEATURES, "default": 6,
                     "description": "columns that decide the class (the first ones; the rest are noise)"},
        "noise": {"type": "number", "minimum": 0, "maximum": 0.49, "default": 0.1,
                  "description": "probability that a label is flipped; the Bayes accuracy is 1 - noise"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "the generator's seed"},
    }

    def layout(self):
        from kopt.data.generated import Layout

        o = self.options
        key = {"generator": "higgs-shaped", "version": VERSION, "seed": o.seed, "relevant": o.relevant,
               "noise": o.noise, "test_rows": o.test_rows}
        return Layout(self.name, key, o.rows, N_FEATURES, "float32", CHUNK_ROWS,
                      info={"bayes_accuracy": bayes_accuracy(o.noise)})

    def generate(self, data_spec):
        from kopt.data import Dataset
        from kopt.data.generated import materialize

        o = self.options

        def chunk(k, lo, hi):
            return sample(np.random.default_rng([o.seed, _TRAIN, k]), hi - lo, o.relevant, o.noise)

        def test():
            return sample(np.random.default_rng([o.seed, _TEST]), o.test_rows, o.relevant, o.noise)

        X, y, Xt, yt, where = materialize(self.layout(), chunk, test, progress=data_spec.get("progress"))
        info = {"train": f"higgs-shaped(rows={o.rows}, relevant={o.relevant}, noise={o.noise}, seed={o.seed})",
                "test": f"{o.test_rows} generated test rows", "split": "generated",
                "bayes_accuracy": bayes_accuracy(o.noise), "n_train": X.shape[0], "n_test": Xt.shape[0],
                "n_features": N_FEATURES, **{f"generated_{k}": v for k, v in where.items()}}
        return Dataset(X, y, Xt, yt, info=info)

    @classmethod
    def supports(cls):
        return "generator, binary, memory-mapped"
