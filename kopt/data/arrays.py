"""Dataset presets from Python: ``kopt.datasets.load("ijcnn1")``, the arrays ``kopt solve`` trains on.

>>> import kopt
>>> ds = kopt.datasets.load("higgs-12k")                          # doctest: +SKIP
>>> ds.X.shape, ds.X_test.shape                                    # doctest: +SKIP
((7500, 28), (5000, 28))
>>> ds.data is ds.X, ds.target_names                               # doctest: +SKIP
(True, array([0., 1.]))
>>> X, y = kopt.datasets.load("cal_housing", test_set=False, return_X_y=True)   # doctest: +SKIP

The files are found, verified and fetched exactly as for ``data: {source: NAME}`` in a spec
(docs/datasets.md): the data folder ``KOPT_DATA``, the SHA-256 checksums, ``KOPT_DATA_MIRROR``,
``KOPT_OFFLINE=1``, the parsed-array cache.  ``kopt data list`` lists the presets.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..errors import KoptError, SpecError
from .load import load_data

__all__ = ["Bunch", "load", "names"]


class Bunch(dict):
    """A dict whose keys are also attributes (as scikit-learn's ``Bunch``): ``ds.X`` is ``ds["X"]``.

    Parameters
    ----------
    *args, **kwargs
        As for ``dict``.

    Attributes
    ----------
    <key>
        Each key, read and set as an attribute.

    Examples
    --------
    >>> from kopt.datasets import Bunch
    >>> ds = Bunch(X=[[0.0, 1.0]], y=[1.0])
    >>> ds.y is ds["y"]
    True
    """

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value

    def __dir__(self):
        return list(self.keys())


def names() -> list[str]:
    """The registered dataset presets (built-in and from plugins), sorted.

    Returns
    -------
    list of str
        The names ``kopt.datasets.load`` and a spec's ``data.source`` take (``kopt data list`` prints them).

    Examples
    --------
    >>> import kopt
    >>> "higgs-12k" in kopt.datasets.names()
    True
    """
    from ..contract.registry import registry

    return sorted(registry().names("dataset"))


def load(name, *, as_frame=False, return_X_y=False, **options):
    """A dataset preset's training rows and standard test split, under kopt's names and scikit-learn's.

    Parameters
    ----------
    name : str
        A preset (``kopt data list``; :func:`names`), e.g. ``"ijcnn1"``, ``"higgs-12k"``, ``"cal_housing"``.
    as_frame : bool, default False
        ``X``/``data``/``X_test`` as pandas DataFrames, ``y``/``target``/``y_test`` as Series, and ``frame``
        the training rows' features and target in one DataFrame (sparse features stay sparse, in columns
        of a sparse dtype); needs pandas.
    return_X_y : bool, default False
        Return ``(X, y)`` of the training rows instead of a :class:`Bunch`.
    **options
        The preset's options, as ``data.options`` in a spec: ``test_set=False`` (no test split),
        ``rows=`` for ``higgs``, ``subset=`` for ``mnist`` ...; ``kopt validate --schema`` lists them.

    Returns
    -------
    Bunch
        ``X``, ``y`` (training rows; ``y`` None for unlabelled data), ``X_test``, ``y_test`` (None without a
        test split); scikit-learn's names for the training rows: ``data`` (``X``), ``target`` (``y``),
        ``frame`` (None unless ``as_frame``), ``feature_names`` (the files' column names, else ``x0``,
        ``x1``, ...), ``target_names`` (only for presets with classes: the distinct labels of both splits,
        sorted, as ``y`` holds them) and ``DESCR`` (the preset's summary, source, licence and files); and
        ``target_name``, ``name``, ``info`` (files, split, row counts, whether the cache served them).
        Dense features are float32 arrays (read-only memory maps when served from the cache), sparse ones
        scipy CSR matrices, labels float64.

    Raises
    ------
    kopt.UnknownComponentError
        ``name`` is not a registered preset (the message lists them).
    kopt.SpecError
        An option the preset does not take, or of the wrong type.
    kopt.DataError
        A file is missing and cannot be fetched (``KOPT_OFFLINE=1``: the message names the URL, the path
        it is expected at and its checksum), or does not match its checksum.

    Examples
    --------
    The HIGGS sample packaged with kopt (no download):

    >>> import kopt
    >>> ds = kopt.datasets.load("higgs-12k")
    >>> ds.X.shape, ds.X_test.shape
    ((7500, 28), (5000, 28))
    >>> ds.target_names
    array([0., 1.])
    """
    from ..contract.registry import registry

    cls = registry().get("dataset", name)
    try:
        preset = cls(**options)  # the options checked here, as kopt validate checks data.options
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    ds = load_data({"source": name, "options": options})
    feature_names = [str(c) for c in (ds.info.get("feature_names") or
                                      (f"x{j}" for j in range(ds.X.shape[1])))]
    target_name = ds.info.get("label_name") or "target"
    bunch = Bunch(X=ds.X, y=ds.y, X_test=ds.X_test, y_test=ds.y_test, feature_names=feature_names,
                  target_name=target_name, name=name, DESCR=describe(preset), info=ds.info)
    if getattr(cls, "task", "") in CLASS_TASKS and ds.y is not None:
        bunch.target_names = np.unique(np.concatenate([ds.y, ds.y_test if ds.y_test is not None else ds.y[:0]]))
    frame = None
    if as_frame:
        for X_key, y_key in (("X", "y"), ("X_test", "y_test")):
            bunch[X_key] = _frame(bunch[X_key], feature_names)
            bunch[y_key] = _series(bunch[y_key], target_name)
        frame = bunch.X if bunch.y is None else _pandas().concat([bunch.X, bunch.y], axis=1)
    bunch.update(data=bunch.X, target=bunch.y, frame=frame)
    if return_X_y:
        return bunch.X, bunch.y
    return bunch


#: the preset tasks whose labels are classes (``target_names``)
CLASS_TASKS = ("binary", "multiclass")


def describe(preset) -> str:
    """``DESCR``: the preset's name and summary, what its docstring says, its source and licence
    (``origin``) and the files it reads, with their URLs."""
    cls = type(preset)
    lines = [f"{cls.name}: {cls.summary}" if cls.summary else cls.name, ""]
    doc = inspect.getdoc(cls)
    if doc:
        lines += [doc, ""]
    lines.append(f"Source and licence: {getattr(cls, 'origin', '') or 'not stated by the preset'}")
    remotes = preset.remotes() if hasattr(preset, "remotes") else []
    if remotes:
        lines += ["", "Files:"] + [f"- {r.filename}: {r.url}" for r in remotes]
    return "\n".join(lines) + "\n"


def _pandas():
    try:
        import pandas
    except ImportError:
        raise KoptError("kopt.datasets.load(as_frame=True) needs pandas: pip install pandas (or the "
                        "'kopt[pandas]' extra)") from None
    return pandas


def _frame(X, columns):
    if X is None:
        return None
    pd = _pandas()
    if hasattr(X, "tocsr"):
        return pd.DataFrame.sparse.from_spmatrix(X, columns=columns)
    return pd.DataFrame(X, columns=columns, copy=False)


def _series(y, name):
    if y is None:
        return None
    return _pandas().Series(y, name=name)
