"""Each kopt estimator next to the scikit-learn estimator it replaces, on the same real rows and parameters.

The pairs are the mappings of docs/sklearn.md (λ = 1/(C n), bandwidth = 1/√(2 gamma), alpha = λ n,
GP alpha = noise_variance): SVC / KernelClassifier(hinge), KernelRidge / KernelRegressor(square,
krr_exact and joker), SVR / KernelRegressor(epsilon_insensitive), RBFSampler + LogisticRegression /
KernelClassifier(logistic, random features), GaussianProcessRegressor / GPRegressor.  Data: ijcnn1
(a seeded 5,000-row training subsample, 20,000 seeded test rows; features z-scored with the subsample's
statistics on both sides) and cal_housing (a seeded 5,000 / 5,000 split of the 20,640 rows; features and
target z-scored with training statistics).  One fit each, timed on the shared 2-core machine.

    python docs/benchmarks/sklearn_peers.py            # writes sklearn_peers.json here
"""
from __future__ import annotations

import json
import lzma
import os
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("KOPT_SHARED_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))


def ijcnn1(n_train=5000, n_test=20000):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(f"{DATA}/ijcnn1_trval.libsvm.bz2", n_features=22)
    Xt, yt = load_svmlight_file(f"{DATA}/ijcnn1_test.libsvm.bz2", n_features=22)
    rng = np.random.default_rng(0)
    tr, te = rng.choice(X.shape[0], n_train, replace=False), rng.choice(Xt.shape[0], n_test, replace=False)
    X, y, Xt, yt = X[tr].toarray(), y[tr], Xt[te].toarray(), yt[te]
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1
    return (X - mu) / sd, y, (Xt - mu) / sd, yt


def cal_housing(n_train=5000, n_test=5000):
    with lzma.open(f"{DATA}/cal_housing.data.xz", "rt") as fh:
        A = np.loadtxt(fh, delimiter=",")
    perm = np.random.default_rng(0).permutation(len(A))
    tr, te = A[perm[:n_train]], A[perm[n_train:n_train + n_test]]
    mu, sd = tr.mean(0), tr.std(0)
    tr, te = (tr - mu) / sd, (te - mu) / sd
    return tr[:, :-1], tr[:, -1], te[:, :-1], te[:, -1]


def timed(est, X, y, Xt, yt, **predict):
    t0 = time.perf_counter()
    est.fit(X, y)
    t1 = time.perf_counter()
    pred = est.predict(Xt, **predict)
    t2 = time.perf_counter()
    return est, pred, t1 - t0, t2 - t1


def main():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, r2_score
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, SVR

    from kopt.cli.bench.roofline import run_record
    from kopt.sklearn import GPRegressor, KernelClassifier, KernelRegressor

    warnings.simplefilter("ignore")
    rows = []

    def record(task, kopt_name, peer_name, kopt_run, peer_run, yt, params):
        (_, pk, fk, tk), (_, pp, fp, tp) = kopt_run, peer_run
        score = accuracy_score if task == "ijcnn1" else r2_score
        agree = float(np.mean(pk == pp)) if task == "ijcnn1" else float(np.linalg.norm(pk - pp) / np.linalg.norm(pp))
        row = {"data": task, "kopt": kopt_name, "peer": peer_name, "params": params,
               "kopt_score": score(yt, pk), "peer_score": score(yt, pp), "kopt_fit_s": fk, "peer_fit_s": fp,
               "kopt_predict_s": tk, "peer_predict_s": tp,
               ("same_label_fraction" if task == "ijcnn1" else "relative_prediction_difference"): agree}
        rows.append(row)
        print(json.dumps(row))

    X, y, Xt, yt = ijcnn1()
    n, lam, sigma = len(y), 1e-4, 1.0
    gamma = 1 / (2 * sigma**2)
    common = dict(bandwidth=sigma, lam=lam, standardize=False, random_state=0)
    record("ijcnn1", "KernelClassifier(loss='hinge', solver='joker', mode exact)", "SVC(C=1/(λn), gamma)",
           timed(KernelClassifier(loss="hinge", solver_options={"mode": "exact"}, **common), X, y, Xt, yt),
           timed(SVC(C=1 / (lam * n), gamma=gamma), X, y, Xt, yt), yt, {"lambda": lam, "bandwidth": sigma, "n": n})
    # random features: a wider kernel (1024 features cannot resolve σ = 1 on 22 z-scored inputs) and no
    # intercept on either side (kopt's models have none; LogisticRegression's would be unpenalised)
    M, lam_rf, sigma_rf = 1024, 1e-5, 4.0
    record("ijcnn1", f"KernelClassifier(loss='logistic', features={{'count': {M}}}, joker primal)",
           f"RBFSampler(gamma, n_components={M}) + LogisticRegression(C=1/(λn), fit_intercept=False)",
           timed(KernelClassifier(loss="logistic", features={"count": M}, solver_options={"mode": "primal"},
                                  bandwidth=sigma_rf, lam=lam_rf, standardize=False, random_state=0), X, y, Xt, yt),
           timed(make_pipeline(RBFSampler(gamma=1 / (2 * sigma_rf**2), n_components=M, random_state=0),
                               LogisticRegression(C=1 / (lam_rf * n), fit_intercept=False, max_iter=2000)),
                 X, y, Xt, yt),
           yt, {"lambda": lam_rf, "bandwidth": sigma_rf, "n": n, "features": M})

    X, y, Xt, yt = cal_housing()
    n, lam, sigma = len(y), 1e-4, 1.0
    gamma = 1 / (2 * sigma**2)
    common = dict(bandwidth=sigma, lam=lam, standardize=False, random_state=0)
    kr = timed(KernelRidge(alpha=lam * n, kernel="rbf", gamma=gamma), X, y, Xt, yt)
    record("cal_housing", "KernelRegressor(solver='krr_exact')", "KernelRidge(alpha=λn, kernel='rbf', gamma)",
           timed(KernelRegressor(solver="krr_exact", features={"dtype": "float64"}, **common), X, y, Xt, yt), kr, yt,
           {"lambda": lam, "bandwidth": sigma, "n": n})
    record("cal_housing", "KernelRegressor(solver='joker', mode exact, tol 1e-4)", "KernelRidge(alpha=λn, kernel='rbf', gamma)",
           timed(KernelRegressor(solver_options={"mode": "exact", "tol": 1e-4}, **common), X, y, Xt, yt), kr, yt,
           {"lambda": lam, "bandwidth": sigma, "n": n})
    eps = 0.1
    record("cal_housing", f"KernelRegressor(loss='epsilon_insensitive', epsilon={eps}, joker exact)",
           f"SVR(C=1/(λn), epsilon={eps}, gamma)",
           timed(KernelRegressor(loss="epsilon_insensitive", loss_options={"epsilon": eps},
                                 solver_options={"mode": "exact"}, **common), X, y, Xt, yt),
           timed(SVR(C=1 / (lam * n), epsilon=eps, gamma=gamma), X, y, Xt, yt), yt,
           {"lambda": lam, "bandwidth": sigma, "n": n, "epsilon": eps})
    m, s2 = 2000, 0.2
    gp_kopt = timed(GPRegressor(bandwidth=sigma, noise_variance=s2, standardize=False, standardize_target=False,
                                iterations=300, batch_size=32, random_state=0), X[:m], y[:m], Xt, yt, return_std=True)
    gp_peer = timed(GaussianProcessRegressor(RBF(sigma), alpha=s2, optimizer=None), X[:m], y[:m], Xt, yt,
                    return_std=True)
    (_, (mk, sk), fk, tk), (_, (mp, sp_), fp, tp) = gp_kopt, gp_peer
    row = {"data": "cal_housing", "kopt": "GPRegressor(iterations=300, batch_size=32, variance='operator')",
           "peer": "GaussianProcessRegressor(RBF(bandwidth), alpha=noise_variance, optimizer=None)",
           "params": {"noise_variance": s2, "bandwidth": sigma, "n": m},
           "kopt_score": r2_score(yt, mk), "peer_score": r2_score(yt, mp), "kopt_fit_s": fk, "peer_fit_s": fp,
           "kopt_predict_s": tk, "peer_predict_s": tp,
           "relative_prediction_difference": float(np.linalg.norm(mk - mp) / np.linalg.norm(mp)),
           "relative_std_difference": float(np.linalg.norm(sk - sp_) / np.linalg.norm(sp_))}
    rows.append(row)
    print(json.dumps(row))
    with open(os.path.join(HERE, "sklearn_peers.json"), "w", encoding="utf-8") as fh:
        json.dump({"rows": rows, **run_record()}, fh, indent=2)


if __name__ == "__main__":
    main()
