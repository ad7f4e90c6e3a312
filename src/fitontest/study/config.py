"""Checks of a workflow config made before any job starts.

The JSON schema (workflow/schemas/config.schema.yaml) checks types and fills
defaults; this module checks what a schema cannot: names against the
registries, sizes against the hold-out, the data files. Every error names the
config key to fix.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping


def coerce_cli_types(value: Any) -> Any:
    """Numbers, booleans and null given as strings, made real (in place for dicts).

    Snakemake's ``--config key={a: 1}`` keeps nested values as strings ('1');
    a string that YAML reads as int, float, bool or null is converted so the
    schema sees the type the user meant. Other strings stay strings.
    """
    import yaml

    if isinstance(value, dict):
        for k in list(value):
            value[k] = coerce_cli_types(value[k])
        return value
    if isinstance(value, list):
        return [coerce_cli_types(v) for v in value]
    if isinstance(value, str):
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        if parsed is None or isinstance(parsed, (bool, int, float)):
            return parsed
    return value


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key."""


def _unknown(key: str, given: Iterable[str], known: Iterable[str]) -> None:
    known = sorted(known)
    bad = [g for g in given if g not in known]
    if bad:
        raise ConfigError(f"config key {key!r}: unknown name(s) {bad}; known: {', '.join(known)}")


def check_family_params(key: str, params: Mapping[str, Mapping[str, Any]] | None) -> None:
    from fitontest import families

    for name, kw in (params or {}).items():
        _unknown(key, [name], families.names())
        valid = families.get(name).get_params()
        bad = [k for k in (kw or {}) if k not in valid]
        if bad:
            raise ConfigError(f"config key '{key}.{name}': {name!r} has no parameter(s) {bad}; "
                              f"its parameters: {', '.join(sorted(valid))}")


def calibrator_names(config: Mapping[str, Any]) -> list[str]:
    cal = config["calibrators"]
    return list(dict.fromkeys(["none", *cal["multiclass"], *cal["binary"]]))


def check_config(config: Mapping[str, Any], *, models: bool = True) -> None:
    """Raise :class:`ConfigError` for the first value that cannot work.

    ``models=False`` skips the network names (:func:`check_models`), the one
    check that imports torch: the Snakemake controller parses the workflow
    without torch (2 s of imports per parse, repeated by every cluster job's
    re-parse) and the train job checks its own network (docs/architecture.md).
    """
    check_synthetic(config)
    check_family_params("family_params", config.get("family_params"))
    if config.get("pseudo_real", True):
        check_pseudo_real(config)
        if models:
            check_models(config)


def check_models(config: Mapping[str, Any], archs: Iterable[str] | None = None) -> None:
    """The network names of ``archs`` (default: every entry of config key
    ``archs``) against the registry of the source's kind: image networks
    (imports torch) or the tabular study's scikit-learn classifiers."""
    kind = _source_facts(config, check=False)[0]
    if kind == "logits":
        return
    if kind == "features":
        from fitontest.models import tabular
        known = tabular.names()
    else:
        from fitontest import models
        known = models.names()
    for arch in config["archs"] if archs is None else archs:
        _unknown(f"archs.{arch}.model", [config["archs"][arch]["model"]], known)


def check_synthetic(config: Mapping[str, Any]) -> None:
    syn = config.get("synthetic") or {}
    if not syn.get("enabled"):
        return
    from fitontest import families
    from fitontest.data import synthetic

    _unknown("synthetic.shapes", syn["shapes"], synthetic.SHAPES)
    _unknown("synthetic.evaluators", syn["evaluators"], families.names())
    for shape in syn["shapes"]:
        for ce in syn["ce_levels"]:
            try:
                synthetic.alpha(shape, ce)
            except ValueError as e:
                raise ConfigError(f"config key 'synthetic.ce_levels': {e}") from None


