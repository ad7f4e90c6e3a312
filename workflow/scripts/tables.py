"""Rule tables: every paper table (CSV, Markdown, LaTeX, CD diagrams) from the tidy result files."""
import pandas as pd

from fitontest.core.io import optional_input, script_logger
from fitontest.report.write import write_all
from fitontest.core.runtime import limit_threads
from fitontest.study.schema import CALIBRATOR_COLUMNS, SCORE_COLUMNS

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
inp = snakemake.input


def read(value, columns=None):
    path = optional_input(value)
    if path is None:
        return None if columns is None else pd.DataFrame(columns=columns)
    return pd.read_parquet(path)


written = write_all(read(inp.scores, SCORE_COLUMNS), read(inp.calibrators, CALIBRATOR_COLUMNS),
                    snakemake.output[0], synthetic=read(inp.synthetic),
                    ranked_calibrators=snakemake.params.ranked,
                    main_truth=snakemake.params.main_truth, scope=snakemake.params.scope)
log.info("wrote %d table files to %s", len(written), snakemake.output[0])
