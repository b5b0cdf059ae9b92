"""kopt.testing.check_solver: every built-in solver passes the solver contract; broken solvers are caught."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import demo_plugin, gd_solver

from kopt.contract.components import Predictor
from kopt.contract.iterative import Step
from kopt.models.predictors import FeatureExpansion
from kopt.testing import SOLVER_CHECKS, check_solver, solver_check_data, state_problems

# (solver, spec_overrides, data target or None): small, fast settings over the solvers' routes and targets
BUILTIN_CASES = [
    ("krr_exact", {}, None),
    # the contract's 256 centers (a resumed run refactors R as the solve did: one BLAS thread, the same bits);
    # solver auto has no run() of its own (the API dispatches it), so check_solver cannot take it
    ("krr_nystrom", {}, None),
    # CG on the same centers: interrupted mid-CG, it resumes to the same bits (the checkpoint holds CG's whole state)
    ("krr_pcg", {}, None),
    ("krr_pcg", {"model": {"loss": {"name": "square", "target": "binary"}}}, "multiclass"),
    ("joker", {}, None),  # one block holds every row: converged at iteration 1, interrupted there
    ("joker", {"solver": {"mode": "features", "batch_size": 64}}, None),
    ("joker", {"solver": {"mode": "primal"}}, None),
    ("joker", {"model": {"features": {"kind": "nystrom", "count": 64}}}, None),
    ("joker", {"model": {"loss": {"name": "hinge"}}, "solver": {"batch_size": 64, "check_every": 3}}, None),
    ("joker", {"model": {"loss": {"name": "squared_hinge"}}, "solver": {"batch_size": 128}}, "multiclass"),
    ("dsg", {}, None),
    ("udsg", {}, None),
    ("cdsg", {}, None),
    ("dsg", {"model": {"loss": {"name": "logistic"}}, "solver": {"check_every": 4, "holdout_every": 4}}, None),
    ("udsg", {"model": {"loss": {"name": "softmax"}}}, None),
    ("dsg", {"model": {"loss": {"name": "novelty"}}}, None),
    ("dsg", {"model": {"loss": {"name": "kl_density_ratio"}}}, None),
    ("adsg", {}, None),
    ("mrbcd", {}, None),
    ("svrg", {}, None),
    ("katyusha", {}, None),
    ("adsg", {"model": {"kernel": {"name": "linear"}}}, None),
    ("gp", {}, None),
    ("gp", {"solver": {"variance": "operator", "batch_size": 16}}, None),
    # the squared hinge only: no answer reference (square, logistic) applies; tests/plugins/svm_nystrom/test_svm_nystrom.py checks its
    # answer against L-BFGS.  Interrupted mid-Newton, it resumes to the same bits (its end is a direct solve)
    ("svm_nystrom", {"model": {"loss": {"name": "squared_hinge"}, "features": {"kind": "nystrom", "count": 64}}}, None),
    ("svm_nystrom", {"model": {"loss": {"name": "squared_hinge"}, "features": {"kind": "nystrom", "count": 64}}},
     "multiclass"),
    # one-vs-one: its objective is the pairs' summed, which no one-problem reference matches; tests/plugins/krr_pairs/test_krr_pairs.py
    # checks each pair's answer against a float64 solve
    ("krr_pairs", {"model": {"loss": {"name": "square", "target": "binary"}, "features": {"kind": "nystrom", "count": 64}}},
     "multiclass"),
]


#: solvers the answer check leaves out, and why.  DSG's family reports λ/2 N_t + mean ℓ with N_t a running
#: estimate of ‖f_t‖²_H, and converges as t^(−θλ) under its default step θ/t: on the square reference problem
#: (300 rows, λ = 0.01, bandwidth 1.3) dsg ends 1000 iterations (its default, 18 s) at 0.3218 against the
#: optimum 0.1655 (0.945 above); with step_size 100 and step_offset 10 it reports an objective 18% *below*
#: the optimum (the estimate N_t).  Reported to the solver's owner (issue 25).
NO_ANSWER = {"dsg", "udsg", "cdsg"}


@pytest.mark.slow
@pytest.mark.parametrize("name,overrides,target", BUILTIN_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BUILTIN_CASES)])
def test_builtin_solvers_pass_the_contract(name, overrides, target, tmp_path):
    data = solver_check_data(target) if target else None
    skip = ("answer",) if name in NO_ANSWER else ()
    out = check_solver(name, spec_overrides=overrides, data=data, out_dir=tmp_path, skip=skip)
    # gp: no objective to compare; svm_nystrom: no reference loss it solves; krr_pairs: C(C-1)/2 problems
    no_answer = name in NO_ANSWER or out.spec["model"]["form"] == "gp" or name in ("svm_nystrom", "krr_pairs")
    assert out.ran == tuple(c for c in SOLVER_CHECKS if not (c == "answer" and no_answer))
    assert out.result.n_iter == out.resumed.n_iter
    if not no_answer:
        square_only = name in ("krr_exact", "krr_nystrom", "krr_pcg")
        assert [a["loss"] for a in out.answers] == (["square"] if square_only else ["square", "logistic"])
        assert all(abs(a["objective"] - a["reference"]) <= 1e-4 * a["reference"] for a in out.answers)


@pytest.mark.slow
def test_a_run_stopped_on_its_converging_iteration_resumes_converged(tmp_path):
    """Joker converges in its first iteration here; check_solver stops it there (stop_at = n_iter // 2 or 1)."""
    out = check_solver("joker", out_dir=tmp_path)
    assert out.result.status == out.resumed.status == "converged"
    assert out.result.n_iter == out.resumed.n_iter == 1
    assert [r["iteration"] for r in out.resumed.trace] == [1]


@pytest.mark.slow
def test_the_example_solver_passes_and_converges(tmp_path):
    with gd_solver():
        out = check_solver("gd", out_dir=tmp_path,
                           spec_overrides={"model": {"regularizer": {"lambda": 1e-2}}, "solver": {"iterations": 400}})
    r = out.result
    assert r.status == "converged" and r.success and 0 <= r.info["rel_gap"] <= 1e-4
    assert out.spec["model"]["loss"]["name"] == "square" and r.metrics["r2"] > 0.7
    assert 1 < out.resumed.n_iter == r.n_iter < 400


@pytest.mark.slow
def test_a_plain_solver_without_the_skeleton_passes(tmp_path):
    with demo_plugin():
        # demo_gd shows the mechanics of a solver without the skeleton (a plain SGD loop, 0.41 above the
        # optimum after its 50 iterations): the answer check would rightly fail it
        out = check_solver("demo_gd", out_dir=tmp_path, spec_overrides={"solver": {"step": 0.5}}, skip=("answer",))
    assert out.result.status == "done" and "resume" in out.ran


# -- broken solvers: each failure names the part of the contract ------------------------------------


def _example():
    from helpers import example_solver

    return example_solver()


def _broken(**methods):
    """A subclass of the example solver under another name, with some methods replaced."""
    return type("Broken", (_example(),), {"name": "gd_broken", **methods})


def _fails(cls, match, **kw):
    with pytest.raises(AssertionError, match=match) as info:
        check_solver(cls, **kw)
    assert "solver 'gd_broken' fails the solver contract" in str(info.value)
    return str(info.value)


@pytest.mark.slow
def test_state_with_a_list_is_refused(tmp_path):
    def save(self, st):
        return {"theta": list(np.asarray(st["theta"]))}

    _fails(_broken(save=save), r"\(state\): iteration 1: 'theta' is a list", out_dir=tmp_path)


@pytest.mark.slow
def test_load_that_forgets_is_caught_by_resume(tmp_path):
    def load(self, problem, saved):
        return self.init(problem)

    msg = _fails(_broken(load=load), r"\(resume\): interrupted at iteration 6 and resumed, the run gave a different "
                                     r"model array 'coef'", out_dir=tmp_path)
    assert "save() returns everything load() needs" in msg


@pytest.mark.slow
def test_global_randomness_is_caught_as_irreproducible(tmp_path):
    GradientDescent = _example()

    def step(self, st, t):
        st["eta"] *= 1.0 + 1e-3 * np.random.default_rng().random()  # not problem.rng: differs every run
        return GradientDescent.step(self, st, t)

    _fails(_broken(step=step), r"\(reproducible\): a second run of the same spec gave a different model array",
           out_dir=tmp_path)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_non_finite_scores_are_caught(tmp_path):
    def finish(self, st):
        predictor, info = _example().finish(self, st)
        return FeatureExpansion({**predictor.arrays, "coef": predictor.arrays["coef"] * np.inf}, predictor.meta), info

    # kopt.solve(write=True) refuses to write a model holding inf (issue 17): the contract reports it at the solve
    _fails(_broken(finish=finish), r"\(solve\): kopt.solve raised NonFiniteModelError: .*NaN or inf in the model",
           out_dir=tmp_path)


@pytest.mark.slow
def test_unregistered_predictor_is_caught_by_the_model_file_check(tmp_path):
    class Unregistered(Predictor):
        name = "nowhere_registered"

        def decision_function(self, X, ctx):
            return np.zeros(X.shape[0])

    def finish(self, st):
        return Unregistered({"w": np.zeros(3)}, {}), {}

    _fails(_broken(finish=finish), r"\(model_file\): the model file does not load: ModelFileError: .*"
                                   r"predictor 'nowhere_registered' is not registered", out_dir=tmp_path)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_divergence_on_the_check_problem_is_reported(tmp_path):
    _fails(_broken(), r"\(status\): it diverged on the check problem \(diverged at iteration \d+: .*lower "
                      r"solver.step_size\)", out_dir=tmp_path, spec_overrides={"solver": {"step_size": 1e30}})


def test_a_dual_above_the_primal_fails_the_solve(tmp_path):
    GradientDescent = _example()

    def step(self, st, t):
        out = GradientDescent.step(self, st, t)
        st["D"] = st["P"] + 1.0
        return out

    msg = _fails(_broken(step=step), r"\(solve\): kopt.solve raised KoptError: .*duality gap is negative",
                 out_dir=tmp_path)
    assert "or the solver's dual objective" in msg


def test_interface_and_registration_problems(tmp_path):
    _fails(_broken(stopping="sometimes"), r"\(interface\): stopping = 'sometimes'", out_dir=tmp_path)
    _fails(_broken(forms=("primal", "weird")), r"\(interface\): forms = .* is not a tuple of primal, dual, gp",
           out_dir=tmp_path)
    bad_schema = _broken(params={"tol": {"type": "flaot"}})
    _fails(bad_schema, r"\(register\): .*invalid parameter schema at params.tol.type", out_dir=tmp_path)


def test_a_spec_no_candidate_satisfies_names_what_was_tried(tmp_path):
    def check_spec(self, spec):
        yield ("model", "kernel", "name"), "gd_broken refuses every kernel"

    msg = _fails(_broken(check_spec=check_spec), r"\(spec\): no spec naming it validates; tried form primal, "
                                                 r"loss square: .*gd_broken refuses every kernel", out_dir=tmp_path)
    assert "spec_overrides" in msg


@pytest.mark.slow
def test_step_may_return_none(tmp_path):
    GradientDescent = _example()

    def step(self, st, t):
        GradientDescent.step(self, st, t)

    out = check_solver(_broken(step=step), out_dir=tmp_path)
    assert "resume" in out.ran and Step().rows == 0


def test_check_solver_arguments():
    with pytest.raises(ValueError, match="unknown solver checks"):
        check_solver("dsg", skip=("nope",))
    with pytest.raises(TypeError, match="a solver name or a kopt.contract.components.Solver subclass"):
        check_solver(dict)
    from kopt_plugins.dsg.solver import DSG

    clash = type("Clash", (DSG,), {})
    clash.name = "udsg"
    with pytest.raises(AssertionError, match="another class .* is registered under that name"):
        check_solver(clash)


def test_state_problems():
    assert state_problems({"a": np.zeros(3), "b": 1, "c": None, "d": "x", "e": np.float32(1.0), "f": True}) == []
    assert state_problems([1]) == ["save() returned a list; it returns a dict"]
    problems = state_problems({"_x": 1, "nested": {"a": 1}, "objs": np.array([None, 1], dtype=object)})
    assert len(problems) == 3 and "reserved for kopt" in problems[0] and "flatten nested dicts" in problems[1]
    assert "numeric arrays only" in problems[2]


# -- the answer check: its references, and the solvers it fails ------------------------------------------------------


def _joker_reference(loss, tmp_path):
    """The reference problem solved by joker's exact route to a relative gap of 1e-10."""
    import kopt
    from kopt.testing.answer import ANSWER_BANDWIDTH, ANSWER_LAMBDA, answer_data

    target = "real" if loss == "square" else "binary"
    data = answer_data(target, 0)
    spec = {"name": "ref", "backend": "numpy", "data": {"standardize": False},
            "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": ANSWER_BANDWIDTH},
                      "form": "dual", "features": {"dtype": "float64"},
                      "regularizer": {"name": "l2", "lambda": ANSWER_LAMBDA}},
            "solver": {"name": "joker", "mode": "exact", "tol": 1e-10, "iterations": 2000},
            "output": {"dir": str(tmp_path)}}
    return data, kopt.solve(spec, data=data)


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_the_answer_references_agree_with_a_builtin_solver_at_1e_10(loss, tmp_path):
    """Newton's optimum (kopt.testing.answer) is joker's exact-route optimum at a relative gap of 1e-10."""
    from kopt.contract.registry import registry
    from kopt.testing.answer import ANSWER_BANDWIDTH, ANSWER_LAMBDA, _whiten, reference_objective

    data, r = _joker_reference(loss, tmp_path)
    assert r.status == "converged" and r.info["rel_gap"] <= 1e-10
    K = registry().get("kernel", "gaussian")(bandwidth=ANSWER_BANDWIDTH).exact(data[0], data[0])
    ref = reference_objective(registry().get("loss", loss)(), _whiten(K, K), data[1], ANSWER_LAMBDA)
    assert abs(ref - r.objective) <= 1e-9 * ref


