"""Rule real_evaluate: one evaluator on every test subset of a model's calibrated tasks.

Real data have no truth: the rows carry the estimates, with NaN in every
truth column (truth = "none")."""
import numpy as np
import pandas as pd

from fitontest.core.io import load_npz, load_subsets, save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.experiment import family_params, score_evaluator, tidy
from fitontest.study.schema import SCORE_COLUMNS

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
w = snakemake.wildcards
params = family_params(w.evaluator, {w.evaluator: snakemake.params.family_params},
                       snakemake.params.seed)
subsets = load_subsets(snakemake.input.subsets)
frames = []
for (task, cal), path in zip(snakemake.params.pairs, snakemake.input.calibrated):
    d = load_npz(path)
    log.info("%s / %s", task, cal)
    unknown = {"none": np.full(d["holdout_scores"].shape, np.nan)}
    rows = score_evaluator(w.evaluator, params, d["holdout_scores"], d["holdout_labels"],
                           unknown, subsets, log=log.info, interval=snakemake.params.interval,
                           interval_seed=snakemake.params.seed)
    frames.append(tidy(rows, SCORE_COLUMNS, arch=w.arch, network=w.arch, task=task,
                       calibrator=cal))
save_parquet(pd.concat(frames, ignore_index=True), snakemake.output[0])
