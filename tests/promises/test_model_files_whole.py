"""A model file is checked whole on load: every field on its own and against the others, ``model_sha256``
recomputed, one row through every prediction path.  A file that fails is a ``ModelFileError`` (exit status 2 on
the CLI, one line); a file that loads predicts, decodes, gives its probabilities and its extra outputs without an
internal error.

Every edit below keeps the file's checksums valid (the npz's SHA-256 and the JSON's own), as a forger or a
careless script would, so only the content is wrong."""
from __future__ import annotations

import hashlib
import io
import json
import shutil

import numpy as np
import pytest
from helpers import check_error, curved_classes

import kopt
from kopt.cli import main
from kopt.errors import KoptError, ModelFileError
from kopt.files import sets as fileset


def _spec(loss, solver, **data):
    return {"model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"count": 40}},
            "solver": {"name": solver}, "backend": "numpy", "data": data}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Small models of each kind, written once: a calibrated binary margin classifier, a calibrated one-vs-rest
    classifier of 3 classes, a regression, and a logistic classifier (its own probabilities)."""
    root = tmp_path_factory.mktemp("models")
    X2, y2 = curved_classes(n=200, seed=1)
    X3, y3 = curved_classes(n=240, seed=2, classes=3)
    rng = np.random.default_rng(3)
    Xr = rng.standard_normal((150, 3))
    yr = np.sin(Xr[:, 0]) + 0.1 * rng.standard_normal(150)
    made = {}
    for name, spec, data in [("binary", _spec("squared_hinge", "svm_nystrom"), (X2, y2)),
                             ("multiclass", _spec("squared_hinge", "svm_nystrom"), (X3, y3)),
                             ("real", _spec("square", "krr_exact"), (Xr, yr)),
                             ("logistic", {**_spec("logistic", "dsg"), "solver": {"name": "dsg", "iterations": 20,
                                                                                  "batch_size": 32}}, (X2, y2))]:
        result = kopt.solve(spec, data=data)
        made[name] = (result.model.save(root / name / "model"), data[0])
    return made


def _copy(models, kind, tmp_path):
    src, X = models[kind]
    dst = tmp_path / kind
    shutil.copytree(src.rsplit("/", 1)[0], dst)
    return dst / "model.json", X


def _read(path):
    meta = json.loads(path.read_text())
    with np.load(path.with_suffix(".npz")) as z:
        arrays = {k: z[k] for k in z.files}
    return meta, arrays


def _rewrite(path, meta, arrays):
    """Write ``meta`` and ``arrays`` back with valid checksums, as a forger would."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    payload = buf.getvalue()
    path.with_suffix(".npz").write_bytes(payload)
    meta["arrays_sha256"] = hashlib.sha256(payload).hexdigest()
    path.write_text(json.dumps(fileset.seal(meta)))


def _rehash(meta, arrays):
    """``model_sha256`` made to match the edited content, so the check under test is the one that answers."""
    from kopt.models.model import content_hash

    meta["model_sha256"] = content_hash(meta, arrays)


def _calibration_of_3(meta, arrays):
    meta["calibration"].update(a=[1.0, 1.0, 1.0], b=[0.0, 0.0, 0.0])


def _calibration_n_classes(meta, arrays):
    meta["calibration"]["n_classes"] = 5


def _one_sigmoid_for_3(meta, arrays):
    meta["calibration"].update(a=[1.0], b=[0.0])


def _drop_a_class(meta, arrays):
    arrays["pre_classes"] = arrays["pre_classes"][:2]
    meta["calibration"].update(a=meta["calibration"]["a"][:2], b=meta["calibration"]["b"][:2], n_classes=2)


def _three_classes_binary(meta, arrays):
    arrays["pre_classes"] = np.array([-1, 0, 1])


def _unsorted_classes(meta, arrays):
    arrays["pre_classes"] = arrays["pre_classes"][::-1].copy()


def _calibrated_regression(meta, arrays):
    meta["calibration"] = {"method": "sigmoid", "a": [1.0], "b": [0.0]}


