"""Every exception kopt raises on purpose.

A ``KoptError`` is a user-facing problem: the CLI prints its message (never a
traceback) and exits with ``exit_status``.
"""
from __future__ import annotations


class KoptError(Exception):
    """Base class of kopt's user-facing errors."""

    exit_status = 1


class SpecError(KoptError, ValueError):
    """A spec is malformed or asks for an incompatible combination.

    Attributes give the location so tools can point at it: ``source`` (file
    name or ``<dict>``), ``path`` (key path such as ``$.solver.tol``),
    ``line``/``column`` (1-based, ``None`` for dict specs).  ``parameter`` and
    ``value``: the argument of a Python call the error is about (``validation``
    of :func:`kopt.tune`), shown as ``validation=0.2`` unless a face that takes
    it under another name re-labels it (:meth:`relabel`: the CLI's ``--validation``).
    """

    exit_status = 2

    def __init__(self, message, *, source=None, path=None, line=None, column=None, parameter=None, value=None):
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

    def relabel(self, source):
        """This error with ``source`` for its words (a face's flag for :attr:`parameter`)."""
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
    """A spec names a component that no plugin registers."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class DataError(KoptError, ValueError):
    """Data files that cannot be read or do not fit the problem."""

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
    """A model file that is missing, corrupt, or not written by kopt."""

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
    """A run stopped by SIGTERM (a batch scheduler, Kubernetes, ``timeout``): treated like Ctrl-C -- the
    solver stops at its next iteration and, with ``output.checkpoint_every``, the checkpoint of that
    iteration is written -- then this is raised.  A ``SystemExit`` with code 143 (128 + SIGTERM), so a
    script that does not catch it exits as the signal asked, with ``finally`` blocks run."""

    def __init__(self, code=143):
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
    """A solver stopped at its iteration cap before reaching its tolerance."""


class SpecWarning(UserWarning):
    """A valid spec choice where another option kopt offers was measured to do better.

    A component's ``check_spec`` issues it (``warnings.warn(text, SpecWarning)``) to say so, naming the
    option and the measurement; ``kopt validate`` and ``kopt solve`` print it as one line on stderr.
    """


class FeatureCountWarning(SpecWarning):
    """``model.features.count`` asks for more Nyström centers than the model can use: more than the training
    data's distinct rows, or centers the kernel cannot tell apart (dropped by
    :func:`kopt.nystrom.center_basis`).  The solve runs on the centers it has; the warning names the key and the
    count used, and the report's ``solver_info.centers_note`` says the same (:func:`kopt.nystrom.centers.centers_used`)."""
