"""Pitman–Yor predictive release of synthetic records (Lazzarini, Algorithms 1 and 3).

The confidential data enter only through their unique values and counts (a :class:`Partition`).
The m-step posterior predictive of PY(σ, θ, H) is sampled by the urn of eq. (11): a new value
from H with probability (θ + σk)/(θ + n), otherwise an old value i with probability
(nᵢ − σ)/(θ + n). The sampler is one ``lax.scan`` over the m draws with fixed-capacity arrays;
each step costs O(1): an old value is picked by choosing a past record uniformly (∝ nᵢ) and
correcting for −σ by rejection (σ ≥ 0) or by mixing in a uniform pick of a value (σ < 0).
"""

from __future__ import annotations

import secrets
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import lax, random
from scipy.special import gammaln

from .._validate import positive_int
from ..mechanisms.base import check_key

__all__ = [
    "Partition",
    "SyntheticRelease",
    "check_pitman_yor",
    "log_predictive_density",
    "UrnDraw",
    "partition",
    "predictive_release",
    "predictive_urn",
    "sample_pitman_yor",
]


class Partition(NamedTuple):
    """Confidential discrete data as the urn sees them: ``values`` (k unique values) and their
    ``counts`` (k positive integers)."""

    values: np.ndarray
    counts: np.ndarray


class SyntheticRelease(NamedTuple):
    """What a Pitman–Yor release may publish:

    - **values** – the m synthetic records of Algorithm 1 (publish them all), and
    - **released** – Algorithm 3's selection: publish ``values[released]`` alone (the records equal
      to an observed value). Never publish the mask beside ``values``: it says which records are
      confidential values.

    The urn's bookkeeping (which confidential value each record copies, the counts per value) is
    not here; :func:`predictive_urn` returns it, for analyses, not for publication."""

    values: jax.Array
    released: jax.Array


class UrnDraw(NamedTuple):
    """One draw of the urn behind a release, **confidential**: ``labels`` index the sorted
    confidential values and ``synthetic_counts`` has k + m entries, k the number of distinct
    confidential values. For tests and utility analyses; never publish it.

    - **values** – the m synthetic records; **labels** – each record's cluster (``< k`` an observed
      value, ``k + h`` the h-th new one); **synthetic_counts** – S: records per cluster (S₁…S_k old,
      then new); **num_new** – K_m⁽ⁿ⁾, the number of new values."""

    values: jax.Array
    labels: jax.Array
    synthetic_counts: jax.Array
    num_new: jax.Array


def partition(x) -> Partition:
    """Unique values and counts of a 1-d array of confidential records.

    >>> partition([0.2, 0.5, 0.2]).counts
    array([2, 1])
    """
    values, counts = np.unique(check_records(x, "x"), return_counts=True)
    return Partition(values, counts)


def check_records(x, name="x", *, canonical=True) -> np.ndarray:
    """``x`` as a non-empty 1-d array of finite real records, in JAX's default dtype when
    ``canonical`` (float32/int32 unless x64 is on). Raises ``ValueError`` naming ``name`` for
    non-numeric, NaN or infinite records, and for records that are distinct as given but would
    merge (or overflow) in the default dtype: the partition, and so the privacy accounting, would
    silently differ from the data."""
    try:
        x = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged input
        raise ValueError(f"`{name}` must be a non-empty 1-d array of real numbers ({err}).") from None
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating) or x.dtype == bool):
        raise ValueError(f"`{name}` must be a 1-d array of real numbers, got dtype {x.dtype}.")
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-d array of records, got shape {x.shape}.")
    bad = ~np.isfinite(x)
    if np.any(bad):
        raise ValueError(
            f"`{name}` must hold finite records; some are NaN or infinite. Drop or impute them before "
            "releasing."
        )
    if not canonical:
        return x
    dtype = jax.dtypes.canonicalize_dtype(x.dtype)
    if dtype == x.dtype:
        return x
    if np.issubdtype(x.dtype, np.integer) and (
        x.min() < np.iinfo(dtype).min or x.max() > np.iinfo(dtype).max
    ):
        raise ValueError(
            f"`{name}` has integer records outside the range of {dtype} (JAX's default with x64 off). "
            "Enable x64 (jax.config.update('jax_enable_x64', True)) or recode the values."
        )
    with np.errstate(over="ignore"):
        y = x.astype(dtype)
    if not np.all(np.isfinite(y)):
        raise ValueError(
            f"`{name}` has records too large for {dtype} (JAX's default with x64 off). Enable x64 "
            "(jax.config.update('jax_enable_x64', True)) or rescale the data."
        )
    k_given, k_cast = np.unique(x).size, np.unique(y).size
    if k_cast != k_given:
        raise ValueError(
            f"`{name}` has distinct values as {x.dtype} that merge as {dtype} (JAX's default with x64 "
            "off): distinct records would become one value of the partition. Enable x64 "
            "(jax.config.update('jax_enable_x64', True)) or round the data first (e.g. np.round(x, 6))."
        )
    return y


