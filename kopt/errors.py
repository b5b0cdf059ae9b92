"""Every exception kopt raises on purpose.

A ``KoptError`` is a user-facing problem: the CLI prints its message (never a
traceback) and exits with ``exit_status``.
"""
from __future__ import annotations


class KoptError(Exception):
    """Base class of kopt's user-facing errors.

    A ``KoptError`` is a problem the user can act on (a spec, a data file, a model file, the memory), not a bug:
    the command line prints its message without a traceback and exits with its ``exit_status``.

    Attributes
    ----------
    exit_status : int
        The command line's exit status for this error (2 for a user's input, 1 otherwise).

    Examples
    --------
    Catch every error kopt raises on purpose:

    >>> import kopt
    >>> try:
    ...     kopt.load_spec({"solver": {"name": "krr_exact"}, "model": {"loss": {"name": "no-such-loss"}}})
    ... except kopt.KoptError as error:
    ...     print(type(error).__name__, error.exit_status)
    UnknownComponentError 2
    """

    exit_status = 1


class SpecError(KoptError, ValueError):
    """A spec is malformed or asks for an incompatible combination.

    Raised by :func:`kopt.load_spec` (and so by :func:`kopt.solve`, :func:`kopt.tune` and the estimators) before any
    data is read.  A ``ValueError`` too, so ``except ValueError`` catches it.

    Parameters
    ----------
    message : str
        What is wrong and what is allowed.
    source : str, optional
        The spec's file name, ``"<dict>"`` or ``"--set KEY"``.
    path : str, optional
        The key path, such as ``"$.solver.tol"``.
    line, column : int, optional
        1-based position in the spec file; None for a dict spec.
    parameter, value : optional
        The argument of a Python call the error is about, and its value.

    Attributes
    ----------
    source, path, line, column
        As given: where the problem is, so a tool can point at it.
    detail : str
        The message without the location.
    parameter, value
        The argument of a Python call the error is about (``validation`` of :func:`kopt.tune`), shown as
        ``validation=0.2`` unless a face that takes it under another name re-labels it (``relabel``: the CLI's
        ``--validation``).

    Examples
    --------
    >>> import kopt
    >>> spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"},
    ...                   "regularizer": {"name": "l2", "lambda": -1.0}},
    ...         "solver": {"name": "krr_exact"}}
    >>> try:
    ...     kopt.load_spec(spec)
    ... except kopt.SpecError as error:
    ...     print(error.source, error.path)
    <dict> $.model.regularizer.lambda
    """

    exit_status = 2

    def __init__(self, message: str, *, source: str | None = None, path: str | None = None, line: int | None = None,
                 column: int | None = None, parameter: str | None = None, value: object = None) -> None:
        if source is None and parameter is not None:
            source = f"{parameter}={value!r}"
        self.source = source
        self.path = path
        self.line = line
        self.column = column
        self.detail = message
        self.parameter = parameter
        self.value = value
        super().__init__(self._format())

    def relabel(self, source: str) -> SpecError:
        """This error in another face's words: the CLI's ``--validation 0.2`` for ``kopt.tune``'s ``validation``.

        Parameters
        ----------
        source : str
            What the user wrote in that face.

        Returns
        -------
        SpecError
            The same error (same class, detail, path and parameter) with ``source`` in front.

        Examples
        --------
        >>> from kopt import SpecError
        >>> error = SpecError("expected a share between 0 and 1", source="validation", value=2.0)
        >>> print(error.relabel("--validation 2.0"))
        --validation 2.0: expected a share between 0 and 1
        """
        return type(self)(self.detail, source=source, path=self.path, line=self.line, column=self.column,
                          parameter=self.parameter, value=self.value)

    def _format(self):
        where = self.source or "<spec>"
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        if self.path:
            return f"{where}: {self.path}: {self.detail}"
        return f"{where}: {self.detail}"


class UnknownComponentError(SpecError, KeyError):
    """A spec names a component that no plugin registers.

    A :class:`SpecError` (its parameters and attributes) and a ``KeyError``; the message lists the registered
    names of that kind and the nearest one.

    Examples
    --------
    >>> import kopt
    >>> try:
    ...     kopt.load_spec({"model": {"loss": {"name": "sqare"}}, "solver": {"name": "krr_exact"}})
    ... except kopt.UnknownComponentError as error:
    ...     print(error.path)
    $.model.loss.name
    """

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class DataError(KoptError, ValueError):
    """Data files or arrays that cannot be read or do not fit the problem.

    A ``ValueError`` too: rows and labels of different lengths, non-finite values, a file in no format kopt reads,
    features a model was not trained on.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...         "solver": {"name": "krr_exact"}}
    >>> try:
    ...     kopt.solve(spec, data=(np.ones((3, 2)), np.ones(4)))
    ... except kopt.DataError as error:
    ...     print(type(error).__name__)
    DataError
    """

    exit_status = 2


class BackendError(SpecError):
    """The requested array backend is unavailable."""


