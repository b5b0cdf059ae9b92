"""``solver: auto``: kopt chooses the route, the center count, the bandwidth and λ by measurement.

The default solver of a spec that names none (and of ``KernelClassifier()`` / ``KernelRegressor()``).
It does not solve anything itself: :meth:`AutoSolver.plan` measures on a seeded validation split of
the training rows (:mod:`.planner`) and returns the concrete spec that ``kopt.solve`` then solves on
every training row -- ``report.json``'s ``spec`` is that spec, so ``kopt solve`` on it reproduces the
model, and ``report["auto"]`` says what was tried, what was chosen and why.

Routes (docs/defaults.md says how to read and override them):

* the square loss: ``krr_nystrom`` -- one Cholesky of the M × M Nyström system; its λ path is
  nearly free, so it is also the search's model.  Past :data:`.large.SEARCH_ROWS` training rows the search runs
  on a seeded sample and the centers then grow on every row: ``krr_pcg`` (conjugate gradients, one pass of kernel
  blocks a step, O(M²) memory) solves the grown size (:mod:`.large`).  Class ids (3 or more) where all pairs of classes solved exactly
  cost less than one one-vs-rest system at ``max_centers``: ``krr_pairs``, one-vs-one on every row, with its own
  search (:mod:`.pairs`);
* the squared hinge: ``svm_nystrom`` -- active-set Newton on the same M centers, each step one Cholesky of
  the system of the rows inside the margin; for a binary target the search scores the squared hinge's own λ
  path on each size (the size, bandwidth and λ are the hinge's), for multiclass ids the square loss's choice;
* another smooth loss with a conjugate (logistic, Huber): ``joker`` ``mode: primal`` (Newton-CG on the same
  M Nyström centers) at the bandwidth and λ the square loss chose;
* a nonsmooth loss with a conjugate (hinge, absolute, ε-insensitive): ``joker`` ``mode: auto`` (its
  own rule: the exact dual while affordable, else dual blocks on random features) at those settings.

The search's budget is a count of work, not of seconds (:mod:`.work`): by default 1.2·10¹³ flops per 500,000
training rows, at least 1.2·10¹³ (:func:`.work.default_work`; ``solver.work`` sets another), every stage's cost
counted by formula, so every choice -- route, center count, bandwidth, column scales, λ, where each search stops --
depends on the data, the spec and its seed alone, not on the machine's speed, its load or its threads.  The start
line prints the rule and the budget, each progress line the work spent and an estimated time left (at the rate
measured so far: an estimate, never a choice), the report keeps it (``auto.budget``).  ``solver.budget`` (seconds)
is a hard wall-clock limit the user may add; where it binds, the log and the report (``budget.machine_dependent``)
say that the model depends on the machine.

An explicit number is always taken as given: ``model.regularizer.lambda``, a numeric
``bandwidth`` (or a rule other than ``auto``), ``model.features.count``.

Memory: the search's plan (:meth:`AutoSolver.memory_plan`: the Nyström system being built, the best one so far and the
split's rows) caps the ladder at the most centers that fit the memory available (:func:`kopt.numerics.memory.largest_fitting`,
the rule every solver's plan is checked by); an explicit ``features.count`` that does not fit is refused with it.
"""
from __future__ import annotations

import dataclasses
import time

from kopt.contract.components import Plan, Solver
from kopt.numerics import memory
from kopt.numerics import rows as _rows
from kopt.numerics import threads as _threads

from . import cluster, columns, large, pairs, planner, records, scoring, smooth, work


