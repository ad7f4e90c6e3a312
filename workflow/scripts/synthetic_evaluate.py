"""Rule synthetic_evaluate: one evaluator on one synthetic shape, every level/size/seed."""
from fitontest.study.experiment import family_params
from fitontest.core.io import save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.synthetic import score_shape

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
w, syn = snakemake.wildcards, snakemake.params.synthetic
params = family_params(w.evaluator, {w.evaluator: snakemake.params.family_params},
                       snakemake.params.seed)
rows = score_shape(w.evaluator, params, w.shape, syn["ce_levels"], syn["sizes"], syn["seeds"],
                   n_test=syn["n_test"], test_seed=snakemake.params.seed, log=log.info,
                   interval=syn["interval"], sampling=syn["sampling"])
save_parquet(rows, snakemake.output[0])
