"""kopt's defaults on a many-class set (docs/design/multiclass-pairs.md): no preset has
more than 10 classes, so a letter-like synthetic one -- scikit-learn's make_classification, 26 classes, 16 features,
16,000 training and 4,000 test rows, seed 0.

    for side in svc_c10 svc kopt kopt_ovr; do flock /tmp/kopt-cpu.lock python docs/benchmarks/many_classes.py $side; done
    python docs/benchmarks/many_classes.py pairs_nystrom 4000 1e-4 3.91   # krr_pairs on 4,000 of the rows as centers

One side per process (its peak RSS is its own): ``kopt`` is the spec naming only the loss and the kernel (auto: one-vs-one
on every row here); ``kopt_ovr`` the same with auto's one-vs-one rule turned off (the one-vs-rest ladder); ``svc_c10``
and ``svc`` are SVC(C=10) and SVC() on z-scored features; ``pairs_nystrom COUNT LAMBDA BANDWIDTH``: ``solver:
krr_pairs`` on ``features.count`` seeded rows as centers (each pair its own rows among them: Nyström pairs), at the λ
and bandwidth ``kopt`` chose (its line's ``lam`` and ``bandwidth``) -- what fewer centers than every row trade.  One
JSON line per side.
"""
import json
import resource
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification

X, y = make_classification(n_samples=20000, n_features=16, n_informative=12, n_redundant=2, n_classes=26,
                           n_clusters_per_class=2, class_sep=1.5, random_state=0)
X = X.astype(np.float32)
Xtr, ytr, Xte, yte = X[:16000], y[:16000], X[16000:], y[16000:]
side = sys.argv[1]
t = time.perf_counter()
if side.startswith("kopt") or side == "pairs_nystrom":
    import kopt
    spec = {"data": {"standardize": True}, "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "output": {"model": False, "report": False}}
    if side == "kopt_ovr":
        import kopt_plugins.auto.pairs as P
        P.affordable = lambda *a: False
    if side == "pairs_nystrom":
        count, lam, bandwidth = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
        spec["model"]["kernel"]["bandwidth"] = bandwidth
        spec["model"].update(regularizer={"name": "l2", "lambda": lam}, form="primal",
                             features={"kind": "nystrom", "count": count})
        spec["solver"] = {"name": "krr_pairs"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); r = kopt.solve(spec, data=(Xtr, ytr))
    acc = float(np.mean(r.model.predict(Xte) == yte)); fit = time.perf_counter() - t
    if side == "pairs_nystrom":
        extra = {"route": "krr_pairs", "centers": count, "lam": lam, "bandwidth": bandwidth}
    else:
        extra = {"route": r.auto["route"], "centers": r.auto["centers"], "lam": r.auto["lambda"],
                 "bandwidth": r.auto.get("bandwidth"), "search_s": round(r.auto["search_s"], 2)}
else:
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    sc = StandardScaler().fit(Xtr); m = SVC(C=10.0 if side == "svc_c10" else 1.0).fit(sc.transform(Xtr), ytr)
    fit = time.perf_counter() - t; acc = float(np.mean(m.predict(sc.transform(Xte)) == yte)); extra = {}
peak_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
from kopt.cli.bench.roofline import run_record  # noqa: E402  (after the peak is read: the SVC sides' peak is SVC's)

print(json.dumps({"side": side, "acc": round(acc, 4), "fit_s": round(fit, 2), "peak_mb": peak_mb, **extra,
                  **run_record()}), flush=True)