def _classes_on_regression(meta, arrays):
    arrays["pre_classes"] = np.array([0.0, 1.0])


def _real_target_of_classifier(meta, arrays):
    meta["preprocessor"]["target"] = "real"
    del arrays["pre_classes"]
    del meta["calibration"]


def _unknown_target(meta, arrays):
    meta["preprocessor"]["target"] = "ranking"


def _loss_not_the_spec(meta, arrays):
    meta["loss"]["name"] = "hinge"


def _columns_count(meta, arrays):
    meta["info"]["columns"] = {"features": ["a", "b"], "label": "y"}


def _data_format(meta, arrays):
    meta["spec"]["data"]["format"] = "parquet"


def _zero_y_scale(meta, arrays):
    meta["preprocessor"]["y_scale"] = 0.0


# (id, model kind, edit, whether model_sha256 is made to match again, phrases of the message)
CASES = [
    ("calibration-3-sigmoids-binary", "binary", _calibration_of_3, False,
     ["field 'calibration' has 3 sigmoid(s) and the model 2 classes"]),
    ("calibration-n-classes", "binary", _calibration_n_classes, False, ["calibration.n_classes is 5"]),
    ("calibration-1-sigmoid-3-classes", "multiclass", _one_sigmoid_for_3, False,
     ["field 'calibration' has 1 sigmoid(s) and the model 3 classes"]),
    ("classes-vs-coefficient-columns", "multiclass", _drop_a_class, True, ["3 score column(s)", "2 classes"]),
    ("binary-with-3-classes", "binary", _three_classes_binary, True, ["'pre_classes' holds 3 classes",
                                                                       "exactly 2"]),
    ("classes-unsorted", "binary", _unsorted_classes, True, ["'pre_classes' is not sorted"]),
    ("calibration-on-regression", "real", _calibrated_regression, False, ["real target, not classes"]),
    ("classes-on-regression", "real", _classes_on_regression, True, ["a real target has none"]),
    ("classifier-called-regression", "binary", _real_target_of_classifier, True, ["has a binary target",
                                                                                  "a real one"]),
    ("unknown-target", "binary", _unknown_target, True, ["preprocessor.target is 'ranking'"]),
    ("loss-not-the-spec", "binary", _loss_not_the_spec, True, ["loss.name is 'hinge'", "'squared_hinge'"]),
    ("column-names-vs-features", "binary", _columns_count, False, ["info.columns names 2 features",
                                                                   "n_features is 3"]),
    ("data-format", "binary", _data_format, False, ["spec.data.format", "'parquet'"]),
    ("zero-y-scale", "real", _zero_y_scale, True, ["y_scale must be > 0"]),
]


@pytest.mark.parametrize("case_id,kind,edit,rehash,phrases", CASES, ids=[c[0] for c in CASES])
def test_fields_are_checked_against_each_other(case_id, kind, edit, rehash, phrases, models, tmp_path, capsys,
                                               monkeypatch):
    path, X = _copy(models, kind, tmp_path)
    meta, arrays = _read(path)
    edit(meta, arrays)
    if rehash:
        _rehash(meta, arrays)
    _rewrite(path, meta, arrays)
    with pytest.raises(ModelFileError) as caught:
        kopt.load_model(path)
    for phrase in phrases:
        assert phrase in str(caught.value), str(caught.value)
    np.savetxt(tmp_path / "x.csv", X[:5], delimiter=",")
    monkeypatch.chdir(tmp_path)
    check_error(["predict", str(path), "x.csv", "--labels", "none", "--proba"], capsys, phrases)


def test_changed_coefficients_break_the_recorded_hash(models, tmp_path, capsys):
    """Coefficients that no longer match ``model_sha256`` are refused on load, and ``kopt model-hash`` prints the
    content's hash and says it differs from the one recorded (exit status 2)."""
    path, _ = _copy(models, "binary", tmp_path)
    meta, arrays = _read(path)
    recorded = meta["model_sha256"]
    arrays["p_coef"] = arrays["p_coef"] * 1.5
    _rewrite(path, meta, arrays)
    with pytest.raises(ModelFileError, match="model_sha256 mismatch"):
        kopt.load_model(path)
    assert main(["model-hash", str(path)]) == 2
    out, err = capsys.readouterr()
    computed = out.split()[0]
    assert computed != recorded and len(computed) == 64
    assert "model_sha256 mismatch" in err and recorded[:12] in err and computed[:12] in err


