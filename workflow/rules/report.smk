# Stage 6: the paper's tables (fitontest.report; with intervals, significance markers,
# Friedman tests and critical-difference diagrams) and figures (fitontest.report.figures)
# from the tidy result files. `snakemake --report report.html` shows the main tables
# (NAME.html, next to its NAME.cd.png), the figures and findings.md.
from fitontest.report.html_table import report_group


rule tables:
    input:
        scores=res("scores.parquet") if PSEUDO_REAL else [],
        calibrators=res("calibrators.parquet") if PSEUDO_REAL else [],
        synthetic=res("synthetic_scores.parquet") if SYNTHETIC["enabled"] else [],
    output:
        report(directory(res("tables")), patterns=["{name}.html", "{name}.cd.png"],
               category="Tables", subcategory=lambda w: report_group(w.name),
               caption="../report/tables.rst"),
    log:
        logpath("report/tables.log"),
    benchmark:
        res("benchmarks/tables.tsv")
    params:
        ranked=EVAL["ranked_calibrators"],
        main_truth=config["truth"][0],
        scope=config["report"]["scope"],
    conda:
        CONDA_ENV
    script:
        "../scripts/tables.py"


rule figures:
    input:
        scores=res("scores.parquet"),
        calibrated=lambda w: [res(f"calibrated/{a}/{t}/none.npz").format(exp=w.exp)
                              for a, t in FIGURE_MODELS],
        truth=lambda w: [res(f"truth/{a}/{t}/none.npz").format(exp=w.exp)
                         for a, t in FIGURE_MODELS],
        synthetic=res("synthetic_scores.parquet") if SYNTHETIC["enabled"] else [],
    output:
        report(directory(res("figures")), patterns=["{name}.png"], category="Figures"),
    log:
        logpath("report/figures.log"),
    benchmark:
        res("benchmarks/figures.tsv")
    params:
        which=config["report"]["figures"],
        truth=config["truth"][0],
        labels=[f"{a}_{t}_none" for a, t in FIGURE_MODELS],
        seed=config["seed"],
        scope=config["report"]["scope"],
    conda:
        CONDA_ENV
    script:
        "../scripts/figures.py"
