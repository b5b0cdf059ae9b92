"""Model selection above :func:`kopt.solve`: ``kopt tune``'s grid search (:mod:`.tune`), its shared Nyström systems
per fold (:mod:`.nystrom_folds`) and what it shows and writes (:mod:`.tune_report`)."""


def __getattr__(name):
    # kopt 0.1's kopt.selection (the splits, lambda: auto's path) is kopt.running.validation
    from ..running import validation

    try:
        value = getattr(validation, name)
    except AttributeError:
        raise AttributeError(f"module 'kopt.selection' has no attribute {name!r}") from None
    import warnings

    warnings.warn(f"kopt.selection.{name} moved to kopt.running.validation.{name}", DeprecationWarning, stacklevel=2)
    return value
