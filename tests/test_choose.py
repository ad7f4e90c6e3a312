"""The evaluator chooser (fitontest.choose, docs/methods/14-chooser.md §14): it picks the
evaluator with the smaller true error where one is known to be best, it is
deterministic, its estimate is evaluate's, and bad input fails as evaluate's."""
import json

import numpy as np
import pytest
from scipy.special import expit, logit

import fitontest
from fitontest import families
from fitontest import choose_evaluator
from fitontest.data import synthetic
from fitontest.families.base import estimates, used_estimates
from fitontest.inference.intervals import ce_interval
from fitontest.inference.worlds import GENERATORS, plausible_maps

PAIR = ["ece_es15", "platt"]


def _smooth(seed, n=500):
    """A temperature-scaled map (in Platt's family), scores Beta(3, 3)."""
    rng = np.random.default_rng(seed)
    s = rng.beta(3, 3, n)
    c = expit(0.7 * logit(s))
    return s, (rng.random(n) < c).astype(int), c


def _stairs(seed, n=20_000):
    return synthetic.sample("stairs", 0.05, n, seed)


def _true_error(name, s, y, c):
    fam = families.get(name).fit(s, y)
    return abs(used_estimates(estimates(fam, s))[0] - np.mean(np.abs(s - c)))


def _mean_true_errors(draw, seeds):
    return {k: np.mean([_true_error(k, *draw(sd)) for sd in seeds]) for k in PAIR}


def test_picks_the_evaluator_with_the_smaller_true_error():
    """Smooth map, n = 500: 15 bins lose to Platt scaling (truth over 30
    samples); stairs, n = 20,000: Platt cannot bend and loses by 10x. The
    chooser, on samples it never saw the truth of, picks differently in the
    two: Platt on some smooth samples (their worlds also hold the step maps
    the data cannot rule out), ES-15 on the stairs, whose data rule Platt's
    map out."""
    smooth_truth = _mean_true_errors(_smooth, range(30))
    stairs_truth = _mean_true_errors(_stairs, range(4))
    assert smooth_truth["ece_es15"] > 1.3 * smooth_truth["platt"], smooth_truth
    assert stairs_truth["platt"] > 5 * stairs_truth["ece_es15"], stairs_truth
    smooth = [choose_evaluator(*_smooth(100 + k)[:2], mode="ovr", candidates=PAIR,
                               n_worlds=60, seed=k, interval=None, debias=False)
              for k in range(3)]
    # at n = 500 the data rule out no generator, step maps (isotonic) and the
    # calibrated ones (identity, near) included, so the worlds mix smooth, step and
    # calibrated maps; Platt still wins in some of them
    assert all(set(c.generators) == set(GENERATORS) for c in smooth), \
        [c.generators for c in smooth]
    assert [c.evaluator for c in smooth].count("platt") >= 1, [c.evaluator for c in smooth]
    stairs = choose_evaluator(*_stairs(100)[:2], mode="ovr", candidates=PAIR, n_worlds=20,
                              interval=None, debias=False)
    assert stairs.evaluator == "ece_es15"
    assert [r.evaluator for r in stairs.scores if r.tied] == ["ece_es15"]   # platt: worse
    assert "platt" not in stairs.generators           # the data rule the smooth map out


