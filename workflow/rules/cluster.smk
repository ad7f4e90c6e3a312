# Cluster requests that a node can satisfy (README, "Running on a SLURM cluster").
# Included after every rule: where `sinfo` answers, each rule's cpus_per_task,
# threads, mem_mb and gpu are capped at the largest node, with a message, since
# SLURM keeps an oversize job pending forever and Snakemake waits in silence.
# training.device: cpu drops every GPU request.
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.resources import Resource

from fitontest.slurm import CAPPED, fit_request, largest_node

# also inside a job: its srun step asks for the same, capped, CPUs
_NODE = largest_node()
_DEVICE = config["training"]["device"]
_SAID = set()


def _fitted(rule, name, value):
    try:
        fitted, message = fit_request(rule, name, value, _NODE, _DEVICE)
    except ValueError as err:
        raise WorkflowError(str(err))
    if message and (rule, name) not in _SAID:
        _SAID.add((rule, name))
        logger.warning(message)
    return fitted


def _capped(rule, resource):
    def evaluate(*args, **kwargs):
        return _fitted(rule, resource.name, resource.evaluate(*args, **kwargs).value)

    return Resource(resource.name, evaluate)


if _NODE is not None or _DEVICE == "cpu":
    for _rule in workflow.rules:
        for _name in CAPPED:
            _res = _rule.resources.get(_name)
            if _res is None:
                continue
            if _res.is_evaluable():
                _rule.resources[_name] = _capped(_rule.name, _res)
            else:
                _rule.resources[_name] = _fitted(_rule.name, _name, _res.value)
