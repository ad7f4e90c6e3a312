# Cluster requests that a node can satisfy (docs/guide/slurm.md).
# Included after every rule: where `sinfo` answers, each rule's cpus_per_task,
# threads, mem_mb and gpu are capped at the largest node, with a message, since
# SLURM keeps an oversize job pending forever and Snakemake waits in silence.
# Also inside each job, whose srun step asks for the same (capped) CPUs.
# training.device: cpu drops every GPU request.
from snakemake.logging import logger

from fitontest.study.slurm import cap_rules, largest_node

cap_rules(workflow.rules, largest_node(), config["training"]["device"], warn=logger.warning)
