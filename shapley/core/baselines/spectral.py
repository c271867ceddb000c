"""Graph-spectral uncertainty (Lin, Trivedi & Sun 2024, TMLR, "Generating with confidence": EigV, Deg, Ecc) and
kernel language entropy (Nikitin et al. 2024) of n answers, from their (n, n) symmetric similarity matrix W with
entries in [0, 1] (e.g. averaged entailment probabilities, diagonal usually 1). D = diag(row sums of W): an
answer's similarity to itself, the diagonal, counts in its degree (EigV, Deg, Ecc); it cancels in KLE's L = D - W."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from shapley.core import validate
from shapley.core.baselines.entropies import shannon_entropy


def _normalised_laplacian(W: np.ndarray) -> np.ndarray:
    """Symmetric normalised Laplacian I - D^-1/2 W D^-1/2 of a symmetric non-negative W."""
    d = W.sum(axis=1)
    if np.any(d <= 0):
        raise ValueError(
            f"W has a row with zero total similarity (rows {np.flatnonzero(d <= 0).tolist()}); "
            "the normalised Laplacian needs positive degrees (set the diagonal to 1)"
        )
    s = 1.0 / np.sqrt(d)
    L = np.eye(W.shape[0]) - s[:, None] * W * s[None, :]
    return (L + L.T) / 2.0


def eigv(W: np.ndarray) -> float:
    """Sum of eigenvalue gaps U_EigV = sum_k max(0, 1 - lambda_k) (unitless, a soft cluster count).

    lambda_k are the eigenvalues of the symmetric normalised Laplacian L = I - D^-1/2 W D^-1/2. Equals the
    number of connected components for a 0/1 block matrix: 1 when all answers agree, n for the identity.

    Examples:
        >>> W = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # two groups of answers
        >>> round(eigv(W), 6), round(eigv(np.eye(3)), 6)
        (2.0, 3.0)
    """
    M = validate.similarity_matrix(W, "W")
    lam = np.linalg.eigvalsh(_normalised_laplacian(M))
    return float(np.sum(np.maximum(0.0, 1.0 - lam)))


def degree(W: np.ndarray) -> float:
    """Degree-based uncertainty U_Deg = trace(n I - D) / n^2 = 1 - mean_j(d_j) / n (unitless), d_j = sum_i W[j, i].

    0 when every pair is fully similar, 1 - 1/n for the identity (each answer similar only to itself): the
    diagonal counts, the mean runs over all n^2 ordered pairs (i, j) including i = j.

    Examples:
        >>> W = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        >>> round(degree(W), 6), round(degree(np.eye(3)), 6)  # 1 - (2 + 2 + 1) / 9 and 1 - 1/3
        (0.444444, 0.666667)
    """
    M = validate.similarity_matrix(W, "W")
    n = M.shape[0]
    return float(np.trace(n * np.eye(n) - np.diag(M.sum(axis=1))) / n**2)


def eccentricity(W: np.ndarray) -> float:
    """Eccentricity U_Ecc: spread of the answers' spectral embeddings around their centroid (unitless).

    Take the eigenvectors u_1..u_k of the k smallest eigenvalues of the Laplacian L of :func:`eigv`; answer j
    is embedded as v_j = (u_1[j], ..., u_k[j]). With v_bar the mean embedding, U_Ecc = ||[v_1 - v_bar, ...,
    v_n - v_bar]||_2, i.e. the Frobenius norm (square root of the summed squared distances to the centroid); it
    is invariant to the choice of basis inside the selected eigenspace.

    k counts the eigenvalues below 0.9 (the choice of Lin et al.'s code; at least one is always kept). Centred
    across answers, as in the paper's definition: 0 when all answers agree; sqrt(n-1) for the identity W.

    Examples:
        >>> round(eccentricity(np.ones((3, 3))), 6), round(eccentricity(np.eye(3)), 6)  # 0 and sqrt(2)
        (0.0, 1.414214)
    """
    M = validate.similarity_matrix(W, "W")
    lam, U = np.linalg.eigh(_normalised_laplacian(M))
    V = U[:, : max(1, int(np.sum(lam < 0.9)))]  # row j = embedding v_j of answer j
    centred = V - V.mean(axis=0, keepdims=True)
    return float(np.linalg.norm(centred, "fro"))


def kernel_language_entropy(
    W: np.ndarray,
    t: float = 0.3,
    *,
    normalisation: Literal["trace", "diagonal"] = "trace",
) -> float:
    """Kernel language entropy (nats): von Neumann entropy of a heat kernel on the answer graph.

    Nikitin et al. (2024, NeurIPS) "Kernel language entropy: fine-grained uncertainty quantification for LLMs
    from semantic similarities". L = D - W is W's (unnormalised) graph Laplacian (W's diagonal cancels: it does not
    count) and K = expm(-t L) the heat kernel (t > 0, the diffusion time). K is turned into a density matrix rho
    (PSD, unit trace):

    * ``"trace"`` (default): rho = K / tr K.
    * ``"diagonal"``: rho = D_K^-1/2 K D_K^-1/2 / n (unit diagonal, then divided by n), the scaling of
      the KLE reference code.

    KLE = -tr(rho ln rho) = -sum_i mu_i ln mu_i over the eigenvalues mu_i of rho (tiny negative
    eigenvalues from rounding clipped to 0, 0 ln 0 = 0), so 0 <= KLE <= ln n; ln n for the identity W.

    Examples:
        >>> round(kernel_language_entropy(np.eye(3)), 6)  # unrelated answers: ln 3
        1.098612
    """
    M = validate.similarity_matrix(W, "W")
    t = validate.number(t, "t", 0.0)
    validate.choice(normalisation, ("trace", "diagonal"), "normalisation")
    import scipy.linalg  # imported here: scipy is slow to import and only this function needs it

    L = np.diag(M.sum(axis=1)) - M
    K = scipy.linalg.expm(-t * L)
    K = (K + K.T) / 2.0
    if normalisation == "trace":
        rho = K / np.trace(K)
    else:
        s = 1.0 / np.sqrt(np.diag(K))
        rho = s[:, None] * K * s[None, :] / K.shape[0]
    mu = np.clip(np.linalg.eigvalsh(rho), 0.0, None)
    mu = mu / mu.sum()
    return float(min(shannon_entropy(mu), math.log(M.shape[0])))