@pytest.mark.slow
def test_an_objective_below_the_optimum_is_caught(tmp_path):
    GradientDescent = _example()

    def check(self, st, rows):
        c = GradientDescent.check(self, st, rows)
        c.objective -= 0.5 * st["problem"].lam * float(st["theta"] @ st["theta"])  # λ/2‖θ‖² left out
        c.dual = None
        return c

    msg = _fails(_broken(check=check, stopping="none"), r"\(answer\): on the square reference problem .* below the "
                                                        r"optimum", out_dir=tmp_path)
    assert "the reported objective is not λ/2‖f‖² + mean ℓ of the model" in msg


@pytest.mark.slow
def test_the_budget_and_rtol_are_the_callers(tmp_path):
    """Too few iterations fail, saying how far the run is; the budget and rtol arguments set what is asked."""
    msg = _fails(_broken(), r"\(answer\): .*after 20 iterations \(budget 20\) the objective .* above the optimum",
                 out_dir=tmp_path / "a", budget=20)
    assert "check_solver(..., budget=N)" in msg
    out = check_solver(_broken(), out_dir=tmp_path / "b", budget=20, rtol=0.5)  # the answer runs' tol is rtol
    assert [a["loss"] for a in out.answers] == ["square", "logistic"]
    assert all(a["n_iter"] <= 20 and abs(a["objective"] - a["reference"]) <= 0.5 * a["reference"] for a in out.answers)
