"""Project Joker's CoCoA+ rounds to full HIGGS and to 100M rows from the measured ``dask_scale.json``.

    python docs/benchmarks/scale_projection.py [--measured docs/benchmarks/dask_scale.json]

Reads the per-round costs that ``dask_scale.py`` measured (its 1-worker run gives the per-row costs on
one core; its 1- and 2-worker runs give how the rounds grow with the number of workers) and prints the
table of docs/scale.md.  The model and its assumptions:

* one round costs T(W) = (e · c_solve + c_cert) · n / W + T_comm + T_sched, every worker on one core at
  the measured speed: c_solve is the local DBCD-TR cost per row visit (local solve seconds over
  e · n / W row visits, e = local epochs per round), c_cert the certificate's cost per row;
* T_comm: the round's payload (4 M-vectors of float64 per worker and output, ``bytes_per_round`` of
  the 1-worker run times W) through the client's link at ``--link-gbs`` GB/s;
* T_sched: ``--tasks-per-round`` tasks per partition at ``--tasks-per-s`` tasks a second of the scheduler;
* rounds: R(W) = R(1) · W^a, a = log2(R(2) / R(1)) from the two measured runs (CoCoA+'s σ' = W makes the
  rounds grow with W); in brackets the pessimistic R(1) · W (rounds linear in σ').  The rounds depend on
  λ_J = λn and on the data; the projection keeps the measured run's λ_J and local epochs;
* ``--features M``: the per-row costs and the payload scaled linearly from the measured run's M (the
  block's K_BB GEMM, the feature generation and the certificate's passes are all linear in M);
  ``--solve-us`` replaces the local solve's cost per row visit by another measurement (e.g. ``kopt bench
  joker``'s seconds per block over the block size).
"""
from __future__ import annotations

import argparse
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = (("full HIGGS, 8.8M training rows", 8_800_000), ("100M rows", 100_000_000))
WORKERS = (8, 32, 128)


def constants(measured, features=None):
    runs = {r["workers"]: r for r in measured["runs"]}
    one = runs[1]
    e = float(measured["args"]["local_epochs"])
    n = one["rows"]
    scale = 1.0 if features is None else features / measured["args"]["features"]
    c_solve = scale * one["local_solve_s"] / (e * n)
    c_cert = scale * one["certificate_s"] / n
    r1 = one["rounds"]
    a = math.log2(runs[2]["rounds"] / r1) if 2 in runs else 1.0
    return {"e": e, "c_solve": c_solve, "c_cert": c_cert, "r1": r1, "a": a,
            "bytes_per_worker": scale * one["bytes_per_round"], "features": features or measured["args"]["features"]}


def project(k, n, W, link_gbs, tasks_per_round, tasks_per_s):
    t_comm = k["bytes_per_worker"] * W / (link_gbs * 1e9)
    t_sched = tasks_per_round * W / tasks_per_s
    t_round = (k["e"] * k["c_solve"] + k["c_cert"]) * n / W + t_comm + t_sched
    rounds = k["r1"] * W ** k["a"]
    rounds_linear = k["r1"] * W
    return t_round, rounds, rounds_linear, t_comm, t_sched


def hours(s):
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    return f"{s / 60:.0f} min" if s >= 120 else f"{s:.0f} s"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--measured", default=os.path.join(HERE, "dask_scale.json"))
    p.add_argument("--link-gbs", type=float, default=1.25, help="the client's link, GB/s (10 GbE)")
    p.add_argument("--tasks-per-round", type=int, default=4)
    p.add_argument("--tasks-per-s", type=float, default=5000.0)
    p.add_argument("--features", type=int, help="project to M random features (default: the measured M)")
    p.add_argument("--solve-us", type=float,
                   help="use this local-solve cost per row visit (µs) instead of the scaled measured one")
    a = p.parse_args(argv)
    with open(a.measured, encoding="utf-8") as fh:
        measured = json.load(fh)
    k = constants(measured, a.features)
    if a.solve_us is not None:
        k["c_solve"] = a.solve_us * 1e-6
    print(f"M = {k['features']}: c_solve {k['c_solve'] * 1e6:.2f} us per row visit, c_cert {k['c_cert'] * 1e6:.2f} us per row, "
          f"{k['e']:g} local epochs per round, R(1) = {k['r1']}, rounds ~ W^{k['a']:.2f}, "
          f"{k['bytes_per_worker']:.0f} bytes per worker and round")
    print("| data | workers | s / round | of which communication + scheduling | rounds | time to a 1e-2 gap |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, n in TARGETS:
        for i, W in enumerate(WORKERS):
            t, r, rl, tc, ts = project(k, n, W, a.link_gbs, a.tasks_per_round, a.tasks_per_s)
            name = label if i == 0 else ""
            print(f"| {name} | {W} | {t:.2f} | {(tc + ts) * 1e3:.1f} ms | {r:.0f} ({rl:.0f}) | "
                  f"{hours(t * r)} ({hours(t * rl)}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
