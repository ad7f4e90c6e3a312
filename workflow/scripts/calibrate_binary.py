"""Rules calibrate_binary(_batchN): binary families fitted on the validation scores of each task."""
import numpy as np

from fitontest.study.experiment import ScoreGrid, family_params, fit_family
from fitontest.core.io import load_npz, save_npz, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
p = snakemake.params
uncalibrated = [load_npz(src) for src in snakemake.input]     # one per task
# each task's hold-out scores are sorted once for every calibrator's predictions
grids = [ScoreGrid(d["holdout_scores"]) for d in uncalibrated]
# the outputs: every task of the first calibrator, then of the next, ...
outputs = iter(snakemake.output)
for name in p.calibrators:
    params = family_params(name, p.family_params, p.seed)
    for task, d, grid, out in zip(p.tasks, uncalibrated, grids, outputs):
        fam, seconds = fit_family(name, d["val_scores"], d["val_labels"], params)
        # predictions are clipped to [0, 1]: a calibrated score is a probability
        s_val = np.clip(fam.predict(d["val_scores"]), 0.0, 1.0)
        s_hold = np.clip(grid.predict(fam), 0.0, 1.0)
        # labels and the known event posterior are those of the uncalibrated task
        passed = {k: v for k, v in d.items() if k in ("holdout_posterior",)}
        save_npz(out, val_scores=s_val, val_labels=d["val_labels"],
                 holdout_scores=s_hold, holdout_labels=d["holdout_labels"], **passed)
        log.info("%s/%s fitted in %.2fs (hyper-parameter %s)", task, name, seconds,
                 fam.chosen_hyperparameter())
