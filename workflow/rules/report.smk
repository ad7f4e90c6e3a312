# Stage 6: the paper's tables and figures from the tidy result files.


rule tables:
    input:
        scores=res("scores.parquet") if PSEUDO_REAL else [],
        calibrators=res("calibrators.parquet") if PSEUDO_REAL else [],
        synthetic=res("synthetic_scores.parquet") if SYNTHETIC["enabled"] else [],
    output:
        directory(res("tables")),
    log:
        logpath("report/tables.log"),
    params:
        ranked=EVAL["ranked_calibrators"],
        main_truth=config["truth"][0],
    conda:
        CONDA_ENV
    script:
        "../scripts/tables.py"


rule figures:
    input:
        scores=res("scores.parquet"),
        calibrated=expand(res("calibrated/{arch}/{task}/none.npz"),
                          exp=config["exp"], arch=ARCHS[:1], task=TASKS[-1:]),
        truth=expand(res("truth/{arch}/{task}/none.npz"),
                     exp=config["exp"], arch=ARCHS[:1], task=TASKS[-1:]),
    output:
        report(directory(res("figures")), patterns=["{name}.png"], category="Figures"),
    log:
        logpath("report/figures.log"),
    params:
        which=config["report"]["figures"],
        truth=config["truth"][0],
        label=lambda w: f"{ARCHS[0]} / {TASKS[-1]}",
    conda:
        CONDA_ENV
    script:
        "../scripts/figures.py"
