"""Rule train: one network on the training split (resumes from its checkpoint)."""
from pathlib import Path

from fitontest.vision import train
from fitontest.data import sources, split
from fitontest.core.io import script_logger
from fitontest.core.runtime import limit_threads, resolve_device
from fitontest.study.config import check_models

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
arch, training = snakemake.params.arch, snakemake.params.training
# not at parse time: needs torch
check_models(snakemake.config, [snakemake.params.arch_name])
source = sources.open_source(snakemake.params.data)
idx = split.read_split(snakemake.input.split)["train"]
X, y = source.load(idx)
log.info("training %s (%s recipe, overrides %s) on %d images", arch["model"], arch["recipe"],
         arch.get("overrides", {}), len(y))
recipe = {**train.RECIPES[arch["recipe"]], **arch.get("overrides", {})}
# On a CPU the thread count changes the weights' last bits (DenseNet's and WRN's
# kernels split their sums over threads; benchmarks/measured/cpu_pins.md): every
# CPU training runs on one thread, the networks side by side
threads = snakemake.threads if resolve_device(training["device"]).type != "cpu" else 1
train.train_model(arch["model"], X, y, recipe=recipe,
                  out_dir=Path(snakemake.output.model).parent, device=training["device"],
                  seed=snakemake.params.seed, num_classes=source.num_classes, log=log.info,
                  progress=training["progress"], num_threads=threads,
                  fast=training["fast"], max_epochs=arch.get("max_epochs"))
