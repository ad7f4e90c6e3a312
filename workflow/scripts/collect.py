"""Rules collect_scores / synthetic_collect / real_collect: per-job score files in one tidy table."""
import pandas as pd

from fitontest.core.io import save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.experiment import in_grid_order

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
frame = pd.concat([pd.read_parquet(p) for p in snakemake.input], ignore_index=True)
# rows in the config's order of (network, task, calibrator, evaluator), however
# the jobs grouped them (batch sizes change the files, never the table)
save_parquet(in_grid_order(frame, snakemake.params.order), snakemake.output[0])
log.info("%d rows from %d files", len(frame), len(snakemake.input))
