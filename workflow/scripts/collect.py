"""Rules collect_scores / synthetic_collect: per-job score files in one tidy table."""
import pandas as pd

from fitontest.core.io import save_parquet, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
frame = pd.concat([pd.read_parquet(p) for p in snakemake.input], ignore_index=True)
save_parquet(frame, snakemake.output[0])
log.info("%d rows from %d files", len(frame), len(snakemake.input))
