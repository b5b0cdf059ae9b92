# GridSearchCV over a kopt classifier on ijcnn1, next to the scikit-learn estimator it replaces (SVC).
# docs/sklearn.md shows this file verbatim (tests/docs/test_sklearn_docs.py checks that they agree).
# Run from the repository root:  python docs/benchmarks/sklearn_gridsearch.py
import os
import time

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kopt.sklearn import KernelClassifier

DATA = os.environ.get("KOPT_SHARED_DATA", "data")  # a folder holding the LIBSVM ijcnn1 files
X, y = load_svmlight_file(f"{DATA}/ijcnn1_trval.libsvm.bz2", n_features=22)
X_test, y_test = load_svmlight_file(f"{DATA}/ijcnn1_test.libsvm.bz2", n_features=22)
rows = np.random.default_rng(0).choice(X.shape[0], 10_000, replace=False)  # a subsample: minutes, not hours
X, y, X_test = X[rows].toarray(), y[rows], X_test.toarray()

lams, bandwidths = [1e-5, 1e-4, 1e-3], [0.5, 1.0, 2.0]
n_fit = len(y) - len(y) // 3  # rows one cv=3 fold trains on: SVC's C = 1/(λ n), gamma = 1/(2 bandwidth²)
searches = {
    "kopt KernelClassifier(squared_hinge, joker)": GridSearchCV(
        KernelClassifier(loss="squared_hinge", kernel="gaussian", solver="joker", random_state=0,
                         solver_options={"mode": "exact"}),  # the exact kernel in the folds and the refit alike
        {"lam": lams, "bandwidth": bandwidths}, cv=3, n_jobs=2),
    "sklearn StandardScaler + SVC(rbf)": GridSearchCV(
        make_pipeline(StandardScaler(), SVC(kernel="rbf")),
        {"svc__C": [1 / (lam * n_fit) for lam in lams], "svc__gamma": [1 / (2 * s**2) for s in bandwidths]},
        cv=3, n_jobs=2),
}
for name, search in searches.items():
    t0 = time.perf_counter()
    search.fit(X, y)
    t1 = time.perf_counter()
    accuracy = search.score(X_test, y_test)
    t2 = time.perf_counter()
    print(f"{name}: grid of {len(search.cv_results_['params'])} x 3 folds + refit {t1 - t0:.1f} s "
          f"(refit {search.refit_time_:.1f} s); best {search.best_params_}, cv accuracy {search.best_score_:.4f}; "
          f"test accuracy {accuracy:.4f} on {len(y_test)} rows, predicted in {t2 - t1:.1f} s")