class AutoSolver(Solver):
    name = "auto"
    summary = "chooses the route, Nystrom centers, bandwidth and lambda on a validation split, then solves"
    forms = ("primal", "dual")
    targets = ("real", "binary")
    kernel_mode = "either"
    feature_kinds = ("random", "nystrom")
    one_vs_rest = True
    sample_weight = True
    plans = True
    #: on a Dask cluster the search runs on the client, on a seeded sample fetched there, and the solve on every row
    #: runs on the cluster (:mod:`.cluster`, docs/scale.md)
    distributed = True
    params = {
        "budget": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                   "description": "a hard wall-clock limit in seconds on the search (the solve on all rows comes "
                                  "after); where it binds, the choice depends on the machine's speed and the report "
                                  "says so (budget.machine_dependent); null: no limit, only the work budget"},
        "work": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                 "description": "the search's work budget in flops, every stage's cost counted by formula, so the "
                                "choice is the same on any machine; null: 1.2e13 per 500,000 training rows, at "
                                "least 1.2e13 (120 s per 500,000 rows at 1e11 flop/s; docs/defaults.md)"},
        "max_centers": {"type": "integer", "minimum": 16, "default": 4096,
                        "description": "the most Nystrom centers the search tries (fewer where the memory available "
                                       "holds fewer: about 24 M^2 bytes, kopt validate --data prints the plan)"},
        "validation": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.2,
                       "description": "the held-out share of the training rows the choices are scored on"},
    }

    memory_key = "model.features.count"
    #: set while the search runs on a Dask cluster's client (:func:`.cluster.plan`): the routes are the cluster's
    on_cluster = False
    #: ``model.loss.name: auto`` (``KernelClassifier()``'s default): the square loss on ±1 targets is checked and
    #: assembled; for a binary target on the direct route the search measures the squared hinge beside it and solves
    #: it only where it gains what the validation rows can tell (:func:`.planner._choose_loss`)
    auto_loss = {"name": "square", "target": "binary"}

    def memory_plan(self, sizes):
        """The search at M centers (``sizes.count``): the system it builds (krr_nystrom's), randomly pivoted
        Cholesky's candidates where it draws its centers, the best system so far held aside as its T alone (at most
        M x M float64), a squared-hinge solve's held-factor columns (M x M/8 float64), and the split's fit and
        validation rows, copied."""
        from kopt.nystrom.newton import held_columns_plan
        from kopt.nystrom.system import rpcholesky_plan, system_plan

        M = min(sizes.count, sizes.n)
        return [*system_plan(sizes), *rpcholesky_plan(sizes.n, M, sizes.d),
                memory.matrices(1, M, M, "float64", "the best system so far, its T"),
                held_columns_plan(M, sizes.n),
                memory.matrices(1, sizes.n, sizes.d, sizes.dtype, "the fit and validation rows, copied"),
                memory.matrices(2, sizes.n, sizes.outputs, "float64", "the targets, centered, and their split")]

    def memory_sizes(self, problem):
        """The search's largest size: the spec's ``features.count`` where its author gave one, else ``max_centers``
        or the training rows."""
        count = ((problem.spec.given.get("model") or {}).get("features") or {}).get("count")
        top = int(count) if count else min(self.options.max_centers, int(problem.n))
        return memory.Sizes.of(problem).replace(count=top, kind="nystrom")

    def most_centers(self, problem, have=None) -> int:
        """The most centers the search may try: :meth:`memory_sizes`' count, fewer where its plan does not fit the
        memory available; a given ``features.count`` that does not fit, or a memory that does not hold even the
        ladder's first size, is refused (:class:`kopt.errors.MemoryLimitError`)."""
        sizes = self.memory_sizes(problem)
        have = memory.available_bytes() if have is None else have
        given = ((problem.spec.given.get("model") or {}).get("features") or {}).get("count")
        if given:
            memory.check_plan(self, sizes, have)
            return sizes.count
        first = min(sizes.count, planner.FIRST_CENTERS)
        memory.check_plan(self, sizes.replace(count=first), have)
        return memory.largest_fitting(self, sizes, have)

    def check_spec(self, spec):
        loss = spec.loss  # its target is real or binary: the core checked ``targets``
        if loss.name != "square" and not loss.has_conjugate:
            yield ("model", "loss", "name"), (
                f"solver 'auto' solves losses other than square with joker, which needs a conjugate, and loss "
                f"{loss.name!r} has none: name a solver (dsg or adsg)")
        if spec["model"]["form"] == "gp":
            yield ("model", "form"), "solver 'auto' does not do the gp form; use solver: gp"
        if spec["execution"]["engine"] == "dask":
            yield from cluster.check_spec(spec, loss)

    def route(self, loss, centers, chosen=None, large=False):
        """``(spec overrides, words)`` of the final solve of ``loss`` on ``centers`` Nystrom centers; ``chosen``: the loss
        the search chose where the spec left it to auto (``square``, ``squared_hinge`` or ``logistic``), also set in the
        overrides; ``large``: the route past :data:`.large.SEARCH_ROWS` rows, where the squared hinge is solved by
        Newton-CG passes (``newton_pcg``) rather than its margin rows' system (n M² a build).  On a Dask cluster
        (:attr:`on_cluster`) the routes are those that run there: the square loss by ``krr_pcg`` (the same problem as
        ``krr_nystrom``'s, to its tolerance), the squared hinge by ``newton_pcg``."""
        from kopt.nystrom import newton_loss

        large = large or self.on_cluster

        nystrom = {"model.features.kind": "nystrom", "model.features.count": centers}
        if chosen is not None:
            section = dict(self.auto_loss) if chosen == "square" else {"name": chosen}
            nystrom["model.loss"] = section
        name = chosen or loss.name
        if name == "square" and self.on_cluster:
            return ({"solver": {"name": "krr_pcg", "tol": cluster.DIRECT_TOL}, "model.form": "primal", **nystrom},
                    f"krr_pcg (the square loss by conjugate gradients on the cluster, one round a step: krr_nystrom's "
                    f"system, to a relative gap of {cluster.DIRECT_TOL:g})")
        if name == "square":
            return ({"solver": {"name": "krr_nystrom"}, "model.form": "primal", **nystrom},
                    "krr_nystrom (the square loss: one Cholesky on the centers)")
        if name == "squared_hinge" and not large:
            return ({"solver": {"name": "svm_nystrom"}, "model.form": "primal", **nystrom},
                    "svm_nystrom (the squared hinge: Newton steps, each one Cholesky on the centers' margin rows)")
        if name in smooth.AUTO_LOSSES or newton_loss(loss):
            return ({"solver": {"name": "newton_pcg", "tol": smooth.FINAL_TOL}, "model.form": "primal", **nystrom},
                    f"newton_pcg (the {name.replace('_', ' ')} loss: Newton steps, each by conjugate gradients on the "
                    f"curvature-weighted rows, one pass of kernel blocks a step)")
        if loss.smooth:
            return ({"solver": {"name": "joker", "mode": "primal"}, "model.form": "dual", **nystrom},
                    f"joker's primal Newton-CG on the centers ({loss.name} has a Lipschitz gradient)")
        return ({"solver": {"name": "joker", "mode": "auto"}, "model.form": "dual", "model.features.kind": "random"},
                f"joker's own route rule (docs/joker.md; {loss.name} is not smooth, so no Newton route on centers)")

    def _plan_pairs(self, problem, kernel, lam, log, budget):
        """The plan of exact one-vs-one (:mod:`.pairs`): every row a center, each pair of classes its rows' KRR."""
        o = self.options
        best, trials, split, seconds, held_out = pairs.search(
            problem, bandwidth_rule=kernel.get("bandwidth") == "auto",
            lambdas=planner.LAMBDAS if lam == "auto" else (float(lam),), seed=problem.spec["seed"],
            validation=o.validation, log=log)
        overrides = {"solver": {"name": "krr_pairs"}, "model.form": "primal", "model.features.kind": "nystrom",
                     "model.features.count": int(problem.n), "model.regularizer.lambda": best["lam"]}
        if kernel.get("bandwidth") == "auto":
            overrides["model.kernel.bandwidth"] = float(f"{best['bandwidth']:.6g}")
            overrides["model.kernel.bandwidth_factor"] = 1.0
        why = (f"one-vs-one on every row ({best['pairs']} pairs of classes; their Choleskys cost less than one "
               f"one-vs-rest system at {o.max_centers} centers), bandwidth {overrides.get('model.kernel.bandwidth', '-')} "
               f"(x{best['bandwidth_factor']:g} the {kernel.get('bandwidth')} rule), lambda {best['lam']:g}: the best "
               f"validation accuracy ({best['score']:.5g}); then krr_pairs (each pair's exact KRR, one Cholesky)")
        record = {"route": "krr_pairs", "centers": int(problem.n), "bandwidth": overrides.get("model.kernel.bandwidth"),
                  "bandwidth_factor": best["bandwidth_factor"], "lambda": best["lam"], "metric": "accuracy",
                  "validation_score": best["score"], "split": split, "search_s": seconds, "budget_s": o.budget,
                  "budget": budget.record(), "trials": trials, "why": why}
        if held_out is not None:
            held_out["words"] = f"solver auto's validation rows ({split}), scored by the pairs fitted on the others"
        return Plan(overrides, record, None, held_out)

    def plan(self, problem, given, log=None):
        """Measure, choose, and return the :class:`kopt.contract.components.Plan`: the spec overrides, the report
        record and, for the square loss, the search's system on every training row as krr_nystrom's start.

        ``given``: what the spec's author wrote, before defaults (an explicit ``features.count`` is kept);
        ``log``: a callable taking one progress line, or None.
        """
        log = log or (lambda line: None)
        if problem.partitions is not None and problem.X is None:  # a Dask cluster: the search on the client
            return cluster.plan(self, problem, given, log)
        spec = problem.spec
        kernel = spec["model"]["kernel"]
        lam = spec["model"]["regularizer"].get("lambda")
        count = ((given.get("model") or {}).get("features") or {}).get("count")
        budget = self.work_budget(problem)
        if problem.loss.name == "square" and not count and problem.preprocessor.target == "multiclass" \
                and not self.on_cluster:  # krr_pairs runs on one machine only: a cluster solves one-vs-rest
            from kopt.numerics.backend import to_numpy

            if pairs.affordable(problem, to_numpy(problem.y).astype("int64"), self.options.max_centers):
                return self._square_chosen(self._plan_pairs(problem, kernel, lam, log, budget), given, problem)
        log(f"auto: work budget {budget.work:.3g} flops for the search on {problem.n:,} training rows of {problem.d} "
            f"columns ({budget.rule}; the solve on every row comes after)" + (
                f"; time limit {budget.seconds:g} s (solver.budget): where it binds, the choice depends on the "
                "machine" if budget.seconds is not None else ""))
        if problem.n > large.SEARCH_ROWS:
            return self._square_chosen(self._finish(self._plan_large(problem, given, kernel, lam, count, budget, log),
                                                    budget, log), given, problem)
        # one length scale per column is searched past SEARCH_ROWS only: on a small set it fits the validation rows,
        # not the test rows (docs/design/large-route.md)
        return self._finish(self._plan_direct(problem, given, kernel, lam, count, budget, log), budget, log)

    def _plan_direct(self, problem, given, kernel, lam, count, budget, log):
        """The plan up to :data:`.large.SEARCH_ROWS` training rows: the columns that lose nothing dropped where the
        other half of the validation rows confirms it (:func:`.columns.choose`, ``drops_only``), the ladder on every
        row (:mod:`.planner`), then the chosen route on the ladder's chosen system."""
        from kopt.running.validation import make_splits

        o = self.options
        most = self.most_centers(problem)  # before any system is built: the memory caps the ladder
        (fit, va), = make_splits(problem.n, problem.spec["seed"], validation=o.validation)
        column_scales = None
        if not count and columns.screened(problem, fit, va, budget, scoring.metric_of(problem)):
            problem, column_scales = self._column_scales(problem, given, kernel, fit, va, budget, log,
                                                         drops_only=True)
        # the search's heavy BLAS is SciPy's (rank-k updates, triangular solves, Cholesky factors) between the
        # kernel's NumPy products: NumPy's own OpenBLAS is held to one thread (kopt.numerics.threads.scipy_blas)
        with _threads.scipy_blas():
            found = planner.search(
                problem, bandwidth_rule=kernel.get("bandwidth") == "auto",
                lambdas=planner.LAMBDAS if lam == "auto" else (float(lam),),
                counts=[int(count)] if count else None, max_centers=most, budget=budget,
                seed=problem.spec["seed"], validation=o.validation, log=log,
                hinge=problem.loss.name == "squared_hinge", choose_loss=self.loss_left_to_auto(given),
                screen_centers=self.centers_left_to_auto(given))
        best = found.best
        loss = self._loss_record(given, problem, found.loss_choice)
        overrides, words = self.route(problem.loss, best.centers, loss and loss["chosen"])
        overrides["model.regularizer.lambda"] = best.lam
        solver = overrides["solver"]
        if best.bandwidth is not None:
            overrides["model.kernel.bandwidth"] = float(f"{best.bandwidth:.6g}")
            overrides["model.kernel.bandwidth_factor"] = 1.0
        if best.center_rule is not None:  # the model's centers are randomly pivoted Cholesky's
            overrides["model.features.centers"] = best.center_rule
        if column_scales is not None:
            overrides["data.column_scales"] = [float(f"{c:.6g}") for c in column_scales]
        sizes = sorted({t.centers for t in found.trials})
        why = (f"{best.centers} centers (tried {', '.join(map(str, sizes))}), bandwidth "
               f"{overrides.get('model.kernel.bandwidth', '-')} (x{best.bandwidth_factor:g} the "
               f"{kernel.get('bandwidth')} rule), lambda {best.lam:g}: the best validation {found.metric} "
               f"({abs(best.score):.5g}) on the {'squared hinge' if found.hinge_start is not None else 'square loss'}'s "
               f"Nystrom path" + (f" (loss auto: {found.loss_choice.why})" if found.loss_choice else "")
               + (" on randomly pivoted Cholesky's centers" if best.center_rule else "")
               + f"; then {words}")
        record = {"route": solver["name"] + (f" ({solver['mode']})" if "mode" in solver else ""),
                  "centers": best.centers, "bandwidth": overrides.get("model.kernel.bandwidth"),
                  "bandwidth_factor": best.bandwidth_factor, "lambda": best.lam, "metric": found.metric,
                  "validation_score": abs(best.score), "split": found.split, "search_s": found.seconds,
                  "budget_s": o.budget, "trials": [t.record() for t in found.trials], "why": why}
        if loss is not None:
            record["loss"] = loss
        if found.center_choice is not None:
            record["centers_rule"] = found.center_choice.record()
        if column_scales is not None:
            record["column_scales"] = overrides["data.column_scales"]
        if not count and most < min(o.max_centers, problem.n):
            record["memory_cap"] = most  # the ladder stopped there: more centers would not fit the memory available
        start = None
        hinge = found.hinge_start is not None  # the ladder scored the squared hinge's own path
        if solver["name"] == "krr_nystrom":
            start = {"system": found.system, "centers": found.centers, "intercept": found.intercept}
        elif solver["name"] == "svm_nystrom":  # the search's system (and, for a binary target, its solution)
            start = {"system": found.system, "centers": found.centers, **(found.hinge_start or {})}
        elif self.on_cluster:  # the cluster's route starts from the search's model of the same settings
            start = cluster.direct_start(found, solver["name"], best.lam)
        held_out = None
        if solver["name"] in ("krr_nystrom", "krr_pcg") or hinge:  # the chosen loss's own held-out scores
            held_out = {"rows": found.validation_rows, "scores": found.validation_scores,
                        "words": f"solver auto's validation rows ({found.split})"}
        if solver["name"] == "newton_pcg" and lam == "auto" and found.validation_rows is not None and not hinge:
            start, held_out = self._direct_loss_path(problem, found, overrides, record, budget, log)
        return Plan(overrides, record, start, held_out)

    def _direct_loss_path(self, problem, found, overrides, record, budget, log):
        """A named smooth loss on the direct route: its own λ walked from the square loss's on the search's split
        (:func:`.smooth.loss_path`: the fit rows, the chosen centers and bandwidth, scored on the validation rows),
        as the large route does on its sample; ``(start, held out)`` of newton_pcg's solve, warm from that model.  Where
        no λ was afforded, the square loss's λ stands (``(None, None)``)."""
        import numpy as np

        best, va = found.best, np.asarray(found.validation_rows)
        centers = np.asarray(found.centers)
        sample = np.union1d(np.setdiff1d(np.arange(problem.n), va), centers)
        path = smooth.loss_path(problem, problem.loss, sample, va, np.searchsorted(sample, centers),
                                self._chosen_kernel(problem, best.bandwidth), best.lam, found.metric, budget, log)
        if path is None:
            return None, None
        overrides["model.regularizer.lambda"] = path.lam
        record["lambda"], record["validation_score"] = path.lam, abs(path.score)
        record["trials"].append(path.record(best.centers))
        record["why"] = record["why"].replace(
            "; then ", f"; the {path.loss.replace('_', ' ')} loss's own lambda on the same split: {path.lam:g} "
                       f"(validation {found.metric} {abs(path.score):.5g}); then ", 1) + ", warm from that model"
        held_out = {"rows": va, "scores": path.scores,
                    "words": f"solver auto's validation rows ({found.split}), scored by the {path.loss} loss's model"}
        return {"model": path.model}, held_out

    @staticmethod
    def centers_left_to_auto(given) -> bool:
        """Whether the search chooses the centers' rule: the spec's author gave neither ``model.features.count`` nor
        ``model.features.centers`` (a given count is the model they asked for)."""
        features = (given.get("model") or {}).get("features") or {}
        return not features.get("count") and "centers" not in features

    @staticmethod
    def scales_left_to_auto(given) -> bool:
        """Whether the search chooses the column scales: the spec's author gave no ``data.column_scales`` (a given
        list is kept, as a given bandwidth is)."""
        return (given.get("data") or {}).get("column_scales") is None

    @staticmethod
    def loss_left_to_auto(given) -> bool:
        """Whether the spec's author left the loss to auto (``model.loss.name: auto``, as ``given`` records it)."""
        return ((given.get("model") or {}).get("loss") or {}).get("name") == "auto"

    def _loss_record(self, given, problem, measured=None):
        """``report["auto"]["loss"]`` where the author left the loss to auto (None where the spec named it): the
        search's comparison of the two losses, or the square loss where none was measured, and why."""
        if not self.loss_left_to_auto(given):
            return None
        if measured is not None:
            return measured.record()
        if problem.preprocessor.target == "multiclass" or problem.label_matrix().shape[1] > 1:
            why = "more than two classes: the square loss, one output per class (the squared hinge is measured for " \
                  "a binary target)"
        else:
            why = (f"past {large.SEARCH_ROWS:,} training rows the centers grow on every row by conjugate gradients, "
                   "a square-loss route: the square loss (the squared hinge is measured on the direct route)")
        return {"chosen": "square", "why": why}

    def _square_chosen(self, plan, given, problem):
        """A plan of a route the squared hinge is not measured on (one-vs-one pairs, the grown centers): where the
        author left the loss to auto, its record says the square loss was taken and why."""
        loss = self._loss_record(given, problem)
        if loss is not None and "loss" not in plan.record:  # the large route records its own measurement
            plan.record["loss"] = loss
        return plan

    def work_budget(self, problem):
        """The search's :class:`.work.Budget`: ``solver.work`` flops, else :func:`.work.default_work` of the rows;
        ``solver.budget`` seconds as its wall-clock limit."""
        o = self.options
        if o.work is None:
            return work.Budget(work.default_work(problem.n), o.budget, rule=work.rule_words())
        return work.Budget(float(o.work), o.budget, rule="solver.work")

    @staticmethod
    def _finish(plan, budget, log):
        """The report's ``budget`` (the rule, the work counted, where a time limit bound); a bound limit said."""
        plan.record["budget"] = budget.record()
        if budget.bound:
            log(f"auto: the time limit (solver.budget = {budget.seconds:g} s) bound at {', '.join(budget.bound)}: this "
                "model depends on the machine's speed and load (without solver.budget the same spec and seed choose "
                "the same model on any machine)")
        else:
            log(f"auto: the search counted {budget.spent:.3g} of {budget.work:.3g} flops in {budget.elapsed():.1f} s")
        return plan

    def _column_scales(self, problem, given, kernel, fit, validation, budget, log, drops_only=False):
        """``(problem, scales)``: one length scale per column where it pays (:mod:`.columns`; ``bandwidth: auto``
        and no ``data.column_scales`` given only), the problem's rows multiplied by them as ``data.column_scales``
        multiplies the standardized rows (the same float32 products: the planned system is the final solve's; the
        columns of scale 0 left out, as there), its bandwidth by the chosen factor; else ``(problem, None)``."""
        if kernel.get("bandwidth") != "auto" or not self.scales_left_to_auto(given):
            return problem, None
        with _threads.scipy_blas():  # SciPy's BLAS for the trials' systems, NumPy's on one thread
            found = columns.choose(problem, fit=fit, validation=validation, metric=scoring.metric_of(problem),
                                   budget=budget, log=log, seed=problem.spec["seed"], drops_only=drops_only)
        if found is None:
            return problem, None
        scales, factor = found
        base = problem.kernel.options.as_dict()
        keep = scales > 0  # a column of scale 0 is left out, as data.column_scales leaves it out of the final solve's rows
        problem = dataclasses.replace(
            problem, X=problem.X[:, keep] * scales[keep].astype(problem.X.dtype),
            kernel=type(problem.kernel)(**{**base, "bandwidth": float(f"{base['bandwidth'] * factor:.6g}")}))
        return problem, scales

    def _plan_large(self, problem, given, kernel, lam, count, budget, log):
        """The plan past :data:`.large.SEARCH_ROWS` training rows (:mod:`.large`): the column scales, the direct
        search on a seeded sample, then, for the square loss, the centers grown on every row by conjugate gradients
        (krr_pcg); for another smooth loss its own λ on the sample (:mod:`.smooth`) and newton_pcg on every row.
        ``given``: what the spec's author wrote: where the loss is left to auto (a binary target) the logistic loss
        and the squared hinge are scored beside the square loss on the held-out rows; given column scales are kept."""
        from kopt.nystrom import newton_loss

        t0 = time.perf_counter()
        seed, n = problem.spec["seed"], problem.n
        fit, va = large.split(n, seed)
        unscaled, column_check = problem, None
        problem, column_scales = self._column_scales(problem, given, kernel, fit, va, budget, log)
        rows = large.sample_rows(problem, fit)
        sample = large.sample_problem(problem, rows)
        log(f"auto: past {large.SEARCH_ROWS:,} rows: the direct search on {sample.n:,} seeded rows, then the centers "
            f"grown on every row, scored on {len(va):,} held-out rows")
        square = problem.loss.name == "square"
        newton = not square and newton_loss(problem.loss)  # a named smooth loss: its own λ, then newton_pcg
        choose_loss = self.loss_left_to_auto(given) and square and problem.label_matrix().shape[1] == 1 and \
            problem.preprocessor.target == "binary"
        share = large.SAMPLE_SHARE * budget.work if (square or newton) and not count else None
        found = self._sample_search(sample, kernel, lam, count, budget, share, log)
        if column_scales is not None and columns.LADDER_CONFIRMS:
            # the scales were chosen at columns.CENTERS centers: the same ladder on the columns as given, up to the size
            # the scales' ladder chose, says whether they still pay there (where they do, its larger sizes are not
            # needed; where they do not, the ladder on the columns as given runs on past that size)
            log("auto: the same direct search on the columns as given, to confirm the column scales")
            plain_sample = large.sample_problem(unscaled, rows)
            cap = int(found.best.centers)
            plain = self._sample_search(plain_sample, kernel, lam, count, budget, share, log, most=cap)
            kept, column_check = self._scales_confirmed(plain_sample, plain, found, log)
            if column_check is not None:
                column_check["ladder_to"] = cap
            if not kept and not count and cap < self.most_centers(plain_sample) and \
                    max(int(t.centers) for t in plain.trials) >= cap:  # the cap, not its own rule, may have stopped it
                del plain  # its system's M x M buffers go first
                log("auto: the direct search on the columns as given, its ladder not stopped at "
                    f"{cap} centers")
                plain = self._sample_search(plain_sample, kernel, lam, count, budget, share, log)
            if not kept:
                problem, sample, found, column_scales = unscaled, plain_sample, plain, None
            del plain, plain_sample
        if column_scales is not None:
            # from here on the search reads the column-scaled copy: the rows as given go (Solver.plan may release them;
            # the solve on every row assembles its problem again)
            unscaled.X = None
        del unscaled
        chosen = LargeChoice(best=found.best, trials=[t.record() for t in found.trials], metric=found.metric,
                             split=f"validation {len(va)} of {n} rows, seed {seed}; direct search on {sample.n} "
                                   f"seeded rows", sample_n=sample.n, column_scales=column_scales,
                             column_check=column_check)
        if square:
            first, chosen.held_out = self._sample_model(problem, sample, found, va, count, kernel, budget, log)
            chosen.sample_model = first.model
            if choose_loss:
                self._screen_losses(problem, chosen, first, found, rows, va, budget, log)
            del found  # its system's M x M buffers go before the grown centers' are made
            if not count and chosen.loss is None:
                self._grow(problem, chosen, first, fit, va, rows, sample.n, budget, log)
            elif not count:
                self._centers_for_rows(problem, chosen, first, len(fit), sample.n, budget, log)
        elif newton:
            # the square loss's sample model: what its rows gained over half of them says whether the named loss's
            # centers grow with the rows (the squared hinge's search keeps no square-loss system)
            first = None
            if not count and problem.loss.name != "squared_hinge":
                first, _ = self._sample_model(problem, sample, found, va, count, kernel, budget, log)
            centers, best = found.centers, found.best
            del found
            path = smooth.loss_path(problem, problem.loss, rows, va, centers, self._chosen_kernel(problem, best.bandwidth),
                                    best.lam, chosen.metric, budget, log, walk=lam == "auto")
            if path is not None:
                self._take_path(chosen, path, va, seed)
                if first is not None:
                    self._centers_for_rows(problem, chosen, first, len(fit), sample.n, budget, log)
        return self._large_plan(problem, kernel, chosen, t0)

    def _sample_search(self, sample, kernel, lam, count, budget, share, log, most=None):
        """The direct search (:func:`.planner.search`) on the large route's sample, its work counted in a share of
        ``budget`` of ``share`` flops (None: the whole budget), its ladder up to ``most`` centers (None: as many as
        :meth:`most_centers` allows)."""
        with _threads.scipy_blas():
            return planner.search(
                sample, bandwidth_rule=kernel.get("bandwidth") == "auto",
                lambdas=planner.LAMBDAS if lam == "auto" else (float(lam),),
                counts=[int(count)] if count else None,
                max_centers=self.most_centers(sample) if most is None else min(most, self.most_centers(sample)),
                budget=budget if share is None else budget.share(share), seed=sample.spec["seed"],
                validation=self.options.validation, log=log, hinge=sample.loss.name == "squared_hinge")

    @staticmethod
    def _scales_confirmed(plain_sample, plain, scaled, log):
        """``(kept, record)``: whether the column scales' search (``scaled``) beat the same search on the columns as
        given (``plain``), both best models scored on the same validation rows of the sample
        (:func:`.columns.ladder_confirms`), and the report's record of it."""
        from kopt.numerics.backend import to_numpy

        metric, va = plain.metric, plain.validation_rows
        if va is None or plain.validation_scores is None or scaled.validation_scores is None:
            return True, None  # nothing to compare on: the column search's own choice stands
        idx = plain_sample.xp.asarray(va)
        Y = to_numpy(plain_sample.label_matrix()[idx])
        w = None if plain_sample.sample_weight is None else to_numpy(plain_sample.sample_weight[idx])
        y_scale = float(getattr(plain_sample.preprocessor, "y_scale", 1.0) or 1.0)
        plain_rows = scoring.outcomes(metric, plain.validation_scores, Y, y_scale, w)
        scaled_rows = scoring.outcomes(metric, scaled.validation_scores, Y, y_scale, w)
        kept, gained, error = columns.ladder_confirms(metric, plain_rows, scaled_rows)
        log(f"auto: the column scales' model ({scaled.best.centers} centers) gained "
            f"{scoring.gain_words(metric, gained)} over the columns as given ({plain.best.centers} centers) on the "
            f"sample's {len(va):,} validation rows (standard error {scoring.gain_words(metric, error)}): "
            + ("the scales kept" if kept else "every column kept, as given"))
        return kept, {"kept": bool(kept), "metric": metric, "rows": len(va), "gain": round(gained, 6),
                      "error": round(error, 6), "scaled": {"centers": scaled.best.centers,
                                                           "score": round(abs(scaled.best.score), 6)},
                      "as_given": {"centers": plain.best.centers, "score": round(abs(plain.best.score), 6)}}

    def _screen_losses(self, problem, chosen, first, found, rows, va, budget, log):
        """The loss left to auto past :data:`.large.SEARCH_ROWS` rows (a binary target): the logistic loss's and the
        squared hinge's own λ paths on the sample at its chosen centers and bandwidth, each scored on the held-out rows
        beside the square loss's sample model (:func:`.smooth.choose_loss`); the winner, if any, is the plan's."""
        from kopt.contract.registry import registry

        best = found.best
        kernel = self._chosen_kernel(problem, best.bandwidth)
        # the screen's own work budget: where the square loss stands, the grown centers see the search's as before
        screen = work.Budget(smooth.screen_work(len(rows), int(best.centers), int(problem.d)), budget.seconds,
                             rule="the loss screen's own")
        paths, shared = [], {}  # one factor of the centers for both losses' paths (the same rows and kernel)
        for name in smooth.AUTO_LOSSES:
            loss = registry().get("loss", name)()
            paths.append(smooth.loss_path(problem, loss, rows, va, found.centers, kernel, best.lam, chosen.metric,
                                          screen.share(screen.left() / (len(smooth.AUTO_LOSSES) - len(paths))), log,
                                          shared=shared))
        del shared  # its CG's M x M buffer goes with it
        picked, chosen.loss_record = smooth.choose_loss(problem, first.full_score, first.full_rows, paths,
                                                        chosen.metric)
        chosen.loss_record["work_flops"] = screen.spent
        log(f"auto: loss: {chosen.loss_record['why']}")
        for path in paths:
            if path is not None:
                chosen.trials.append(path.record(best.centers))
        if picked is not None:
            chosen.loss = picked.loss
            self._take_path(chosen, picked, va, problem.spec["seed"], record=False)

    @staticmethod
    def _take_path(chosen, path, va, seed, record=True):
        """The smooth loss's path chosen: its λ and score, its model as the start of the solve on every row, its
        held-out scores (a margin classifier's calibration)."""
        chosen.best = dataclasses.replace(chosen.best, lam=path.lam, score=path.score)
        chosen.start = {"model": path.model}
        chosen.newton = True
        chosen.held_out = {"rows": va, "scores": path.scores,
                           "words": f"solver auto's {len(va)} held-out rows (seed {seed}), scored by the {path.loss} "
                                    f"loss's model of the sample's rows"}
        if record:
            chosen.trials.append(path.record(chosen.best.centers))

    def _sample_model(self, problem, sample, found, va, count, kernel, budget, log):
        """``(SampleModel, held out)``: the sample's model scored on the held-out rows of every row (what the grown
        centers must beat, and the calibration's scores where nothing is grown), and what its rows gained over half
        of them where its ladder found no gain from more centers (:func:`.large.rows_gain`)."""
        from kopt.numerics.backend import to_numpy

        best, metric, seed = found.best, found.metric, problem.spec["seed"]
        chosen_kernel = self._chosen_kernel(problem, best.bandwidth)
        system = found.system
        X_va = _rows.take(problem.X, problem.xp.asarray(va))
        with _threads.scipy_blas():  # the system's factor and solves are SciPy's, as in the ladder
            w1 = system.coef(system.solve(best.lam))
            S1 = to_numpy(system.scores(X_va, w1)) + found.intercept
        budget.count(work.kernel_values(len(va), int(best.centers), int(problem.d)))
        Y_va = to_numpy(problem.label_matrix()[problem.xp.asarray(va)])
        y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
        full_rows = scoring.outcomes(metric, S1, Y_va, y_scale)
        tried = max(int(t.centers) for t in found.trials)
        first = large.SampleModel(centers=int(best.centers), lam=best.lam, full_score=scoring.score(metric, full_rows),
                                  full_rows=full_rows, model=(system.C, w1), tried_centers=tried,
                                  bandwidth_rule=kernel.get("bandwidth") == "auto")
        held_out = {"rows": va, "scores": S1, "words": f"solver auto's {len(va)} held-out rows (seed {seed})"}
        if tried > int(best.centers) and not count:
            # the ladder found no gain past its choice: did the rows still gain?
            with _threads.scipy_blas():  # one system on half the sample's rows: SciPy's rank-k updates
                first.rows_gain = large.rows_gain(sample, found, chosen_kernel, best.lam, X_va, Y_va, full_rows,
                                                  metric, y_scale, budget)
            log(f"auto: the sample's {sample.n:,} rows gained {scoring.gain_words(metric, first.rows_gain.gain)} over "
                f"half of them on the held-out rows (standard error "
                f"{scoring.gain_words(metric, first.rows_gain.noise)})")
        log(f"auto: the sample's model ({best.centers} centers, lambda {best.lam:g}) scores {metric} "
            f"{abs(first.full_score):.5g} on the {len(va):,} held-out rows")
        return first, held_out

    @staticmethod
    def _chosen_kernel(problem, bandwidth):
        """The problem's kernel at the chosen bandwidth (None: the kernel as it is)."""
        if bandwidth is None:
            return problem.kernel
        return type(problem.kernel)(**{**problem.kernel.options.as_dict(), "bandwidth": bandwidth})

    def _grow(self, problem, chosen, first, fit, va, rows, sample_n, budget, log):
        """The centers grown on every row (:func:`.large.grow`), kept in ``chosen`` where they beat the sample's model
        by :data:`.scoring.MIN_GAIN`; where the held-out rows could not change the model by what the search calls a
        gain (:func:`.large.rows_could_gain`), the model is the fit rows' (``data.held_out``)."""
        metric, n, seed = chosen.metric, problem.n, problem.spec["seed"]
        with _threads.scipy_blas():
            grown = large.grow(problem, first, kernel=self._chosen_kernel(problem, chosen.best.bandwidth), fit=fit,
                               validation=va, budget=budget, max_centers=large.MAX_GROWN_CENTERS, metric=metric,
                               log=log, sample=rows)
        if grown is None:
            return
        chosen.trials.append(grown.record(len(fit)))
        chosen.grown = grown.centers
        gain = scoring.gain(metric, first.full_score, grown.score)
        least = scoring.MIN_GAIN[metric]
        if gain < least:
            log(f"auto: {grown.centers} centers on every row gained {scoring.gain_words(metric, gain)} "
                f"(< {scoring.gain_words(metric, least)}): the sample's choice stands")
            return
        log(f"auto: {grown.centers} centers on every row gained {scoring.gain_words(metric, gain)} over the sample's "
            f"model: chosen")
        could = large.rows_could_gain(gain, n, len(fit), sample_n)
        if could < least:
            # the held-out rows could not change the model by what the search calls a gain: the model is the grown
            # path's, of the fit rows (data.held_out), and the solve on every row is not run
            chosen.held_rows = {"rows": int(len(va)), "seed": int(seed)}
            log(f"auto: the {len(va):,} held-out rows could gain at most {100 * could:.3g}"
                f"{'% of RMSE' if metric == 'rmse' else ' points'} over the {len(fit):,} fit rows' model "
                f"(the learning curve: {scoring.gain_words(metric, gain)} from {sample_n:,} rows), less "
                f"than the {scoring.gain_words(metric, least)} the search calls a gain: the model is the fit rows' "
                f"(data.held_out), no solve on every row")
        best = chosen.best
        chosen.best = dataclasses.replace(
            best, centers=grown.centers, lam=grown.lam, score=grown.score,
            bandwidth_factor=best.bandwidth_factor * grown.bandwidth_factor,
            bandwidth=grown.kernel.options.as_dict().get("bandwidth", best.bandwidth))
        # on a cluster the grown CG's rows stay there until the solve on every row makes its own (no factors handed on)
        # (and the chosen λ's state as its confirmation refreshed it: on the same rows, targets and weights -- the fit
        # rows' model, data.held_out -- the solve starts from it with no pass)
        chosen.start = {"v": grown.v} if self.on_cluster else {"v": grown.v, "factors": grown.cg,
                                                                 "refreshed": grown.state}
        # the held-out rows rode in every pass of the grown path with weight 0: their scores by the chosen settings'
        # model of the fit rows are the calibration's (no second solve on a split of its own)
        chosen.held_out = {"rows": va, "scores": grown.validation_scores,
                           "words": f"solver auto's {len(va)} held-out rows (seed {seed}), scored by the grown "
                                    f"path's model of the other rows"}

    def _centers_for_rows(self, problem, chosen, first, n_fit, sample_n, budget, log):
        """The smooth loss the screen chose (:meth:`_screen_losses`) or the spec named, on every row: where the
        sample's ladder stopped on a tie but its rows still gained what the held-out rows can tell
        (:func:`.large.rows_gain`: the learning curve is not flat), the centers grow and λ falls as
        √(n_fit / n_sample), the rates at which a Nyström estimator's centers and λ go with the rows (Rudi, Camoriano
        and Rosasco, 2015); the count a power of two, within memory and the work newton_pcg's solve on every row counts
        (:data:`.smooth.FINAL_PASSES` passes).  The solve starts from the sample's model on its centers
        (docs/design/loss-auto.md)."""
        from kopt.numerics.memory import available_bytes

        metric, best = chosen.metric, chosen.best
        if first.rows_gain is None or first.rows_gain.gain < max(scoring.MIN_GAIN[metric], first.rows_gain.noise):
            return
        factor = (n_fit / sample_n) ** 0.5
        top = min(large.MAX_GROWN_CENTERS, large.memory_centers(problem, available_bytes()), n_fit)
        M = int(best.centers)
        outputs = int(problem.label_matrix().shape[1])
        while (2 * M <= best.centers * factor and 2 * M <= top
               and smooth.final_work(problem.n, 2 * M, int(problem.d), outputs) <= budget.left()):
            M *= 2
        if M == best.centers:
            return
        lam = scoring.digits(best.lam / factor)
        chosen.best = dataclasses.replace(best, centers=M, lam=lam)
        chosen.grown = M
        log(f"auto: the sample's rows gained {scoring.gain_words(metric, first.rows_gain.gain)} over half of them: "
            f"on {n_fit:,} fit rows the {(chosen.loss or problem.loss.name).replace('_', ' ')} loss takes {M} centers "
            f"and lambda {lam:g} "
            f"(the sample's {best.centers} and {best.lam:g}, by sqrt({n_fit:,} / {sample_n:,}) = {factor:.3g})")

    def _large_plan(self, problem, kernel, chosen, t0):
        """The large route's :class:`Plan`: the route (krr_pcg warm from the grown path, else the sample's route),
        the chosen settings as spec overrides, and the report's record."""
        n, best, metric = problem.n, chosen.best, chosen.metric
        overrides, words = self.route(problem.loss, best.centers, chosen.loss, large=True)
        final_work = None
        if chosen.newton:  # a smooth loss's own λ on the sample: newton_pcg on every row, warm from its model
            words += ", warm from the sample's model"
        elif self.on_cluster and chosen.start is None and chosen.sample_model is not None:
            chosen.start = {"model": chosen.sample_model}  # krr_pcg for krr_nystrom: warm from the sample's model
            words += ", warm from the sample's model"
        elif chosen.start is not None:  # the grown centers: CG on every row, warm from the search's solution and factors
            overrides["solver"] = {"name": "krr_pcg", "tol": large.FINAL_TOL, "iterations": large.FINAL_STEPS}
            final_work = large.FINAL_STEPS * work.cg_step(n, int(best.centers), int(problem.d),
                                                          int(problem.label_matrix().shape[1]))
            words = ("krr_pcg (the square loss on every row by conjugate gradients, one pass of kernel blocks a step, "
                     "warm from the search)")
        overrides["model.regularizer.lambda"] = best.lam
        if best.bandwidth is not None:
            overrides["model.kernel.bandwidth"] = float(f"{best.bandwidth:.6g}")
            overrides["model.kernel.bandwidth_factor"] = 1.0
        scales = None if chosen.column_scales is None else [float(f"{c:.6g}") for c in chosen.column_scales]
        if scales is not None:
            overrides["data.column_scales"] = scales
        held_rows = chosen.held_rows
        if held_rows is not None:
            overrides["data.held_out"] = held_rows
            words += f", on the {n - held_rows['rows']:,} fit rows (data.held_out: the {held_rows['rows']:,} held-out rows)"
        solver = overrides["solver"]
        why = (f"{best.centers} centers, bandwidth {overrides.get('model.kernel.bandwidth', '-')} "
               f"(x{best.bandwidth_factor:g} the {kernel.get('bandwidth')} rule), lambda {best.lam:g}: the best "
               f"validation {metric} ({abs(best.score):.5g}) of the direct search on {chosen.sample_n:,} rows"
               + (f" and the centers grown to {chosen.grown} on every row" if chosen.grown else "") + f"; then {words}")
        record = {"route": solver["name"] + (f" ({solver['mode']})" if "mode" in solver else ""),
                  "centers": best.centers, "bandwidth": overrides.get("model.kernel.bandwidth"),
                  "bandwidth_factor": best.bandwidth_factor, "lambda": best.lam, "metric": metric,
                  "validation_score": abs(best.score), "split": chosen.split, "search_s": time.perf_counter() - t0,
                  "budget_s": self.options.budget, "trials": chosen.trials, "why": why, "column_scales": scales,
                  "held_out": held_rows}
        if final_work is not None:
            record["final_work_flops"] = final_work  # the solve on every row's bound, beside the search's budget
        if chosen.loss_record is not None:
            record["loss"] = chosen.loss_record
        if chosen.column_check is not None:
            record["column_check"] = chosen.column_check
        return Plan(overrides, record, chosen.start, chosen.held_out)


@dataclasses.dataclass
class LargeChoice:
    """The large route's choice as it is made: the best trial (the sample's, or the grown centers'), the report's
    trials, the metric and split words, the column scales, and where the centers grew, the start the solve on every
    row takes (``start``), the held-out rows' scores (``held_out``) and the held-out rows left out of the final
    solve (``held_rows``)."""

    best: records.Trial
    trials: list
    metric: str
    split: str
    sample_n: int
    column_scales: object = None
    #: the column scales measured against the columns as given on the sample's ladder (None: not measured)
    column_check: dict | None = None
    start: dict | None = None
    held_out: dict | None = None
    held_rows: dict | None = None
    grown: int | None = None
    #: the loss left to auto where another than the square loss won (:mod:`.smooth`), and the measurement's record
    loss: str | None = None
    loss_record: dict | None = None
    #: the solve on every row is newton_pcg's, warm from a smooth loss's model of the sample (``start``)
    newton: bool = False
    #: the sample's square-loss model ``(C, w)`` (a cluster's krr_pcg starts from it where nothing grew)
    sample_model: tuple | None = None
