# Stage 2 of data_source tabular: fit each scikit-learn classifier on the
# training rows and write its logits (log-probabilities) on validation and
# hold-out, with the exact class posterior of the hold-out (docs/methods.md §13).
# Takes the place of train + export_logits; the later stages run unchanged.


rule tabular_fit:
    input:
        split=res("data/split.json"),
    output:
        val=res("logits/{arch}/val.npz"),
        holdout=res("logits/{arch}/holdout.npz"),
    log:
        logpath("train/{arch}.log"),
    benchmark:
        res("benchmarks/tabular_fit/{arch}.tsv")
    wildcard_constraints:
        arch=alternatives(ARCHS if DATA_KIND == "features" else []),
    params:
        data=data_params(),
        model=lambda w: config["archs"][w.arch]["model"],
        seed=config["seed"],
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        CONDA_ENV
    script:
        "../scripts/tabular_fit.py"


ruleorder: tabular_fit > export_logits
