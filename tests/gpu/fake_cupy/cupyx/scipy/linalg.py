"""A stand-in ``cupyx.scipy.linalg``: SciPy's, under the signatures kopt calls."""
from scipy.linalg import *  # noqa: F401,F403
