"""Symbolic derivations with sympy: the eigenvalue map and Gershgorin bounds of Proposition 3.1, the
two-group worst case, and the efficiency identity of the Shapley value.

Needs the ``theory`` extra (sympy). Every function returns sympy objects for display and for the tests;
the numerical side of each result lives in :mod:`shapley.theory.worstcase` and
:mod:`shapley.theory.properties`, which do not import sympy.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import sympy as sp

EFFICIENCY_MAX_N = 6
"""Largest number of players for :func:`efficiency_symbolic` (2**6 coalition symbols)."""


def symbolic_bounds() -> dict[str, Any]:
    """The eigenvalue map and the two Gershgorin bounds, derived with sympy.

    Returns a dict of sympy objects:
        ``eig_map_check``: ``(R' - lambda' I) - beta (K - lambda I)`` for a symbolic 3x3 K, which
            simplifies to the zero matrix when lambda' = 1 + beta (lambda - 1);
        ``lambda_prime``: the map ``1 + beta (lambda - 1)``;
        ``paper``: solution in beta of ``1 + beta (-n - 1) >= 0`` (the paper's |lambda| <= n);
        ``gershgorin``: solution in beta of ``1 + beta (lambda_low - 1) >= 0`` with the Gershgorin
            lower bound ``lambda_low = 2 - n`` (off-diagonals of K at most 1), i.e. ``1 - beta (n - 1) >= 0``;
        ``ratio``: gershgorin / paper = (n + 1)/(n - 1);
        ``two_group``: closed-form lambda_min of the two-group kernel (symbols p, q, a);
        ``two_group_even``: the same at p = q = n/2, simplified.

    Examples:
        >>> symbolic_bounds()["lambda_prime"]
        beta*(lambda - 1) + 1
    """
    beta, lam, n, m, a, p, q = sp.symbols("beta lambda n m a p q", positive=True)
    k = sp.symbols("k01 k02 k12")
    K = sp.Matrix([[1, k[0], k[1]], [k[0], 1, k[2]], [k[1], k[2], 1]])
    eye = sp.eye(3)
    lam_prime = 1 + beta * (lam - 1)
    Rp = eye + beta * (K - eye)
    check = sp.simplify((Rp - lam_prime * eye) - beta * (K - lam * eye))
    paper = sp.solve_univariate_inequality(lam_prime.subs(lam, -n) >= 0, beta)
    # Gershgorin on K: lambda >= 1 - (n - 1) = 2 - n; write n = m + 1 with m > 0 so sympy knows n - 1 > 0.
    gersh_m = sp.solve_univariate_inequality(sp.expand(lam_prime.subs(lam, 2 - (m + 1))) >= 0, beta)
    gersh = gersh_m.subs(m, n - 1)
    ratio = sp.simplify((1 / (n - 1)) / (1 / (n + 1)))
    M2 = sp.Matrix([[1 - a + a * p, sp.sqrt(p * q)], [sp.sqrt(p * q), 1 - a + a * q]])
    eigs = list(M2.eigenvals().keys())
    lam_two = sp.simplify(min(eigs, key=lambda e: e.subs({a: sp.Rational(1, 2), p: 2, q: 3})))
    even = sp.factor(sp.simplify(lam_two.subs({p: n / 2, q: n / 2})))
    return {
        "eig_map_check": check,
        "lambda_prime": lam_prime,
        "paper": paper,
        "gershgorin": gersh,
        "ratio": ratio,
        "two_group": lam_two,
        "two_group_even": even,
    }


def efficiency_symbolic(n: int = 3) -> dict[str, Any]:
    """Expand the Shapley formula with a symbol v_S for every coalition S and sum over the players.

    Returns a dict of sympy objects: ``phi`` (list of the n Shapley values), ``total`` (their sum,
    expanded), ``target`` (``v_N - v_empty``) and ``difference`` (``total - target``, simplified; 0 means
    efficiency holds identically, for *any* set function v, not only entropies).

    Examples:
        >>> efficiency_symbolic(2)["difference"]
        0
    """
    if int(n) != n or not 1 <= n <= EFFICIENCY_MAX_N:
        raise ValueError(f"n must be an integer in 1..{EFFICIENCY_MAX_N} for the symbolic expansion; got {n!r}")
    players = tuple(range(1, int(n) + 1))

    def name(S: tuple[int, ...]) -> str:
        return "v_{" + ("".join(map(str, S)) if S else "\\emptyset") + "}"

    v = {S: sp.Symbol(name(S)) for k in range(len(players) + 1) for S in combinations(players, k)}
    phi = []
    for i in players:
        others = [p for p in players if p != i]
        term = sp.Integer(0)
        for k in range(len(players)):
            w = sp.Rational(math.factorial(k) * math.factorial(len(players) - k - 1), math.factorial(len(players)))
            for X in combinations(others, k):
                term += w * (v[tuple(sorted(X + (i,)))] - v[X])
        phi.append(sp.expand(term))
    total = sp.expand(sum(phi))
    target = v[players] - v[()]
    return {"phi": phi, "total": total, "target": target, "difference": sp.simplify(total - target)}
