"""Exact Normal, uniform, Gamma, Dirichlet, Beta and Poisson samplers for the engines' batched
proposals and sweeps.

Random bits: ``jax.random`` lowers threefry's rounds rolled on CPU; :func:`uniform` and :func:`normal`
compute the same threefry words with the rounds unrolled (3 against 11 ns per 32-bit draw on a 2-core
CPU) and make float32 draws from them as ``jax.random`` does.

``jax.random.gamma`` splits a key per element and runs a vmapped rejection ``while_loop`` per element:
measured on a 2-core CPU at 1.2 M draws/s against 110 M/s for ``jax.random.normal``, so Gamma-based
priors and Dirichlet records dominated exact ABC and the Dirichlet record sweeps. Here one key draws a
round of candidates for the whole array (Marsaglia & Tsang 2000 for the Gamma; inversion by sequential
search for a Poisson rate below 10, Hörmann's transformed rejection above) and the elements a round
leaves unfinished are redrawn in later rounds on a small gathered buffer. Every element keeps the first
accepted candidate of its own i.i.d. sequence, so the laws are exactly those of the rejection samplers;
the draws differ from ``jax.random``'s (same key → same draws still holds).

``fast_sampling`` is the NumPyro handler that swaps a model's ``Normal``, ``Gamma``, ``Dirichlet``,
``Beta`` and ``Poisson`` sites (also when a plate expanded them) for these; log densities are unchanged.
"""

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from jax import lax, random
from numpyro.primitives import Messenger

REDRAW_FRACTION = 16  # later rounds work on a buffer of 1/16 of the array (or 1/512 when that holds all left)
# (a trade-off across α: 1/64 ran up to 18 % faster at α ≥ 2, up to 40 % slower at α ≤ 1 where more are left)
POISSON_INVERSION_MAX_RATE = 10.0  # as jax.random.poisson: below, inversion; above, its rejection
POISSON_FALLBACK_FRACTION = 256  # jax.random.poisson for the (float-tail) capped searches
POISSON_WHOLE_ROUNDS = 12  # search steps over the whole array before the rest is gathered
POISSON_INVERSION_MAX_K = 80  # P(Pois(10) > 80) < 1e-40; an element still searching there falls back


