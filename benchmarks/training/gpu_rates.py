"""The measured GPU rates the library reads, derived from a gpu_fast_path.py run's rows.

    python benchmarks/training/gpu_rates.py            # print the rates and auto's choices
    python benchmarks/training/gpu_rates.py --write    # and write the package's data file

Reads the rows of ``gpu_fast_path.py`` (``--rows``, default the H200 run
committed in ``benchmarks/measured/``), keeps the variants named like the
library's paths (``fitontest.vision.fast_options.PATHS``: eager, graph,
compile+graph; their switches checked) and the export rate, and with
``--write`` stores them as ``src/fitontest/vision/measured/gpu_rates.json``,
which ``training.fast: auto`` and ``fitontest jobs --scale`` read. After a new
GPU run: commit its rows under ``benchmarks/measured/``, rerun this with
``--rows`` and ``--measured-file`` naming them, and commit the data file
(``tests/test_gpu_rates.py`` checks the committed data file against its rows).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # benchmarks/common.py
from common import REPO  # noqa: E402

ROWS = "benchmarks/measured/gpu_fast_path_h200.jsonl"
MEASURED = "benchmarks/measured/gpu_fast_path_h200.md"
DATA = REPO / "src/fitontest/vision/measured/gpu_rates.json"


def rates_from(rows_file: str = ROWS, measured_file: str = MEASURED) -> dict:
    from fitontest.vision.fast_auto import derive

    lines = (REPO / rows_file).read_text().splitlines()
    return derive([json.loads(x) for x in lines if x.strip()], measured_file, rows_file)


def dump(data: dict) -> str:
    """The data file's text: keys sorted, so that the same rows write the same bytes."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=ROWS, help="gpu_fast_path.py's rows (relative to the repository)")
    ap.add_argument("--measured-file", default=MEASURED, help="the measured file that describes the run")
    ap.add_argument("--write", action="store_true", help=f"write {DATA.relative_to(REPO)}")
    args = ap.parse_args()

    from fitontest.vision.fast_auto import Rates, choose
    from fitontest.vision.recipes import get_recipe

    data = rates_from(args.rows, args.measured_file)
    rates = Rates(data)
    print(f"rates of {args.rows}: {rates.where}; export {rates.export_img_s:,.0f} images/s")
    print(f"{'network':12s} {'batch':>5s} {'path':14s} {'s/step':>8s} {'s/epoch':>8s} {'setup s':>8s} "
          f"{'recipe h':>8s}")
    for model, net in data["networks"].items():
        recipe = get_recipe(model)
        costs = rates.costs(model, net["batch"], recipe["epochs"], 45_000)
        for path, c in costs.items():
            print(f"{model:12s} {net['batch']:5d} {path:14s} {net['paths'][path]['s_per_step']:8.4f} "
                  f"{c['s_per_epoch']:8.2f} {c['setup_s']:8.1f} {c['total_s'] / 3600:8.3f}")
        got = choose("auto", model, recipe, 45_000, "cuda", rates=rates)
        print(f"  auto on cuda, the paper recipe ({recipe['epochs']} epochs): {got.path}")
    if args.write:
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(dump(data))
        print(f"wrote {DATA.relative_to(REPO)}")


if __name__ == "__main__":
    main()
