"""Rule score_external: score the output of an external evaluator rule."""
from fitontest.study.experiment import score_external, tidy
from fitontest.core.io import load_npz, load_subsets, save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.schema import SCORE_COLUMNS, SCORE_DESIGN

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
w = snakemake.wildcards
d = load_npz(snakemake.input.calibrated)
rows = score_external(w.evaluator, load_npz(snakemake.input.external), d["holdout_scores"],
                      load_npz(snakemake.input.truth), load_subsets(snakemake.input.subsets))
save_parquet(tidy(rows, SCORE_COLUMNS, **snakemake.params.network, task=w.task,
                  calibrator=w.calibrator)
             .assign(**{SCORE_DESIGN: snakemake.params.design}), snakemake.output[0])
log.info("scored %d rows of external evaluator %s", len(rows), w.evaluator)
