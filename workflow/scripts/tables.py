"""Rule tables: every paper table (CSV, Markdown, LaTeX) from the tidy result files."""
import pandas as pd

from fitontest import tables
from fitontest.io import limit_threads, script_logger

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
synthetic = pd.read_parquet(snakemake.input.synthetic[0]) if snakemake.input.synthetic else None
written = tables.write_all(pd.read_parquet(snakemake.input.scores),
                           pd.read_parquet(snakemake.input.calibrators),
                           snakemake.output[0], synthetic=synthetic,
                           ranked_calibrators=snakemake.params.ranked,
                           main_truth=snakemake.params.main_truth)
log.info("wrote %d table files to %s", len(written), snakemake.output[0])