def check_real(value, name, what):
    """``float(value)`` for a real scalar, else ``ValueError`` saying it must be ``what``."""
    if isinstance(value, (str, bytes)) or np.ndim(value) != 0:
        raise ValueError(f"`{name}` must be {what}, got {value!r}.")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be {what}, got {value!r}.") from None


def check_pitman_yor(sigma, theta, num_values=None):
    """Raise ``ValueError`` unless (σ, θ) is a valid PY pair: σ ∈ [0, 1) and θ > −σ, or σ < 0 and
    θ = z|σ| for an integer z ≥ 1 (at least the ``num_values`` already observed). Both must be
    finite numbers (θ → ∞, every record a fresh draw from H, is not supported)."""
    sigma = check_real(sigma, "sigma", "a finite number in (-inf, 1)")
    theta = check_real(theta, "theta", "a finite number")
    if not (np.isfinite(sigma) and sigma < 1):
        raise ValueError(f"`sigma` must be a finite number in (-inf, 1), got {sigma}.")
    if not np.isfinite(theta):
        raise ValueError(
            f"`theta` must be a finite number, got {theta} (theta -> inf makes every record a fresh draw "
            "from the base H; use a large finite theta, or sample from H directly)."
        )
    if sigma >= 0:
        if not theta > -sigma:
            raise ValueError(f"`theta` must be > -sigma = {-sigma} for sigma in [0, 1), got {theta}.")
        return
    z = theta / -sigma
    if not (np.isfinite(z) and z >= 1 and abs(z - round(z)) < 1e-9):
        raise ValueError(f"with sigma < 0, `theta` must be z·|sigma| for an integer z >= 1; got z = {z:g}.")
    if num_values is not None and round(z) < num_values:
        raise ValueError(
            f"with sigma < 0, z = theta/|sigma| = {z:g} is below the {num_values} observed values."
        )


def check_base(base):
    """H: Uniform(0, 1) for ``None``, else a NumPyro distribution over scalar records."""
    if base is None:
        return dist.Uniform(0.0, 1.0)
    if not isinstance(base, dist.Distribution):
        raise ValueError(
            "`base` must be a numpyro Distribution (the base measure H), "
            f"got {type(base).__name__}: {base!r}."
        )
    if base.batch_shape != () or base.event_shape != ():
        raise ValueError(
            "`base` must be a numpyro Distribution over scalar records (batch_shape () and event_shape ()), "
            f"got batch_shape {base.batch_shape} and event_shape {base.event_shape}."
        )
    return base


def as_partition(data, name="data") -> Partition:
    """``data`` (records, or a :class:`Partition`) as a validated partition in JAX's default dtype."""
    if isinstance(data, Partition):
        counts = np.asarray(data.counts)
        if not (np.issubdtype(counts.dtype, np.integer) or np.issubdtype(counts.dtype, np.floating)):
            raise ValueError(
                f"`data.counts` must be a non-empty 1-d array of positive integers, got {counts!r}."
            )
        if (
            counts.ndim != 1
            or counts.size == 0
            or not np.all(np.isfinite(counts))
            or np.any(counts < 1)
            or np.any(counts != np.round(counts))
        ):
            raise ValueError("`data.counts` must be a non-empty 1-d array of positive integers.")
        given = check_records(data.values, "data.values", canonical=False)
        if given.shape != counts.shape or np.unique(given).size != given.size:
            raise ValueError("`data.values` must hold one distinct value per entry of `data.counts`.")
        values = check_records(given, "data.values")
        return Partition(values, counts.astype(np.int32))
    values, counts = np.unique(check_records(data, name), return_counts=True)
    return Partition(values, counts)


