# Shared names, wildcard constraints and input functions of every stage.
import os
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError

from fitontest.study.config import calibrator_names, check_config
from fitontest.study.league import apply_league
from fitontest.core.registry import use_plugins
from fitontest.data import sources
from fitontest.study.networks import networks

# Every job's Python gets the same string hashes, so that set and dict orders in
# plotting libraries (the CD diagrams' bars) are the same in every process:
# same config, same files, locally and on a cluster.
os.environ.setdefault("PYTHONHASHSEED", "0")

# The user's evaluator modules (config `plugins`): imported here, and exported
# to every job through FITONTEST_PLUGINS (docs/guide/adding-an-evaluator.md).
use_plugins(config["plugins"])
# league: true adds the cross-fitted and the peers' evaluators (docs/methods/10-results-and-tables.md §10.5)
apply_league(config)
# Fail before any job starts if a name, size or data file cannot work. The
# network names need torch (2 s of imports per parse): the train job checks its own.
if workflow.is_main_process:
    check_config(config, models=False)

# images / features / logits: which rules make the logits (train.smk, tabular.smk, real.smk)
DATA_KIND = sources.kind(config)
# the networks: every architecture (archs key) once per training seed, or one
# model per logit file; the {arch} wildcard of every path names a network
NETWORKS = networks(config)
TASKS = list(config["tasks"])
MULTICLASS_CALIBRATORS = list(dict.fromkeys(["none", *config["calibrators"]["multiclass"]]))
BINARY_CALIBRATORS = list(config["calibrators"]["binary"])
CALIBRATORS = calibrator_names(config)
EVAL = config["evaluation"]
EVAL_CALIBRATORS = list(EVAL["calibrators"])
EVALUATORS = list(EVAL["evaluators"])
EXTERNAL_EVALUATORS = list(EVAL["external_evaluators"])
SYNTHETIC = config["synthetic"]
BATCH = config["batch"]
# one pinned environment for every rule (used with --sdm conda)
CONDA_ENV = "../../envs/fitontest.yaml"


def network_columns(wildcards):
    """The ``arch`` (architecture) and ``network`` columns of a network's result rows."""
    return NETWORKS[wildcards.arch].columns(wildcards.arch)


def alternatives(names):
    """Regex matching exactly one of ``names`` (never matching if empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"


wildcard_constraints:
    exp=re.escape(config["exp"]),
    arch=alternatives(NETWORKS),
    task=alternatives(TASKS),
    split="val|holdout",


def res(path):
    """Output pattern under results/{exp}/."""
    return f"results/{{exp}}/{path}"


def logpath(path):
    return f"logs/{{exp}}/{path}"


def per_calibrator(pattern, calibrators):
    """``pattern`` (with {arch}/{task}/{exp} wildcards kept) for every calibrator."""
    return expand(res(pattern).replace("{", "{{").replace("}", "}}").replace(
        "{{calibrator}}", "{calibrator}"), calibrator=calibrators)


def per_task(pattern):
    return expand(res(pattern).replace("{", "{{").replace("}", "}}").replace(
        "{{task}}", "{task}"), task=TASKS)


def per_task_calibrator(pattern):
    """``pattern`` for every (task, evaluated calibrator), in the order of
    ``[(t, c) for t in TASKS for c in EVAL_CALIBRATORS]``."""
    keep = res(pattern).replace("{", "{{").replace("}", "}}")
    keep = keep.replace("{{task}}", "{task}").replace("{{calibrator}}", "{calibrator}")
    return [keep.format(task=t, calibrator=c).replace("{{", "{").replace("}}", "}")
            for t in TASKS for c in EVAL_CALIBRATORS]


def calibrated(names):
    """The calibrated files of calibrators ``names``, every task of each in turn."""
    return [f for n in names for f in per_task(f"calibrated/{{arch}}/{{task}}/{n}.npz")]


def data_params():
    """The parts of the config that determine the images and the split."""
    return {k: config.get(k) for k in ("data_source", "cifar5m_dir", "procedural", "split",
                                       "tabular", "logits")}


def score_files(wildcards=None):
    """Every evaluator's scores: one file per (network, evaluator) of the
    Python families, one per (network, task, calibrator) of an external one."""
    return (expand(res("scores/{arch}/{evaluator}.parquet"), exp=config["exp"], arch=NETWORKS,
                   evaluator=EVALUATORS)
            + expand(res("scores/{arch}/{task}/{calibrator}/{evaluator}.parquet"),
                     exp=config["exp"], arch=NETWORKS, task=TASKS,
                     calibrator=EVAL_CALIBRATORS, evaluator=EXTERNAL_EVALUATORS))


#: the order of score rows in scores.parquet, whichever jobs wrote them
SCORE_ORDER = {"network": list(NETWORKS), "task": TASKS, "calibrator": EVAL_CALIBRATORS,
               "evaluator": EVALUATORS + EXTERNAL_EVALUATORS}


PSEUDO_REAL = config["pseudo_real"]
# the controller's CPU, wall and memory, written at the end of a run (Snakefile)
CONTROLLER_RECORD = f"results/{config['exp']}/benchmarks/controller.tsv"
# reliability diagrams are drawn for these uncalibrated (arch, task) models:
# every one for the paper's figures, the first network's last task by default
FIGURE_MODELS = ([(a, t) for a in NETWORKS for t in TASKS] if config["report"]["figures"] == "all"
                 else [(list(NETWORKS)[0], TASKS[-1])])


def calibrator_draw_files(wildcards=None):
    """The replicates of Table 2 (calibrate.smk), none when calibrators.draws is 0."""
    if not config["calibrators"]["draws"]:
        return []
    return expand(res("calibrator_draws/{arch}.parquet"), exp=config["exp"], arch=NETWORKS)


def calibrator_metric_files(stage):
    """The ``calibrated`` or ``truth`` files of the study's own calibrators for
    rule calibrator_metrics (Table 2 of one fit per network); none when
    calibrators.draws > 0: Table 2 is then over the draws alone (§6.4)."""
    if config["calibrators"]["draws"]:
        return []
    return expand(res(f"{stage}/{{arch}}/{{task}}/{{calibrator}}.npz"), exp=config["exp"],
                  arch=NETWORKS, task=TASKS, calibrator=CALIBRATORS)


def real_outputs():
    """The real-data study's tables (data_source logits; real.smk)."""
    exp = config["exp"]
    return [f"results/{exp}/real/{name}" for name in
            ("scores.parquet", "bias.csv", "agreement.csv", "bias.md")]


