# fitontest: the pseudo-real calibration study of Kängsepp, Valk & Kull as one DAG.
#   snakemake --cores 2                              # embedded default (laptop)
#   snakemake --cores 8 --configfile config/paper.yaml --config cifar5m_dir=/data/cifar5m
import warnings

from snakemake.utils import min_version, validate

# Importing fitontest sets the CPU pins in this process's environment, which
# every job inherits from its start (fitontest/core/pins.py). Snakemake has
# loaded numpy already: the warning that says so concerns the controller
# alone, which computes nothing.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    from fitontest.study.config import coerce_cli_types
from fitontest.study.jobstats import record_controller

min_version("8.0")


# A config given with --configfile is a whole config (config/paper.yaml,
# config/rehearsal.yaml, yours): it replaces the embedded default rather than
# merging into it, which would add the default's networks and tasks to the
# paper's. --config key=value overrides keys of whichever config is in use.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# nested --config overrides arrive as strings ('600'): give them their types
coerce_cli_types(config)
validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/tabular.smk"
include: "workflow/rules/real.smk"
include: "workflow/rules/calibrate.smk"
include: "workflow/rules/truth.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/synthetic.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/findings.smk"


# External evaluators: any rule file dropped in workflow/rules/evaluators/ (docs/guide/adding-an-evaluator.md).
for _smk in sorted(Path(workflow.basedir, "workflow/rules/evaluators").glob("*.smk")):

    include: _smk


# The controller's own CPU and memory (its DAG, scheduling and bookkeeping),
# which no job's benchmark file holds: `fitontest jobs` prints it beside the jobs'.
onsuccess:
    record_controller(CONTROLLER_RECORD)


onerror:
    record_controller(CONTROLLER_RECORD)


# last: fits every rule's requests to the cluster's nodes
include: "workflow/rules/cluster.smk"


rule all:
    input:
        final_outputs,
    default_target: True
