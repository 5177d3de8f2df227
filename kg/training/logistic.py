"""Fitting a :class:`~kg.extraction.linear_model.LinearModel`: the one learner
behind the typer and the claim detector (``kg train``).

Full-batch Adam on the multinomial log loss with an L2 penalty, from zero
weights and without sampling: the same data give the same model, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse

from kg.extraction.linear_model import LinearModel


def fit(
    feats: list[list[str]],
    labels: list[int],
    n_classes: int,
    *,
    l2: float = 1e-4,
    steps: int = 300,
    learn_rate: float = 0.1,
    min_count: int = 2,
    entity_weight: float = 1.0,
    weights: list[float] | None = None,
    log: Callable[[str], None] = print,
) -> LinearModel:
    """Fit the logistic regression; features seen in < ``min_count`` examples are dropped.

    Class 0 is "nothing" (``O``). ``entity_weight`` weighs the examples of every
    other class (entities are rare among the typer's candidates, and the scorer
    weighs recall as much as precision); ``weights``, one per example, multiply
    it (silver against gold).
    """
    counts: dict[str, int] = {}
    for row in feats:
        for x in set(row):
            counts[x] = counts.get(x, 0) + 1
    vocab = {x: i for i, x in enumerate(sorted(x for x, n in counts.items() if n >= min_count))}
    rows, cols = [], []
    for n, row in enumerate(feats):
        for x in set(row):
            if x in vocab:
                rows.append(n)
                cols.append(vocab[x])
    n_ex = len(feats)
    # Each step is two sparse products; scipy's take about 0.25 s where numpy's
    # bincounts took 1.5 s on the silver's 230k candidates.
    design = sparse.csr_matrix(
        (np.ones(len(rows)), (np.array(rows), np.array(cols))), shape=(n_ex, len(vocab))
    )
    design_t = design.T.tocsr()
    y = np.array(labels)
    onehot = np.zeros((n_ex, n_classes), dtype=np.float64)
    onehot[np.arange(n_ex), y] = 1.0
    sample_weight = np.where(y == 0, 1.0, entity_weight)
    if weights is not None:
        sample_weight = sample_weight * np.asarray(weights, dtype=np.float64)
    w = np.zeros((len(vocab), n_classes))
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, steps + 1):
        scores = design @ w
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        d = (p - onehot) * sample_weight[:, None] / n_ex
        grad = design_t @ d
        grad += l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= learn_rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        if step % 50 == 0 or step == steps:
            loss = -np.log(p[np.arange(n_ex), y] + 1e-12).mean()
            log(f"step {step:4d} loss {loss:.4f}")
    return LinearModel(vocab, w.astype(np.float32))
