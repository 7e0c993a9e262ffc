"""``ReversibleJumpKernel``: exact MCMC for p(θ, n, x | s_dp, n_dp) when the sample size n is
itself private (Awan, Barrientos & Ju, Algorithm 1): a :class:`DataAugmentationKernel` iteration
over the active records of a :func:`dpjax.records_plate`, then the birth/death moves of
:func:`dpjax.infer.birth_death.birth_death`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
from numpyro.infer.hmc import HMC

from .._validate import positive_int
from . import size_step
from .data_augmentation import DataAugmentationKernel
from .joint_size_moves import init_joint_state
from .size_step import CapacityWarning

__all__ = ["CapacityWarning", "ReversibleJumpKernel"]


class ReversibleJumpKernel(DataAugmentationKernel):
    """Exact MCMC for p(θ, n, x | s_dp, n_dp) when the sample size n is itself private
    (unbounded DP; Awan, Barrientos & Ju, Algorithm 1).

    The model sizes its records with :func:`dpjax.records_plate` ``(name, n, capacity)``, where n
    is a latent site with a prior; a noisy n is one more :func:`dpjax.privatized` site whose
    per-record statistic is 1 (or is absent: then only s informs n). Each iteration is one
    :class:`DataAugmentationKernel` iteration over the n active records (θ | x by an inner NUTS or
    ``theta_update``, the record sweep), then ``size_moves`` birth/death moves of n, each O(dim T)
    (:func:`dpjax.infer.birth_death.birth_death`), then ``noncentred_moves`` joint moves of (θ, n)
    (:mod:`dpjax.infer.joint_size_moves`). n appears in the draws (and in ArviZ).

    :param size_moves: birth/death moves per iteration. n moves by ±1 per accepted move, so it
        needs about (posterior sd of n)² moves to cross its posterior; one move per iteration (the
        seed's code) leaves n nearly stuck when n_dp is noisy, and at fixed θ even 300 do not free it
        (the joint moves below do). The default 100 costs about as much
        as a sweep over a few thousand records. Their fresh records come from one model call whose
        records_plate holds ``size_moves`` slots, so the records must be built from the plate alone
        (no arrays sized by the capacity).
    :param size_jumps: moves of n by many records at once per iteration, before the joint moves
        (:func:`dpjax.infer.birth_death.size_jumps`): n → n + k, k = ±max(1, round(σ|z|)), the slots
        between joining or leaving the database with the record sweep's unused proposals (fresh draws
        at the current θ) as their records; σ starts at the noise sd of a noisy n and adapts in the
        warmup towards an acceptance of 0.44 (extra fields ``jump_accept_rate``, ``jump_scale``).
        After one O(capacity) pass each is O(dim T). At fixed θ the release s limits how far n can
        move (n·E_θ[t] ≈ s), so where s pins n given θ they move n by about that conditional spread;
        the joint moves below follow the ridge. Default 10; 0 turns them off.
    :param noncentred_moves: random-walk Metropolis moves of θ and n together per iteration, the
        records held fixed as noise variables u, x = g(θ, u) (:mod:`dpjax.infer.joint_size_moves`).
        A noisy n_dp leaves (θ, n) on a narrow ridge n·E_θ[t] ≈ s, along which births/deaths at
        fixed θ and θ-steps at fixed records both crawl; these moves follow it, with a proposal
        covariance learnt in warmup. Each costs O(capacity): five make an iteration 1.3–2.3× dearer
        (the Table 1 regression at capacity 3 000). ``"auto"`` (default): 5 when every latent record
        site has a noise representation and θ is continuous, else 0; an int forces that many
        (``ValueError`` where they cannot apply). Where n_dp is precise (noise sd of a few records,
        e.g. ε_n ≥ 0.1 in Table 1, ESS(n) > 400 per 5 000 draws without them) they buy little:
        ``noncentred_moves=0`` saves their cost.
    :param ridge_moves: moves along the ridge itself per iteration, after the joint moves: each
        changes n by k (σ adapted in warmup) and solves for the θ at which the records g(θ, u) keep
        their release statistics, so s no longer holds θ back (:mod:`dpjax.infer.joint_size_moves`;
        exact: an involution with its volume factor). For a long, curved ridge that the joint moves'
        learnt covariance cannot span: Dirichlet compositions at a very noisy n_dp, where α₁ runs
        from 5 to 30 along it. Also where the ridge is short but sharp: on the ATUS compositions at
        ε_s = 10, ε_n = 0.1 the joint moves alone give an ESS of n of 43 per 6 000 draws and too
        narrow a posterior (sd of n 9.3 against 14.0), three ridge moves ESS 1 515 and sd 14.1 at
        1.6× the time (``benchmarks/atus_ridge.py --eps-n 0.1``); check the ESS of n. Each costs
        dim θ + 2 passes over the capacity plus one per chord iteration of its two solves. Needs
        continuous records, as many release statistics (other than n's) as unconstrained θ entries,
        and ``noncentred_moves`` > 0. Default 0 (on Table 1's regression at ε_n = 0.001 they double
        the ESS of n per iteration at 10× the cost: ``benchmarks/table1_ridge.py``). Their
        acceptance rate is the extra field ``"nc.ridge_rate"``.
    :param hold_size: how many of the first warmup iterations keep n at its start (no birth/death
        moves); default: half of ``num_warmup``. Meanwhile the sweep and θ fit the records to the
        release at the noisy n, as with a known n. Moving n from the start lets it run along the ridge
        n·E_θ[t] ≈ s while θ still sits at its random start; a chain there may stay far from the
        posterior for thousands of iterations (seen on the ATUS compositions at ε_s = 10). Must not
        exceed ``num_warmup``: the draws are all taken with n moving.
    :param theta_update: as for :class:`DataAugmentationKernel`; its ``params`` also hold the
        current n (it returns θ only), and ``records`` the whole buffer, of which the first n
        slots are the data.
    :param record_update: as for :class:`DataAugmentationKernel` (``"sweep"`` or ``"soma"``); with
        ``"soma"`` the first n proposals are offered to the n active records.

    The chain starts at the noisy n (rounded into n's support) unless ``init_params`` gives n.
    Births beyond the capacity are refused; if n's prior allows more, a
    :class:`CapacityWarning` is raised and ``capacity_blocked`` counts them, so a truncated
    posterior is never silent. Extra fields: ``birth_accept_rate``, ``death_accept_rate``,
    ``capacity_blocked`` and ``near_capacity`` (n within 1 % of the capacity: its mean over the draws
    is the posterior mass there, which should be small unless n's prior ends at the capacity on
    purpose) besides those of :class:`DataAugmentationKernel`. Like it, the kernel can be
    a block of ``numpyro.infer.Gibbs`` that owns θ, n and the records (``Gibbs([(rj, ["p", "n",
    "x"]), (NUTS(model), ["q"])])``), the other blocks conditioned on them.

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
        store_records: bool = False,
        record_update: str = "sweep",
    ):
        size_moves = positive_int(size_moves, "size_moves")
        size_jumps = positive_int(size_jumps, "size_jumps", minimum=0)
        ridge_moves = positive_int(ridge_moves, "ridge_moves", minimum=0)
        hold_size = None if hold_size is None else positive_int(hold_size, "hold_size", minimum=0)
        super().__init__(
            model,
            inner_kernel=inner_kernel,
            theta_update=theta_update,
            noncentred_moves=noncentred_moves,
            store_records=store_records,
            record_update=record_update,
        )
        self._size_moves = int(size_moves)
        self._size_jumps = int(size_jumps)
        self._hold_size = hold_size
        self._ridge_moves = int(ridge_moves)

    def _settings(self) -> dict:
        return dict(
            theta_update=self._theta_update,
            size_moves=self._size_moves,
            size_jumps=self._size_jumps,
            noncentred_moves=self._noncentred,
            hold_size=self._hold_size,
            ridge_moves=self._ridge_moves,
            record_update=self._record_update,
        )

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        if self._hold_size is not None and self._hold_size > num_warmup:
            raise ValueError(
                f"`hold_size` ({self._hold_size}) exceeds num_warmup ({num_warmup}): draws would be taken "
                "with n held. Lower it or lengthen the warmup."
            )
        self._held_for = num_warmup // 2 if self._hold_size is None else int(self._hold_size)
        state = super().init(rng_key, num_warmup, init_params, model_args, model_kwargs)
        if self._ridge_moves and not self._num_moves:
            raise ValueError(
                "`ridge_moves` run within the joint (θ, n) moves: `noncentred_moves` must be 'auto' or an "
                "int > 0, not 0."
            )
        return state

    def _check_model(self, tr):
        super()._check_model(tr)
        size_step.check_ridge(tr, self._spec, self._ridge_moves)

    def _check_step(self, state, new):
        super()._check_step(state, new)
        # after the vmap over chains, so the host is called only when a birth was refused
        size_step.warn_when_blocked(
            jnp.sum(new.capacity_blocked - state.capacity_blocked), self._spec.size_bounds[1]
        )

    def check_end(self, state):
        super().check_end(state)
        capacity = self._spec.size_bounds[1]
        jax.debug.callback(partial(size_step.warn_blocked, capacity=capacity), state.capacity_blocked)

    def _init_nc(self, theta):
        return init_joint_state(theta, self._spec.supports)

    def _size_kernel(self):
        return size_step.build_kernel(
            self._model, self._spec, size_moves=self._size_moves, num_jumps=self._size_jumps,
            num_moves=self._num_moves, ridge_moves=self._ridge_moves, held_for=self._held_for,
            num_warmup=self._num_warmup,
        )  # fmt: skip

    @property
    def default_fields(self):
        fields = super().default_fields + ("birth_accept_rate", "death_accept_rate", "capacity_blocked")
        return fields + ("near_capacity",) + (("jump_accept_rate", "jump_scale") if self._size_jumps else ())

    def _check_size(self):
        if not self._spec.size_sites:
            raise ValueError(
                "ReversibleJumpKernel needs an unknown n: size the records with dpjax.records_plate(name, n, "
                "capacity) where n is a latent sample site; with a known n use DataAugmentationKernel."
            )
