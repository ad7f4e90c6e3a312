"""The markdown table of ``gpu_fast_path.py``'s ``results.jsonl`` (one row per measurement)."""
from __future__ import annotations

import json
import time
from pathlib import Path


def _f(x, fmt):
    return "" if x is None else format(x, fmt)


def _variants(rows, lines):
    by_model: dict[str, list] = {}
    for r in rows:
        by_model.setdefault(r["model"], []).append(r)
    best = {}
    for model, rs in by_model.items():
        eager = next((r for r in rs if r["variant"] == "eager" and "s_per_epoch" in r), None)
        lines += [f"### {model} (batch {rs[0]['batch']})", "",
                  "| variant | ms/step | s/epoch (45k) | img/s | speedup | recipe h | "
                  "CPU-s/epoch | setup s | peak GiB | note |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for r in rs:
            if "s_per_epoch" not in r:
                lines.append(f"| {r['variant']} | | | | | | | | | "
                             f"{r.get('skipped') or r.get('error', '')} |")
                continue
            sp = eager["s_per_epoch"] / r["s_per_epoch"] if eager else None
            lines.append(
                f"| {r['variant']} | {1e3 * r['s_per_step']:.1f} | {r['s_per_epoch']:.2f} | "
                f"{r['img_s']:.0f} | {_f(sp, '.2f')} | {r['recipe_h']:.2f} | "
                f"{r['cpu_per_epoch']:.1f} | {r['setup_s']:.1f} | {_f(r['peak_gib'], '.1f')} | "
                f"{r['options']}; loss {r['loss']:.3f} |")
            if model not in best or r["s_per_epoch"] < best[model]["s_per_epoch"]:
                best[model] = r
        lines.append("")
    if best:
        lines += ["### The paper's recipes, projected (eager vs the fastest variant)", "",
                  "| model | epochs | eager h | fastest variant | fast h |",
                  "| --- | ---: | ---: | --- | ---: |"]
        tot_e = tot_f = 0.0
        for model, b in best.items():
            e = next((r for r in by_model[model] if r["variant"] == "eager" and "recipe_h" in r),
                     None)
            tot_e += e["recipe_h"] if e else float("nan")
            tot_f += b["recipe_h"]
            lines.append(f"| {model} | {b['epochs']} | {_f(e and e['recipe_h'], '.2f')} | "
                         f"{b['variant']} | {b['recipe_h']:.2f} |")
        lines += [f"| **total** | | {tot_e:.2f} | | {tot_f:.2f} |", ""]


def _check(rows, lines):
    lines += ["| path | seed | epoch-1 loss | train acc | val acc | epoch s | "
              "loss after each tenth of the epoch |", "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r['path']} | {r['seed']} | {r['loss']:.4f} | {r['train_acc']:.4f} | "
                     f"{r['val_acc']:.4f} | {r['epoch_s']:.1f} | "
                     f"{' '.join(f'{t:.3f}' for t in r['tenths'])} |")
    eager = {r["seed"]: r for r in rows if r["path"] == "eager"}
    if len(eager) >= 2:
        spread = {k: max(r[k] for r in eager.values()) - min(r[k] for r in eager.values())
                  for k in ("loss", "val_acc")}
        lines += ["", f"Eager seed-to-seed spread: loss {spread['loss']:.4f}, "
                  f"validation accuracy {spread['val_acc']:.4f}."]
        for r in rows:
            if r["path"] != "eager" and r["seed"] in eager:
                e = eager[r["seed"]]
                d = {k: abs(r[k] - e[k]) for k in ("loss", "val_acc")}
                ok = all(d[k] <= spread[k] for k in d)
                lines.append(f"- {r['path']}, seed {r['seed']}: |Δloss| {d['loss']:.4f}, "
                             f"|Δval acc| {d['val_acc']:.4f} against eager of its seed: "
                             f"{'within' if ok else 'OUTSIDE'} the eager seed spread")
    lines.append("")


def report(path: Path, args, seconds: float) -> str:
    rows = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()] \
        if Path(path).exists() else []
    env = next((r for r in rows if r["kind"] == "env"), {})
    lines = [f"# The fast training path, every lever ({time.strftime('%Y-%m-%d')})", "",
             f"{env.get('device', '?')}; torch {env.get('torch', '?')}; "
             f"{env.get('cpus', '?')} CPU cores; {seconds:.0f} s for the whole run"
             f"{' (DRY RUN: CPU, tiny networks, not a measurement of the GPU target)' if args.dry_run else ''}.",
             "Each variant: two epochs of the real `train_one_epoch` on "
             f"{args.steps} synthetic batches, the second timed; s/epoch projected "
             "to 45,000 images; speedup against the same network's eager row.", ""]
    kinds = {k: [r for r in rows if r["kind"] == k] for k in ("variant", "check", "share", "export", "note")}
    if kinds["variant"]:
        lines += ["## Throughput", ""]
        _variants(kinds["variant"], lines)
    if kinds["check"]:
        lines += ["## Same training: the first epoch, eager and fast", ""]
        _check(kinds["check"], lines)
    if kinds["share"]:
        lines += ["## Several trainings on one device at once (one process each)", "",
                  "| variant | processes | img/s together | s/epoch of each |",
                  "| --- | ---: | ---: | ---: |"]
        for r in kinds["share"]:
            lines.append(f"| {r['variant']} | {r['procs']} | {_f(r.get('img_s'), '.0f')} | "
                         f"{_f(r.get('s_per_epoch_each'), '.1f')} {r.get('error', '')} |")
        lines.append("")
    if kinds["export"]:
        lines += ["## Logit export (generate + infer, the eager model)", "",
                  "| images | seconds | img/s | 1M projected s |", "| ---: | ---: | ---: | ---: |"]
        for r in kinds["export"]:
            lines.append(f"| {r['images']:,} | {_f(r.get('seconds'), '.1f')} | "
                         f"{_f(r.get('img_s'), '.0f')} | {_f(r.get('projected_1m_s'), '.1f')} "
                         f"{r.get('skipped', '')} |")
        lines.append("")
    if kinds["note"]:
        lines += ["## Notes", ""] + [f"- {r['what']}" + (f" ({r['seconds']:.1f} s)" if "seconds" in r
                                                        else "") for r in kinds["note"]] + [""]
    return "\n".join(lines)
