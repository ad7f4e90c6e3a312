"""Rule findings: which of the paper's conclusions this run reproduces (findings.md/.csv)."""
import json

import pandas as pd

from fitontest.core import pins
from fitontest.core.io import optional_input, script_logger, write_text
from fitontest.report import findings
from fitontest.study import jobstats

log = script_logger(snakemake.log[0])
inp, params = snakemake.input, snakemake.params


def read(value):
    path = optional_input(value)
    return None if path is None else pd.read_parquet(path)


result = findings.evaluate_claims(
    findings.load_claims(), read(inp.scores), read(inp.calibrators), read(inp.synthetic),
    truth=params.truth, ranked_calibrators=params.ranked, costs=jobstats.costs(params.results),
    scope=params.scope)
# the CPU code and library versions of the run (core/pins.py), the host beside
rec = pins.record()
write_text(snakemake.output.environment, json.dumps(rec, indent=1, sort_keys=True) + "\n")
findings.write_findings(result, snakemake.output.md, snakemake.output.csv, exp=params.exp,
                        pins=pins.statement(rec), cost_path=snakemake.output.cost)
log.info("%s", findings.headline(result))
