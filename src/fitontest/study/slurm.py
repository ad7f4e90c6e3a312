"""Fit a job's cluster requests to the nodes that SLURM actually has.

A request larger than every node (say ``cpus_per_task: 8`` on 2-CPU nodes, or
a GPU on a cluster without any) leaves the SLURM job pending forever
(``Reason=PartitionConfig``) while Snakemake waits without a word.
``workflow/rules/cluster.smk`` caps every rule's requests at the largest node
that ``sinfo`` reports, and says so.
"""
from __future__ import annotations

import re
import shutil
import subprocess

# sinfo columns: CPUs, memory (MB), generic resources of each node
SINFO_FORMAT = "%c|%m|%G"
# requests compared with the node, and the sinfo column each is bounded by
CAPPED = {"cpus_per_task": "cpus", "_cores": "cpus", "mem_mb": "mem_mb", "gpu": "gpus"}


def gpus_of(gres: str) -> int:
    """GPUs in one node's GRES string, e.g. ``gpu:a100:4(S:0-1),shard:8`` -> 4."""
    total = 0
    for item in gres.split(","):
        m = re.match(r"^gpu(?::[^:(]+)?:(\d+)", item.strip())
        if m:
            total += int(m.group(1))
    return total


def parse_sinfo(text: str) -> dict[str, int]:
    """The largest CPUs, memory and GPUs of any one node in ``sinfo -h -o SINFO_FORMAT`` output."""
    nodes = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        cpus, mem, gres = parts
        try:
            nodes.append({"cpus": int(cpus.rstrip("+")), "mem_mb": int(mem.rstrip("+")),
                          "gpus": gpus_of(gres)})
        except ValueError:
            continue
    if not nodes:
        raise ValueError(f"no node in the sinfo output: {text!r}")
    return {k: max(n[k] for n in nodes) for k in ("cpus", "mem_mb", "gpus")}


def largest_node(timeout: float = 10) -> dict[str, int] | None:
    """The largest node of the cluster, or None where no SLURM controller answers."""
    if shutil.which("sinfo") is None:
        return None
    try:
        out = subprocess.run(["sinfo", "-h", "-o", SINFO_FORMAT], capture_output=True,
                             text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        return parse_sinfo(out.stdout)
    except ValueError:
        return None


def fit_request(rule: str, name: str, value, node: dict[str, int] | None,
                device: str = "auto") -> tuple[object, str | None]:
    """``value`` of resource ``name`` fitted to ``node``, and a message if changed.

    ``device`` is the config's ``training.device``: with ``cpu`` no GPU is ever
    requested; with ``cuda`` a cluster without GPUs is an error, not a cap.
    Non-integer values (strings, unset) pass unchanged.
    """
    if name not in CAPPED or not isinstance(value, int) or isinstance(value, bool):
        return value, None
    if name == "gpu" and device == "cpu":
        return 0, (f"rule {rule}: no GPU requested (training.device: cpu)"
                   if value > 0 else None)
    if node is None:
        return value, None
    limit = node[CAPPED[name]]
    if value <= limit:
        return value, None
    if name == "gpu" and device == "cuda":
        raise ValueError(f"rule {rule} needs {value} GPU(s) (training.device: cuda) but "
                         f"no SLURM node has more than {limit}: set training.device to "
                         "auto or cpu, or run where GPUs are")
    return limit, (f"rule {rule}: {name}={value} is more than the largest SLURM node "
                   f"offers; asking for {limit}")


def cap_rules(rules, node: dict[str, int] | None, device: str = "auto", warn=print) -> None:
    """Fit every request of Snakemake ``rules`` with :func:`fit_request`, in place.

    Fixed values are fitted now; values computed per job (callables, and
    profile entries, which Snakemake evaluates per job) when Snakemake
    evaluates them. ``warn`` gets each message once per (rule, resource).
    """
    from snakemake.resources import Resource

    said = set()

    def fitted(rule, name, value):
        value, message = fit_request(rule, name, value, node, device)
        if message and (rule, name) not in said:
            said.add((rule, name))
            warn(message)
        return value

    def deferred(rule, resource):
        def evaluate(*args, **kwargs):
            return fitted(rule, resource.name, resource.evaluate(*args, **kwargs).value)

        return Resource(resource.name, evaluate)

    if node is None and device != "cpu":
        return
    for rule in rules:
        for name in CAPPED:
            res = rule.resources.get(name)
            if res is None:
                continue
            rule.resources[name] = (deferred(rule.name, res) if res.is_evaluable()
                                    else fitted(rule.name, name, res.value))
