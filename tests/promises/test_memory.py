"""Memory said before it is spent: solvers' memory plans checked against the memory available, and out of memory
reported as the user's error (exit status 2, with the numbers), never as a bug.

The end-to-end cases run ``kopt`` in a child process under an address-space limit (``RLIMIT_AS``, what ``ulimit -v``
sets), standing in for a small machine or a container's limit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kopt
from kopt.cli import main
from kopt.errors import KoptError, MemoryLimitError, OutOfMemoryError
from kopt.numerics import memory

GIB = 2 ** 30
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _csv(path, n=10000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", fmt="%.6g")
    return path


def _spec(tmp_path, count=256, solver="krr_nystrom", extra=""):
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(f"""\
        name: m
        data: {{train: {tmp_path / 'train.csv'}, test_fraction: 0.2}}
        model:
          loss: {{name: square}}
          kernel: {{name: gaussian, bandwidth: 2.0}}
          regularizer: {{name: l2, lambda: 1.0e-4}}
          features: {{kind: nystrom, count: {count}}}
        solver: {{name: {solver}}}
        output: {{dir: {tmp_path / 'out'}, plot: false}}
        """) + extra)
    return spec


def run_limited(argv, tmp_path, headroom_mb=700, before=""):
    """``kopt ARGV`` in a child Python whose address space may grow ``headroom_mb`` beyond what it maps once kopt,
    NumPy, SciPy and the plugins are loaded; ``before``: Python run first (a fault to inject).  Returns
    ``(exit status, stderr)``."""
    code = textwrap.dedent("""\
        import resource, sys
        import numpy as np, psutil
        import kopt.api, kopt.cli
        from kopt.contract.registry import registry
        registry()
        import kopt_plugins.krr_nystrom.solver, kopt.nystrom.system, scipy.linalg
        """) + textwrap.dedent(before) + textwrap.dedent(f"""\
        vms = psutil.Process().memory_info().vms
        resource.setrlimit(resource.RLIMIT_AS, (vms + {headroom_mb} * 2**20, resource.RLIM_INFINITY))
        sys.exit(kopt.cli.main({argv!r}))
        """)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "KOPT_THREADS": "1",
           "KOPT_OFFLINE": "1", "KOPT_DATA": str(tmp_path / "kopt-data")}
    env.pop("KOPT_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    return done.returncode, done.stderr


def _one_error_line(status, err, *phrases, said=()):
    """One ``kopt: error:`` line and exit status 2; ``said``: info lines that may come before it."""
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("kopt: warning:")
             and not any(ln.startswith(f"kopt: {s}") for s in said)]
    assert status == 2, err
    assert "internal error" not in err and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("kopt: error: "), err
    for phrase in phrases:
        assert phrase in err, f"{phrase!r} not in {err!r}"
    return lines[0]


# -- under an address-space limit, in a child process ------------------------------------------------------------

@pytest.mark.slow
def test_a_plan_that_does_not_fit_is_refused_with_its_numbers(tmp_path):
    _csv(tmp_path / "train.csv", n=12000)  # 9,600 training rows: 8,192 of them may be centers
    status, err = run_limited(["solve", str(_spec(tmp_path, count=8192)), "--quiet"], tmp_path)
    line = _one_error_line(status, err, "model.features.count 8,192", "8,192 x 8,192 float64", "available",
                           "address-space limit", "at most ~", "centers fit", "lower model.features.count")
    # the most that fits is a number below the count asked for
    most = int(line.split("at most ~")[1].split()[0].replace(",", ""))
    assert 256 < most < 8192
    assert not (tmp_path / "out" / "model.json").exists()


@pytest.mark.slow
def test_a_spec_that_fits_runs_as_before_under_the_limit(tmp_path):
    _csv(tmp_path / "train.csv")
    status, err = run_limited(["solve", str(_spec(tmp_path, count=256)), "--quiet"], tmp_path)
    assert status == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    plan = report["memory"]["plan"]
    assert plan["bytes"] == sum(b for _, b in plan["items"]) > 2 * 256 * 256 * 8


@pytest.mark.slow
def test_a_memory_error_inside_a_solver_is_exit_2_with_the_size(tmp_path):
    _csv(tmp_path / "train.csv", n=2000)
    inject = """\
        from kopt_plugins.krr_nystrom.solver import NystromKRR
        def step(self, state, t):
            np.ones((30000, 30000))  # 6.7 GiB: beyond the limit
        NystromKRR.step = step
        """
    status, err = run_limited(["solve", str(_spec(tmp_path)), "--quiet"], tmp_path, before=inject)
    _one_error_line(status, err, "out of memory", "solver 'krr_nystrom'", "6.71 GiB", "(30000, 30000)", "available")


@pytest.mark.slow
def test_a_memory_error_while_parsing_is_exit_2(tmp_path):
    _csv(tmp_path / "train.csv", n=200)
    inject = """\
        import kopt.data.readers as readers
        def read_csv(*args, **kwargs):
            np.ones((40000, 40000), dtype=np.float32)
        readers.read_csv = read_csv
        """
    status, err = run_limited(["solve", str(_spec(tmp_path, count=16)), "--quiet"], tmp_path, before=inject)
    _one_error_line(status, err, "out of memory while reading and preparing the data of m", "5.96 GiB")


@pytest.mark.slow
def test_a_memory_error_while_predicting_is_exit_2(tmp_path):
    _csv(tmp_path / "train.csv", n=300)
    spec = _spec(tmp_path, count=32)
    assert main(["solve", str(spec), "--quiet"]) == 0
    inject = """\
        from kopt.models.predictors import KernelExpansion
        scores = KernelExpansion.decision_function
        def decision_function(self, X, context):
            if X.shape[0] > 1:  # the model's load-time check scores one row
                np.ones((50000, 50000))
            return scores(self, X, context)
        KernelExpansion.decision_function = decision_function
        """
    status, err = run_limited(["predict", str(tmp_path / "out" / "model.json"), str(tmp_path / "train.csv"),
                               "--out", str(tmp_path / "p.csv")], tmp_path, before=inject)
    _one_error_line(status, err, "out of memory while scoring 300 rows with the model", "18.6 GiB",
                    said=(str(tmp_path / "train.csv"),))


# -- in this process ---------------------------------------------------------------------------------------------

def test_the_error_classes_are_kopt_errors_and_memory_errors():
    for cls in (OutOfMemoryError, MemoryLimitError):
        assert issubclass(cls, KoptError) and issubclass(cls, MemoryError) and cls.exit_status == 2
    assert kopt.numerics.memory.MemoryLimitError is MemoryLimitError


def test_from_python_the_refusal_is_caught_as_memory_error(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 40 * 2**20)
    X = np.random.default_rng(0).standard_normal((3000, 3))
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"kind": "nystrom", "count": 2048}},
            "solver": {"name": "krr_nystrom"}, "output": {"model": False, "report": False}}
    with pytest.raises(MemoryError) as caught:
        kopt.solve(spec, data=(X, X[:, 0]))
    assert isinstance(caught.value, MemoryLimitError) and "at most ~" in str(caught.value)
    spec["model"]["features"]["count"] = 64
    assert kopt.solve(spec, data=(X, X[:, 0])).success


def test_a_memory_error_in_a_check_writes_the_checkpoint_due_first(tmp_path, monkeypatch):
    from kopt_plugins.krr_nystrom.solver import NystromKRR

    def check(self, state, rows):
        raise MemoryError("Unable to allocate 1.00 TiB for an array with shape (1, 1) and data type float64")

    monkeypatch.setattr(NystromKRR, "check", check)
    X = np.random.default_rng(0).standard_normal((500, 3))
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"kind": "nystrom", "count": 32}},
            "solver": {"name": "krr_nystrom"},
            "output": {"dir": str(tmp_path / "out"), "model": False, "report": False, "checkpoint_every": 1}}
    with pytest.raises(OutOfMemoryError, match="1.00 TiB"):
        kopt.solve(spec, data=(X, X[:, 0]))
    assert (tmp_path / "out" / "checkpoint.json").exists()
    assert json.loads((tmp_path / "out" / "checkpoint.json").read_text())["iteration"] == 1


def test_largest_fitting_is_the_most_the_plan_fits():
    class Toy(kopt.contract.components.Solver):
        name = "toy"
        memory_key = "model.features.count"

        def memory_plan(self, sizes):
            return [memory.matrices(3, sizes.count, sizes.count, "float64")]

    sizes = memory.Sizes(n=100, d=3, count=16384)
    have = 1400 * 10**6
    most = memory.largest_fitting(Toy(), sizes, have)
    assert 24 * most ** 2 <= have < 24 * (most + 1) ** 2
    line = memory.refusal(Toy(), sizes, memory.plan_of(Toy(), sizes), have)
    assert line.startswith("model.features.count 16,384 (toy) needs 6 GiB in three 16,384 x 16,384 float64")
    assert f"at most ~{memory._round_down(most):,} features fit: lower model.features.count" in line
    assert memory.check_plan(Toy(), sizes.replace(count=10), have)


def test_a_solver_that_declares_nothing_is_not_checked(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 0)
    assert memory.check_plan(kopt.contract.components.Solver(), memory.Sizes(n=10, d=2, count=4)) == []


def test_a_malformed_plan_is_named():
    class Bad(kopt.contract.components.Solver):
        name = "bad"

        def memory_plan(self, sizes):
            return [("x", -1)]

    with pytest.raises(KoptError, match="solver 'bad': memory_plan"):
        memory.plan_of(Bad(), memory.Sizes(n=10, d=2, count=4))


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_cgroup_limit_less_its_usage_is_available(tmp_path, version):
    root = tmp_path / "cgroup"
    if version == "v2":
        folder = root / "job" / "step"
        folder.mkdir(parents=True)
        (root / "job" / "memory.max").write_text("1073741824\n")
        (root / "job" / "memory.current").write_text("536870912\n")
        (root / "job" / "memory.stat").write_text("anon 1\ninactive_file 104857600\n")
        (folder / "memory.max").write_text("max\n")
        (tmp_path / "proc").write_text("0::/job/step\n")
    else:
        folder = root / "memory" / "job"
        folder.mkdir(parents=True)
        (folder / "memory.limit_in_bytes").write_text("1073741824\n")
        (folder / "memory.usage_in_bytes").write_text("536870912\n")
        (folder / "memory.stat").write_text("cache 1\ntotal_inactive_file 104857600\n")
        (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        (tmp_path / "proc").write_text("4:memory:/job\n3:cpu:/\n")
    left = memory.cgroup_available(proc=str(tmp_path / "proc"), root=str(root))
    assert left == 1073741824 - (536870912 - 104857600)
    (tmp_path / "proc").write_text("3:cpu:/\n")
    assert memory.cgroup_available(proc=str(tmp_path / "proc"), root=str(root)) is None


def test_validate_data_prints_the_plan_without_solving(tmp_path, capsys, monkeypatch):
    _csv(tmp_path / "train.csv", n=2000)
    spec = _spec(tmp_path, count=1024)
    assert main(["validate", str(spec), "--data"]) == 0
    out = capsys.readouterr().out
    assert "memory plan of krr_nystrom: 1,600 training rows x 5 columns, 1,024 centers" in out
    assert "two 1,024 x 1,024 float64 matrices" in out and "fits" in out
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(memory, "available_bytes", lambda: 20 * 2**20)
    assert main(["validate", str(spec), "--data"]) == 2
    captured = capsys.readouterr()
    assert "does NOT fit" in captured.out and "kopt: error: model.features.count 1,024" in captured.err


@pytest.mark.slow
def test_auto_caps_its_centers_by_the_same_plan(monkeypatch):
    from kopt.contract.registry import registry

    rng = np.random.default_rng(1)
    X = rng.standard_normal((3000, 4))
    y = np.sin(2 * X[:, 0]) + 0.05 * rng.standard_normal(3000)
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"},
                      "regularizer": {"name": "l2", "lambda": 1e-4}},
            "solver": {"name": "auto", "max_centers": 2048}, "output": {"model": False, "report": False}}
    auto = registry().get("solver", "auto")(max_centers=2048)
    sizes = memory.Sizes(n=3000, d=4, count=700, kind="nystrom")
    have = memory.total(auto.memory_plan(sizes))  # exactly 700 centers' search fits
    monkeypatch.setattr(memory, "available_bytes", lambda: have)
    r = kopt.solve(spec, data=(X, y))
    assert r.auto["memory_cap"] == 700 and max(t["centers"] for t in r.auto["trials"]) <= 700
    # a count given that does not fit is refused, not capped
    spec["model"]["features"] = {"count": 1024}
    with pytest.raises(MemoryLimitError, match="model.features.count 1,024 \\(auto\\)"):
        kopt.solve(spec, data=(X, y))


@pytest.mark.slow
def test_the_plan_is_near_the_measured_peak_at_a_small_size(tmp_path):
    """krr_nystrom at 1,024 centers: the plan within a factor 2 of the peak the solve adds (measured by the
    benchmark's own method in a fresh process); docs/benchmarks/memory_plan.json has the larger sizes."""
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("the peak is measured through Linux's /proc/self/clear_refs")
    code = ("import json, sys; sys.path.insert(0, 'docs/benchmarks'); import memory_plan as m; "
            "print(json.dumps(m.measure('small', {'name': 'krr_nystrom'}, {'kind': 'nystrom', 'count': 1024}, "
            "8000, 8, 'square')))")
    env = {**os.environ, "KOPT_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0.5 <= r["plan_bytes"] / r["peak_bytes"] <= 2.0, r


def test_a_memory_error_the_stages_do_not_name_is_still_exit_2(monkeypatch, capsys):
    import kopt.cli

    def broken(args):
        raise MemoryError()

    monkeypatch.setattr(kopt.cli, "cmd_plugins", broken)
    assert main(["plugins"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kopt: error: out of memory while running kopt plugins: an allocation failed")
    assert "internal error" not in err


def test_krr_exact_is_refused_with_the_rows_that_fit(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 50 * 2**20)
    X = np.random.default_rng(0).standard_normal((3000, 3))
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}},
            "solver": {"name": "krr_exact"}, "output": {"model": False, "report": False}}
    with pytest.raises(MemoryLimitError) as caught:
        kopt.solve(spec, data=(X, X[:, 0]))
    text = str(caught.value)
    assert "data.max_rows 3,000 (krr_exact) needs" in text and "3,000 x 3,000 float64" in text
    most = int(text.split("at most ~")[1].split()[0].replace(",", ""))
    assert 16 * most ** 2 <= 50 * 2**20 and "training rows fit: lower data.max_rows" in text
    assert text.endswith("or use solver krr_nystrom (memory O(M^2) on M centers, whatever n)")


# -- every solver's plan -----------------------------------------------------------------------------------------

def _solver(name, **options):
    from kopt.contract.registry import registry

    return registry().get("solver", name)(**options)


def _bytes(plan, words):
    """The bytes of the plan item whose words contain ``words``."""
    found = [b for w, b in plan if words in w]
    assert len(found) == 1, (words, plan)
    return found[0]


def test_svm_nystrom_plan_holds_two_m_by_m_float64_systems():
    svm = _solver("svm_nystrom")
    assert svm.memory_key == "model.features.count"
    for M in (512, 1024):
        plan = memory.plan_of(svm, memory.Sizes(n=20000, d=8, count=M, kind="nystrom"))
        assert _bytes(plan, "the system T and the centers' factor U") == 2 * M * M * 8
        assert _bytes(plan, "every class's scores") == 20000 * 8
    three = memory.plan_of(svm, memory.Sizes(n=20000, d=8, count=512, outputs=3, kind="nystrom"))
    assert _bytes(three, "every class's scores") == 3 * 20000 * 8


def test_krr_pairs_plan_is_the_largest_pair_or_the_pairs_at_once():
    pairs = _solver("krr_pairs", threads=2)
    # every row a center: two pairs of 2n/k rows at once, each a float32 kernel matrix and its float64 copy
    for n in (4000, 8000):
        plan = memory.plan_of(pairs, memory.Sizes(n=n, d=8, count=n, outputs=4, kind="nystrom"))
        r = 2 * (n // 4)
        assert _bytes(plan, "pairs' kernel matrices at once") == 2 * r * r * (4 + 8)
    # on M centers: the largest pair's system on its share of the centers
    plan = memory.plan_of(pairs, memory.Sizes(n=9000, d=8, count=900, outputs=3, kind="nystrom"))
    assert _bytes(plan, "the system T and the centers' factor U") == 2 * 600 * 600 * 8


@pytest.mark.parametrize("name", ["dsg", "udsg", "cdsg"])
def test_dsg_plan_grows_with_the_blocks_its_steps_add(name):
    sizes = memory.Sizes(n=5000, d=8, count=512)
    model = {}
    for T in (1000, 2000):
        plan = memory.plan_of(_solver(name, iterations=T), sizes)
        model[T] = _bytes(plan, "the model's buffer")
    blocks = {"dsg": 1024, "cdsg": 1024, "udsg": 512}[name]  # UDSG adds a block in G of every G + U steps
    assert model[1000] == blocks * 512 * 8 and model[2000] == 2 * model[1000]
    assert memory.plan_of(_solver(name), sizes)[0][0].startswith("the model's buffer")


@pytest.mark.parametrize("name", ["adsg", "mrbcd", "svrg", "katyusha"])
def test_variance_reduced_plan_holds_the_features_where_they_are_materialised(name):
    solver = _solver(name)
    for n in (50000, 100000):
        plan = memory.plan_of(solver, memory.Sizes(n=n, d=8, count=1024))
        assert _bytes(plan, "the random features, materialised") == n * 1024 * 4
    # beyond feature_memory_mb the features are regenerated: the smoothness estimate's rows instead
    plan = memory.plan_of(solver, memory.Sizes(n=10**6, d=8, count=1024))
    assert _bytes(plan, "the smoothness estimate's rows") == max(4096 * 1024 * 8, 2048 * 1024 * (4 + 24))
    assert not [w for w, _ in plan if "materialised" in w]


def test_gp_plan_holds_the_operator_quadratic_in_the_iterations():
    gp = _solver("gp", variance="operator", iterations=200, batch_size=16, noise_variance=0.1)
    beta = {}
    for T in (200, 400):
        gp = _solver("gp", variance="operator", iterations=T, batch_size=16, noise_variance=0.1)
        beta[T] = _bytes(memory.plan_of(gp, memory.Sizes(n=5000, d=8, count=512, n_test=500)), "beta")
        assert beta[T] == 8 * 16 * 16 * T * (T + 1) // 2
    exact = _solver("gp", variance="none", compare_exact=True, noise_variance=0.1)
    plan = memory.plan_of(exact, memory.Sizes(n=3000, d=8, count=512, n_test=500))
    assert _bytes(plan, "the closed form's kernel matrix") == 3000 * 3000 * 8


def test_joker_exact_and_primal_routes_declare_their_plans():
    exact = _solver("joker", mode="exact")
    rows = [_bytes(memory.plan_of(exact, memory.Sizes(n=n, d=8, count=256)), "per training row") for n in (10**4, 10**5)]
    assert rows[1] == 10 * rows[0] > 0
    primal = _solver("joker", mode="primal")
    for M in (1024, 2048):
        plan = memory.plan_of(primal, memory.Sizes(n=50000, d=8, count=M))
        assert _bytes(plan, "the preconditioner's Gram") == 3 * M * M * 8
        assert _bytes(plan, "the rows' features, kept") == 50000 * M * 4
    # beyond feature_memory_mb (512 MiB) the features are regenerated on every pass
    plan = memory.plan_of(primal, memory.Sizes(n=10**5, d=8, count=2048))
    assert not [w for w, _ in plan if "features, kept" in w]
    nystrom = memory.plan_of(primal, memory.Sizes(n=10**5, d=8, count=1024, kind="nystrom"))
    assert _bytes(nystrom, "the centers' R = K_CC and its factor U") == 2 * 1024 * 1024 * 8


#: (solver section, model section, labels) of a spec each solver takes
SPECS = {
    "svm_nystrom": ({"name": "svm_nystrom"}, {"loss": {"name": "squared_hinge"},
                                              "features": {"kind": "nystrom", "count": 64}}, "binary"),
    "krr_pairs": ({"name": "krr_pairs"}, {"loss": {"name": "square", "target": "binary"},
                                          "features": {"kind": "nystrom", "count": 64}}, "classes"),
    "dsg": ({"name": "dsg", "iterations": 20}, {"loss": {"name": "square"}, "features": {"block_size": 64}}, "real"),
    "udsg": ({"name": "udsg", "iterations": 20}, {"loss": {"name": "square"}, "features": {"block_size": 64}}, "real"),
    "cdsg": ({"name": "cdsg", "iterations": 20}, {"loss": {"name": "square"}, "features": {"block_size": 64}}, "real"),
    "adsg": ({"name": "adsg", "iterations": 2}, {"loss": {"name": "square"}, "features": {"count": 128}}, "real"),
    "mrbcd": ({"name": "mrbcd", "iterations": 2}, {"loss": {"name": "square"}, "features": {"count": 128}}, "real"),
    "svrg": ({"name": "svrg", "iterations": 2}, {"loss": {"name": "square"}, "features": {"count": 128}}, "real"),
    "katyusha": ({"name": "katyusha", "iterations": 2}, {"loss": {"name": "square"}, "features": {"count": 128}},
                 "real"),
    "gp": ({"name": "gp", "iterations": 20, "noise_variance": 0.1, "batch_size": 16},
           {"loss": {"name": "square"}, "form": "gp", "features": {"block_size": 64}}, "real"),
    "joker exact": ({"name": "joker", "mode": "exact", "iterations": 20}, {"loss": {"name": "square"}}, "real"),
    "joker primal": ({"name": "joker", "mode": "primal", "iterations": 3},
                     {"loss": {"name": "square"}, "features": {"count": 128}}, "real"),
}


def _solver_spec(tmp_path, key, n=600):
    solver, model, labels = SPECS[key]
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 4))
    y = np.sin(X[:, 0])
    if labels == "binary":
        y = np.where(y > 0, 1.0, -1.0)
    elif labels == "classes":
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    np.savetxt(tmp_path / "train.csv", np.column_stack([y, X]), delimiter=",", fmt="%.6g")
    spec = {"name": "m", "data": {"train": str(tmp_path / "train.csv"), "test_fraction": 0.2},
            "model": {"kernel": {"name": "gaussian", "bandwidth": 2.0}, "regularizer": {"name": "l2", "lambda": 1e-3},
                      **model},
            "solver": solver, "output": {"dir": str(tmp_path / "out"), "plot": False}}
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps(spec))  # JSON is YAML
    return path


@pytest.mark.parametrize("key", sorted(SPECS))
def test_every_solver_refuses_a_spec_too_big_with_exit_2_and_the_bytes(tmp_path, capsys, monkeypatch, key):
    spec = _solver_spec(tmp_path, key)
    assert main(["validate", str(spec), "--data"]) == 0
    out = capsys.readouterr().out
    assert "declares no memory plan" not in out and "  total" in out and "fits" in out
    monkeypatch.setattr(memory, "available_bytes", lambda: 1024)
    assert main(["solve", str(spec), "--quiet"]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("kopt: error:")]
    assert len(lines) == 1 and "needs" in lines[0] and "1 KiB of memory are available" in lines[0], err
    assert "Traceback" not in err and not (tmp_path / "out" / "model.json").exists()
