"""Rule calibrate_binary: a binary family fitted on the validation scores of each task."""
import numpy as np

from fitontest.study.experiment import family_params, fit_family
from fitontest.core.io import load_npz, save_npz, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
name = snakemake.wildcards.calibrator
params = family_params(name, {name: snakemake.params.family_params}, snakemake.params.seed)
for task, src, out in zip(snakemake.params.tasks, snakemake.input, snakemake.output):
    d = load_npz(src)
    fam, seconds = fit_family(name, d["val_scores"], d["val_labels"], params)
    # predictions are clipped to [0, 1]: a calibrated score is a probability
    s_val = np.clip(fam.predict(d["val_scores"]), 0.0, 1.0)
    s_hold = np.clip(fam.predict(d["holdout_scores"]), 0.0, 1.0)
    # labels and the known event posterior are those of the uncalibrated task
    passed = {k: v for k, v in d.items() if k in ("holdout_posterior",)}
    save_npz(out, val_scores=s_val, val_labels=d["val_labels"],
             holdout_scores=s_hold, holdout_labels=d["holdout_labels"], **passed)
    log.info("%s/%s fitted in %.2fs (hyper-parameter %s)", task, name, seconds,
             fam.chosen_hyperparameter())
