"""Rule evaluate: one evaluator on every test subset of every (task, calibrator) of a network."""
from fitontest.study.experiment import family_params, score_evaluator, takes_threads, tidy
from fitontest.core.io import load_npz, load_subsets, save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.schema import SCORE_COLUMNS, SCORE_DESIGN

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
w = snakemake.wildcards
params = family_params(w.evaluator, {w.evaluator: snakemake.params.family_params},
                       snakemake.params.seed)
# a family that spreads one fit over threads gets the job's threads (a cluster
# profile may give any job several; the others take no such parameter)
if snakemake.threads > 1 and takes_threads(w.evaluator):
    params.setdefault("n_threads", snakemake.threads)
inp = snakemake.input
for (task, cal), cal_path, truth_path, sub_path, out in zip(
        snakemake.params.pairs, inp.calibrated, inp.truth, inp.subsets, snakemake.output):
    d = load_npz(cal_path)
    log.info("%s / %s", task, cal)
    rows = score_evaluator(w.evaluator, params, d["holdout_scores"], d["holdout_labels"],
                           load_npz(truth_path), load_subsets(sub_path), log=log.info,
                           interval=snakemake.params.interval, interval_seed=snakemake.params.seed)
    save_parquet(tidy(rows, SCORE_COLUMNS, arch=w.arch, task=task, calibrator=cal)
                 .assign(**{SCORE_DESIGN: snakemake.params.design}), out)