def urn_draws(key, counts, num_records, m, sigma, theta):
    """Labels of m predictive draws given cluster ``counts``. ``counts`` may be zero-padded at the
    end and ``num_records`` (static) may exceed their sum, so that datasets of similar size share
    one compiled function; the real numbers of values and records are read from ``counts``."""
    k0 = counts.shape[0]
    owner = jnp.concatenate(
        [jnp.repeat(jnp.arange(k0), counts, total_repeat_length=num_records), jnp.zeros(m, jnp.int32)]
    )  # entries past the real records are written before they are read
    n_real, k_real = jnp.sum(counts), jnp.sum(counts > 0)
    counts = jnp.concatenate([counts.astype(jnp.int32), jnp.zeros(m, jnp.int32)])
    neg = jnp.maximum(-sigma, 0.0)  # σ < 0: (nᵢ + |σ|) = nᵢ + a uniform share |σ| per value
    pos = jnp.maximum(sigma, 0.0)  # σ ≥ 0: (nᵢ − σ) by rejection from ∝ nᵢ

    def attempt(owner, counts, k, total, u, index):
        """One draw ∝ (nᵢ − σ) over the k values: a past record's value (∝ nᵢ) or, for σ < 0, a
        uniform value; accepted w.p. (n_c − σ⁺)/n_c (always when σ ≤ 0)."""
        uniform_value = u[0] * (total + neg * k) < neg * k
        c = jnp.where(uniform_value, jnp.minimum(jnp.floor(u[1] * k).astype(jnp.int32), k - 1), owner[index])
        return c, uniform_value | (u[2] * counts[c] < counts[c] - pos)

    def step(carry, inputs):
        owner, counts, k = carry
        j, u, index, key = inputs
        total = n_real + j
        new = u[3] * (theta + total) < theta + sigma * k
        first = attempt(owner, counts, k, total, u, index)

        def retry(state):  # rare: only after a rejection (σ > 0); fresh randomness per try
            t, _, _ = state
            k_u, k_i = random.split(random.fold_in(key, t))
            return (
                t + 1,
                *attempt(
                    owner, counts, k, total, random.uniform(k_u, (3,)), random.randint(k_i, (), 0, total)
                ),
            )

        _, old, _ = lax.while_loop(lambda s: ~s[2], retry, (0, *first))
        label = jnp.where(new, k, old)
        owner = owner.at[total].set(label)
        return (owner, counts.at[label].add(1), k + new), label

    # the common path's randomness drawn up front, vectorised: uniforms and past-record indices
    k_u, k_i, k_retry = random.split(key, 3)
    steps = jnp.arange(m)
    inputs = (
        steps,
        random.uniform(k_u, (m, 4)),
        random.randint(k_i, (m,), 0, n_real + steps),
        random.split(k_retry, m),
    )
    (_, counts_all, k), labels = lax.scan(step, (owner, counts, k_real), inputs)
    return labels, counts_all, k


def predictive_release(rng_key, data, m: int, sigma: float, theta: float, base=None) -> SyntheticRelease:
    """m synthetic records from the m-step posterior predictive of PY(σ, θ, H) given the
    confidential ``data`` (records, or a :class:`Partition`): Algorithm 1; ``released`` marks
    Algorithm 3's histogram-perturbation release (only already-observed values).

    :param rng_key: ``None`` for a real publication: the key is then drawn from the operating
        system's randomness (``secrets``), so nobody can recompute the release. A JAX key gives a
        reproducible *simulation*: whoever knows or guesses it can recompute the release for each
        candidate data set and tell which one was used (every example here uses ``key(0)``), so
        never publish a release made with a known key. The urn's probabilities are computed in
        floating point (relative error ~10⁻⁷ in each step's law).

    ``base`` is H, a NumPyro distribution over scalar records (default Uniform(0, 1)). Compiled;
    ``jax.vmap`` over keys for replicates. The inputs are validated on the host first: records
    must be finite real numbers that stay distinct in JAX's default dtype, σ a finite number < 1
    and θ finite (see :func:`check_pitman_yor`); anything else is a ``ValueError``. The result holds
    only what may be published (:class:`SyntheticRelease`); the urn's confidential bookkeeping is
    :func:`predictive_urn`'s.

    >>> import jax
    >>> out = predictive_release(None, [0.1, 0.1, 0.4, 0.4, 0.4], m=8, sigma=0.0, theta=1.0)  # publish
    >>> out.values.shape
    (8,)
    >>> sim = predictive_release(jax.random.key(0), [0.1, 0.1, 0.4, 0.4, 0.4], m=8, sigma=0.0, theta=1.0)
    """
    draw = predictive_urn(_publication_key(rng_key), data, m, sigma, theta, base)
    return SyntheticRelease(draw.values, draw.labels < draw.synthetic_counts.shape[0] - m)


