"""Rules synthetic_evaluate / synthetic_evaluate_batchN: evaluators on synthetic shapes,
every level/size/seed, one file per (shape, evaluator)."""
from fitontest.study.experiment import family_params
from fitontest.core.io import save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.synthetic import score_shape

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
p, syn = snakemake.params, snakemake.params.synthetic
# the outputs in the rule's order: shape by shape, each shape's evaluators
outputs = iter(snakemake.output)
for shape in p.shapes:
    for name, out in zip(p.evaluators, outputs):
        rows = score_shape(name, family_params(name, p.family_params, p.seed), shape,
                           syn["ce_levels"], syn["sizes"], syn["seeds"], n_test=syn["n_test"],
                           test_seed=p.seed, log=log.info, interval=syn["interval"],
                           sampling=syn["sampling"])
        save_parquet(rows, out)
