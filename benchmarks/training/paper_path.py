"""The paper-size network path, timed on one device: a ResNet-110 epoch and the rehearsal's export.

What a GPU session measures before anything else (the numbers the cost
tables in config/README.md extrapolate from):

1. the 45,000 training images of ``config/rehearsal.yaml``'s split, generated;
2. the first epochs of each ``--paper-model`` (ResNet-110 by default) with its paper recipe,
   through ``fitontest.vision.train.train_model`` exactly as the ``train`` rule
   runs it (``max_epochs``), and the recipe's full length extrapolated from the last;
   on the eager path and on the fast path ``--fast`` (a variant of
   ``gpu_fast_path.py``, default ``graph``; docs/methods/08-networks.md §8.5), side by side;
3. the rehearsal's own network trained with its recipe, then its logits on the
   5,000 validation and the 1,000,000 hold-out images exported as the
   ``export_logits`` rule does (procedural generation + inference, in blocks).

Prints wall and CPU seconds and images/s for each step.

    python benchmarks/training/paper_path.py --device cuda
    python benchmarks/training/paper_path.py --device cuda --fast compile+graph --no-rehearsal
    python benchmarks/training/paper_path.py --device cuda --paper-model densenet40 wrn32 --no-rehearsal
    python benchmarks/training/paper_path.py --device cpu --n-train 512 --n-holdout 3000 \\
        --paper-model resnet8 --paper-recipe small                                 # a smoke run
"""
from __future__ import annotations

import sys
import argparse
import csv
import tempfile
import time
from pathlib import Path

import yaml

from gpu_fast_path import NAMED      # beside this script (numpy only at import)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # benchmarks/common.py
from common import process_cpu_seconds  # noqa: E402



class _Clock:
    """Wall and CPU seconds of one step, printed as a row."""

    def __init__(self, what: str, images: int):
        self.what, self.images = what, images

    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), process_cpu_seconds()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.t0, process_cpu_seconds() - self.c0
        if exc[0] is None:
            print(f"{self.what:44s} {self.images:>9,d} {self.wall:9.1f} {self.cpu:9.1f} "
                  f"{self.images / max(self.wall, 1e-9):10.0f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--config", default="config/rehearsal.yaml")
    ap.add_argument("--paper-model", nargs="+", default=["resnet110"],
                    help="networks whose first paper-recipe epochs are timed")
    ap.add_argument("--paper-recipe", default=None, help="default: the recipe named like the model")
    ap.add_argument("--paper-epochs", type=int, default=2, help="epochs of the paper model timed")
    ap.add_argument("--n-train", type=int, default=None, help="default: the config's split")
    ap.add_argument("--n-holdout", type=int, default=None, help="default: the config's split")
    ap.add_argument("--no-rehearsal", action="store_true",
                    help="time the paper networks only (no rehearsal network, no export)")
    ap.add_argument("--export-jobs", type=int, default=1, help="export worker processes (CPU only)")
    ap.add_argument("--fast", default="graph", choices=sorted(NAMED),
                    help="the fast variant timed beside the eager path")
    ap.add_argument("--no-fast", action="store_true", help="the eager path only")
    args = ap.parse_args()

    import torch

    from fitontest.core.runtime import resolve_device
    from fitontest.data import sources, split
    from fitontest.vision import train
    from fitontest.vision.export import export_logits

    config = yaml.safe_load(Path(args.config).read_text())
    for key, val in (("n_train", args.n_train), ("n_holdout", args.n_holdout)):
        if val is not None:
            config["split"][key] = val
    dev = resolve_device(args.device if args.device != "auto" else config["training"]["device"])
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print(f"device {dev} ({where}); torch {torch.__version__}; {args.config}: split "
          f"{config['split']['n_train']:,} / {config['split']['n_val']:,} / "
          f"{config['split']['n_holdout']:,}")
    print(f"{'step':44s} {'images':>9s} {'wall s':>9s} {'CPU s':>9s} {'images/s':>10s}")

    source = sources.open_source(config)
    parts = split.split_for_source(config, source)
    with _Clock("generate the training images", len(parts["train"])):
        X, y = source.load(parts["train"])

    quiet = dict(device=dev, seed=config["training"]["seed"], num_classes=source.num_classes,
                 log=lambda msg: None, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [("eager", None)] + ([] if args.no_fast else [(args.fast, NAMED[args.fast])])
        for model_name in args.paper_model:
            paper = train.get_recipe(args.paper_recipe or model_name)
            k = args.paper_epochs
            for path, fast in paths:
                out = Path(tmp) / f"paper-{model_name}-{path}"
                with _Clock(f"{model_name}, {path}: epochs 1-{k} of {paper['epochs']}", k * len(y)):
                    train.train_model(model_name, X, y, recipe=paper, max_epochs=k,
                                      out_dir=out, fast=fast, **quiet)
                with open(out / "train_log.csv") as f:
                    rows = list(csv.DictReader(f))
                for row in rows:
                    print(f"  epoch {row['epoch']}: {float(row['seconds']):.1f} s wall, "
                          f"{float(row['cpu_seconds']):.1f} CPU-s, "
                          f"{len(y) / float(row['seconds']):.0f} images/s, loss {float(row['loss']):.4f}")
                last = float(rows[-1]["seconds"])
                print(f"  -> {paper['epochs']} epochs of batch {paper['batch_size']} at epoch "
                      f"{rows[-1]['epoch']}'s pace ≈ {last * paper['epochs'] / 3600:.2f} h wall "
                      "(epoch 1 also autotunes cuDNN, compiles, captures)", flush=True)
        if args.no_rehearsal:
            return

        name, arch = next(iter(config["archs"].items()))
        recipe = {**train.RECIPES[arch["recipe"]], **arch.get("overrides", {})}
        with _Clock(f"{name}: {recipe['epochs']} epochs (the rehearsal's network)",
                    recipe["epochs"] * len(y)):
            model = train.train_model(arch["model"], X, y, recipe=recipe,
                                      out_dir=Path(tmp) / name, **quiet)
        del X, y
        for part in ("val", "holdout"):
            with _Clock(f"{name}: export {part} logits (generate + infer)", len(parts[part])):
                export_logits(model, source, parts[part], Path(tmp) / f"{part}.npz", device=dev,
                              batch_size=config["training"]["export_batch_size"],
                              log=print, progress=False, n_jobs=args.export_jobs)


if __name__ == "__main__":
    main()
