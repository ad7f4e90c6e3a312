"""Rule figures: reliability diagrams, fit-on-test maps, rankings and summaries."""
import pandas as pd

from fitontest.core.io import load_npz, optional_input, script_logger
from fitontest.report.figures.output import write_all_figures, write_default_figures
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
p = snakemake.params
scores = pd.read_parquet(snakemake.input.scores)
synthetic_path = optional_input(snakemake.input.synthetic)
synthetic = pd.read_parquet(synthetic_path) if synthetic_path else None
models = {}
for label, cal_path, truth_path in zip(p.labels, snakemake.input.calibrated, snakemake.input.truth):
    d = load_npz(cal_path)
    models[label] = {"scores": d["holdout_scores"], "labels": d["holdout_labels"],
                     "true_c": load_npz(truth_path)[p.truth]}
if p.which == "all":
    written = write_all_figures(scores, snakemake.output[0], models=models,
                                synthetic_df=synthetic, truth=p.truth, seed=p.seed, log=log.info,
                                scope=p.scope)
else:
    (m,) = models.values()
    written = write_default_figures(scores, snakemake.output[0], scores=m["scores"],
                                    labels=m["labels"], true_c=m["true_c"], truth=p.truth,
                                    seed=p.seed, log=log.info, scope=p.scope)
log.info("wrote %d figure files to %s", len(written), snakemake.output[0])
