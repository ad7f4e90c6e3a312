# Stage 2 of data_source tabular: the exact class posterior of the hold-out
# (once), then each scikit-learn classifier fitted on the training rows, its
# logits (log-probabilities) on validation and hold-out written with that
# posterior (docs/methods/13-tabular.md §13).
# Takes the place of train + export_logits; the later stages run unchanged.


# The posterior draws its hold-out rows from the config as rule split does
# (split.split_for_source), so it runs beside split instead of after it.
rule tabular_posterior:
    output:
        res("data/holdout_posterior.npz"),
    log:
        logpath("data/holdout_posterior.log"),
    benchmark:
        res("benchmarks/tabular_posterior.tsv")
    params:
        data=data_params(),
    priority: PRIORITY["logits"]
    threads: 1
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    script:
        "../scripts/tabular_posterior.py"


rule tabular_fit:
    input:
        split=res("data/split.json"),
        # the same for every classifier: computed once (5 s of CPU per 1M rows)
        posterior=res("data/holdout_posterior.npz"),
    output:
        val=res("logits/{arch}/val.npz"),
        holdout=res("logits/{arch}/holdout.npz"),
    log:
        logpath("train/{arch}.log"),
    benchmark:
        res("benchmarks/tabular_fit/{arch}.tsv")
    wildcard_constraints:
        arch=alternatives(NETWORKS if DATA_KIND == "features" else []),
    params:
        data=data_params(),
        model=lambda w: config["archs"][NETWORKS[w.arch].arch]["model"],
        # the network's training seed (tabular.yaml's seed 0: as before networks)
        seed=lambda w: NETWORKS[w.arch].seed,
    priority: PRIORITY["logits"]
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        CONDA_ENV
    script:
        "../scripts/tabular_fit.py"


ruleorder: tabular_fit > export_logits
