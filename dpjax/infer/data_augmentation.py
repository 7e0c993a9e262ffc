"""``DataAugmentationKernel``: exact MCMC for p(θ, x | s_dp) (Ju, Awan, Gong & Rao, Algorithm 1).

One iteration: θ | x (an inner NUTS/HMC on the model with the records conditioned, or a user's
exact conditional draw), then one sweep of independence-Metropolis updates of the latent
records with proposals from the model itself and acceptance ratio η(s|T*) / η(s|T).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc import HMC
from numpyro.util import is_prng_key

from .._validate import positive_int
from ..mechanisms.base import check_key
from ..primitives import allow_overflow
from . import auto_moves, da_core, size_step, theta_block
from .chains import (
    PerChainKernel,
    check_init_params,
    first_key,
    records_hidden,
    report_at_end_of_warmup,
    report_now,
    report_poor_mixing,
    report_slow_mixing,
    traced,
)
from .da_core import DAInfo, DAState
from .joint_size_moves import init_joint_state
from .noncentred import init_nc_state, resolve_moves
from .record_step import StickyRecordsWarning, report_sticky, sticky_rate
from .record_sweep import UNROLL, SlowBackendWarning, warn_slow_backend
from .rules import check_exchangeable, check_records_feed_only_releases, check_release_reads_records
from .spec import ModelSpec, model_spec, prototype
from .theta_block import RoundOffWarning

__all__ = [
    "DAInfo",
    "DAState",
    "DataAugmentationKernel",
    "RoundOffWarning",
    "SlowBackendWarning",
    "StickyRecordsWarning",
]


class DataAugmentationKernel(PerChainKernel):
    """Data-augmentation MCMC for a model with ``dpjax.privatized`` sites.

    Targets p(θ, x | s_dp) exactly; θ draws are collected, the imputed database is not (unless
    ``store_records=True``). Use it like any NumPyro kernel::

        mcmc = MCMC(DataAugmentationKernel(model), num_warmup=500, num_samples=1000)
        mcmc.run(rng_key, *model_args)

    :param model: a NumPyro model with one or more :func:`dpjax.privatized` sites over one
        records plate, or an HMC/NUTS kernel built on it (then used as ``inner_kernel``).
    :param inner_kernel: HMC/NUTS instance used for θ | x (default ``NUTS(model)``); it sees the
        model with the latent records conditioned and the privatized sites masked.
    :param theta_update: exact conditional ``theta_update(rng_key, records, params) -> params``
        (e.g. a conjugate draw) used instead of the inner kernel. ``records`` holds every record
        site (latent and public) with records along axis 0; ``params`` the constrained θ sites.
        ``"held"``: θ stays at its value in ``state.z``, so an iteration is an exact MCMC step for
        p(records | s, θ) (and n with an unknown n): the E-step of ``mcem(e_step="mcmc")``; θ's prior
        is not used (it may be improper) and there are no non-centred moves.
    :param noncentred_moves: random-walk Metropolis moves of θ per iteration with the records held
        fixed as noise variables u, x = g(θ, u) (interweaving; :mod:`dpjax.infer.noncentred` lists the
        record families with such a representation). They keep θ mixing when the release is weak
        compared with the data. ``"auto"`` (default): 5 where every latent record site has one and θ
        is continuous, else 0; with ≥ 200 warmup iterations the end of warmup tries them against none
        (:mod:`dpjax.infer.auto_moves`; ``auto_moves.choice(mcmc.last_state)`` tells the outcome) and
        keeps them only where they raise θ's ESS per draw 3-fold. ``0``: the seed's
        plain Algorithm 1; an int: that many.
    :param store_records: also collect the latent records at every draw (memory O(n) per draw).
    :param record_update: ``"sweep"`` (default): the seed's sweep, proposal i offered to record i,
        O(1) work per update; ``"soma"``: each proposal offered to every record at once
        (:mod:`dpjax.infer.soma`; within its unit for a release per unit), O(n) parallel work per
        update, for weak releases on a GPU. Both are exact for the same target.
    :param record_sweeps: record steps per iteration (default 1, the seed's), each with fresh proposals
        at the iteration's θ. Where one record moves the released statistic by far more than the noise
        (a large ε, few records: summaries of a whole group) a proposal is accepted rarely, and θ | x
        follows records that seldom move; k passes cost k record steps but no more θ-steps, and the
        acceptance rate reported is their mean. Raise it where ``record_accept_rate`` is a few percent.

    It can be a block of ``numpyro.infer.Gibbs`` that owns θ's sites *and* the latent record sites
    (then the records are collected), for parameters it should not update, e.g.
    ``Gibbs([(DataAugmentationKernel(model), ["p", "x"]), (NUTS(model), ["q"])])``. ``init_params``
    may give constrained values of θ and of the latent records (as ``Gibbs`` does).

    Extra fields for ``MCMC.run(..., extra_fields=...)`` and ArviZ: ``record_accept_rate``,
    ``accept_prob``, ``diverging``, ``nc_accept_rate``, ``nc_step_size``, ``valid`` (collected by
    default when they apply) and ``statistics``. Before any draws, ``init`` raises a ``ValueError``
    for an impossible release, an improper prior, a discrete θ without ``theta_update``, or a
    ``theta_update`` that leaves θ's support; under ``jit``/``vmap`` (where values are traced) the
    ``valid`` flag reports those cases instead, and the chain's θ draws are NaN. A chain that leaves the
    support while sampling warns (:class:`~dpjax.infer.InvalidChainWarning`).

    **Example**

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> from numpyro.infer import MCMC
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> mcmc = MCMC(dpjax.infer.DataAugmentationKernel(model), num_warmup=200,
    ...             num_samples=200, progress_bar=False)
    >>> mcmc.run(jax.random.key(0), 50, jnp.array(20.3))
    >>> mcmc.get_samples()["p"].shape
    (200,)
    """

    sample_field = "z"

    def __init__(
        self,
        model: Callable | None = None,
        *,
        inner_kernel: HMC | None = None,
        theta_update: Callable | None = None,
        noncentred_moves: int | str = "auto",
        store_records: bool = False,
        record_update: str = "sweep",
        record_sweeps: int = 1,
    ):
        if record_update not in ("sweep", "soma"):
            raise ValueError(f"`record_update` must be 'sweep' or 'soma', got {record_update!r}.")
        record_sweeps = positive_int(record_sweeps, "record_sweeps")
        if noncentred_moves != "auto" and not (isinstance(noncentred_moves, int) and noncentred_moves >= 0):
            raise ValueError(f"`noncentred_moves` must be 'auto' or an int >= 0, got {noncentred_moves!r}.")
        model, inner_kernel = theta_block.resolve(model, inner_kernel, theta_update)
        self._model = model
        self._theta_update = theta_update
        self._inner_kernel = inner_kernel  # as given, for `wrap_model`
        self._inner = None if inner_kernel is None else theta_block.inner_on_records(inner_kernel)
        self._store_records = bool(store_records)
        self._noncentred = noncentred_moves
        self._record_update = record_update
        self._record_sweeps = record_sweeps
        self._size: size_step.SizeSettings | None = None  # an unknown n's (ReversibleJumpKernel)
        self._num_moves, self._num_warmup = 0, 0  # static, resolved at `init`
        self._spec: ModelSpec | None = None

    @property  # ---------------------------------------------------------------- NumPyro-facing
    def model(self):
        """The model as ArviZ should see it: with the records stored it is the user's model;
        otherwise record sites and privatized sites are hidden, since the posterior holds θ
        only and the marginal likelihood of the release is intractable."""
        if self._store_records or self._spec is None:
            return self._model
        return records_hidden(self._model, self._spec)

    @property
    def default_fields(self):
        fields = ("z", "record_accept_rate", "valid")
        if self._inner is not None:
            fields += ("accept_prob", "diverging")
        fields += ("nc_accept_rate", "nc_step_size") if self._noncentred != 0 else ()
        if self._size:
            fields += size_step.FIELDS + (size_step.JUMP_FIELDS if self._size.size_jumps else ())
        return fields

    def _check_step(self, state, new):
        if self._num_warmup > 0:
            report_at_end_of_warmup(state.iteration, self._num_warmup, sticky_rate(new), report_sticky)
            report_slow_mixing(state.iteration, self._num_warmup, new.warmup_moments, new.z, self._spec.theta)
        report_poor_mixing(new.draw_moments, self._num_warmup, new.z, self._spec.theta)
        if self._size:  # after the vmap over chains, so the host is called only when a birth was refused
            blocked = jnp.sum(new.capacity_blocked - state.capacity_blocked)
            size_step.warn_when_blocked(blocked, self._spec.size_bounds[1])

    def check_end(self, state):
        report_now(sticky_rate(state), report_sticky)
        if self._size:
            warn = partial(size_step.warn_blocked, capacity=self._spec.size_bounds[1])
            jax.debug.callback(warn, state.capacity_blocked)

    def get_diagnostics_str(self, state):
        text = f"rec. acc. {float(state.record_accept_rate):.2f}"
        if self._inner is not None:
            text += f" | θ: {self._inner.get_diagnostics_str(state.theta_state)}"
        if self._spec.size_sites:
            text += (
                f" | n: birth {float(state.birth_accept_rate):.2f},"
                f" death {float(state.death_accept_rate):.2f}"
                + (f", {int(state.capacity_blocked)} blocked" if int(state.capacity_blocked) else "")
            )
        if self._num_moves:
            text += f" | NC: acc. {float(state.nc_accept_rate):.2f}, step {float(state.nc_step_size):.2g}"
        if self._record_sweeps > 1:
            text += f" | {self._record_sweeps} record sweeps"
        backend = jax.default_backend()
        if backend != "cpu":  # the sweep's layout picked for this backend (record_sweep.UNROLL)
            text += f" | {backend}: {self._record_update}, unroll {UNROLL.get(backend, 1)}"
        return text

    # NumPyro 0.22's block protocol (`refresh`, `get_constrain_fn` of PerChainKernel): the kernel
    # can be a block of `numpyro.infer.Gibbs`, which owns θ and the latent records of the block.
    def wrap_model(self, wrapper):
        """A new kernel of the same settings on ``wrapper(model)`` (its inner NUTS/HMC on the
        wrapped model too), as ``numpyro.infer.Gibbs`` makes its blocks. The copy stores the latent
        records in ``z`` (``store_records=True``): in a composite they are sites of this block, and
        the sibling blocks are conditioned on them."""
        common = {**self._settings(), "store_records": True}
        if self._inner_kernel is not None:
            return type(self)(inner_kernel=self._inner_kernel.wrap_model(wrapper), **common)
        return type(self)(wrapper(self._model), **common)

    def _settings(self) -> dict:
        """The constructor's keyword arguments besides the model, inner kernel and store_records."""
        settings = dict(self._size._asdict()) if self._size else {}
        return dict(
            theta_update=self._theta_update,
            noncentred_moves=self._noncentred,
            record_update=self._record_update,
            record_sweeps=self._record_sweeps,
            **settings,
        )

    def _refresh_one(self, state, model_args, model_kwargs):
        return da_core.refresh(self._core(), state, model_args, model_kwargs)

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        check_key(rng_key, batched=True)
        model_kwargs = {} if model_kwargs is None else dict(model_kwargs)
        # static structure and host-side checks, once, outside any vmap over chains
        with allow_overflow():  # n drawn from its prior may exceed the capacity; the chain starts inside
            tr = prototype(self._model, first_key(rng_key), model_args, model_kwargs)
            self._spec = spec = model_spec(tr)
            check_records_feed_only_releases(self._model, tr, spec, model_args, model_kwargs)
            check_release_reads_records(
                self._model, tr, spec, model_args, model_kwargs, engine=type(self).__name__
            )
        self._check_size()
        if self._needs_exchangeable():
            why = "ReversibleJumpKernel (its births)" if spec.size else "record_update='soma'"
            capacity = spec.size_bounds[1] if spec.size_sites else None
            check_exchangeable(self._model, tr, spec, capacity, model_args, model_kwargs, why=why)
        self._check_model(tr)
        held = self._theta_update == "held"  # the moves would move the held θ
        # one n per unit: no joint (θ, n) moves (the size step moves each unit's n alone)
        moves = 0 if spec.size_units else resolve_moves(self._noncentred, tr, spec, held=held, stacklevel=3)
        self._num_moves = moves
        self._num_warmup = num_warmup
        check_init_params(
            init_params, spec.supports, allowed=spec.theta + spec.latent_records + spec.size_sites
        )
        core = self._core()
        if self._record_update == "sweep" and not traced((rng_key, model_args, model_kwargs)):
            chains = 1 if is_prng_key(rng_key) else rng_key.shape[0]  # under a study's vmap: many
            slots = np.shape(tr[spec.latent_records[0]]["value"])[0] if spec.latent_records else 0
            warn_slow_backend(chains, slots, stacklevel=3)

        init_one = partial(da_core.init, core, num_warmup=num_warmup)
        settings = (num_warmup, self._num_moves, self._noncentred)
        state = self._start(rng_key, init_one, init_params, model_args, model_kwargs, settings)
        da_core.check_start(core, state, model_args, model_kwargs)
        return state

    # ---------------------------------------------------------------- internals
    def _needs_exchangeable(self) -> bool:  # records drawn for one slot, used in another: births, SOMA
        return bool(self._spec.size_sites) or self._record_update == "soma"

    def _core(self) -> da_core.Core:
        """The static settings of the composed iteration (:mod:`~dpjax.infer.da_core`)."""
        return da_core.Core(
            model=self._model,
            spec=self._spec,
            inner=self._inner,
            theta_update=self._theta_update,
            record_update=self._record_update,
            record_sweeps=self._record_sweeps,
            store_records=self._store_records,
            num_moves=self._num_moves,
            init_moves=self._init_nc,
            auto_moves=self._tries_moves(),
            size_kernel=self._size_kernel(),
            exchangeable=self._needs_exchangeable(),
        )

    def _size_kernel(self):
        """The size step of an unknown n (:mod:`~dpjax.infer.size_step`), else None."""
        if not self._size:
            return None
        return size_step.build_kernel(
            self._model, self._spec, self._size, num_moves=self._num_moves, num_warmup=self._num_warmup
        )

    def _check_size(self):
        """An unknown n (a latent site sizing the records plate) needs the size step, and vice versa."""
        size = self._spec.size
        if size is not None and not self._size:
            raise ValueError(
                f"The records plate is sized by the latent site {size!r} (an unknown n), which "
                "DataAugmentationKernel does not update: use dpjax.infer.ReversibleJumpKernel, or condition "
                f"{size!r} on a known n."
            )
        if self._size and not self._spec.size_sites:
            raise ValueError(
                "ReversibleJumpKernel needs an unknown n: size the records with dpjax.records_plate(name, n, "
                "capacity) where n is a latent sample site; with a known n use DataAugmentationKernel."
            )

    def _check_model(self, tr):
        """Host-side checks that would otherwise give silently wrong draws."""
        theta_block.check_model(tr, self._spec, inner=self._inner, update=self._theta_update)
        if self._size:
            size_step.check_unit_sizes(self._spec, self._size, self._noncentred, self._record_update)
            size_step.check_ridge(tr, self._spec, self._size.ridge_moves)

    def _init_nc(self, theta):
        return (init_joint_state if self._size else init_nc_state)(theta, self._spec.supports)

    def _tries_moves(self) -> bool:  # "auto" with moves that apply: the warmup decides
        return self._noncentred == "auto" and bool(self._num_moves) and not self._spec.size_sites

    def _shared(self, state):
        """Whether the moves run this iteration: one choice for all chains (:mod:`~.auto_moves`)."""
        if not self._tries_moves():
            return ()
        return (auto_moves.use_moves(state.iteration, state.moves_trial, self._num_warmup),)

    def _sample_one(self, state, model_args, model_kwargs, shared=()):
        """One iteration (:func:`dpjax.infer.da_core.build_kernel`)."""
        step = da_core.build_kernel(self._core())
        use = shared[0] if shared else None  # `_shared`'s choice
        return step(state, model_args, model_kwargs, num_warmup=self._num_warmup, use_moves=use)
