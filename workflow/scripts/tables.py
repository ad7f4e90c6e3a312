"""Rule tables: every paper table (CSV, Markdown, LaTeX) from the tidy result files."""
import pandas as pd

from fitontest import tables
from fitontest.io import limit_threads, script_logger
from fitontest.schema import CALIBRATOR_COLUMNS, SCORE_COLUMNS

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
inp = snakemake.input


def read(paths, columns):
    return pd.read_parquet(paths[0]) if paths else pd.DataFrame(columns=columns)


written = tables.write_all(read(inp.scores, SCORE_COLUMNS), read(inp.calibrators,
                                                                CALIBRATOR_COLUMNS),
                           snakemake.output[0],
                           synthetic=pd.read_parquet(inp.synthetic[0]) if inp.synthetic else None,
                           ranked_calibrators=snakemake.params.ranked,
                           main_truth=snakemake.params.main_truth)
log.info("wrote %d table files to %s", len(written), snakemake.output[0])