_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry_words(key_data, n):
    """The n words ``jax.extend.random.threefry_2x32(key_data, arange(n))`` returns (n even), computed
    with the rounds unrolled: jax lowers them rolled on CPU, ~2.5× slower (7 against 3 ns per word)."""
    k0, k1 = key_data[0], key_data[1]
    ks = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0 = lax.iota(jnp.uint32, n // 2)
    x0, x1 = x0 + ks[0], x0 + jnp.uint32(n // 2) + ks[1]
    for i in range(5):
        for r in _THREEFRY_ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = ((x1 << jnp.uint32(r)) | (x1 >> jnp.uint32(32 - r))) ^ x0
        x0, x1 = x0 + ks[(i + 1) % 3], x1 + ks[(i + 2) % 3] + jnp.uint32(i + 1)
    return jnp.concatenate([x0, x1])


def _threefry_key_data(key):
    """A single threefry key's two words (typed, or raw under the default threefry impl), else None."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return random.key_data(key) if str(random.key_impl(key)) == "threefry2x32" else None
    raw = key.dtype == jnp.uint32 and key.shape == (2,)
    return key if raw and jax.config.jax_default_prng_impl == "threefry2x32" else None


def uniform(key, shape, dtype=None):
    """U ~ Uniform[0, 1) of the given shape, as ``jax.random.uniform`` makes it (23 random mantissa
    bits) from threefry words computed with the rounds unrolled: 3 against 11 ns per draw on a 2-core
    CPU. Other dtypes than float32 and keys of other impls go to ``jax.random.uniform``.
    The draws differ from ``jax.random.uniform``'s; same key → same draws.

    >>> import jax
    >>> u = uniform(jax.random.key(0), (100_000,))
    >>> bool((u >= 0).all() & (u < 1).all() & (abs(u.mean() - 0.5) < 0.005))
    True
    """
    shape, key_data, dtype = tuple(shape), _threefry_key_data(key), jnp.result_type(dtype or float)
    if dtype != jnp.float32 or key_data is None:
        return random.uniform(key, shape, dtype)
    n = math.prod(shape)
    # words rounded up to a multiple of 4: with an odd half (n = 2 mod 4), XLA's CPU loop over the
    # rounds and their concatenated halves runs 3–4× slower (17 against 5 ns per word at n = 2 250)
    bits = _threefry_words(key_data, n + -n % 4)[:n]
    one_to_two = lax.bitcast_convert_type((bits >> jnp.uint32(9)) | jnp.uint32(0x3F800000), jnp.float32)
    return (one_to_two - 1).reshape(shape)


def normal(key, shape, dtype=None):
    """Z ~ N(0, 1) of the given shape, as ``jax.random.normal`` makes it (√2 erf⁻¹ of a uniform on
    (-1, 1)) from :func:`uniform`'s draws.

    >>> import jax
    >>> z = normal(jax.random.key(0), (100_000,))
    >>> bool((abs(z.mean()) < 0.01) & (abs(z.std() - 1) < 0.01))
    True
    """
    dtype = jnp.result_type(dtype or float)
    if dtype != jnp.float32 or _threefry_key_data(key) is None:
        return random.normal(key, shape, dtype)
    lo = jnp.nextafter(jnp.float32(-1), jnp.float32(0))
    u = jnp.maximum(lo, uniform(key, shape, jnp.float32) * (1 - lo) + lo)
    return jnp.float32(math.sqrt(2)) * lax.erf_inv(u)


def count_true(mask, block=32):
    """``jnp.cumsum(mask)`` of a 1-d boolean array, as int32, in blocks: XLA's CPU cumsum over a whole
    array costs ~11 ns per element, this ~2× less (a prefix within each block in log₂(block) fused
    passes, then a cumsum of the block totals)."""
    n = mask.size
    counts = jnp.pad(mask.astype(jnp.int32), (0, -n % block)).reshape(-1, block)
    shift = 1
    while shift < block:
        counts = counts + jnp.pad(counts[:, :-shift], ((0, 0), (shift, 0)))
        shift *= 2
    before = jnp.cumsum(counts[:, -1]) - counts[:, -1]  # in the earlier blocks
    return (counts + before[:, None]).reshape(-1)[:n]


def _unfinished(ok, m):
    """Up to ``m`` distinct indices of the elements not ``ok`` (all of them when there are at most ``m``),
    the other slots ``ok.size``. With W = ok.size // 32, element e < 32 W is bit e // W of word e % W,
    so one fused pass packs the words, and the r < 32 last elements are the bits of word W; a cumsum
    over the word counts and a binary search in each slot's word then find the elements (a cumsum
    over the whole array and a scatter, ``jnp.nonzero``'s way, made the Dirichlet sweep 1.1–1.3× slower)."""
    n = ok.size
    num_words, tail = divmod(n, 32)
    bad = (~ok).astype(jnp.uint32)
    shifted = bad[: 32 * num_words].reshape(32, num_words) << lax.iota(jnp.uint32, 32)[:, None]
    last = jnp.sum(bad[32 * num_words :] << lax.iota(jnp.uint32, tail), dtype=jnp.uint32)
    words = jnp.concatenate([jnp.sum(shifted, axis=0, dtype=jnp.uint32), last[None]])
    counts = lax.population_count(words).astype(jnp.int32)
    ends = lax.associative_scan(jnp.add, counts)  # XLA's CPU cumsum is slower
    slot = lax.iota(jnp.int32, m)
    w = jnp.minimum(jnp.searchsorted(ends, slot, side="right"), num_words).astype(jnp.int32)
    rank, word, bit = slot - ends[w] + counts[w], words[w], jnp.zeros(m, jnp.int32)
    for width in (16, 8, 4, 2, 1):  # the position of the word's rank-th set bit
        low = lax.population_count(word & jnp.uint32((1 << width) - 1)).astype(jnp.int32)
        up = rank >= low
        rank, bit = jnp.where(up, rank - low, rank), jnp.where(up, bit + width, bit)
        word = jnp.where(up, word >> jnp.uint32(width), word)
    index = jnp.where(w < num_words, bit * num_words + w, 32 * num_words + bit)
    return jnp.where(slot < ends[-1], index, n)


def _redraw(key, ok, value, draw, fraction=REDRAW_FRACTION, tries=4):
    """Repeat ``draw(key, idx, tries) -> (ok, value)``, each of shape ``(tries, idx.size)`` (or
    ``(idx.size,)`` for a draw that is the same every try), on the elements not yet ``ok`` until all
    are: each round gathers up to ``n // fraction`` of them (more rounds when more are left; a buffer
    32 times smaller when that holds them all), has its own key and offers each element ``tries``
    candidates, keeping its first accepted one. Which elements a round gathers depends on ``ok``
    alone, so each keeps the first accepted candidate of its own i.i.d. sequence. Finding them costs
    a pass over the whole array (:func:`_unfinished`), hence several tries per round. Under ``vmap``
    the ``lax.cond`` runs both buffer sizes, the small one at a 32nd of the cost."""
    n = ok.size
    big = max(1, n // fraction)
    small = max(1, big // 32)

    def gathered(m):
        def run(i, ok, value):
            idx = _unfinished(ok, m)  # n in the slots past the last: out of range, dropped
            got, v = draw(random.fold_in(key, i), jnp.minimum(idx, n - 1), tries)
            got, v = jnp.broadcast_to(got, (tries, m)), jnp.broadcast_to(v, (tries, m))
            first = jnp.argmax(got, axis=0)
            v = jnp.take_along_axis(v, first[None], axis=0)[0]
            # the gathered slots are all unfinished, and an unfinished slot's value is never kept, so
            # both are written as they stand (idx = n, the filler, is dropped)
            ok = ok.at[idx].set(jnp.any(got, axis=0), mode="drop")
            return ok, value.at[idx].set(v.astype(value.dtype), mode="drop")

        return run

    def body(carry):
        i, ok, value = carry
        few = jnp.sum(~ok) <= small
        return i + 1, *lax.cond(few, gathered(small), gathered(big), i, ok, value)

    return lax.while_loop(lambda c: ~jnp.all(c[1]), body, (0, ok, value))[2]


def _flat(param, shape, dtype):
    """``(param broadcast to shape, flattened, as dtype; the shape)``, shape defaulting to param's."""
    shape = jnp.shape(param) if shape is None else tuple(shape)
    return jnp.broadcast_to(jnp.asarray(param, dtype), shape).reshape(-1), shape


@partial(jax.jit, static_argnames="shape")
def log_gamma(key, concentration, shape=None):
    """log X for X ~ Gamma(concentration, 1), of the given shape (default: the concentration's).

    The log scale keeps tiny concentrations (a Dirichlet part with α ≪ 1) from underflowing to 0.

    >>> import jax, jax.numpy as jnp
    >>> x = jnp.exp(log_gamma(jax.random.key(0), 2.0, (100_000,)))
    >>> bool(abs(x.mean() - 2.0) < 0.03)
    True
    """
    dtype = jnp.result_type(concentration, float)
    a, shape = _flat(concentration, shape, dtype)
    n = a.size
    if n == 0:
        return jnp.zeros(shape, dtype)
    boost = a < 1  # Gamma(a) = Gamma(a + 1) · U^(1/a)
    d = jnp.where(boost, a + 1, a) - 1 / 3
    c = 1 / jnp.sqrt(9 * d)
    inv_a = jnp.where(boost, 1 / a, 0)
    valid = (a > 0) & jnp.isfinite(a)  # else no candidate is ever accepted: done at once, NaN

    def draw(k, idx, tries):
        kx, ku = random.split(k)
        if idx is None:  # round 0: the whole array, one try
            ia, di, ci, size = inv_a, d, c, (n,)
        else:
            ia, di, ci, size = inv_a[idx], d[idx], c[idx], (tries, idx.size)
        x = normal(kx, size, dtype)
        log_u = jnp.log1p(-uniform(ku, size, dtype))  # log of a uniform on (0, 1]
        v = 1 + ci * x
        log_v3 = 3 * jnp.log(jnp.where(v > 0, v, 1))
        log_h = 0.5 * x * x + di * (1 - v * v * v + log_v3)  # log P(accept | x), ≤ 0
        ok = (v > 0) & (log_u < log_h)
        # given x and acceptance, u is uniform on (0, h(x)): u / h(x) is the boost's uniform, for free
        return ok, jnp.log(di) + log_v3 + (log_u - log_h) * ia

    ok, out = draw(random.fold_in(key, 0), None, 1)  # round 0: every element, no gather
    out = _redraw(random.fold_in(key, 1), ok | ~valid, out, draw)
    return jnp.where(valid, out, jnp.nan).reshape(shape)


def gamma(key, concentration, shape=None):
    """X ~ Gamma(concentration, 1), exact (Marsaglia–Tsang in whole-array rounds).

    >>> import jax
    >>> x = gamma(jax.random.key(0), 0.5, (100_000,))
    >>> bool(abs(x.mean() - 0.5) < 0.01)
    True
    """
    return jnp.exp(log_gamma(key, concentration, shape))


def dirichlet(key, concentration, shape=()):
    """Draws of shape ``shape + concentration.shape[-1:]`` from Dirichlet(concentration) (normalised
    Gamma draws, on the log scale as ``jax.random.dirichlet``)."""
    concentration = jnp.asarray(concentration)
    full = tuple(shape) + concentration.shape[-1:]
    full = jnp.broadcast_shapes(full, concentration.shape)
    return jax.nn.softmax(log_gamma(key, concentration, full), axis=-1)


def _ptrs_attempt(key, lam, dtype):
    """One attempt of Hörmann's (1993) transformed rejection for Poisson(lam), lam ≥ 10 (the constants
    of ``jax.random.poisson``): ``(accepted, k)``."""
    k_u, k_v = random.split(key)
    log_lam = jnp.log(lam)
    b = 0.931 + 2.53 * jnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    u = uniform(k_u, lam.shape, lam.dtype) - 0.5
    v = uniform(k_v, lam.shape, lam.dtype)
    us = 0.5 - jnp.abs(u)
    k = jnp.floor((2 * a / us + b) * u + lam + 0.43)
    s = jnp.log(v * inv_alpha / (a / (us * us) + b))
    t = -lam + k * log_lam - lax.lgamma(k + 1)
    reject = (k < 0) | ((us < 0.013) & (v > us))
    return ((us >= 0.07) & (v <= v_r)) | (~reject & (s <= t)), k.astype(dtype)


@partial(jax.jit, static_argnames=("shape", "dtype"))
def poisson(key, rate, shape=None, dtype=None):
    """N ~ Poisson(rate): rates below 10 by inversion (one uniform per element; the first 12 search
    steps run over the whole array in one fused pass, the rest over the few elements left, gathered),
    larger rates by Hörmann's transformed rejection in the same gathered rounds.

    ``dtype`` defaults to JAX's default integer type (int64 under x64), as ``jax.random.poisson``.

    >>> import jax
    >>> x = poisson(jax.random.key(0), 3.0, (100_000,))
    >>> bool(abs(x.mean() - 3.0) < 0.03)
    True
    """
    dtype = jnp.result_type(int) if dtype is None else dtype
    ftype = jnp.result_type(rate, float)
    lam, shape = _flat(rate, shape, ftype)
    n = lam.size
    if n == 0:
        return jnp.zeros(shape, dtype)
    k_inv, k_more, k_rest = random.split(key, 3)
    valid = (lam >= 0) & jnp.isfinite(lam)  # NaN, negative or inf: jax.random.poisson's value
    small = valid & (lam < POISSON_INVERSION_MAX_RATE)
    u = uniform(k_inv, (n,), ftype)

    def step(u, lam, k, p, cdf):  # one step of the sequential search from (k, P(k), P(≤ k))
        go = u > cdf
        k = k + go
        p = jnp.where(go, p * lam / k, p)
        return k, p, jnp.where(go, cdf + p, cdf)

    def search(u, lam, k, p, cdf):  # until every element has its count, or the cap
        cond = lambda c: (c[0] < POISSON_INVERSION_MAX_K) & jnp.any(u > c[3])
        return lax.while_loop(cond, lambda c: (c[0] + 1, *step(u, lam, *c[1:])), (0, k, p, cdf))[1:]

    # whole-array steps while most elements are still searching, then the few left in gathered buffers
    p = jnp.exp(-jnp.where(small, lam, 0))  # large rates: cdf 1, no search
    k, cdf = jnp.zeros(n, dtype), p
    for _ in range(POISSON_WHOLE_ROUNDS):  # unrolled: one fused pass over the array, not 12
        k, p, cdf = step(u, lam, k, p, cdf)
    k, p, cdf = lax.optimization_barrier((k, p, cdf))  # computed once, not re-fused into later reads

    def rest(key, idx, tries):  # small rates: the search goes on (once); large: Hörmann's rejection
        found = search(u[idx], lam[idx], k[idx], p[idx], cdf[idx])
        lam_large = jnp.broadcast_to(jnp.maximum(lam[idx], POISSON_INVERSION_MAX_RATE), (tries, idx.size))
        got, k_large = _ptrs_attempt(key, lam_large, dtype)
        k_small = jnp.where(u[idx] <= found[2], found[0], -1)  # -1: hit the cap
        return small[idx] | got, jnp.where(small[idx], k_small, k_large)

    k = _redraw(k_more, (small & (u <= cdf)) | ~valid, k, rest)
    # a search that hit the cap (only in the float tail: u above the float cdf) and invalid rates
    done = (valid & ~small) | (small & (k >= 0))
    draw = lambda key, idx, _: (jnp.ones(idx.shape, bool), random.poisson(key, lam[idx], dtype=dtype))
    k = _redraw(k_rest, done, k, draw, POISSON_FALLBACK_FRACTION, tries=1)
    return k.reshape(shape)


# --- NumPyro distributions and the handler ---------------------------------------------------------


class _Gamma(dist.Gamma):
    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        return gamma(key, self.concentration, shape) / self.rate


class _Dirichlet(dist.Dirichlet):
    def sample(self, key, sample_shape=()):
        x = dirichlet(key, self.concentration, tuple(sample_shape) + self.batch_shape)
        return jnp.clip(x, jnp.finfo(x.dtype).tiny, 1 - jnp.finfo(x.dtype).eps)  # as numpyro's


class _Beta(dist.Beta):
    def sample(self, key, sample_shape=()):
        return _Dirichlet(self._dirichlet.concentration).sample(key, sample_shape)[..., 0]


class _Normal(dist.Normal):
    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape
        return self.loc + self.scale * normal(key, shape)


class _Poisson(dist.Poisson):
    def sample(self, key, sample_shape=()):
        return poisson(key, self.rate, tuple(sample_shape) + self.batch_shape)


def fast_distribution(fn):
    """``fn`` with the samplers above where it is (or expands, or reinterprets) a Normal, Gamma,
    Dirichlet, Beta or Poisson; any other distribution is returned as it is."""
    t = type(fn)
    if t is dist.Normal:
        return _Normal(fn.loc, fn.scale)
    if t is dist.Gamma:
        return _Gamma(fn.concentration, fn.rate)
    if t is dist.Dirichlet:
        return _Dirichlet(fn.concentration)
    if t is dist.Beta:
        return _Beta(fn.concentration1, fn.concentration0)
    if t is dist.Poisson and not fn.is_sparse:
        return _Poisson(fn.rate)
    if t is dist.ExpandedDistribution:
        base = fast_distribution(fn.base_dist)
        return fn if base is fn.base_dist else dist.ExpandedDistribution(base, fn.batch_shape)
    if t is dist.Independent:
        base = fast_distribution(fn.base_dist)
        return fn if base is fn.base_dist else dist.Independent(base, fn.reinterpreted_batch_ndims)
    return fn


class fast_sampling(Messenger):
    """Draw the model's Normal, Gamma, Dirichlet, Beta and Poisson sites with this module's samplers
    (same laws, same log densities; different draws from ``jax.random``'s).

    >>> import jax, numpyro, numpyro.distributions as dist
    >>> from numpyro import handlers
    >>> def model():
    ...     numpyro.sample("x", dist.Gamma(2.0, 1.0))
    >>> tr = handlers.trace(handlers.seed(fast_sampling(model), 0)).get_trace()
    >>> type(tr["x"]["fn"]).__name__
    '_Gamma'
    """

    def process_message(self, msg):
        if msg["type"] == "sample" and not msg["is_observed"] and msg["value"] is None:
            fn, fast = msg["fn"], fast_distribution(msg["fn"])
            if fast is not fn:
                check_same_draws(fn, fast, msg["kwargs"].get("sample_shape", ()))
            msg["fn"] = fast


def check_same_draws(fn, fast, sample_shape=()):
    """Raise unless ``fast`` draws arrays of the shape and dtype ``fn`` draws (read off their traces,
    nothing is sampled): the engines' proposals must be the model's own values, or integer arithmetic in
    a statistic could overflow in the proposals alone (int32 records where the model has int64)."""
    key = random.key(0)
    want = jax.eval_shape(lambda k: fn.sample(k, sample_shape), key)
    got = jax.eval_shape(lambda k: fast.sample(k, sample_shape), key)
    if (want.shape, want.dtype) != (got.shape, got.dtype):
        raise RuntimeError(
            f"dpjax's sampler for {type(fn).__name__} draws {got.dtype}{list(got.shape)} where the model "
            "draws "
            f"{want.dtype}{list(want.shape)}; please report this bug (dpjax.infer.samplers.fast_sampling)."
        )


__all__ = [
    "check_same_draws",
    "count_true",
    "dirichlet",
    "fast_distribution",
    "fast_sampling",
    "gamma",
    "log_gamma",
    "normal",
    "poisson",
    "uniform",
]
