"""Where every built-in preset's files come from, and the checksums they must match.

Two kinds of checksum (docs/datasets.md, "What is verified"):

- ``sha256`` of the bytes at the URL, where a public record gives it (HIGGS from
  tensorflow/datasets, MNIST from torchvision and tensorflow/datasets,
  cal_housing.tgz from scikit-learn) or where the URL serves exactly the bytes
  of the project's copy (the tick-datasets bz2 files);
- ``content_sha256``: the SHA-256 of the *decompressed* content, computed from
  the project's copies of the files (each ``provenance`` says where one came from).
  Several of those copies were recompressed with xz or split from a combined
  file, so their bytes differ from any download, but their content is the
  source file's: a download verifies against the content checksum, and such a
  copy against ``also_sha256`` (its own bytes) or its content.

The LIBSVM, LightGBM, H2O and StatLib-derived content checksums were computed
from those copies, offline; that the canonical download has the same content is
what their provenance checks (row counts, byte-identical copies in other
repositories) indicate, not something re-checked against the canonical
server.  A download whose content differs is refused with both
checksums in the message; point ``data.train`` at your copy to use it anyway.
"""
from kopt.data.download import Remote, Source

# -- HIGGS (UCI; Baldi, Sadowski & Whiteson 2014; CC BY 4.0) -------------------------------------------

HIGGS = Remote(
    url="https://archive.ics.uci.edu/ml/machine-learning-databases/00280/HIGGS.csv.gz",
    filename="HIGGS.csv.gz",
    sha256="ea302c18164d4e3d916a1e2e83a9a8d07069fa6ebc7771e4c0540d54e593b698",
    size=2_816_407_858,
    mirrors=("http://mlphysics.ics.uci.edu/data/higgs/HIGGS.csv.gz",),
    provenance="size and sha256 as published by tensorflow/datasets (url_checksums/higgs.txt) and matched "
               "by several independent downloads; not re-computed by kopt (no network where it was written)",
)

_LIGHTGBM = "https://raw.githubusercontent.com/microsoft/LightGBM/master/examples/binary_classification/"

#: UCI HIGGS rows 1-7,000 (LightGBM's example; 3 decimals), the higgs-12k training rows
HIGGS12K_TRAIN = Remote(
    url=_LIGHTGBM + "binary.train",
    filename="binary.train",
    size=1_228_616,
    sha256="41c42dc14f86960256bf872fc8ae6286c688b44f43b4057b29428787fc1e0444",
    content_sha256="41c42dc14f86960256bf872fc8ae6286c688b44f43b4057b29428787fc1e0444",
    also_sha256=("2baba5579efad4868d3d084656669cdd4a7c2b725d3d927837e686eb2ee8e5bf",),
    aliases=("higgs_lightgbm_train.tsv",),
    provenance="microsoft/LightGBM examples/binary_classification/binary.train (unchanged since 2016); "
               "sha256 of the content of the project's xz copy",
)
#: UCI HIGGS rows 7,001-7,500 (LightGBM's example test file), also training rows of higgs-12k
HIGGS12K_TRAIN2 = Remote(
    url=_LIGHTGBM + "binary.test",
    filename="binary.test",
    size=87_767,
    sha256="d99ebec91acd99638f00c727c251c947a1d17ddfcbea27bfef6b0dc5e5fb1db3",
    content_sha256="d99ebec91acd99638f00c727c251c947a1d17ddfcbea27bfef6b0dc5e5fb1db3",
    also_sha256=("47deaccb689039a99e0626c80cae95bc789e8eb844b3711e7de279db694fa2cb",),
    aliases=("higgs_lightgbm_test.tsv",),
    provenance="microsoft/LightGBM examples/binary_classification/binary.test; sha256 of the project's xz copy's content",
)
#: the H2O tutorial file higgs_test_5k (5,000 HIGGS rows disjoint from rows 1-10,000; 10 decimals)
HIGGS12K_TEST = Remote(
    url="https://raw.githubusercontent.com/SpringerNLP/Chapter2/master/data/higgs_test_5k.csv",
    filename="higgs_test_5k.csv",
    size=1_721_520,
    sha256="ab729cb2a366684b490d7a7b465dfa6fd9b27da23a65afdac68268c998a64fd4",
    content_sha256="ab729cb2a366684b490d7a7b465dfa6fd9b27da23a65afdac68268c998a64fd4",
    also_sha256=("ab2f19c89a677561ee302eff6491f4bd60f11521bb57059553bb703bcf229c9c",),
    aliases=("higgs_h2o_test_5k.csv",),
    provenance="SpringerNLP/Chapter2 data/higgs_test_5k.csv (H2O's tutorial file); sha256 of the project's xz "
               "copy's content",
)

