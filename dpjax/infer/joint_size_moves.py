"""Joint moves of θ and an unknown n along their ridge, with the record noise held fixed.

When n_dp is noisy, s pins down n·E_θ[t] far better than n: the posterior of (θ, n) is a narrow
ridge. Birth/death moves change n by ±1 at fixed θ and the θ-step changes θ at fixed records, so
the chain crawls along it. Here the records are written as x = g(θ, u) (the noise
representations of :mod:`dpjax.infer.noncentred`) and (θ, n) move together by random-walk
Metropolis with every u held fixed, on the target

    p(θ) p(n) Πᵢ g(uᵢ) η(s | T(g(θ, u₁..uₙ)))

over all ``capacity`` slots, whose slots ≥ n hold noise from its own θ-free law g (refreshed
before the moves from records x ~ f(·|θ) drawn independently of all else: an exact Gibbs step;
:class:`~dpjax.infer.ReversibleJumpKernel` passes the record sweep's unused proposals). Πg cancels
in every ratio, so a move that grows n to n* simply brings slots n..n*−1 into the database. The
proposal is Gaussian in (unconstrained θ, n) with the chain's own warmup covariance (adaptive
Metropolis: Haario et al. 2001), so it learns the ridge's direction;
n* = n + round(d_n) keeps it symmetric. Each move is O(capacity · dim T).

Where the ridge is long and curved (Dirichlet compositions at a very noisy n_dp: E α₁ runs from 7
to 26 along it), a covariance learnt from a chain that hardly moves stays far smaller than the
ridge and no fixed direction follows it. ``ridge_moves`` then follow the ridge itself: with S(φ, n)
the release statistics other than n's of g(θ, u₁..uₙ) (u held), a move draws k = round(σ·N(0, 1))
and solves S(φ*, n + k) = S(φ, n) for φ* (chord-Newton from φ), so η(s | S) is unchanged and
only n_dp, the priors and the Jacobians decide. For a given k the map (φ, n) ↦ (φ*, n + k) is
inverted by the same map with −k, so with the volume factor |det ∂S/∂φ(φ, n)| / |det ∂S/∂φ(φ*, n*)|
it is an exact Metropolis–Hastings move (a deterministic involution on (φ, n, k); Green 1995). The
move is refused where the reverse solve does not come back to φ (the involution check of
constrained HMC; Zappa et al. 2018) or the solve does not converge. It needs dim S = dim φ;
σ adapts in the warmup towards an acceptance of 0.44. A move costs dim φ + 2 passes over the
capacity plus one per chord iteration.

A model whose records are affine in their noise, x = A(θ) z with z = (1, u), has release statistics
that are (before any clamping) polynomials in θ whose coefficients are sums of products of the noise:
a :class:`RidgeSurrogate` says so, and the ridge moves then solve S̃(φ*, n*) = S̃(φ, n) for the
surrogate S̃ in O(dim) per step, from prefix sums of the slots' noise features taken once per
iteration, by Newton's method (the Jacobian is cheap now), and pay one pass over the capacity per
move (the exact target at the proposal); a surrogate that can also say which θ gives a statistic
(``solve``, e.g. the §6.1 regression's by two Cholesky factors) replaces Newton's while loop by that
closed form. Any deterministic S̃ keeps the moves exact — the map is still an involution with its
volume factor, and the acceptance uses the model's exact target; the nearer S̃ is to S (few clamped
records), the more moves are accepted.

With ``surrogate_steps`` = m each ridge move becomes a surrogate transition (Liu 2001, §9.4.3): m
random-walk steps of (φ, n), then k = ``surrogate_ridge_steps`` times one ridge step and m random-walk
steps, each Metropolis on π̃, the target with S̃ for the release statistics (O(dim) per step: no pass
over the capacity), then one accept/reject of the end point y from the start x with
[π(y) π̃(x)] / [π(x) π̃(y)]. The sequence is a palindrome of π̃-reversible steps, hence π̃-reversible
itself, which is all the method asks: the move is exact for π whatever π̃, and costs one pass, so
several ridge steps can share it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import random

from .mh import RWState, accept, adapt, gain, init_rw
from .noncentred import noise_of, unconstrain, unconstrained_target
from .record_step import where_records

__all__ = ["JointState", "RidgeSurrogate", "init_joint_state", "joint_size_moves"]

#: the optimal acceptance rate of random-walk Metropolis in several dimensions (Roberts et al. 1997)
TARGET_ACCEPT = 0.234
#: one-dimensional random walk's (the ridge moves')
RIDGE_ACCEPT = 0.44
#: the most chord-Newton iterations of a ridge move's solve (a move whose solve has not converged
#: by then is refused)
MAX_ITERATIONS = 30


class RidgeSurrogate(NamedTuple):
    """The release statistics S of the first n records as a cheap function of θ, for the ridge moves
    (module docstring; :class:`~dpjax.infer.ReversibleJumpKernel`'s ``ridge_surrogate``).

    - **features(noise) -> (capacity, F)** – θ-free features of each slot's record noise u (``noise``:
      the latent record sites' noise, keyed by site, every slot), e.g. the products z zᵀ of
      z = (1, u) for records affine in u;
    - **statistic(theta, totals) -> S̃** – the release statistics other than n's, flattened in the
      order of the model's privatized sites, of records g(θ, u) over slots whose features sum to
      ``totals`` (F,); smooth in θ, e.g. the statistics without their clamping.

    - **solve(value, totals) -> θ** (optional) – the θ at which ``statistic(θ, totals)`` equals
      ``value``, in closed form (NaN where there is none): the moves then take it instead of
      Newton's method, whose while loop dominates a move's cost.

    S̃ only steers the moves: a rough one lowers their acceptance, never their exactness.
    :func:`dpjax.models.unknown_n_regression_ridge_surrogate` is the §6.1 regression's.
    """

    features: Callable
    statistic: Callable
    solve: Callable | None = None


class JointState(NamedTuple):
    """Adaptation state of the joint (θ, n) moves (frozen after warmup): the random walk's on
    (unconstrained θ, n), and the ridge moves' σ with their last acceptance rate."""

    rw: RWState
    log_ridge: jax.Array  # log σ: the sd of a ridge move's step in n
    ridge_rate: jax.Array  # the last iteration's mean acceptance probability of its ridge moves
    surrogate_rate: jax.Array  # …of its surrogate transitions against the exact target (0: none)

    @property
    def log_step(self):
        """The random walk's log step (as on an :class:`~dpjax.infer.mh.RWState`)."""
        return self.rw.log_step


def init_joint_state(theta, supports) -> JointState:
    flat, _ = unconstrain(theta, supports)
    dim = flat.shape[0] + 1
    rw = init_rw(dim, flat.dtype, jnp.array(2.38 / jnp.sqrt(dim), flat.dtype))
    zero = jnp.zeros((), flat.dtype)
    return JointState(rw, jnp.log(jnp.array(10.0, flat.dtype)), zero, zero)


def _cholesky(state: RWState):
    """Regularised covariance (shrunk towards 10⁻³·I early on, as Stan and NumPyro do; n's own
    variance at least 1) and its Cholesky factor; the identity before 10 draws (not
    :func:`~dpjax.infer.mh.proposal_cholesky`'s shrunk one: n moves by whole records, so a step far
    below one record would never move it)."""
    dim = state.mean.shape[0]
    eye = jnp.eye(dim, dtype=state.m2.dtype)
    w = state.count / (state.count + 5.0)
    cov = w * state.m2 / jnp.maximum(state.count - 1, 1) + 1e-3 * (1 - w) * eye
    cov = cov.at[-1, -1].max(1.0)
    return jnp.where(state.count > 10, jnp.linalg.cholesky(cov), eye)


def joint_size_moves(
    rng_key,
    state: JointState,
    theta: dict,
    n,
    records: dict,
    fresh: dict,
    log_eta,
    *,
    model,
    supports: dict,
    size_site: str,
    capacity: int,
    support,
    log_prior_n,
    num_moves: int,
    enabled,
    adapting,
    model_args,
    model_kwargs,
    ridge_moves: int = 0,
    ridge_statistic=None,
    ridge_surrogate: RidgeSurrogate | None = None,
    surrogate_steps: int = 0,
    surrogate_ridge_steps: int = 1,
    release_log_eta=None,
):
    """``num_moves`` random-walk Metropolis moves of (θ, n) with the record noise held fixed, then
    ``ridge_moves`` moves along the ridge S(φ, n) = const (module docstring).

    :param records: the records buffer (its first n slots are the database).
    :param fresh: records drawn from f(·|θ) for every slot, independently of the chain's state, whose
      noise fills the slots ≥ n.
    :param log_eta: log η(s | T) of the current database (the record sweep's), added to the start's
      release-free log target: one O(capacity) pass fewer.
    :param capacity: the records buffer's slots; a proposal n* outside the prior's ``support`` (a
      constraint) or above the capacity is refused, and counted as blocked when it would have been
      accepted at the capacity with n*'s prior (``log_prior_n``: log p(n) at the current θ).
    :param enabled: a boolean scalar; when false nothing moves (n is held) and nothing adapts.
    :param adapting: a boolean scalar; whether the proposal's covariance and step adapt (warmup).
    :param ridge_statistic: ``(records, n) -> S``: the release statistics that the ridge moves keep
      (all but n's), summed over the first n records, a vector of dim φ; needed when ``ridge_moves`` > 0.
    :param ridge_surrogate: a :class:`RidgeSurrogate` that the ridge moves solve with instead of
      ``ridge_statistic`` (O(dim) per solve step instead of a pass over the capacity).
    :param surrogate_steps: with a ``ridge_surrogate``, each ridge move becomes a surrogate
      transition with this many random-walk steps on either side of its ridge step, on the target
      with the surrogate statistic and log η ``release_log_eta(S̃, n)`` (module docstring); 0: none.
    :param surrogate_ridge_steps: ridge steps per surrogate transition, each followed by
      ``surrogate_steps`` random-walk steps (default 1).
    :returns: ``(theta, n, records, state, accept_rate, blocked)``; records are g(θ, u) in every
      slot, ``blocked`` counts proposals refused for passing the capacity.
    """
    key_u, key_moves = random.split(rng_key)
    active = jnp.arange(capacity) < n
    buffer = {k: where_records(active, v, fresh[k]) for k, v in records.items()}
    noise = noise_of(key_u, model, {**theta, size_site: n}, buffer, model_args, model_kwargs)
    dtypes = {k: v.dtype for k, v in records.items()}
    phi, target = unconstrained_target(model, noise, dtypes, supports, theta, model_args, model_kwargs)

    def log_density(phi, n, releases=True):
        log_p, theta, recs = target(phi, {size_site: n}, releases)
        return jnp.where(support(n) & (n <= capacity), log_p, -jnp.inf), theta, recs

    chol = jnp.exp(state.rw.log_step) * _cholesky(state.rw)
    log_prior_at_capacity = log_prior_n(jnp.asarray(capacity, jnp.asarray(n).dtype))

    def move(carry, key):
        phi, n, lp, theta, recs, blocked = carry
        k1, k2 = random.split(key)
        d = chol @ random.normal(k1, (phi.shape[0] + 1,), phi.dtype)
        phi_star, n_star = phi + d[:-1], n + jnp.round(d[-1]).astype(n.dtype)
        beyond = n_star > capacity
        lp_star, theta_star, recs_star = log_density(phi_star, jnp.minimum(n_star, capacity))
        # a proposal beyond the capacity counts as blocked only if it would pass at the capacity with
        # n*'s prior: one that n's prior alone would refuse is no sign of a truncated posterior
        log_capped = lp_star - lp + log_prior_n(n_star) - log_prior_at_capacity
        allowed = enabled & jnp.isfinite(lp)
        log_alpha = jnp.where(beyond, -jnp.inf, lp_star - lp)
        proposal = (phi_star, n_star, lp_star, theta_star, recs_star)
        new, info = accept(k2, log_alpha, proposal, carry[:5], allowed)
        # the same uniform: would the proposal have passed at the capacity?
        _, capped = accept(k2, log_capped, (), (), allowed & beyond & support(n_star))
        blocked = blocked + capped.accepted.astype(blocked.dtype)
        return (*new, blocked), info.accept_prob

    lp0 = log_density(phi, n, releases=False)[0] + log_eta
    init = (phi, jnp.asarray(n), lp0, theta, buffer, jnp.zeros((), jnp.int32))
    if ridge_moves:  # (only then: without them the joint moves' draws stay as they were)
        key_moves, key_ridge = random.split(key_moves)
    carry, probs = jax.lax.scan(move, init, random.split(key_moves, num_moves))
    rate = jnp.mean(probs)
    learn = enabled & adapting
    log_ridge, ridge_rate, surrogate_rate = state.log_ridge, state.ridge_rate, state.surrogate_rate
    if ridge_moves:
        if ridge_surrogate is None:
            statistic = lambda phi, n: ridge_statistic(target(phi, {size_site: n}, releases=False)[2], n)
            solver = "chord"
        else:
            want = jax.eval_shape(ridge_statistic, buffer, n).shape
            statistic, solver = _surrogate(ridge_surrogate, noise, theta, supports, capacity, want)
        log_surrogate = None
        if surrogate_steps:

            def log_surrogate(phi, n):  # log π̃: the target with S̃ for the release statistics
                m = jnp.clip(n, 0, capacity)
                lp = log_density(phi, m, releases=False)[0] + release_log_eta(statistic(phi, m), m)
                return jnp.where(support(n) & (n <= capacity), lp, -jnp.inf)

        args = (ridge_moves, log_ridge, statistic, solver, log_density, capacity, support, enabled)
        surrogate_args = (log_surrogate, surrogate_steps, chol, surrogate_ridge_steps)
        carry, ridge_rate, exact_rate = _ridge_moves(key_ridge, carry, *args, *surrogate_args)
        if surrogate_steps:
            surrogate_rate = jnp.where(enabled, exact_rate, jnp.nan)
        step = gain(state.rw) * (ridge_rate - RIDGE_ACCEPT)
        log_ridge = jnp.where(learn, log_ridge + step, log_ridge)
    phi, n, _, theta, records, blocked = carry
    # adapt the step (Robbins–Monro on the acceptance rate) and the covariance of (φ, n), warmup only
    state = JointState(
        adapt(state.rw, jnp.append(phi, n.astype(phi.dtype)), rate, TARGET_ACCEPT, learn),
        log_ridge,
        jnp.where(enabled, ridge_rate, jnp.nan) if ridge_moves else ridge_rate,
        surrogate_rate,
    )
    return theta, n, records, state, jnp.where(enabled, rate, jnp.nan), blocked


def _surrogate(surrogate: RidgeSurrogate, noise, theta, supports, capacity, shape):
    """``(φ, n) -> S̃``, the surrogate's statistic at θ(φ) of the first n slots from prefix sums of
    the slots' noise features (one O(capacity) pass here, O(dim) per call), and the ridge moves'
    solver: ``"newton"``, or ``(φ, n, goal) -> (root, ok)`` from the surrogate's closed form.
    ``shape``: that of the release statistics S̃ stands for; the surrogate's shapes are checked at
    tracing, before any draws."""
    features = surrogate.features(noise)
    if features.ndim != 2 or features.shape[0] != capacity:
        raise ValueError(
            f"`ridge_surrogate.features` must return one row of features per slot, shape ({capacity}, F); "
            f"got {features.shape}."
        )
    totals = jnp.concatenate([jnp.zeros_like(features[:1]), jnp.cumsum(features, 0)])
    flat, constrain = unconstrain(theta, supports)
    statistic = lambda phi, n: surrogate.statistic(constrain(phi)[0], totals[n])
    value = jax.eval_shape(statistic, flat, 0)
    if value.shape != shape:
        raise ValueError(
            f"`ridge_surrogate.statistic` returned shape {value.shape}; the release statistics it stands "
            f"for (all but n's, flattened) have shape {shape}."
        )
    if surrogate.solve is None:
        return statistic, "newton"
    got = jax.tree.map(jnp.shape, jax.eval_shape(surrogate.solve, value, totals[0]))
    want = jax.tree.map(jnp.shape, theta)
    if got != want:  # (at tracing: before any draws)
        raise ValueError(f"`ridge_surrogate.solve` must return θ with the shapes {want}; got {got}.")

    def closed_form(phi, n, goal):
        root = unconstrain(surrogate.solve(goal, totals[n]), supports)[0]
        return root, jnp.all(jnp.isfinite(root))

    return statistic, closed_form


def _ridge_moves(
    rng_key, carry, num_moves, log_sigma, statistic, solver, log_density, capacity, support, enabled,
    log_surrogate=None, steps=0, chol=None, ridge_steps=1,
):  # fmt: skip
    """``num_moves`` moves along S(φ, n) = const from ``carry`` = (φ, n, log target, θ, records,
    blocked) (module docstring); returns the new carry, the mean acceptance probability of the ridge
    steps, and that of the accept/reject against the exact target (the same without a surrogate
    target). The solves are ``solver``'s: ``"chord"`` (chord-Newton, for the exact statistics),
    ``"newton"`` (where the Jacobian is cheap: a surrogate's) or ``(φ, n, goal) -> (root, ok)`` (a
    closed form). With ``log_surrogate`` (φ, n) -> log π̃, each move is a surrogate transition with
    ``steps`` random-walk steps of Cholesky factor ``chol`` before its first ridge step and after each
    of its ``ridge_steps``."""
    phi0 = carry[0]
    tol = jnp.sqrt(jnp.finfo(phi0.dtype).eps)

    def value_and_jacobian(phi, n):  # S and ∂S/∂φ in one forward pass
        jac, value = jax.jacfwd(lambda p: (statistic(p, n),) * 2, has_aux=True)(phi)
        return value, jac

    def solve(phi, n, goal, jac):
        """Chord-Newton for S(·, n) = goal from φ, to a step below tol/100; ``(root, converged)``."""
        lu = jax.scipy.linalg.lu_factor(jac)
        small = tol * 1e-2 * (1.0 + jnp.max(jnp.abs(phi)))

        def step(carry):
            p, _, i = carry
            delta = jax.scipy.linalg.lu_solve(lu, statistic(p, n) - goal)
            return p - delta, jnp.max(jnp.abs(delta)), i + 1

        far = lambda carry: (carry[1] > small) & (carry[2] < MAX_ITERATIONS)
        root, last, _ = jax.lax.while_loop(far, step, (phi, jnp.array(jnp.inf, phi.dtype), 0))
        return root, last <= small

    def newton(phi, n, goal, jac):
        """Newton for S(·, n) = goal from φ, where the Jacobian is cheap (a surrogate's): a few steps
        where chord-Newton takes dozens or diverges on long moves. Done at a step below tol/100, or
        below tol once the steps stop halving (float32 round-off of S); ``(root, converged)``."""
        small, loose = tol * 1e-2 * (1.0 + jnp.max(jnp.abs(phi))), tol * (1.0 + jnp.max(jnp.abs(phi)))

        def step(carry):
            p, last, _, i = carry
            value, jac = value_and_jacobian(p, n)
            delta = jnp.linalg.solve(jac, value - goal)
            return p - delta, jnp.max(jnp.abs(delta)), last, i + 1

        def done(carry):
            _, last, before, i = carry
            return (last <= small) | ((i >= 2) & (last > before / 2) & (last <= loose))

        far = lambda carry: ~done(carry) & ~jnp.isnan(carry[1]) & (carry[3] < MAX_ITERATIONS)
        inf = jnp.array(jnp.inf, phi.dtype)
        out = jax.lax.while_loop(far, step, (phi, inf, inf, 0))
        return out[0], done(out)

    if callable(solver):
        solve = lambda phi, n, goal, jac: solver(phi, n, goal)
    else:
        solve = newton if solver == "newton" else solve

    def propose(key, phi, n, goal, jac):
        """A ridge proposal (φ*, n*) with its S and ∂S/∂φ there, whether it is an involution's image
        (both solves converge and the reverse one comes back; from (φ*, n*) the same solves run the
        other way round, so the condition holds at both ends), the log volume factor, and how many
        proposals passed the capacity (0 or 1)."""
        k = jnp.round(jnp.exp(log_sigma) * random.normal(key, (), phi.dtype)).astype(n.dtype)
        n_star = n + k
        inside = support(n_star) & (n_star <= capacity) & (k != 0)
        n_star = jnp.where(inside, n_star, n)
        phi_star, forward = solve(phi, n_star, goal, jac)
        goal_star, jac_star = value_and_jacobian(phi_star, n_star)
        phi_back, backward = solve(phi_star, n, goal_star, jac_star)
        back = jnp.max(jnp.abs(phi_back - phi)) <= tol * (1.0 + jnp.max(jnp.abs(phi)))
        returns = forward & backward & back
        volume = jnp.linalg.slogdet(jac)[1] - jnp.linalg.slogdet(jac_star)[1]
        beyond = enabled & (n + k > capacity) & support(n + k)
        return (phi_star, n_star, goal_star, jac_star), inside & returns, volume, beyond

    def move(carry, key):
        (phi, n, lp, theta, recs, blocked), (goal, jac) = carry
        k1, k2 = random.split(key)
        (phi_star, n_star, goal_star, jac_star), ok, volume, beyond = propose(k1, phi, n, goal, jac)
        lp_star, theta_star, recs_star = log_density(phi_star, n_star)
        log_alpha = jnp.where(ok, jnp.nan_to_num(lp_star - lp + volume, nan=-jnp.inf), -jnp.inf)
        (new, solved), info = accept(
            k2,
            log_alpha,
            ((phi_star, n_star, lp_star, theta_star, recs_star), (goal_star, jac_star)),
            ((phi, n, lp, theta, recs), (goal, jac)),
            enabled & jnp.isfinite(lp),
        )
        return ((*new, blocked + beyond.astype(blocked.dtype)), solved), (info.accept_prob, info.accept_prob)

    def surrogate_move(carry, key):
        """A surrogate transition (Liu 2001, §9.4.3): ``steps`` random-walk steps of (φ, n), then
        ``ridge_steps`` times one ridge step and ``steps`` random-walk steps, all Metropolis on the
        surrogate target π̃ (a palindrome of π̃-reversible steps, so reversible with respect to π̃),
        then one accept/reject of the end point with [π(y) π̃(x)] / [π(x) π̃(y)]: exact for π, one
        pass over the capacity."""
        (phi, n, lp, theta, recs, blocked), _ = carry
        lt = log_surrogate(phi, n)

        def walk(state, key):
            phi, n, lt, beyond = state
            k1, k2 = random.split(key)
            d = chol @ random.normal(k1, (phi.shape[0] + 1,), phi.dtype)
            phi_star, n_star = phi + d[:-1], n + jnp.round(d[-1]).astype(n.dtype)
            lt_star = log_surrogate(phi_star, n_star)  # -inf beyond the capacity or n's support
            beyond = beyond + (enabled & (n_star > capacity) & support(n_star)).astype(beyond.dtype)
            new, info = accept(k2, lt_star - lt, (phi_star, n_star, lt_star), (phi, n, lt), enabled)
            return (*new, beyond), None

        # walk, then per ridge step: its proposal, its accept and a walk; the correction last
        keys = random.split(key, steps + ridge_steps * (steps + 2) + 1)
        (phi1, n1, lt1, beyond), _ = jax.lax.scan(walk, (phi, n, lt, jnp.zeros_like(blocked)), keys[:steps])

        def ridge_then_walk(state, keys):
            phi1, n1, lt1, beyond = state
            goal, jac = value_and_jacobian(phi1, n1)
            (phi2, n2, _, _), ok, volume, over = propose(keys[0], phi1, n1, goal, jac)
            lt2 = log_surrogate(phi2, n2)
            log_alpha = jnp.where(ok, jnp.nan_to_num(lt2 - lt1 + volume, nan=-jnp.inf), -jnp.inf)
            (phi2, n2, lt2), ridge = accept(keys[1], log_alpha, (phi2, n2, lt2), (phi1, n1, lt1), enabled)
            state, _ = jax.lax.scan(walk, (phi2, n2, lt2, beyond + over.astype(beyond.dtype)), keys[2:])
            return state, ridge.accept_prob

        (phi3, n3, lt3, beyond), ridge_probs = jax.lax.scan(
            ridge_then_walk, (phi1, n1, lt1, beyond), keys[steps:-1].reshape(ridge_steps, steps + 2)
        )
        lp_star, theta_star, recs_star = log_density(phi3, n3)
        log_alpha = jnp.nan_to_num(lp_star - lp - (lt3 - lt), nan=-jnp.inf)
        new, info = accept(
            keys[-1], log_alpha, (phi3, n3, lp_star, theta_star, recs_star), (phi, n, lp, theta, recs),
            enabled & jnp.isfinite(lp) & jnp.isfinite(lt),
        )  # fmt: skip
        return ((*new, blocked + beyond), carry[1]), (jnp.mean(ridge_probs), info.accept_prob)

    start = value_and_jacobian(phi0, carry[1])  # (ReversibleJumpKernel checks dim S = dim φ)
    step = move if log_surrogate is None else surrogate_move
    (carry, _), (ridge, exact) = jax.lax.scan(step, (carry, start), random.split(rng_key, num_moves))
    return carry, jnp.mean(ridge), jnp.mean(exact)