def test_debiasing_removes_a_known_bias():
    """A calibrated model (c(s) = s: true CE 0) at n = 1000: the isotonic
    estimate is biased upward by more than its spread; the worlds measure that
    bias, mark it corrected, and the recommended estimate (one candidate: its
    own, corrected) is evaluate's estimate minus the reported bias, floored at
    0, closer to the truth (0) on every sample."""
    raw, deb = [], []
    for k in range(3):
        rng = np.random.default_rng(300 + k)
        s = rng.beta(2, 2, 1000)
        y = (rng.random(1000) < s).astype(int)
        ch = choose_evaluator(s, y, mode="ovr", candidates=["isotonic"], n_worlds=10, seed=k,
                              interval=None)
        assert ch.scores[0].bias > 0 and ch.scores[0].corrected, ch.scores[0]
        assert ch.ensemble == ["isotonic"]          # the fallback is fitted, not ranked
        assert [r.evaluator for r in ch.scores] == ["isotonic"]
        assert ch.ensemble_estimate == max(0.0, ch.estimate - ch.scores[0].bias)
        assert ch.recommended_estimate == (ch.fallback_estimate if ch.fallback
                                           else ch.ensemble_estimate)
        raw.append(ch.estimate)
        deb.append(ch.ensemble_estimate)
    assert all(0.0 <= d < r for d, r in zip(deb, raw)), (raw, deb)
    assert sum(deb) < 0.9 * sum(raw), (raw, deb)


def _probs(n=1500, k=3, seed=0):
    rng = np.random.default_rng(seed)
    logits = 2.5 * rng.normal(size=(n, k))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(k, p=row) for row in np.exp(0.7 * np.log(probs))
                       / np.exp(0.7 * np.log(probs)).sum(axis=1, keepdims=True)])
    return probs, labels


CANDS = ["ece_es15", "ece_ew15", "platt", "isotonic"]


def test_deterministic_and_estimate_is_evaluates():
    probs, labels = _probs()
    a = choose_evaluator(probs, labels, candidates=CANDS, n_worlds=8, seed=3, interval=0.9)
    b = choose_evaluator(probs, labels, candidates=CANDS, n_worlds=8, seed=3, interval=0.9)
    assert a.evaluator == b.evaluator and a.to_dict()["scores"] == b.to_dict()["scores"]
    assert (a.interval.lo, a.interval.hi) == (b.interval.lo, b.interval.hi)
    ref = fitontest.evaluate(probs, labels, evaluator=a.evaluator, test=None)
    assert a.result.estimate == ref.estimate
    assert a.estimate == (ref.debiased if ref.debiased is not None else ref.estimate)
    assert a.interval.lo <= a.estimate <= a.interval.hi or a.interval.lo == 0.0
    assert a.scores[0].evaluator == a.evaluator and a.scores[0].tied
    means = [r.adjusted_error for r in a.scores]        # ranked by the adjusted error
    assert means == sorted(means) and all(r.ce_error_se > 0 for r in a.scores)
    c = choose_evaluator(probs, labels, candidates=CANDS, n_worlds=8, seed=4, interval=None)
    assert c.to_dict()["scores"] != a.to_dict()["scores"]   # another seed, other worlds


def test_map_criterion_and_classwise():
    """criterion "map" ranks by CMEE and drops estimate-only evaluators (kce);
    classwise: one world error per world for the mean over the classes."""
    probs, labels = _probs(900)
    ch = choose_evaluator(probs, labels, criterion="map", mode="classwise",
                          candidates=["ece_es15", "platt", "kce"], n_worlds=6, interval=None)
    assert ch.evaluator in ("ece_es15", "platt") and ch.interval is None
    cm = [r.cmee for r in ch.scores if r.evaluator != "kce"]
    assert cm == sorted(cm)
    kce = next(r for r in ch.scores if r.evaluator == "kce")
    assert np.isnan(kce.cmee) and not kce.tied and ch.scores[-1].evaluator == "kce"
    ref = fitontest.evaluate(probs, labels, evaluator=ch.evaluator, mode="classwise", test=None)
    assert ch.result.estimate == ref.estimate


def test_ranking_criterion_scores_spearman():
    probs, labels = _probs(800)
    ch = choose_evaluator(probs, labels, criterion="ranking", candidates=["ece_es15", "platt"],
                          n_worlds=5, interval=None)
    assert all(0.0 <= r.ranking <= 2.0 for r in ch.scores)
    assert ch.scores[0].ranking <= ch.scores[1].ranking