# -- LIBSVM binary data sets (Chang & Lin) ------------------------------------------------------------

_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"
_TICK = "https://raw.githubusercontent.com/X-DataInitiative/tick-datasets/master/binary/"

IJCNN1_TRAIN = Remote(
    url=_LIBSVM + "ijcnn1.bz2",
    filename="ijcnn1.bz2",
    content_sha256="7fe291672c3fefe6a7e3c51529becd23f0e985ba05ffb8d53c9c648c1e91cc19",
    also_sha256=("b38a4198ce142d43e96fb86d17b87211feec1f909ac344fa057455c69de29de3",),
    mirrors=(Source(_TICK + "ijcnn1/ijcnn1.trn.bz2",
                    sha256="b38a4198ce142d43e96fb86d17b87211feec1f909ac344fa057455c69de29de3", size=1_395_175),),
    aliases=("ijcnn1_trval.libsvm", "ijcnn1.trn"),
    provenance="LIBSVM ijcnn1 (ijcnn1.tr + ijcnn1.val, 49,990 rows); content sha256 of the project's copy "
               "(tick-datasets binary/ijcnn1/ijcnn1.trn.bz2, whose bytes the mirror serves)",
)
IJCNN1_TEST = Remote(
    url=_LIBSVM + "ijcnn1.t.bz2",
    filename="ijcnn1.t.bz2",
    content_sha256="e7b0bbd518641980dc322746c6bc59d019d3153934e6258e48f9d8cfae2c4bb8",
    also_sha256=("acd1db430684fdd3f0c768ecc49aa8e749d0004fc117611220c2aa576a7b6a24",),
    mirrors=(Source(_TICK + "ijcnn1/ijcnn1.tst.bz2",
                    sha256="acd1db430684fdd3f0c768ecc49aa8e749d0004fc117611220c2aa576a7b6a24", size=2_597_597),),
    aliases=("ijcnn1_test.libsvm", "ijcnn1.tst"),
    provenance="LIBSVM ijcnn1.t (91,701 rows); content sha256 of the project's copy (tick-datasets ijcnn1.tst.bz2)",
)

A9A_TRAIN = Remote(
    url=_LIBSVM + "a9a",
    filename="a9a",
    size=2_329_875,
    content_sha256="f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906",
    also_sha256=("c7a2952bcd0877f2c8a6c44b52b1e8086ffff5c4cb1ff9e4d700c97313f2d6a4",),
    provenance="LIBSVM a9a (32,561 rows); content sha256 of the project's copy, the first 32,561 lines of a "
               "combined a9a + a9a.t file",
)
A9A_TEST = Remote(
    url=_LIBSVM + "a9a.t",
    filename="a9a.t",
    size=1_164_628,
    content_sha256="1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9",
    also_sha256=("062c4d552cafaf641effeb9742e80775d9c5593245da70817ed5c22f3dd9e0bc",),
    mirrors=(Source("https://raw.githubusercontent.com/UltramanGaia/ML2017-lab-02/"
                    "a83899df9c288a04fb7047dbcbdf1d2eafb28e70/data/a9a.t",
                    sha256="1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9", size=1_164_628),),
    provenance="LIBSVM a9a.t (16,281 rows); content sha256 of the project's copy, byte-identical to "
               "UltramanGaia/ML2017-lab-02 data/a9a.t (the mirror)",
)

W8A_TRAIN = Remote(
    url=_LIBSVM + "w8a",
    filename="w8a",
    size=3_478_239,
    content_sha256="b464b4f6ce6a5d9e181ffc793e19a04751036273722312398ef7673705014902",
    also_sha256=("7df9337cb89abb6ce17f2b75892c9c81b4b5206a37e056aa47a63d64f4feb350",),
    mirrors=(Source("https://raw.githubusercontent.com/unc-optimization/AccSPD/"
                    "d2f1f2c961e3401032649544445bb24ab63ab1c5/data/w8a",
                    sha256="b464b4f6ce6a5d9e181ffc793e19a04751036273722312398ef7673705014902", size=3_478_239),),
    provenance="LIBSVM w8a (49,749 rows); content sha256 of the project's copy (unc-optimization/AccSPD data/w8a, "
               "the mirror)",
)

