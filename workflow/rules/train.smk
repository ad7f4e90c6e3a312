# Stage 2: train every network and export its logits on validation and hold-out.
# A checkpoint (not an output) survives a failed or preempted job, so a rerun
# resumes training where it stopped. One thread by default: small CPU networks
# train faster as parallel one-thread jobs; profiles raise it (set-threads).


rule train:
    input:
        split=res("data/split.json"),
    output:
        model=res("models/{arch}/model.pt"),
        train_log=res("models/{arch}/train_log.csv"),
    log:
        logpath("train/{arch}.log"),
    benchmark:
        res("benchmarks/train/{arch}.tsv")
    params:
        data=data_params(),
        arch=lambda w: config["archs"][NETWORKS[w.arch].arch],
        arch_name=lambda w: NETWORKS[w.arch].arch,
        seed=lambda w: NETWORKS[w.arch].seed,
        training=config["training"],
    priority: PRIORITY["logits"]
    threads: 1
    resources:
        gpu=0,
        mem_mb=8000,
        runtime=60,
    conda:
        CONDA_ENV
    script:
        "../scripts/train.py"


# One job per network writes both splits: one start-up and one model load.
rule export_logits:
    input:
        model=res("models/{arch}/model.pt"),
        split=res("data/split.json"),
    output:
        val=res("logits/{arch}/val.npz"),
        holdout=res("logits/{arch}/holdout.npz"),
    log:
        logpath("logits/{arch}/export.log"),
    benchmark:
        res("benchmarks/export_logits/{arch}.tsv")
    params:
        data=data_params(),
        training=config["training"],
    priority: PRIORITY["logits"]
    threads: export_threads
    resources:
        gpu=0,
        mem_mb=8000,
        runtime=30,
    conda:
        CONDA_ENV
    script:
        "../scripts/export_logits.py"