class PluginLoadError(KoptError):
    """An entry point of the ``kopt`` group failed to import or register, or one of its components was refused.

    Attributes: ``entry_point`` (``"name = module"``, or the plugin's name for in-process
    plugins), ``distribution``, ``error`` (the underlying exception), ``plugin`` (the
    plugin's name), and ``kind``/``component`` when a single component was refused (e.g. an
    invalid parameter schema); the plugin's other components are registered then.
    """

    def __init__(self, entry_point, distribution, error, *, plugin=None, kind=None, component=None):
        self.entry_point = entry_point
        self.distribution = distribution
        self.error = error
        self.plugin = plugin or str(entry_point).split(" = ")[0]
        self.kind = kind
        self.component = component
        if component is None:
            msg = (f"plugin entry point {entry_point!r} (from {distribution}) failed to load: "
                   f"{type(error).__name__}: {error}")
        else:
            msg = f"plugin {self.plugin!r} (from {distribution}): {kind} {component!r} was not registered: {error}"
        super().__init__(msg)


class ModelFileError(KoptError):
    """A model file that is missing, corrupt, or not written by kopt (:func:`kopt.load_model`).

    Examples
    --------
    >>> import kopt
    >>> try:
    ...     kopt.load_model("no/such/model.json")
    ... except kopt.ModelFileError as error:
    ...     print(type(error).__name__)
    ModelFileError
    """

    exit_status = 2


class CheckpointError(KoptError):
    """A checkpoint that cannot be resumed from."""

    exit_status = 2


class NonFiniteModelError(KoptError):
    """A solve ended with NaN or inf in the model's arrays (it diverged); nothing is written."""

    exit_status = 2


class OutputError(KoptError):
    """kopt's files cannot be written where asked: a full disk or quota, a file-size limit, a read-only file
    system, an output folder another run holds or that holds another spec's model."""

    exit_status = 2


class ClusterError(KoptError):
    """The Dask cluster cannot be used: Dask is not installed, the scheduler does not answer, no workers."""

    exit_status = 2


class Terminated(SystemExit):
    """A run stopped by SIGTERM (a batch scheduler, Kubernetes, ``timeout``).

    SIGTERM is treated like Ctrl-C: the solver stops at its next iteration and, with ``output.checkpoint_every``,
    the checkpoint of that iteration is written; then this is raised.  A ``SystemExit``, so a script that does not
    catch it exits as the signal asked, with ``finally`` blocks run.

    Parameters
    ----------
    code : int, optional
        The exit status, 143 (128 + SIGTERM) by default.

    Examples
    --------
    >>> import kopt
    >>> try:
    ...     raise kopt.Terminated()
    ... except SystemExit as stop:
    ...     print(stop.code)
    143
    """

    def __init__(self, code: int = 143) -> None:
        super().__init__(code)


class OutOfMemoryError(KoptError, MemoryError):
    """The memory ran out: an allocation failed (a ``MemoryError`` anywhere -- reading the data, the features, a
    solver, predicting -- is raised again as this, naming what was being done and the size NumPy asked for), or
    a solver's memory plan does not fit what this process may still take (:class:`MemoryLimitError`).  A
    ``MemoryError`` too, so ``except MemoryError`` catches it."""

    exit_status = 2


class MemoryLimitError(OutOfMemoryError):
    """Refused before the allocation: the bytes an input or a spec implies (a solver's memory plan,
    :mod:`kopt.numerics.memory`) exceed the memory available; the message gives both and the key to lower."""


class EnvVarError(KoptError):
    """A ``KOPT_*`` environment variable holds a value kopt cannot use."""

    exit_status = 2


class ConvergenceWarning(UserWarning):
    """A solver stopped at its iteration cap before reaching its tolerance.

    The result is still returned, with ``status == "iteration_cap"``; raise ``solver.iterations`` or loosen
    ``solver.tol`` to converge.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import kopt
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"count": 20}},
    ...         "solver": {"name": "krr_pcg", "iterations": 1, "tol": 1e-12}}
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = kopt.solve(spec, data=(X, X[:, 0]))
    >>> result.status, any(w.category is kopt.ConvergenceWarning for w in caught)
    ('iteration_cap', True)
    """


class SpecWarning(UserWarning):
    """A valid spec choice where another option kopt offers does better.

    A component's ``check_spec`` issues it (``warnings.warn(text, SpecWarning)``) to say so, naming the option;
    ``kopt validate`` and ``kopt solve`` print it as one line on stderr.

    Examples
    --------
    Make every such advice an error, in a test suite say:

    >>> import warnings
    >>> import kopt
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", kopt.SpecWarning)
    ...     try:
    ...         warnings.warn("use solver krr_nystrom instead", kopt.SpecWarning)
    ...     except kopt.SpecWarning as advice:
    ...         print(type(advice).__name__)
    SpecWarning
    """


class FeatureCountWarning(SpecWarning):
    """``model.features.count`` asks for more Nyström centers than the model can use: more than the training
    data's distinct rows, or centers the kernel cannot tell apart (dropped by
    :func:`kopt.nystrom.center_basis`).  The solve runs on the centers it has; the warning names the key and the
    count used, and the report's ``solver_info.centers_note`` says the same (:func:`kopt.nystrom.centers.centers_used`)."""