# -- lasvm-reuters (L. Bottou), as cleaned by tick-datasets -------------------------------------------

REUTERS_TRAIN = Remote(
    url=_TICK + "reuters/reuters.trn.bz2",
    filename="reuters.trn.bz2",
    sha256="e77a3368662c02caebe0d9cbcc97d856019bcfb33a8e9b7c48e0b51ee4cdfb60",
    size=3_107_267,
    content_sha256="caacd2baf041b15b51ab65c0ec2ac834a439a561fb6708427c1c002c10ac7215",
    aliases=("reuters_lasvm_train.libsvm",),
    provenance="tick-datasets binary/reuters/reuters.trn.bz2: money-fx.trn of leon.bottou.org's "
               "lasvm-reuters.tar.bz2 with duplicated feature entries removed; sha256 of the project's byte-identical copy",
)
REUTERS_TEST = Remote(
    url=_TICK + "reuters/reuters.tst.bz2",
    filename="reuters.tst.bz2",
    sha256="3d699b9644a38160bf3228059d18fbfc07474057d8e82d512576a2b82d72e211",
    size=763_856,
    content_sha256="6e267dcb1f83c68bcb1c3f30d7a70dd9fe059e1da39b9c191456ff827507539f",
    aliases=("reuters_lasvm_test.libsvm",),
    provenance="tick-datasets binary/reuters/reuters.tst.bz2 (lasvm-reuters money-fx.tst, cleaned the same way)",
)

# -- California housing (Pace & Barry 1997; StatLib) ---------------------------------------------------

CAL_HOUSING = Remote(
    url="https://ndownloader.figshare.com/files/5976036",
    filename="cal_housing.data",
    sha256="aaa5c9a6afe2225cc2aed2723682ae403280c4a3695a2ddda4ffb5d8215ea681",
    size=441_963,
    member="CaliforniaHousing/cal_housing.data",
    content_sha256="a2b44dcc7e1c9091b43c4f458b25cbd1f7e8068d08edd26bc4703108d3fa6214",
    also_sha256=("a4563015cd2b66aec2b790046bfdd99e1699040663a343fb9a41bd1509927bed",),
    mirrors=(Source("https://raw.githubusercontent.com/we-b/datasets_for_ai/master/cal_housing.data",
                    sha256="a2b44dcc7e1c9091b43c4f458b25cbd1f7e8068d08edd26bc4703108d3fa6214", size=2_071_484),),
    provenance="scikit-learn's cal_housing.tgz (figshare; archive size and sha256 from "
               "sklearn/datasets/_california_housing.py), member CaliforniaHousing/cal_housing.data; the content "
               "sha256 is the project's copy's (we-b/datasets_for_ai cal_housing.data, the mirror)",
)

# -- MNIST (LeCun, Cortes & Burges) ---------------------------------------------------------------------

_LECUN = "http://yann.lecun.com/exdb/mnist/"
_MNIST_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/",
                  "https://storage.googleapis.com/cvdf-datasets/mnist/")


def _mnist(name, sha256, size, content, provenance):
    return Remote(url=_LECUN + name, filename=name, sha256=sha256, size=size, content_sha256=content,
                  mirrors=tuple(m + name for m in _MNIST_MIRRORS), provenance=provenance)


_MNIST_PROV = ("sha256 as recorded by torchvision and tensorflow/datasets; equal to the project's copy "
               "(whose md5 is the official one)")
MNIST_T10K_IMAGES = _mnist("t10k-images-idx3-ubyte.gz",
                           "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1_648_877,
                           "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7", _MNIST_PROV)
MNIST_T10K_LABELS = _mnist("t10k-labels-idx1-ubyte.gz",
                           "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4_542,
                           "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2", _MNIST_PROV)
MNIST_TRAIN_LABELS = _mnist("train-labels-idx1-ubyte.gz",
                            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28_881,
                            "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", _MNIST_PROV)
MNIST_TRAIN_IMAGES = _mnist("train-images-idx3-ubyte.gz",
                            "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9_912_422, None,
                            "sha256 and size as recorded by torchvision and tensorflow/datasets (not "
                            "re-computed by kopt)")
