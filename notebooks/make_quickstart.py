import nbformat as nbf

cells = []
md = lambda s: cells.append(nbf.v4.new_markdown_cell(s))
code = lambda s: cells.append(nbf.v4.new_code_cell(s))

md("""# dpjax quickstart: a noisy count

A curator knows which of `n = 60` survey respondents answered *yes* and publishes the count with
Laplace noise (ε = 0.5, sensitivity 1). We want the posterior of the *yes* probability `p` that
accounts for the noise exactly, and we want to see how far the naive analysis (treating the
noisy count as exact) is off.""")
code("""import jax, jax.numpy as jnp, numpy as np
import numpyro, numpyro.distributions as dist
from numpyro.infer import MCMC, Predictive
import arviz as az
import matplotlib.pyplot as plt
import dpjax
from dpjax.infer import DataAugmentationKernel""")
md("""## 1. The model of the confidential data, plus one `privatized` site

The records are ordinary NumPyro sample sites inside a plate; `dpjax.privatized` says what was
released: the mechanism, the per-record statistic `t(record)` (here the answer itself, so
`T = Σ xᵢ` is the count) and the plate.""")
code("""mechanism = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
print(mechanism, "| noise scale:", mechanism.scale)

def model(n, release=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("respondents", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    dpjax.privatized("count", mechanism, lambda r: r["yes"], {"yes": yes},
                     plate="respondents", obs=release)""")
md("""## 2. The same model simulates a release

With `obs=None` the privatized site draws a release, so `Predictive` generates synthetic studies.
Here the true `p` is 0.3.""")
code("""n = 60
study = Predictive(model, posterior_samples={"p": jnp.array([0.3])})(jax.random.key(7), n)
true_count, release = int(study["yes"][0].sum()), float(study["count"][0])
print(f"confidential count {true_count}, released {release:.2f}")""")
md("""## 3. Exact posterior with the data-augmentation kernel

`DataAugmentationKernel` is an ordinary `MCMCKernel`: θ is updated by NUTS with the records
conditioned, then the records are swept with proposals from the model and accepted with the
mechanism's density ratio. Only `p` is stored per draw.""")
code("""mcmc = MCMC(DataAugmentationKernel(model), num_warmup=1000, num_samples=3000,
            num_chains=4, chain_method="vectorized", progress_bar=False)
mcmc.run(jax.random.key(0), n, jnp.array(release))
idata = az.from_numpyro(mcmc)
az.summary(idata)""")
md("""The record acceptance rate never falls below e^{-ε} (Proposition 3.1 of Ju et al.):""")
code("""rate = np.asarray(idata.sample_stats["record_accept_rate"])
print(f"mean {rate.mean():.3f}, min {rate.min():.3f}, bound e^-ε = {np.exp(-0.5):.3f}")
assert rate.min() >= np.exp(-0.5) - 1e-6""")
md("""## 4. Check against the exact answer, and against the naive one

For this model the posterior is available by enumerating the count `K`: weights
`BetaBinomial(K; n, 1, 1) · Laplace(release − K)`.""")
code("""from scipy.special import betaln, gammaln
K = np.arange(n + 1)
logw = (gammaln(n + 1) - gammaln(K + 1) - gammaln(n - K + 1) + betaln(1 + K, 1 + n - K)
        + np.asarray(mechanism.log_density(release, K.astype(float))))
w = np.exp(logw - logw.max()); w /= w.sum()
grid = np.linspace(0, 1, 400)
from scipy import stats
exact_pdf = sum(wk * stats.beta(1 + k, 1 + n - k).pdf(grid) for k, wk in zip(K, w))
naive_pdf = stats.beta(1 + release, 1 + n - release).pdf(grid)

from dpjax.diagnostics import mcse_z
z, ess = mcse_z(mcmc.get_samples(group_by_chain=True)["p"], float(w @ ((1 + K) / (n + 2))))
print(f"MCMC mean vs exact posterior mean: z = {z:.2f} (ESS {ess:.0f})")
assert abs(z) < 4

plt.hist(np.asarray(mcmc.get_samples()["p"]), bins=60, density=True, alpha=0.5, label="dpjax (MCMC)")
plt.plot(grid, exact_pdf, "k-", label="exact posterior")
plt.plot(grid, naive_pdf, "C1--", label="naive (noise ignored)")
plt.axvline(0.3, color="gray", ls=":", label="true p")
plt.xlim(0, 0.7); plt.xlabel("p"); plt.legend();""")
md("""The naive posterior is too narrow: it ignores the Laplace noise of scale 2 on the count. dpjax
recovers the exact posterior from the same NumPyro model, with `MCMC`, `Predictive` and ArviZ
unchanged.""")

nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbf.write(nb, "notebooks/quickstart.ipynb")
