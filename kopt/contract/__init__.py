"""The plugin contract: what a component implements and what it receives.

* :mod:`.components` -- the base classes (Loss, Kernel, Regularizer, Solver, DatasetPreset, Predictor);
* :mod:`.hookspecs` -- the pluggy hooks (``hookimpl``) a plugin implements;
* ``kopt.contract.registry`` -- the registry of every component, loaded from the ``kopt`` entry-point group;
* :mod:`.options` -- a component's parameters as a frozen dataclass;
* :mod:`.iterative` -- the solver skeleton (``IterativeSolver``, ``Step``, ``Check``);
* :mod:`.problem`, :mod:`.result` -- what a solver receives and returns;
* ``kopt.contract.bandwidth`` -- the bandwidth rules a kernel's ``bandwidth: median`` resolves by;
* ``kopt.contract.version`` -- the version models, checkpoints and reports are stamped with.
"""
