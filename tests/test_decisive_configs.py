"""The decisive configs (docs/methods/11-verdicts.md §11.5.2): overlays on a base config
that turn only the knobs the projection names, and validate merged."""
import copy
import re

import pytest
import yaml
from snakemake.utils import update_config, validate

from conftest import REPO
from fitontest.study.config import check_config

OVERLAYS = [("config.yaml", "decisive.yaml"), ("tabular.yaml", "decisive-tabular.yaml")]
KNOBS = {"exp", "evaluation.seeds", "calibrators.draws", "split.n_holdout", "training.seeds"}


def flat(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}"


@pytest.mark.parametrize("base, overlay", OVERLAYS)
def test_a_decisive_overlay_turns_only_the_knobs_and_validates(base, overlay):
    cfg = yaml.safe_load((REPO / "config" / base).read_text())
    text = (REPO / "config" / overlay).read_text()
    extra = yaml.safe_load(text)
    assert set(flat(extra)) <= KNOBS, set(flat(extra)) - KNOBS
    merged = copy.deepcopy(cfg)
    update_config(merged, extra)          # what --configfile BASE OVERLAY does
    validate(merged, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(merged, models=False)
    assert merged["exp"] != cfg["exp"]    # its own results folder
    # the knob of its clusters grows: test seeds, or networks per architecture (training
    # seeds) where the networks are the clusters; each a range from 0
    grown = [k for k in ("evaluation", "training")
             if len(merged[k]["seeds"]) > len(cfg.get(k, {}).get("seeds", [0]))]
    assert grown, "neither evaluation.seeds nor training.seeds grows"
    for k in grown:
        assert merged[k]["seeds"] == list(range(len(merged[k]["seeds"])))
    # the header says how it is run and names the measured file it was sized from
    assert f"--configfile config/{base} config/{overlay}" in text
    for path in re.findall(r"benchmarks/measured/[\w./-]+\.md", text):
        assert (REPO / path).is_file(), path
