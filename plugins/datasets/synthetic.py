"""The 2-D synthetic regression set of papers/001 Sec. 7.1 (DSG convergence, GP variance)."""
from __future__ import annotations

import numpy as np

from kopt.components import DatasetPreset


def dai_target(X):
    """The noise-free regression function f(x) = cos(0.5π‖x‖) exp(−0.1π‖x‖)."""
    r = np.sqrt((np.asarray(X, dtype=np.float64) ** 2).sum(axis=1))
    return np.cos(0.5 * np.pi * r) * np.exp(-0.1 * np.pi * r)


def dai_sample(n, seed, noise=0.1):
    """``n`` points x ~ U[−5, 5]², y = f(x) + noise·e, e ~ N(0, 1)."""
    rng = np.random.default_rng([int(seed), 0x7379])
    X = rng.uniform(-5.0, 5.0, size=(n, 2))
    y = dai_target(X) + noise * rng.standard_normal(n)
    return X, y


class DaiSynthetic(DatasetPreset):
    """y = cos(0.5π‖x‖) exp(−0.1π‖x‖) + noise·e, x uniform in [−5, 5]² (papers/001 Sec. 7.1)."""

    name = "dai_synthetic"
    summary = "2-D synthetic regression of papers/001 Sec. 7.1 (generated, seeded)"
    params = {
        "n_train": {"type": "integer", "minimum": 1, "default": 65536},
        "n_test": {"type": "integer", "minimum": 0, "default": 4096},
        "noise": {"type": "number", "minimum": 0, "default": 0.1},
    }

    def generate(self, data_spec):
        from kopt.data import Dataset

        o = self.options
        seed = data_spec.get("split_seed", 0)
        X, y = dai_sample(o.n_train + o.n_test, seed, o.noise)
        n = o.n_train
        return Dataset(X[:n].astype(np.float32), y[:n], X[n:].astype(np.float32) if o.n_test else None,
                       y[n:] if o.n_test else None, info={"train": f"dai_synthetic(n_train={n})", "test": None})

    @classmethod
    def supports(cls):
        return "generator, regression"
