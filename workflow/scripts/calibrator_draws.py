"""Rule calibrator_draws: Table 2's validation draws of one network (docs/methods/06-truth-and-scores.md §6.4)."""
from fitontest.core.io import load_npz, save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.draws import calibrator_draws

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
p = snakemake.params
rows = calibrator_draws(load_npz(snakemake.input.holdout), p.n_val, p.draws, p.tasks,
                        p.multiclass, p.binary, p.truths, **p.network,
                        config_params=p.family_params, seed=p.seed, log=log.info)
save_parquet(rows, snakemake.output[0])