def _source_facts(config: Mapping[str, Any], check: bool) -> tuple[str, int]:
    """(kind, number of classes) of the config's data source; ``check``: run the
    source's own checks (data files, generator settings) too."""
    from fitontest.data import sources

    key = {"cifar5m": "cifar5m_dir", "logits": "logits", "tabular": "tabular"}.get(
        config.get("data_source"), "data_source")
    try:
        kind = sources.kind(config)
        if kind != "logits" and ("archs" not in config or "split" not in config):
            raise ValueError(f"the {config.get('data_source')} source needs the keys "
                             "'archs' and 'split'")
        if check:
            sources.check_source(config)
        return kind, sources.num_classes(config) if check or kind != "logits" else 0
    except (ValueError, FileNotFoundError) as e:
        raise ConfigError(f"config key {key!r}: {e}") from None


def check_pseudo_real(config: Mapping[str, Any]) -> None:
    from fitontest import families, multiclass
    from . import truth
    from fitontest.data import sources

    # logit files first (their class count checks the tasks); other sources' data last
    kind, n_classes = _source_facts(config, check=config.get("data_source") == "logits")
    if kind != "logits":
        from .networks import networks

        try:
            networks(config)     # training.seeds, and network names that do not collide
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if kind == "images":
        from fitontest.vision.recipes import RECIPES   # torch-free

        for arch, spec in config["archs"].items():
            if "recipe" not in spec:
                raise ConfigError(f"config key 'archs.{arch}': an image network needs a recipe")
            _unknown(f"archs.{arch}.recipe", [spec["recipe"]], RECIPES)
        from fitontest.vision.fast_options import check_setting   # torch-free

        try:
            check_setting(config.get("training", {}).get("fast", "auto"))
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"config key 'training.fast': {exc}") from None

    cal = config["calibrators"]
    _unknown("calibrators.multiclass", cal["multiclass"], multiclass.names())
    _unknown("calibrators.binary", cal["binary"], families.names())
    both = set(cal["multiclass"]) & set(cal["binary"])
    if both:
        raise ConfigError(f"config key 'calibrators': {sorted(both)} listed as both "
                          "multi-class and binary")
    not_map = [n for n in cal["binary"] if not families.entry(n).provides_map]
    if not_map:
        raise ConfigError(f"config key 'calibrators.binary': {not_map} give no calibration "
                          "map and cannot calibrate")
    _unknown("truth", config["truth"], truth.names())
    if kind != "logits" and not sources.has_posterior(config):
        need = [n for n in config["truth"] if truth.needs_posterior(n)]
        if need:
            raise ConfigError(f"config key 'truth': {need} need the known class posterior, "
                              "which only sources with one (procedural, tabular) have")

    for task, k in config["tasks"].items():
        if k is not None and not 0 <= int(k) < n_classes:
            raise ConfigError(f"config key 'tasks.{task}': class index {k} is not in "
                              f"0..{n_classes - 1}")

    ev = config["evaluation"]
    _unknown("evaluation.calibrators", ev["calibrators"], calibrator_names(config))
    _unknown("evaluation.evaluators", ev["evaluators"], families.names())
    clash = sorted(set(ev.get("external_evaluators", [])) & set(families.names()))
    if clash:
        raise ConfigError(f"config key 'evaluation.external_evaluators': {clash} clash with "
                          "registered family names; rename the external evaluator")
    if len(set(ev["sizes"])) != len(ev["sizes"]):
        raise ConfigError(f"config key 'evaluation.sizes': repeated sizes {ev['sizes']}")
    if kind == "logits":
        # the real-data study: every size takes disjoint subsets of one test set, and a
        # size above it is capped at it (fitontest.data.logits.real_sizes); the files
        # were read and checked above (_source_facts)
        return
    total = sum(ev["sizes"])
    n_holdout = config["split"]["n_holdout"]
    if total > n_holdout:
        raise ConfigError(f"config key 'evaluation.sizes': the subsets of one seed take "
                          f"{' + '.join(map(str, sorted(ev['sizes'])))} = {total} hold-out "
                          f"points, more than split.n_holdout = {n_holdout}")
    draws, n_val = cal.get("draws", 0), config["split"]["n_val"]
    if draws * n_val > n_holdout // 2:
        raise ConfigError(f"config key 'calibrators.draws': {draws} validation draws of "
                          f"split.n_val = {n_val} points need {draws * n_val} hold-out points, "
                          f"more than half of split.n_holdout = {n_holdout}; reduce the draws "
                          f"or increase split.n_holdout")
    _source_facts(config, check=True)
