"""In-memory continuation (warm starts), picklable options and the model's in-memory payload."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import kopt
from kopt.contract.registry import registry
from kopt.errors import CheckpointError
from kopt.models.model import model_from
from kopt.testing import default_instance

pytestmark = pytest.mark.filterwarnings("ignore::kopt.errors.ConvergenceWarning")


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, np.where(np.sin(X[:, 0]) + 0.4 * X[:, 1] > 0, 1, -1)


def _spec(solver, iterations, **options):
    form = "dual" if solver == "joker" else "primal"
    return {"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "form": form,
                      "features": {"count": 128, "block_size": 32}},
            "solver": {"name": solver, "iterations": iterations, "batch_size": 16, **options}, "backend": "numpy"}


@pytest.mark.slow
@pytest.mark.parametrize("solver,options", [("dsg", {}), ("udsg", {}), ("cdsg", {}),
                                            ("joker", {"tol": 0.0}), ("joker", {"tol": 0.0, "mode": "features"})])
def test_continuing_a_snapshot_ends_where_a_fresh_run_ends(solver, options):
    X, y = _data()
    first = kopt.solve(_spec(solver, 7, **options), data=(X, y), keep_state=True)
    assert first.snapshot.iteration == 7 and first.snapshot.solver == solver
    cont = kopt.solve(_spec(solver, 19, **options), data=(X, y), resume=first.snapshot, keep_state=True)
    fresh = kopt.solve(_spec(solver, 19, **options), data=(X, y))
    assert cont.n_iter == fresh.n_iter == 19 and cont.snapshot.iteration == 19
    np.testing.assert_array_equal(cont.model.decision_function(X), fresh.model.decision_function(X))
    assert cont.objective == fresh.objective
    # the snapshot is detached: continuing it twice gives the same answer
    again = kopt.solve(_spec(solver, 19, **options), data=(X, y), resume=first.snapshot)
    np.testing.assert_array_equal(again.model.decision_function(X), fresh.model.decision_function(X))


def test_a_continuation_must_be_the_same_problem_with_a_cap_not_below_the_snapshot():
    X, y = _data()
    snap = kopt.solve(_spec("dsg", 10), data=(X, y), keep_state=True).snapshot
    other = _spec("dsg", 20)
    other["model"]["regularizer"]["lambda"] = 1e-2
    with pytest.raises(CheckpointError, match="different problem"):
        kopt.solve(other, data=(X, y), resume=snap)
    with pytest.raises(CheckpointError, match="already took 10 iterations"):
        kopt.solve(_spec("dsg", 5), data=(X, y), resume=snap)


def test_solvers_whose_answer_depends_on_the_cap_do_not_continue():
    assert not registry().get("solver", "gp").warm_start and not registry().get("solver", "krr_exact").warm_start
    assert all(registry().get("solver", n).warm_start for n in ("joker", "dsg", "udsg", "cdsg", "adsg"))
    X, y = _data()
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0}},
            "solver": {"name": "krr_exact"}, "backend": "numpy"}
    snap = kopt.solve(spec, data=(X, y.astype(float)), keep_state=True).snapshot
    with pytest.raises(CheckpointError, match="cannot continue"):
        kopt.solve(spec, data=(X, y.astype(float)), resume=snap)


@pytest.mark.parametrize("kind", ["loss", "kernel", "regularizer", "solver"])
def test_every_component_pickles_with_its_options(kind):
    reg = registry()
    for name in reg.names(kind):
        cls = reg.get(kind, name)
        params = {"lambda": 0.5} if kind == "regularizer" else {}
        try:
            obj = cls(**params) if params else default_instance(cls)
        except (TypeError, ValueError):
            continue  # a component with required parameters and no defaults
        again = pickle.loads(pickle.dumps(obj))
        assert type(again.options) is type(obj.options) and again.options == obj.options, name
        assert again.options.as_dict() == obj.options.as_dict()


def test_model_payload_round_trip_equals_the_file(tmp_path):
    X, y = _data()
    model = kopt.solve(_spec("joker", 30), data=(X, y)).model
    model.save(tmp_path / "m")
    from_file = kopt.load_model(tmp_path / "m.json")
    in_memory = model_from(model.to_meta(), model.to_arrays())
    np.testing.assert_array_equal(in_memory.decision_function(X), from_file.decision_function(X))
    assert "arrays_sha256" not in model.to_meta()