def test_an_untouched_model_hashes_to_its_record(models, tmp_path, capsys):
    path, _ = _copy(models, "binary", tmp_path)
    assert main(["model-hash", str(path.parent)]) == 0  # the output folder names its model.json
    out, err = capsys.readouterr()
    assert out.split()[0] == json.loads(path.read_text())["model_sha256"] and err == ""


def test_an_edited_spec_field_that_shapes_the_model_breaks_the_hash(models, tmp_path):
    path, _ = _copy(models, "real", tmp_path)
    meta, arrays = _read(path)
    meta["spec"]["model"]["regularizer"]["lambda"] = 0.5
    _rewrite(path, meta, arrays)
    with pytest.raises(ModelFileError, match="model_sha256 mismatch"):
        kopt.load_model(path)


# -- no prediction path raises an internal error on a file that loaded --------------------------------------------
HOSTILE = [None, True, -1, 0, 2.5, 1e308, "x", "", [], [1.0, "a"], {}, {"a": 1}]


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(node, list) and node and all(not isinstance(v, (dict, list)) for v in node):
        yield path
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, path + (i,))
    if path:
        yield path


def _set(meta, path, value):
    node = meta
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _use(model, X):
    """Every prediction path of a loaded model."""
    model.predict(X)
    model.decision_function(X)
    model.predict_extra(X)
    if model.has_proba():
        assert np.allclose(model.predict_proba(X).sum(axis=1), 1.0)
    else:
        with pytest.raises(KoptError):
            model.predict_proba(X)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["binary", "multiclass", "real", "logistic"])
def test_every_field_edited_loads_cleanly_or_is_refused(kind, models, tmp_path):
    """Each field of model.json replaced by each hostile value (model_sha256 made to match again, so the check of
    the field itself answers): the load is refused with a ModelFileError, or every prediction path works."""
    path, X = _copy(models, kind, tmp_path)
    base_meta, arrays = _read(path)
    skip = {("checksum",), ("arrays_sha256",), ("model_sha256",), ("arrays",)}
    loaded = refused = 0
    for where in sorted(set(_leaves(base_meta)) - skip, key=str):
        for value in HOSTILE:
            meta = json.loads(json.dumps(base_meta))
            _set(meta, where, value)
            try:
                _rehash(meta, arrays)
            except Exception:  # the hash cannot even be taken of it: the file's own fields are wrong
                pass
            _rewrite(path, meta, arrays)
            try:
                model = kopt.load_model(path)
            except ModelFileError:
                refused += 1
                continue
            except KoptError as exc:
                raise AssertionError(f"{where} = {value!r}: {type(exc).__name__}, not a ModelFileError: {exc}")
            try:
                _use(model, X[:4])
            except KoptError:
                pass  # a user-facing error (a predict_proba refusal) is fine; an internal one is not
            loaded += 1
    assert refused and loaded


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["binary", "multiclass", "real"])
def test_every_array_reshaped_loads_cleanly_or_is_refused(kind, models, tmp_path):
    path, X = _copy(models, kind, tmp_path)
    meta0, base = _read(path)
    for name in base:
        a = base[name]
        variants = [a[:1], a[:0], np.concatenate([a, a[:1]]), a.astype(np.int8), a.reshape(-1)[:, None],
                    np.zeros(())]
        if a.ndim == 2:
            variants += [a.T.copy(), a[:, :1]]
        for v in variants:
            arrays = {**base, name: v}
            meta = json.loads(json.dumps(meta0))
            _rehash(meta, arrays)
            _rewrite(path, meta, arrays)
            try:
                model = kopt.load_model(path)
            except ModelFileError:
                continue
            try:
                _use(model, X[:4])
            except KoptError:
                pass
