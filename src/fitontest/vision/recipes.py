"""Training recipes (docs/methods/08-networks.md §8) as plain, validated dictionaries.

No torch import here, so configuration checks can use it cheaply.

Fields of a recipe (all required after :func:`get_recipe` fills defaults):

``epochs``        number of passes over the training set.
``batch_size``    images per SGD step; each epoch takes ``n // batch_size``
                  batches of a fresh permutation (the remainder is dropped;
                  a training set smaller than one batch is one batch).
``lr``            initial learning rate.
``schedule``      ``"step"`` (piecewise constant from ``milestones``),
                  ``"cosine"`` (per-step cosine from ``lr`` to 0 over all
                  epochs) or ``"constant"``.
``milestones``    for ``"step"``: mapping epoch → learning rate used from that
                  (0-based) epoch on, e.g. ``{80: 0.01, 150: 0.001}``; a key may
                  also be a percentage of ``epochs`` as a string, ``"50%"``.
``weight_decay``  L2 coefficient of SGD (applied to every parameter).
``momentum``      SGD momentum.
``nesterov``      Nesterov momentum on/off.
``augment``       random shifts + horizontal flips on/off.
``shift``         maximal shift in pixels (pad by ``shift``, random crop).
``flip``          random horizontal flips (when ``augment``).
``pad_mode``      ``"zeros"`` or ``"reflect"``. Padding is applied to the
                  standardised image, so ``"zeros"`` fills with the channel mean
                  (as the Keras reference scripts of the calibration literature
                  did: standardise, then shift with a constant 0 fill).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

DEFAULTS: dict[str, Any] = {
    "epochs": 1,
    "batch_size": 128,
    "lr": 0.1,
    "schedule": "step",
    "milestones": {},
    "weight_decay": 1e-4,
    "momentum": 0.9,
    "nesterov": True,
    "augment": True,
    "shift": 4,
    "flip": True,
    "pad_mode": "zeros",
}

RECIPES: dict[str, dict[str, Any]] = {
    # He et al. 2016 / Guo et al. 2017: 0.1 -> 0.01 at epoch 80 -> 0.001 at 150.
    "resnet110": {"epochs": 200, "batch_size": 128, "lr": 0.1, "schedule": "step",
                  "milestones": {80: 0.01, 150: 0.001}, "weight_decay": 1e-4,
                  "pad_mode": "zeros"},
    # Huang et al. 2017: x0.1 at 50 % and 75 % of 300 epochs, batch 64.
    "densenet40": {"epochs": 300, "batch_size": 64, "lr": 0.1, "schedule": "step",
                   "milestones": {"50%": 0.01, "75%": 0.001}, "weight_decay": 1e-4,
                   "pad_mode": "zeros"},
    # Zagoruyko & Komodakis 2016 schedule, reflect padding (Keras fill_mode='reflect').
    "wrn32": {"epochs": 200, "batch_size": 128, "lr": 0.1, "schedule": "step",
              "milestones": {60: 0.02, 120: 0.004, 160: 0.0008}, "weight_decay": 5e-4,
              "pad_mode": "reflect"},
    # A few epochs of cosine-annealed Nesterov SGD (choice): quick, but it stops
    # short of fitting the training set, so its networks come out under-confident.
    "small": {"epochs": 4, "batch_size": 128, "lr": 0.05, "schedule": "cosine",
              "milestones": {}, "weight_decay": 5e-4, "pad_mode": "zeros"},
    # The embedded default's recipe (choice, config/README.md "The default's
    # networks"): fewer image passes than "small" (400 images x 50 epochs
    # against 6000 x 4) on a small training set, in small batches, without
    # augmentation or weight decay, so the networks fit it to near-zero loss
    # and come out over-confident like the paper's deep networks.
    "small_overfit": {"epochs": 50, "batch_size": 32, "lr": 0.1, "schedule": "cosine",
                      "milestones": {}, "weight_decay": 0.0, "augment": False,
                      "pad_mode": "zeros"},
}


def recipe_names() -> list[str]:
    return sorted(RECIPES)


def get_recipe(recipe: str | Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """A validated copy of a named or given recipe, defaults filled in."""
    if isinstance(recipe, str):
        if recipe not in RECIPES:
            raise KeyError(f"unknown training recipe {recipe!r}; "
                           f"known: {', '.join(recipe_names())}")
        base = RECIPES[recipe]
    elif isinstance(recipe, Mapping):
        base = recipe
    else:
        raise TypeError(f"recipe must be a name or a mapping, got {type(recipe).__name__}")
    return validate_recipe({**base, **overrides})


def _milestone_epoch(key: Any, epochs: int) -> int:
    if isinstance(key, str):
        k = key.strip()
        if k.endswith("%"):
            frac = float(k[:-1]) / 100.0
            if not 0.0 <= frac <= 1.0:
                raise ValueError(f"milestone {key!r}: percentage must be in [0, 100]")
            return int(round(frac * epochs))
        key = k
    try:
        value = int(key)
    except (TypeError, ValueError):
        raise ValueError(f"milestone key {key!r} must be an epoch (int) or a percentage "
                         "like '50%'") from None
    if isinstance(key, float) and key != value:
        raise ValueError(f"milestone epoch {key!r} must be an integer")
    if value < 0:
        raise ValueError(f"milestone epoch {key!r} must be >= 0")
    return value


def validate_recipe(recipe: Mapping[str, Any]) -> dict[str, Any]:
    """Fill defaults and check every field; raise ValueError naming the problem."""
    unknown = set(recipe) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown recipe field(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    r = {**DEFAULTS, **dict(recipe)}
    r["milestones"] = dict(r["milestones"] or {})
    for key in ("epochs", "batch_size"):
        if isinstance(r[key], bool) or not isinstance(r[key], int) or r[key] < 1:
            raise ValueError(f"recipe {key} must be a positive integer, got {r[key]!r}")
    if isinstance(r["shift"], bool) or not isinstance(r["shift"], int) or r["shift"] < 0:
        raise ValueError(f"recipe shift must be a non-negative integer, got {r['shift']!r}")
    for key in ("lr", "weight_decay", "momentum"):
        v = r[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"recipe {key} must be a finite number >= 0, got {v!r}")
        r[key] = float(v)
    for key in ("nesterov", "augment", "flip"):
        if not isinstance(r[key], bool):
            raise ValueError(f"recipe {key} must be true/false, got {r[key]!r}")
    if r["nesterov"] and r["momentum"] == 0:
        raise ValueError("recipe nesterov=true needs momentum > 0")
    if r["schedule"] not in ("step", "cosine", "constant"):
        raise ValueError("recipe schedule must be 'step', 'cosine' or 'constant', "
                         f"got {r['schedule']!r}")
    if r["pad_mode"] not in ("zeros", "reflect"):
        raise ValueError(f"recipe pad_mode must be 'zeros' or 'reflect', got {r['pad_mode']!r}")
    if r["pad_mode"] == "reflect" and r["shift"] >= 32:
        raise ValueError("reflect padding needs shift < image size")
    for key, lr in r["milestones"].items():
        _milestone_epoch(key, r["epochs"])
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) \
                or lr < 0:
            raise ValueError(f"milestone {key!r}: learning rate must be a finite number >= 0, "
                             f"got {lr!r}")
    if r["milestones"] and r["schedule"] != "step":
        raise ValueError("recipe milestones are only used by schedule 'step' "
                         f"(schedule is {r['schedule']!r})")
    return r


def lr_at(recipe: Mapping[str, Any], epoch: int, step: int = 0, steps_per_epoch: int = 1) -> float:
    """Learning rate at ``step`` (0-based) of ``epoch`` (0-based)."""
    base = float(recipe["lr"])
    schedule = recipe["schedule"]
    if schedule == "constant":
        return base
    if schedule == "cosine":
        total = recipe["epochs"] * steps_per_epoch
        t = epoch * steps_per_epoch + step
        return 0.5 * base * (1.0 + math.cos(math.pi * min(t, total) / total))
    lr = base
    for e, v in sorted((_milestone_epoch(k, recipe["epochs"]), v)
                       for k, v in recipe["milestones"].items()):
        if epoch >= e:
            lr = float(v)
    return lr