def final_outputs(wildcards=None):
    exp = config["exp"]
    if DATA_KIND == "logits":
        # no hold-out truth: the real-data study's tables replace Tables 2-4
        syn = [f"results/{exp}/synthetic_scores.parquet"] if SYNTHETIC["enabled"] else []
        return real_outputs() + syn
    out = [f"results/{exp}/tables"]
    out += [f"results/{exp}/findings.md", f"results/{exp}/findings.csv"]
    if PSEUDO_REAL:
        out += [f"results/{exp}/scores.parquet", f"results/{exp}/calibrators.parquet"]
    if PSEUDO_REAL and config["report"]["figures"] != "none":
        out.append(f"results/{exp}/figures")
    if SYNTHETIC["enabled"]:
        out.append(f"results/{exp}/synthetic_scores.parquet")
    return out


def all_cores():
    """--cores (capped again by Snakemake and cluster.smk); 1 where a cluster
    run gives none (its profile sets the threads of these rules)."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def export_threads(wildcards):
    """Every core for a hold-out of 100,000 images or more (the 1M hold-out is
    the paper-size critical path; the export runs its blocks in that many
    processes); one for a small one, whose neighbours fill the cores."""
    return all_cores() if config["split"]["n_holdout"] >= 100_000 else 1


def batches(names, size, apart=(), alone=(), late=()):
    """The jobs of a batched stage: ({batch name: methods}, single).

    Methods share a job in chunks of ``size``, in config order (one Python
    start-up and one read of the inputs for all of them; each still writes its
    own files); those in ``apart`` are chunked among themselves, those in
    ``alone`` (config ``batch.alone``) never share, those in ``late`` (config
    ``batch.late``) are chunked after all others, so the others' batches are
    the same with or without them. ``single`` lists the
    methods with a job of their own, made by the stage's one-method rule: all
    of them when ``size`` is 1, the ``alone`` ones, and a chunk's lone member.
    """
    free = [n for n in names if n not in alone]
    groups = [[n for n in free if (n in apart) == a and (n in late) == z]
              for z in (False, True) for a in (False, True)]
    chunks = [g[i:i + size] for g in groups for i in range(0, len(g), size)] if size > 1 else []
    grouped = {f"batch{i + 1}": c for i, c in enumerate(c for c in chunks if len(c) > 1)}
    batched = {n for c in grouped.values() for n in c}
    return grouped, [n for n in names if n not in batched]


def evaluator_params(names):
    """Constructor arguments of each method (config family_params)."""
    return {n: config["family_params"].get(n, {}) for n in names}


def threaded(names):
    """The evaluators whose fit spreads over threads (PL / PL3): the longest
    fits, batched apart from the quick ones, so that their job starts early
    and the quick ones run beside it."""
    from fitontest.study.experiment import takes_threads

    return [n for n in names if takes_threads(n)]


# Job priorities: of the ready jobs, Snakemake starts those of the highest
# first. A job that unlocks others goes before them (the logits, then the
# calibrators, then the truth), so that no network's chain of stages is left
# to run alone at the end while the other cores idle (issue 37: 25 s of the
# tabular study's wall time); among the evaluate jobs, the PL / PL3 batch,
# the longest, first, so the quick ones fill the other cores beside it.
PRIORITY = {"logits": 5, "calibrate_multiclass": 4, "calibrate_binary": 3, "truth": 2,
            "evaluate_long": 1}

# truth: one job per (network, task) unbatched (the rehearsal's unit, which
# `fitontest jobs --scale` reads); batched, one per network over every task
TRUTH_PER_NETWORK = BATCH["calibrators"] > 1
TRUTH_JOB = "{arch}" if TRUTH_PER_NETWORK else "{arch}/{task}"


def truth_files(pattern):
    """``pattern`` for every calibrator of a truth job: of its task, or,
    batched, of every task (task by task)."""
    if TRUTH_PER_NETWORK:
        return [f for t in TASKS
                for f in per_calibrator(pattern.replace("{task}", t), CALIBRATORS)]
    return per_calibrator(pattern, CALIBRATORS)


EVAL_BATCHES, EVAL_SINGLE = batches(EVALUATORS, BATCH["evaluators"], threaded(EVALUATORS),
                                    BATCH["alone"], BATCH["late"])
# a synthetic job is short (seconds per shape): a batch covers every shape (synthetic.smk)
SYN_BATCHES, SYN_SINGLE = batches(SYNTHETIC["evaluators"], BATCH["evaluators"],
                                  alone=BATCH["alone"], late=BATCH["late"])
MULTICLASS_BATCHES, MULTICLASS_SINGLE = batches(MULTICLASS_CALIBRATORS, BATCH["calibrators"],
                                                alone=BATCH["alone"])
BINARY_BATCHES, BINARY_SINGLE = batches(BINARY_CALIBRATORS, BATCH["calibrators"],
                                        alone=BATCH["alone"])
