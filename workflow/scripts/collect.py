"""Rule collect_scores: every per-evaluator score file in one tidy table."""
import pandas as pd

from fitontest.io import save_parquet, script_logger
from fitontest.schema import SCORE_COLUMNS

log = script_logger(snakemake.log[0])
frame = pd.concat([pd.read_parquet(p) for p in snakemake.input], ignore_index=True)
save_parquet(frame[SCORE_COLUMNS], snakemake.output[0])
log.info("%d rows from %d files", len(frame), len(snakemake.input))
