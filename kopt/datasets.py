"""Dataset presets from Python: ``kopt.datasets.load("ijcnn1")``, the arrays ``kopt solve`` trains on.

>>> import kopt
>>> ds = kopt.datasets.load("higgs-12k")                          # doctest: +SKIP
>>> ds.X.shape, ds.X_test.shape                                    # doctest: +SKIP
((7500, 28), (5000, 28))
>>> X, y = kopt.datasets.load("cal_housing", test_set=False, return_X_y=True)   # doctest: +SKIP

The files are found, verified and fetched exactly as for ``data: {source: NAME}`` in a spec
(docs/data.md): the data folder ``KOPT_DATA``, the SHA-256 checksums, ``KOPT_DATA_MIRROR``,
``KOPT_OFFLINE=1``, the parsed-array cache.  ``kopt data list`` lists the presets.
"""
from __future__ import annotations

from .data.load import load_data
from .errors import KoptError, SpecError

__all__ = ["Bunch", "load", "names"]


class Bunch(dict):
    """A dict whose keys are also attributes (as scikit-learn's ``Bunch``): ``ds.X`` is ``ds["X"]``."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value

    def __dir__(self):
        return list(self.keys())


def names() -> list:
    """The registered dataset presets (built-in and from plugins), sorted."""
    from .plugins import registry

    return sorted(registry().names("dataset"))


def load(name, *, as_frame=False, return_X_y=False, **options):
    """A dataset preset's training rows and standard test split.

    Parameters
    ----------
    name : str
        A preset (``kopt data list``; :func:`names`), e.g. ``"ijcnn1"``, ``"higgs-12k"``, ``"cal_housing"``.
    as_frame : bool, default False
        ``X``/``X_test`` as pandas DataFrames and ``y``/``y_test`` as Series (sparse features stay sparse,
        in a DataFrame of sparse columns); needs pandas.
    return_X_y : bool, default False
        Return ``(X, y)`` of the training rows instead of a :class:`Bunch`.
    **options
        The preset's options, as ``data.options`` in a spec: ``test_set=False`` (no test split),
        ``rows=`` for ``higgs``, ``subset=`` for ``mnist`` ...; ``kopt validate --schema`` lists them.

    Returns
    -------
    Bunch
        ``X``, ``y`` (training rows; ``y`` None for unlabelled data), ``X_test``, ``y_test`` (None without a
        test split), ``feature_names`` (None when the files name no columns), ``target_name``, ``name``,
        ``DESCR`` (the preset's summary) and ``info`` (files, split, row counts, whether the cache served them).
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
    """
    from .plugins import registry

    cls = registry().get("dataset", name)
    try:
        cls(**options)  # the options checked here, as kopt validate checks data.options
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    ds = load_data({"source": name, "options": options})
    d = ds.X.shape[1]
    feature_names = ds.info.get("feature_names")
    bunch = Bunch(X=ds.X, y=ds.y, X_test=ds.X_test, y_test=ds.y_test, feature_names=feature_names,
                  target_name=ds.info.get("label_name") or "target", name=name, DESCR=cls.summary, info=ds.info)
    if as_frame:
        columns = list(feature_names) if feature_names else [f"x{j}" for j in range(d)]
        for X_key, y_key in (("X", "y"), ("X_test", "y_test")):
            bunch[X_key] = _frame(bunch[X_key], columns)
            bunch[y_key] = _series(bunch[y_key], bunch.target_name)
    if return_X_y:
        return bunch.X, bunch.y
    return bunch


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