@pytest.mark.parametrize("kwargs, match", [
    ({"probs": [[0.5, 0.6]], "labels": [0]}, "sum to 1"),
    ({"labels": [7] * 1500}, "label"),
    ({"mode": "bogus"}, "mode must be one of"),
    ({"candidates": ["ece_es16"]}, "ece_es"),
    ({"criterion": "mse"}, "criterion must be one of"),
    ({"p": "max"}, "p must be 1 or 2"),
])
def test_bad_input_errors_as_evaluate(kwargs, match):
    probs, labels = _probs()
    args = {"probs": probs, "labels": labels, **kwargs}
    cands = args.pop("candidates", CANDS)
    crit, mode, p = args.pop("criterion", "ce"), args.pop("mode", "confidence"), args.pop("p", 1)
    with pytest.raises(ValueError, match=match) as got:
        choose_evaluator(args["probs"], args["labels"], candidates=cands, criterion=crit,
                         mode=mode, p=p, n_worlds=4, interval=None)
    if "criterion" not in kwargs and "p" not in kwargs:
        with pytest.raises(ValueError) as want:
            fitontest.evaluate(args["probs"], args["labels"], mode=mode,
                               evaluator=cands[0] if "candidates" in kwargs else "ece_es15")
        assert str(got.value) == str(want.value)