def predictive_urn(rng_key, data, m: int, sigma: float, theta: float, base=None) -> UrnDraw:
    """The urn draw behind :func:`predictive_release` (the same key gives the same values), with its
    **confidential** bookkeeping (:class:`UrnDraw`): for tests and utility analyses, never for
    publication.

    >>> import jax
    >>> draw = predictive_urn(jax.random.key(0), [0.1, 0.1, 0.4, 0.4, 0.4], m=8, sigma=0.0, theta=1.0)
    >>> int(draw.synthetic_counts.sum())
    8
    """
    check_key(rng_key)
    data = as_partition(data)
    m = positive_int(m, "m")
    check_pitman_yor(sigma, theta, len(data.counts))
    base = check_base(base)
    return _release(
        rng_key,
        jnp.asarray(data.values),
        jnp.asarray(data.counts),
        int(data.counts.sum()),
        m,
        sigma,
        theta,
        base,
    )


def _publication_key(rng_key):
    """``rng_key``, or for ``None`` a key from the operating system's randomness (for a publication)."""
    if rng_key is None:
        return random.key(secrets.randbits(63))
    check_key(rng_key)
    return rng_key


def _release(key, values, counts, num_records, m, sigma, theta, base):
    k_urn, k_base = random.split(key)
    labels, counts_all, k = urn_draws(k_urn, counts, num_records, m, sigma, theta)
    k0 = values.shape[0]
    new_values = base.sample(k_base, (m,)).astype(jnp.result_type(values.dtype, jnp.float32))
    values_out = jnp.where(
        labels < k0, values[jnp.minimum(labels, k0 - 1)], new_values[jnp.maximum(labels - k0, 0)]
    )
    synthetic = counts_all - jnp.concatenate([counts, jnp.zeros(m, counts.dtype)])
    return UrnDraw(values_out, labels, synthetic, k - k0)


_release = jax.jit(_release, static_argnames=("num_records", "m"))


def sample_pitman_yor(rng_key, n: int, sigma: float, theta: float, base=None) -> jax.Array:
    """n records from PY(σ, θ, H) (the urn from empty), e.g. to simulate confidential data.

    >>> import jax
    >>> sample_pitman_yor(jax.random.key(0), 50, 0.5, 3.0).shape
    (50,)
    """
    n = positive_int(n, "n")
    check_pitman_yor(sigma, theta)
    base = check_base(base)
    k_first, k_rest = random.split(rng_key)
    first = base.sample(k_first, (1,))
    if n == 1:
        return first
    rest = _release(k_rest, first, jnp.ones(1, jnp.int32), 1, n - 1, sigma, theta, base)
    return jnp.concatenate([first, rest.values])


def log_predictive_density(z, data, sigma: float, theta: float, base=None) -> float:
    """log q_n(z | x) of the ordered synthetic records z under the m-step PY predictive (the EPPF
    ratio in the proof of Theorem 4.1), w.r.t. counting measure on observed values times H's
    dominating measure on new ones (computed on the host in float64):

    log q = Σ_{i=j}^{j+k−1} log(θ + iσ) − log (θ + n)_m + Σ_{i≤j} log (nᵢ − σ)_{sᵢ}
            + Σ_{r≤k} log (1 − σ)_{s_{j+r} − 1} + Σ_{r≤k} log h(x*_{j+r}).

    >>> float(log_predictive_density([0.1], [0.1, 0.1, 0.4], sigma=0.0, theta=1.0))  # log(2/4)
    -0.6931...
    """
    data = as_partition(data)
    check_pitman_yor(sigma, theta, len(data.counts))
    base = check_base(base)
    z = check_records(z, "z")
    old = np.isin(z, data.values)
    s_old = np.array([np.sum(z == v) for v in data.values])
    new_values, s_new = np.unique(z[~old], return_counts=True)
    j, k, n, m = len(data.counts), len(s_new), int(data.counts.sum()), z.size
    lp = np.sum(np.log(theta + sigma * np.arange(j, j + k))) if k else 0.0
    lp += gammaln(theta + n) - gammaln(theta + n + m)
    lp += np.sum(gammaln(data.counts - sigma + s_old) - gammaln(data.counts - sigma))
    lp += np.sum(gammaln(s_new - sigma) - gammaln(1 - sigma))
    lp += float(jnp.sum(base.log_prob(jnp.asarray(new_values)))) if k else 0.0
    return float(lp)  # float64 on the host: log-density differences of large terms stay exact
