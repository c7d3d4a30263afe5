"""The sweep report's paired comparisons on hand-written 5-seed sweeps (no training): a key that cannot change
anything reports "no detectable effect", a planted effect (a 10× smaller learning rate) "holds" with an
interval that excludes 0, and 3 seeds are "underpowered"."""

from __future__ import annotations

import numpy as np

from rlx.report import write_report
from rlx.report.paired import compare_sweep
from rlx.report.runs import load_sweep
from tests.sweeps.synthetic import write_job

PROMPTS = [f"{a}+{b}=" for a in range(8) for b in range(8)]  # 64 held-out prompts, the same in every run
STEPS = 20


def job(root, n, overrides, rng, skill, noise=True):
    """A run whose held-out prompts pass with probability `skill` (drawn with `rng`: a fresh draw per run
    unless the caller reuses the generator state)."""
    correct = rng.random(len(PROMPTS)) < skill  # [P]
    sampled = rng.binomial(4, skill, len(PROMPTS))  # [P] of 4 samples
    reward = [
        float(np.clip(skill - 0.2 + 0.01 * i + (rng.normal(0, 0.02) if noise else 0), 0, 1)) for i in range(STEPS)
    ]
    return write_job(
        root / str(n),
        overrides,
        {
            "reward/mean": reward,
            "loss/kl": [0.001 * i for i in range(STEPS)],
            "rollout/tok_per_s": [100.0] * STEPS,
            "rollout/seconds": [2.0] * STEPS,
        },
        {
            "before": {"val/accuracy": 0.3},
            "after": {"val/accuracy": float(correct.mean()), "val/pass@1": float(sampled.mean() / 4)},
            "steps": STEPS,
            "wall_s": 10.0,
        },
        heldout=[
            {"step": STEPS, "prompt": p, "status": "PASS" if c else "FAIL", "sampled_passed": int(k), "sampled": 4}
            for p, c, k in zip(PROMPTS, correct, sampled, strict=True)
        ],
    )


def sweep(root, key, values, seeds, skill_of):
    """Runs for each (value, seed); `skill_of(value, seed)`; the seed's own generator, so runs of one seed share
    their warm start's luck only through `skill_of`."""
    n = 0
    for seed in seeds:
        for value in values:
            rng = np.random.default_rng(1000 * seed + n)
            job(root, n, [f"{key}={value}", f"seed={seed}"], rng, skill_of(value, seed))
            n += 1
    (root / "sweep.json").write_text(f'{{"swept": ["{key}", "seed"]}}')
    return root


SEED_SKILL = [0.55, 0.7, 0.62, 0.8, 0.66]  # the warm start moves every arm by up to 0.25 between seeds


def outcomes(root):
    _, runs = load_sweep(root)
    return {c.metric: c for c in compare_sweep(runs, ["samples_every", "optimizer.lr", "seed"])}


def test_a_key_that_cannot_change_anything_reports_no_detectable_effect(tmp_path):
    # samples_every changes what is written to samples.jsonl, not the run: the same seed gives the same run
    root = tmp_path / "inert"
    n = 0
    for seed in range(5):
        for value in (1, 10):
            job(root, n, [f"samples_every={value}", f"seed={seed}"], np.random.default_rng(seed), SEED_SKILL[seed])
            n += 1
    rows = outcomes(root)
    assert set(rows) == {
        "held-out accuracy after RL",
        "sampled pass@1 after RL",
        "reward, last 10% of steps",
        "KL to the reference, last 10% of steps",
        "tokens generated",
    }
    for c in rows.values():
        assert c.outcome.word == "no detectable effect", c
        assert c.interval.low == c.interval.high == 0 and len(c.seeds) == 5
    assert rows["held-out accuracy after RL"].interval.n_prompts == 64
    text = write_report(root).read_text()
    assert "| `samples_every` | 10 vs 1 | held-out accuracy after RL | +0.000 [+0.000, +0.000] | 5 | 64 |" in text


def test_a_null_effect_with_fresh_noise_in_every_run_reports_no_detectable_effect(tmp_path):
    # the key changes the random stream only (every run its own draws), not the skill
    rows = outcomes(sweep(tmp_path, "samples_every", [1, 10], range(5), lambda v, s: SEED_SKILL[s]))
    acc = rows["held-out accuracy after RL"]
    assert acc.outcome.word == "no detectable effect" and acc.interval.low < 0 < acc.interval.high
    assert "could detect ≥" in acc.outcome.detail
    assert rows["sampled pass@1 after RL"].outcome.word == "no detectable effect"


