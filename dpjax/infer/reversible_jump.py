"""``ReversibleJumpKernel``: exact MCMC for p(θ, n, x | s_dp, n_dp) when the sample size n is
itself private (Awan, Barrientos & Ju, Algorithm 1): a preset of :class:`DataAugmentationKernel`
with the size step (:mod:`dpjax.infer.size_step`) after each iteration over the active records.
"""

from __future__ import annotations

from collections.abc import Callable

from numpyro.infer.hmc import HMC

from . import size_step
from .data_augmentation import DataAugmentationKernel
from .joint_size_moves import RidgeSurrogate
from .size_step import CapacityWarning

__all__ = ["CapacityWarning", "ReversibleJumpKernel", "RidgeSurrogate"]


class ReversibleJumpKernel(DataAugmentationKernel):
    """Exact MCMC for p(θ, n, x | s_dp, n_dp) when the sample size n is itself private
    (unbounded DP; Awan, Barrientos & Ju, Algorithm 1).

    The model sizes its records with :func:`dpjax.records_plate` ``(name, n, capacity)``, n a latent
    site with a prior; a noisy n is one more :func:`dpjax.privatized` site whose per-record statistic
    is 1 (or is absent: then only s informs n). Each iteration is one :class:`DataAugmentationKernel`
    iteration over the n active records, then the size step: size jumps, joint (θ, n) moves, ridge
    moves and birth/death moves, each O(dim T) after one O(capacity) pass. n is in the draws (and in
    ArviZ). When to change which setting, with measured ESS: the cookbook's *An unknown n*.

    With one n per unit (n of shape (G,) in a plate of units sizing the records plate, every release per
    unit) each unit's n moves by its own size jumps and births/deaths, all units at once; the joint
    (θ, n) moves, ridge moves and SOMA are not built for it yet (refused). See the cookbook's *A release
    per unit*.

    :param size_moves: birth/death moves (n ± 1) per iteration, their fresh records from one model
        call whose records plate holds ``size_moves`` slots (build the records from the plate alone).
        Default 100. With one n per unit: per unit (and ``size_jumps`` too).
    :param size_jumps: moves of n by ±max(1, round(σ|z|)) records per iteration, σ adapted in warmup
        (towards acceptance 0.44; extra fields ``jump_accept_rate``, ``jump_scale``). Default 10; 0: none.
    :param noncentred_moves: random-walk moves of θ and n together with the records held as noise
        u, x = g(θ, u) (:mod:`dpjax.infer.joint_size_moves`), which follow the ridge n·E_θ[t] ≈ s of a
        noisy n_dp; each costs O(capacity). ``"auto"`` (default): 5 where every latent record site has
        a noise representation and θ is continuous, else 0; an int forces that many.
    :param ridge_moves: moves along the ridge itself, solving for the θ at which the records keep
        their release statistics (exact: an involution with its volume factor), for long or sharp
        curved ridges; needs continuous records, as many release statistics (besides n's) as
        unconstrained θ entries, and ``noncentred_moves`` > 0. Default 0; rate in ``"nc.ridge_rate"``.
        Each move makes dim θ + 2 passes over the capacity plus one per solver step, unless:
    :param ridge_surrogate: a :class:`~dpjax.infer.RidgeSurrogate`, the release statistics as a cheap
        function of θ and sums of the record noise (e.g. the statistics without their clamping), which
        the ridge moves solve with: one pass over the capacity per move instead of dozens, with the
        same exactness (the acceptance uses the model's exact target). The §6.1 regression's is
        :func:`dpjax.models.unknown_n_regression_ridge_surrogate`. Default None.
    :param surrogate_steps: with a ``ridge_surrogate``, each ridge move becomes a surrogate
        transition: this many random-walk steps of (θ, n) on either side of its ridge step, all on the
        target whose release statistics are the surrogate's (O(dim) each), then one accept/reject
        against the exact target (one pass over the capacity; exact whatever the surrogate, Liu 2001
        §9.4.3; rate in ``"nc.surrogate_rate"``). Where n_dp is very noisy a pass then buys many steps
        across the ridges as well as along them (``benchmarks/table1_ridge.py``). Default 0: none.
    :param surrogate_ridge_steps: ridge steps per surrogate transition, each followed by
        ``surrogate_steps`` random-walk steps: several share the transition's one pass over the
        capacity (3 is best on Table 1's regression at ε_n = 0.001). Default 1.
    :param hold_size: warmup iterations that keep n at its start while the sweep and θ fit the records
        to the release (default: half of ``num_warmup`` where n_dp pins n, none where its noise sd is
        over half the start, e.g. a negative n_dp started at n = 1; at most ``num_warmup``).
    :param theta_update: as for :class:`DataAugmentationKernel`; its ``params`` also hold the current
        n (it returns θ only), and ``records`` the whole buffer, of which the first n slots are the data.
    :param record_update: as for :class:`DataAugmentationKernel`; with ``"soma"`` the first n proposals
        are offered to the n active records.
    :param record_sweeps: as for :class:`DataAugmentationKernel` (record steps per iteration).

    The chain starts at the noisy n (rounded into n's support) unless ``init_params`` gives n. Births
    beyond the capacity are refused; where n's prior allows more, a :class:`CapacityWarning` says so
    and ``capacity_blocked`` counts them; ``near_capacity`` (n within 1 % of it) averages to the
    posterior mass there. Extra fields besides :class:`DataAugmentationKernel`'s:
    ``birth_accept_rate``, ``death_accept_rate``, ``capacity_blocked``, ``near_capacity``. It can be a
    block of ``numpyro.infer.Gibbs`` owning θ, n and the records (``Gibbs([(rj, ["p", "n", "x"]),
    (NUTS(model), ["q"])])``).

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> from numpyro.infer import MCMC
    >>> def model(capacity, s_dp=None, n_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    ...     people = dpjax.records_plate("people", n, capacity)
    ...     with people:
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     laplace = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    ...     dpjax.privatized("count", laplace, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    ...     dpjax.privatized("n_dp", laplace, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)
    >>> mcmc = MCMC(dpjax.infer.ReversibleJumpKernel(model), num_warmup=200, num_samples=200,
    ...             progress_bar=False)
    >>> mcmc.run(jax.random.key(0), 80, jnp.array(20.3), jnp.array(41.2))
    >>> mcmc.get_samples()["n"].shape
    (200,)
    """

    def __init__(
        self,
        model: Callable | None = None,
        *,
        inner_kernel: HMC | None = None,
        theta_update: Callable | None = None,
        size_moves: int = 100,
        size_jumps: int = size_step.SIZE_JUMPS,
        noncentred_moves: int | str = "auto",
        hold_size: int | None = None,
        ridge_moves: int = 0,
        ridge_surrogate: RidgeSurrogate | None = None,
        surrogate_steps: int = 0,
        surrogate_ridge_steps: int = 1,
        store_records: bool = False,
        record_update: str = "sweep",
        record_sweeps: int = 1,
    ):
        size = size_step.size_settings(
            size_moves, size_jumps, hold_size, ridge_moves, ridge_surrogate, surrogate_steps,
            surrogate_ridge_steps,
        )  # fmt: skip
        super().__init__(
            model,
            inner_kernel=inner_kernel,
            theta_update=theta_update,
            noncentred_moves=noncentred_moves,
            store_records=store_records,
            record_update=record_update,
            record_sweeps=record_sweeps,
        )
        self._size = size
