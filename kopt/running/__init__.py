"""Running a spec on this machine: assembling the problem (:mod:`.assemble`), the run context solvers report to
(:mod:`.context`), the listeners (:mod:`.listeners`: trace, checkpoints, progress), progress records (:mod:`.logs`),
checkpoints (:mod:`.checkpoint`), the output folder (:mod:`.outdir`), the convergence plot (:mod:`.plotting`),
report.json's content (:mod:`.report`) and the choices made on held-out rows before a solve (:mod:`.validation`:
splits, ``lambda: auto``)."""