def test_a_planted_effect_holds_with_an_interval_excluding_zero(tmp_path):
    # a 10× smaller learning rate learns less: every prompt's pass probability 0.2 lower
    root = sweep(tmp_path, "optimizer.lr", ["1e-4", "1e-5"], range(5), lambda v, s: SEED_SKILL[s] - 0.2 * (v == "1e-5"))
    rows = outcomes(root)
    for metric in ("held-out accuracy after RL", "sampled pass@1 after RL", "reward, last 10% of steps"):
        c = rows[metric]
        assert (c.outcome.word, c.outcome.detail) == ("holds", "lower"), c
        assert c.interval.high < 0 and c.interval.low < c.interval.mean < c.interval.high
    assert rows["held-out accuracy after RL"].interval.mean < -0.1
    text = write_report(root).read_text()
    assert "**holds** (lower)" in text and "Paired comparisons" in text


def test_three_seeds_are_underpowered_however_clear(tmp_path):
    root = sweep(tmp_path, "optimizer.lr", ["1e-4", "1e-5"], range(3), lambda v, s: SEED_SKILL[s] - 0.3 * (v == "1e-5"))
    c = outcomes(root)["held-out accuracy after RL"]
    assert c.outcome.word == "underpowered" and c.outcome.detail == "3 paired seeds < 5"


def test_every_report_names_its_code_packages_machine_and_command(tmp_path):
    import json
    import subprocess

    from rlx.report.provenance import REPO, collect
    from rlx.report.wandb import report_sections

    root = sweep(tmp_path, "optimizer.lr", ["1e-4", "1e-5"], range(2), lambda v, s: 0.5)
    info = {"swept": ["optimizer.lr", "seed"], "command": "python -m rlx -m optimizer.lr=1e-4,1e-5 seed=0,1"}
    info["started"], info["provenance"] = "2026-12-02 11:00:00", collect()
    (root / "sweep.json").write_text(json.dumps(info))
    (root / "1" / "status.json").write_text('{"status": "completed", "wandb_url": "https://wandb.ai/me/rlx/runs/x1"}')
    text = write_report(root).read_text()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert f"- code: `{head.strip()}`" in text and "recorded when the sweep started" in text
    assert f"- command: `{info['command']}` (started 2026-12-02 11:00:00)" in text
    assert "torch " in text and "scipy " in text and "cores, Python" in text
    assert "- W&B runs: [0](https://wandb.ai/me/rlx/runs/x1)" in text
    shown = report_sections(text)  # what the W&B Report carries: the sections, not the title or the images
    assert shown.startswith("## Per configuration") and "## Paired comparisons" in shown and "![" not in shown
    assert "## Provenance" in shown
    (root / "sweep.json").write_text("{}")  # a sweep that recorded nothing: the rebuild says whose it is
    assert "collected when this report was rebuilt" in write_report(root).read_text()


def test_held_out_curves_against_steps_and_tokens(tmp_path):
    import matplotlib.image

    from rlx.report.plots import held_out_curve, tokens_after

    for seed in range(2):
        rows = [
            {"step": step, "prompt": p, "status": "PASS" if i < passed else "FAIL", "sampled_passed": 1, "sampled": 4}
            for step, passed in ((0, 1), (2, 2 + seed), (4, 3))
            for i, p in enumerate(PROMPTS[:4])
        ]
        write_job(
            tmp_path / str(seed),
            ["algo.beta=0.04", f"seed={seed}"],
            {"rollout/tok_per_s": [100.0, 50.0, 100.0, 100.0], "rollout/seconds": [1.0, 2.0, 3.0, 0.5]},
            {"after": {"val/accuracy": 0.75}},
            heldout=rows,
        )
    (tmp_path / "sweep.json").write_text('{"swept": ["algo.beta", "seed"]}')
    _, runs = load_sweep(tmp_path)
    # 1, 2 and 3 of 4 prompts pass before RL, after 2 steps and after 4 (seed 0); pass@1 = 1/4 throughout
    assert held_out_curve(runs[0]) == {
        "greedy accuracy": [(0, 0.25), (2, 0.5), (4, 0.75)],
        "sampled pass@1": [(0, 0.25), (2, 0.25), (4, 0.25)],
    }
    # tokens after k steps: 100·1, + 50·2, + 100·3, + 100·0.5
    assert tokens_after(runs[0]) == {0: 0.0, 1: 100.0, 2: 200.0, 3: 500.0, 4: 550.0}
    write_report(tmp_path)
    img = matplotlib.image.imread(tmp_path / "heldout.png")[..., :3]  # [H, W, 3]
    assert img.shape[1] > 600 and ((img.max(-1) - img.min(-1)) > 0.2).mean() > 0.002  # coloured curves drawn
