"""Rules evaluate / evaluate_batchN: evaluators on every test subset of every (task, calibrator)
of a network, one score file per evaluator."""
import pandas as pd

from fitontest.study.experiment import (ScoreGrid, family_params, population_ce, score_evaluator,
                                        takes_threads, tidy)
from fitontest.core.io import load_npz, load_subsets, save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.schema import SCORE_COLUMNS, SCORE_DESIGN

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
p, inp = snakemake.params, snakemake.input
names = p.evaluators
params = {n: family_params(n, p.family_params, p.seed) for n in names}
# a family that spreads one fit over threads gets the job's threads (a cluster
# profile may give any job several; the others take no such parameter)
for n in names:
    if snakemake.threads > 1 and takes_threads(n):
        params[n].setdefault("n_threads", snakemake.threads)
subsets = {task: load_subsets(path) for task, path in zip(p.tasks, inp.subsets)}
frames = {n: [] for n in names}
# each (task, calibrator) is read once for every evaluator of the job
for (task, cal), cal_path, truth_path in zip(p.pairs, inp.calibrated, inp.truth):
    d, truths, subs = load_npz(cal_path), load_npz(truth_path), subsets[task]
    grid = ScoreGrid(d["holdout_scores"])
    pop = population_ce(d["holdout_scores"], truths)
    for n in names:
        log.info("%s / %s: %s", task, cal, n)
        rows = score_evaluator(n, params[n], d["holdout_scores"], d["holdout_labels"], truths,
                               subs, log=log.info, interval=p.interval, interval_seed=p.seed,
                               grid=grid, pop=pop)
        frames[n].append(tidy(rows, SCORE_COLUMNS, **p.network, task=task, calibrator=cal))
for n, out in zip(names, snakemake.output):
    save_parquet(pd.concat(frames[n], ignore_index=True).assign(**{SCORE_DESIGN: p.design}), out)
