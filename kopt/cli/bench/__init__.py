"""``kopt bench``: benchmarks that print their figures beside the machine's own roofline and peers.

* :mod:`.features` -- the random-feature engine against the float32 cos roofline;
* :mod:`.peers` -- kopt against scikit-learn on the standard splits, each fit in its own process;
* :mod:`.joker` -- Joker's cost per block iteration at Zhang & Lai's HIGGS setting, against its floor.
* :mod:`.scale` -- kopt's routes and the large-scale peers from 10^5 rows up on the generated sets.
"""
