"""Model selection above :func:`kopt.solve`: ``kopt tune``'s grid search (:mod:`.tune`), its shared Nyström systems
per fold (:mod:`.nystrom_folds`) and what it shows and writes (:mod:`.tune_report`)."""
