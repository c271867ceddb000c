"""Symbolic derivations with sympy: the eigenvalue map and Gershgorin bounds of Proposition 3.1, the
two-group worst case, and the efficiency identity of the Shapley value.

Needs the ``theory`` extra (sympy). Every function returns sympy objects for display and for the tests;
the numerical side of each result lives in :mod:`shapley.theory.worstcase` and
:mod:`shapley.theory.properties`, which do not import sympy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import combinations
from typing import Any

import sympy as sp


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


def _shapley_weight(size: int, n: int) -> sp.Rational:
    """The Shapley weight ``|S|! (n - |S| - 1)! / n!`` of a coalition S of ``size`` players not holding the player."""
    return sp.Rational(math.factorial(size) * math.factorial(n - size - 1), math.factorial(n))


def _shapley_expansion(players: tuple[int, ...], v: Callable[[tuple[int, ...]], sp.Expr]) -> list[sp.Expr]:
    """Each player's Shapley value of the set function ``v`` (coalitions as sorted tuples), expanded."""
    phi = []
    for i in players:
        others = [p for p in players if p != i]
        term = sp.Integer(0)
        for size in range(len(players)):
            for X in combinations(others, size):
                term += _shapley_weight(size, len(players)) * (v(tuple(sorted((*X, i)))) - v(X))
        phi.append(sp.expand(term))
    return phi


def efficiency_symbolic(n: int = 3) -> dict[str, Any]:
    """Expand the Shapley formula with a symbol v_S for every coalition S and sum over the players.

    Returns a dict of sympy objects: ``phi`` (list of the n Shapley values), ``total`` (their sum,
    expanded), ``target`` (``v_N - v_empty``) and ``difference`` (``total - target``, simplified; 0 means
    efficiency holds identically, for *any* set function v, not only entropies).

    Examples:
        >>> efficiency_symbolic(2)["difference"]
        0
    """
    players = tuple(range(1, n + 1))

    def name(S: tuple[int, ...]) -> str:
        return "v_{" + ("".join(map(str, S)) if S else "\\emptyset") + "}"

    v = {S: sp.Symbol(name(S)) for k in range(len(players) + 1) for S in combinations(players, k)}
    phi = _shapley_expansion(players, v.__getitem__)
    total = sp.expand(sum(phi))
    target = v[players] - v[()]
    return {"phi": phi, "total": total, "target": target, "difference": sp.simplify(total - target)}


def degree_pair_weights(n: int) -> tuple[sp.Rational, sp.Rational]:
    """``(a_n, b_n)``: the Shapley values of one pair game ``g(S) = -2/|S|**2 [i, j in S]`` for a member of
    the pair (a_n) and for any other player (b_n), exact rationals.

    Every marginal contribution of a non-member is ``-2/(s+1)**2 + 2/s**2 > 0``, so ``b_n > 0``, and
    efficiency gives ``2 a_n + (n - 2) b_n = -2/n**2 < 0``, so ``a_n < 0``: the slope ``a_n - b_n`` of
    :func:`degree_shapley_affine` is negative for every n >= 2.

    Examples:
        >>> degree_pair_weights(3)
        (-17/108, 5/54)
    """

    def f(s: int) -> sp.Rational:
        return sp.Rational(-2, s**2)

    b = sp.Integer(0)
    for s in range(2, n):  # coalitions S holding the pair but not the player k, |S| = s
        b += math.comb(n - 3, s - 2) * _shapley_weight(s, n) * (f(s + 1) - f(s))
    a = (f(n) - (n - 2) * b) / 2
    return sp.nsimplify(a), sp.nsimplify(b)


def degree_shapley_affine(n: int = 4) -> dict[str, Any]:
    """Each answer's Shapley value for Deg is affine and decreasing in its degree (symbolic, any weights).

    Deg of a coalition S is ``v(S) = 1 - (|S| + 2 sum_{i<j in S} W_ij) / |S|**2`` (``baselines.degree``,
    unit diagonal). Its constant part ``1 - 1/|S|`` is symmetric, so every player gets ``(1 - 1/n)/n``; each
    pair term is ``W_ij`` times the pair game of :func:`degree_pair_weights`. Summing,
    ``phi_k = (1 - 1/n)/n + b_n T + (a_n - b_n) d_k`` with ``T = sum_{i<j} W_ij`` and ``d_k = sum_{j != k}
    W_kj``: affine in the degree d_k, with slope ``a_n - b_n < 0``. Hence, for every W in [0, 1]:

    * Property 1: the argmin answer m has the largest degree; a copy of it in place of s_i changes T by
      ``1 - W_mi + d_m - d_i >= 0`` (``> 0`` when ``d_i < d_m``), so Deg does not rise (falls strictly
      unless s_i is itself a minimiser);
    * Property 2: an unrelated answer changes T by ``-d_i <= 0`` (``< 0`` when s_i is related), so Deg does
      not fall (rises strictly when s_i was related);
    * Property 3: in equal-size sub-games ``phi_g - phi_j = a (d_g(X) - d_j(X))``, so the premise says
      ``d_g(X) < d_j(X)`` for every X, the full X included, which is exactly ``T_new < T_old``: Deg rises.

    Returns the symbols and: ``phi`` (list), ``slope`` (``a_n - b_n``), ``residual`` (each ``phi_k`` minus the
    affine form, simplified: all 0) and ``decreasing`` (``slope < 0``).

    Examples:
        >>> d = degree_shapley_affine(3)
        >>> d["residual"], d["slope"], d["decreasing"]
        ([0, 0, 0], -1/4, True)
    """
    W = {(i, j): sp.Symbol(f"w_{i}{j}") for i, j in combinations(range(n), 2)}

    def v(S: tuple[int, ...]) -> sp.Expr:
        if not S:
            return sp.Integer(0)
        links = sum((W[(i, j)] for i, j in combinations(S, 2)), sp.Integer(0))
        return 1 - (len(S) + 2 * links) / sp.Integer(len(S)) ** 2

    phi = _shapley_expansion(tuple(range(n)), v)
    a, b = degree_pair_weights(n)
    T = sum(W.values(), sp.Integer(0))
    degree = [sum((W[(min(k, j), max(k, j))] for j in range(n) if j != k), sp.Integer(0)) for k in range(n)]
    affine = [sp.Rational(n - 1, n**2) + b * T + (a - b) * d for d in degree]
    residual = [sp.simplify(p - q) for p, q in zip(phi, affine, strict=True)]
    return {"W": W, "phi": phi, "slope": a - b, "residual": residual, "decreasing": bool(a - b < 0)}
