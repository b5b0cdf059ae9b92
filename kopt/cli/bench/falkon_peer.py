"""Falkon as a peer of ``kopt bench family``: one task's fit in a process of its own, run by the interpreter Falkon is
installed in (``--falkon-python``), on the rows the parent wrote as ``.npy`` files.

This file imports NumPy, torch and Falkon only (never kopt), so it runs in Falkon's own environment.  The rows are
given to Falkon as a scikit-learn user would: z-scored with the training rows' statistics; targets ±1 (binary), one
column of ±1 per class (multiclass) or the real target (regression).  Configurations:

* ``falkon``: Falkon at M = 4,096 centers, its kernel blocks held to 100 MB, penalty 1e-6, 20 CG iterations, at σ
  of scikit-learn's ``gamma="scale"`` times 0.5, 1 and 2, each its own fit; the line is the best σ's by test score
  (σ picked by hand, with the test rows' help), with every σ's score and fit;
* ``falkon_hopt``: Falkon's own hyperparameter optimiser (``falkon.hopt``: ``NystromCompReg`` on 20,000 seeded
  rows, :data:`HOPT_CENTERS` centers, 50 epochs of Adam at lr 0.1 over a σ per column, the penalty and the centers),
  then Falkon at M = 4,096 on every row with the σ and penalty it found; the tuning seconds beside the fit's.

    python falkon_peer.py --data DIR --config falkon --kind binary

prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time

import numpy as np

CENTERS = 4096
MEMORY = 1e8
PENALTY = 1e-6
ITERATIONS = 20
SIGMAS = (0.5, 1.0, 2.0)
HOPT_ROWS = 20_000
HOPT_CENTERS = 1024
HOPT_EPOCHS = 50
HOPT_LR = 0.1
HOPT_PENALTY = 1e-4


def _rows(folder):
    X, Xt = np.load(f"{folder}/X.npy", mmap_mode="r"), np.load(f"{folder}/Xt.npy", mmap_mode="r")
    y, yt = np.load(f"{folder}/y.npy"), np.load(f"{folder}/yt.npy")
    mean = np.asarray(X.mean(axis=0, dtype=np.float64))
    std = np.asarray(X.std(axis=0, dtype=np.float64)) + 1e-12
    return ((np.asarray(X) - mean) / std).astype(np.float32), y, ((np.asarray(Xt) - mean) / std).astype(np.float32), yt


def _targets(y, kind, classes):
    if kind == "regression":
        return y.astype(np.float32)[:, None]
    if kind == "binary":
        return np.where(y == classes[-1], 1.0, -1.0).astype(np.float32)[:, None]
    return np.where(y[:, None] == classes[None, :], 1.0, -1.0).astype(np.float32)


def _score(scores, yt, kind, classes):
    """Test accuracy, or RMSE for a real target."""
    if kind == "regression":
        return {"rmse": float(np.sqrt(np.mean((scores[:, 0] - yt) ** 2)))}
    pred = np.where(scores[:, 0] > 0, classes[-1], classes[0]) if kind == "binary" else classes[np.argmax(scores, 1)]
    return {"accuracy": float(np.mean(pred == yt))}


def _better(a, b):
    return a.get("accuracy", -a.get("rmse", math.inf)) > b.get("accuracy", -b.get("rmse", math.inf))


def _fit(X, Y, Xt, sigma, penalty, options):
    import torch
    from falkon import Falkon
    from falkon.kernels import GaussianKernel

    kernel = GaussianKernel(sigma=torch.as_tensor(sigma, dtype=torch.float32) if np.ndim(sigma) else float(sigma))
    model = Falkon(kernel=kernel, penalty=float(penalty), M=min(CENTERS, X.shape[0]), maxiter=ITERATIONS, seed=0,
                   options=options)
    t0 = time.perf_counter()
    model.fit(torch.from_numpy(X), torch.from_numpy(Y))
    fit_s = time.perf_counter() - t0
    return fit_s, model.predict(torch.from_numpy(Xt)).numpy()


def falkon(X, y, Xt, yt, kind, options):
    classes = np.unique(y) if kind != "regression" else None
    Y = _targets(y, kind, classes)
    base = math.sqrt(X.shape[1] / 2.0)  # gamma="scale" on z-scored rows: 1 / (d var) = 1 / d
    fits = []
    for f in SIGMAS:
        fit_s, scores = _fit(X, Y, Xt, base * f, PENALTY, options)
        fits.append({"sigma_factor": f, "fit_s": fit_s, **_score(scores, yt, kind, classes)})
    best = fits[0]
    for fit in fits[1:]:
        if _better(fit, best):
            best = fit
    return {**best, "grid": fits, "grid_fit_s": sum(f["fit_s"] for f in fits),
            "detail": f"Falkon(M={CENTERS}, penalty {PENALTY:g}, {ITERATIONS} iterations, 100 MB blocks), the best of "
                      f"sigma x{', x'.join(f'{f:g}' for f in SIGMAS)} of the scale rule by test score"}


def falkon_hopt(X, y, Xt, yt, kind, options, sigma0=None):
    """Falkon tuned by ``falkon.hopt`` on :data:`HOPT_ROWS` seeded rows, then fit on every row; ``sigma0``: the σ
    every column starts from (None: the scale rule's on z-scored rows, √(d / 2))."""
    import torch
    from falkon.hopt.objectives import NystromCompReg
    from falkon.kernels import GaussianKernel

    classes = np.unique(y) if kind != "regression" else None
    Y = _targets(y, kind, classes)
    rng = np.random.default_rng(0)
    sub = np.sort(rng.choice(X.shape[0], size=min(HOPT_ROWS, X.shape[0]), replace=False))
    Xs, Ys = torch.from_numpy(X[sub]), torch.from_numpy(Y[sub])
    t0 = time.perf_counter()
    start = math.sqrt(X.shape[1] / 2.0) if sigma0 is None else float(sigma0)
    sigma = torch.full((X.shape[1],), start, dtype=torch.float32).requires_grad_()
    centers = Xs[rng.choice(Xs.shape[0], size=min(HOPT_CENTERS, Xs.shape[0]), replace=False)].clone()
    model = NystromCompReg(kernel=GaussianKernel(sigma=sigma, opt=options), centers_init=centers,
                           penalty_init=torch.tensor(HOPT_PENALTY, dtype=torch.float32), opt_penalty=True,
                           opt_centers=True)
    adam = torch.optim.Adam(model.parameters(), lr=HOPT_LR)
    for _ in range(HOPT_EPOCHS):
        adam.zero_grad()
        loss = model(Xs, Ys)
        loss.backward()
        adam.step()
    tune_s = time.perf_counter() - t0
    tuned_sigma = model.kernel.sigma.detach().numpy().astype(np.float32)
    penalty = float(model.penalty.detach())
    fit_s, scores = _fit(X, Y, Xt, tuned_sigma, penalty, options)
    return {"fit_s": fit_s, "tune_s": tune_s, **_score(scores, yt, kind, classes), "penalty": penalty,
            "sigma": [round(float(s), 4) for s in tuned_sigma],
            "detail": f"falkon.hopt NystromCompReg ({min(HOPT_ROWS, X.shape[0])} rows, {HOPT_CENTERS} centers, "
                      f"{HOPT_EPOCHS} epochs of Adam: a sigma per column, the penalty, the centers), then "
                      f"Falkon(M={CENTERS}) on every row"}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="falkon_peer.py")
    ap.add_argument("--data", required=True)
    ap.add_argument("--config", choices=("falkon", "falkon_hopt"), required=True)
    ap.add_argument("--kind", choices=("binary", "multiclass", "regression"), required=True)
    a = ap.parse_args(argv)
    import torch
    from falkon import FalkonOptions

    X, y, Xt, yt = _rows(a.data)
    options = FalkonOptions(use_cpu=True, keops_active="no", max_cpu_mem=MEMORY)
    out = (falkon if a.config == "falkon" else falkon_hopt)(X, y, Xt, yt, a.kind, options)
    built = [line.strip(" -") for line in torch.__config__.show().splitlines()]
    blas = next((line for line in built if "Math Kernel Library" in line or "OpenBLAS" in line), None)
    out.update(status="ok", peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
               peer_library={"torch": torch.__version__, "blas": blas, "threads": int(torch.get_num_threads())})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