def test_cli_choose_and_evaluate_auto(tmp_path, capsys):
    from fitontest_cli import main

    probs, labels = _probs(500)
    path = tmp_path / "preds.npz"
    np.savez(path, probs=probs, labels=labels)
    assert main(["choose", str(path), "--worlds", "6", "--json", "--interval", "0",
                 *sum((["--candidate", c] for c in CANDS), [])]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["evaluator"] in CANDS and len(out["scores"]) == len(CANDS)
    assert main(["evaluate", str(path), "--evaluator", "auto", "--test", "none"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("auto: ") and "worlds like these data" in text[0]
    assert "recommended estimate" in text[0]
    row = text[3].split()
    # the table's row is auto's, and its number is the recommended estimate
    want = choose_evaluator(probs, labels, interval=None, progress=False)
    assert row[0] == "auto" and float(row[4]) == pytest.approx(want.recommended_estimate,
                                                               abs=5e-7)
    bad = tmp_path / "bad.npz"
    np.savez(bad, probs=probs + 0.5, labels=labels)
    assert main(["choose", str(bad)]) == 2
    err_choose = capsys.readouterr().err.replace("fitontest choose", "X")
    assert main(["evaluate", str(bad)]) == 2
    assert err_choose == capsys.readouterr().err.replace("fitontest evaluate", "X")


def test_evaluate_auto_returns_the_recommended_estimate_and_its_interval():
    probs, labels = _probs(600)
    res = fitontest.evaluate(probs, labels, evaluator="auto", interval=0.9, test=None)
    ch = choose_evaluator(probs, labels, interval=0.9, progress=False)
    assert res.evaluator == "auto" and res.estimate == ch.recommended_estimate
    assert (res.interval.lo, res.interval.hi) == (ch.interval.lo, ch.interval.hi)
    assert res.note == ch.reason() and "recommended estimate" in res.note
    iv = ch.interval
    assert iv.lo <= ch.recommended_estimate <= iv.hi
    if ch.fallback:             # not choosing: ece_es_cv's estimate and its own interval
        assert ch.recommended_estimate == ch.fallback_estimate
        assert iv.method == "inverted" and "ece_es_cv" in ch.recommended_what()
    else:                       # the ensemble's mean, the hull of the members' intervals
        assert ch.recommended_estimate == ch.ensemble_estimate
        assert iv.method.startswith("hull of ece_es_cv")
        own = ce_interval("ece_es_cv", *_confidence(probs, labels), level=0.9)
        assert iv.lo <= own.lo and iv.hi >= own.hi
    with pytest.raises(ValueError, match="p='max'"):
        fitontest.evaluate(probs, labels, evaluator="auto", p="max")


def _confidence(probs, labels):
    from fitontest import tasks

    return tasks.confidence(probs, labels)


def test_the_fallback_when_the_worlds_cannot_tell():
    from fitontest.inference.choose import FALLBACK, fallback_test

    rng = np.random.default_rng(0)
    gens = np.array(["reference", "beta", "platt", "isotonic"] * 10)
    default = 0.010 + 0.002 * rng.random(40)
    # clearly better in every generator's worlds: the recommendation stands
    fb, why = fallback_test(default - 0.004, default, gens)
    assert not fb and "every generator" in why
    # better on smooth maps, worse on step maps: the worlds cannot tell which holds
    worse_on_steps = np.where(gens == "isotonic", default + 0.003, default - 0.004)
    fb, why = fallback_test(worse_on_steps, default, gens)
    assert fb and "from isotonic" in why and FALLBACK in why
    # a gain within the worlds' noise: not significant, so not choosing
    # a gain within the worlds' noise (+1e-4 in every group, SD 0.01): not choosing
    d = 1e-4 + 0.01 * np.where(np.arange(40) // 4 % 2 == 0, 1.0, -1.0)
    fb, why = fallback_test(default - d, default, gens)
    assert fb and "not significantly" in why


def test_evaluate_auto_on_a_calibrated_model_holds_calibrated_worlds():
    """A calibrated model (labels drawn from its own probabilities): its scores are
    not shown miscalibrated, so the chooser's worlds hold the identity and
    near-calibrated maps (issue 56), and evaluate's note is the chooser's reason
    alone (no advice to print ece_es_cv beside it: measured no worse,
    benchmarks/measured/choose_calibrated.md)."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(1000, 10)) * 2.0
    logits[np.arange(1000), rng.integers(0, 10, 1000)] += 4.0
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    labels = np.minimum((rng.random(1000)[:, None] > np.cumsum(probs, 1)).sum(1), 9)
    res = fitontest.evaluate(probs, labels, evaluator="auto")
    ch = choose_evaluator(probs, labels, interval=None, progress=False)
    assert res.pvalue > 0.05 and {"identity", "near"} <= set(ch.generators)
    assert res.note == ch.reason() and res.estimate == ch.recommended_estimate
    # a clearly over-confident model: its scores are rejected, no calibrated world
    sharp = np.exp(3 * np.log(probs))
    sharp /= sharp.sum(1, keepdims=True)
    off = choose_evaluator(sharp, labels, interval=None, progress=False)
    assert not ({"identity", "near"} & set(off.generators))


def test_calibrated_worlds_where_the_scores_are_not_shown_miscalibrated():
    """Issue 56: a calibrated model is a world the fitted generators never hold
    (a refit's noise is miscalibration). Where the Kuiper test does not reject
    the scores themselves, the worlds hold the identity map (true CE 0) and
    near-calibrated maps between it and a reference refit; where it rejects,
    neither."""
    rng = np.random.default_rng(7)
    s = rng.beta(2, 2, 2000)
    y = (rng.random(2000) < s).astype(int)
    maps, names, kept = plausible_maps(s, y, 36, [0, 1, 0])
    assert {"identity", "near"} <= set(kept) and kept["identity"] == kept["near"] >= 0.01
    assert np.array_equal(maps[names == "identity"], np.broadcast_to(s, (6, s.size)))
    gap = np.abs(maps - s).mean(axis=1)             # each world's population CE
    assert np.all(gap[names == "identity"] == 0.0)
    # near-calibrated: smaller gaps than the reference refits they shrink
    assert 0 < gap[names == "near"].mean() < gap[names == "reference"].mean()
    # an over-confident model: the scores are rejected, no calibrated world
    c = expit(0.5 * logit(s))
    y2 = (rng.random(2000) < c).astype(int)
    _, names2, kept2 = plausible_maps(s, y2, 12, [0, 1, 0])
    assert "identity" not in kept2 and "near" not in kept2
    assert not ({"identity", "near"} & set(names2))
