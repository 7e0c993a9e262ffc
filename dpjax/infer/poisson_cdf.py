"""The Poisson CDF F(k; λ) = Q(k + 1, λ) for the inverse-CDF noise map, fast at large rates.

JAX's ``gammaincc`` sums a series or a continued fraction whose length grows with the shape: 0.9 µs a
value at a rate of 100, 2.4 µs at 10³, 16 µs at 10⁵ and 41 µs at 10⁶ (float64, 2-core CPU, k within
±5 sd; ``benchmarks/results/poisson_cdf.md``), so the non-centred moves of Census-scale counts (block
totals of 10⁶) spent minutes on the map alone. For float64 and shapes a ≥ ``TEMME_MIN_SHAPE`` this
module evaluates Temme's uniform expansion instead (DLMF 8.12.3–4, 8.12.9): 0.1–0.2 µs a value.

    Q(a, x) = ½ erfc(η √(a/2)) + e^(−aη²/2) / √(2πa) · Σ_{k<5} c_k(η) a^(−k),

λ = x/a, ½η² = λ − 1 − ln λ, sign η = sign(λ − 1), with the Taylor coefficients of c_k in η made by
``lab/temme_coefficients.py`` (exact rational arithmetic). For |η| ≤ ``TEMME_MAX_ETA`` (±16 sd at
a = 10³, ±500 at 10⁶) the truncations (c_5 a⁻⁵ < 10⁻¹⁸; (η / 2√π)¹⁹, the series' radius) stay below
float64 round-off; outside that region, in float32, or at smaller shapes, ``gammaincc`` is used, on
dummy arguments elsewhere so that its loop stays short.

Against 400 values computed with mpmath at 40 digits (rates 10² … 10^9.5, k within ±30 sd;
``tests/test_poisson_cdf.py``): the largest error is 1.1e-16 at rates ≥ 10³ (``gammaincc``: 6e-7,
SciPy's ``pdtr``: 2e-6, both in the far tails of large rates), 1e-13 below (``gammaincc``).
"""

import jax.numpy as jnp
from jax.scipy.special import erfc, gammaincc

__all__ = ["poisson_cdf", "TEMME_MIN_SHAPE", "TEMME_MAX_ETA"]

TEMME_MIN_SHAPE = 1000.0
TEMME_MAX_ETA = 0.5
#: Taylor coefficients in η of c_0 … c_4, degree 0 … 18 (``python lab/temme_coefficients.py``)
TEMME_COEFFICIENTS = (
    (
        -0.3333333333333333,
        0.08333333333333333,
        -0.014814814814814815,
        0.0011574074074074073,
        0.0003527336860670194,
        -0.0001787551440329218,
        3.919263178522438e-05,
        -2.185448510679992e-06,
        -1.85406221071516e-06,
        8.296711340953087e-07,
        -1.7665952736826078e-07,
        6.707853543401498e-09,
        1.0261809784240309e-08,
        -4.382036018453353e-09,
        9.14769958223679e-10,
        -2.5514193994946248e-11,
        -5.830772132550426e-11,
        2.4361948020667415e-11,
        -5.0276692801141755e-12,
    ),
    (
        -0.001851851851851852,
        -0.003472222222222222,
        0.0026455026455026454,
        -0.0009902263374485596,
        0.00020576131687242798,
        -4.018775720164609e-07,
        -1.8098550334489977e-05,
        7.64916091608111e-06,
        -1.6120900894563446e-06,
        4.647127802807434e-09,
        1.378633446915721e-07,
        -5.752545603517705e-08,
        1.1951628599778148e-08,
        -1.7543241719747647e-11,
        -1.0091543710600413e-09,
        4.162792991842583e-10,
        -8.56390702649298e-11,
        6.067215101604758e-14,
        7.1624989648114856e-12,
    ),
    (
        0.004133597883597883,
        -0.0026813271604938273,
        0.0007716049382716049,
        2.0093878600823047e-06,
        -0.0001073665322636516,
        5.2923448829120125e-05,
        -1.2760635188618728e-05,
        3.423578734096138e-08,
        1.3721957309062934e-06,
        -6.298992138380055e-07,
        1.4280614206064242e-07,
        -2.0477098421990866e-10,
        -1.409252991086752e-08,
        6.228974084922022e-09,
        -1.3670488396617114e-09,
        9.428356159014678e-13,
        1.2872252400089318e-10,
        -5.5645956134363323e-11,
        1.197593554636698e-11,
    ),
    (
        0.0006494341563786008,
        0.00022947209362139917,
        -0.0004691894943952557,
        0.00026772063206283885,
        -7.561801671883977e-05,
        -2.396505113867297e-07,
        1.1082654115347302e-05,
        -5.6749528269915965e-06,
        1.4230900732435883e-06,
        -2.7861080291528143e-11,
        -1.6958404091930278e-07,
        8.099464905388083e-08,
        -1.9111168485973655e-08,
        2.3928620439808118e-12,
        2.0620131815488797e-09,
        -9.460496661855133e-10,
        2.1541049775774907e-10,
        -1.388823336813903e-14,
        -2.1894761681963938e-11,
    ),
    (
        -0.0008618882909167117,
        0.0007840392217200666,
        -0.0002990724803031902,
        -1.4638452578843418e-06,
        6.641498215465122e-05,
        -3.968365047179435e-05,
        1.1375726970678419e-05,
        2.507497226237533e-10,
        -1.6954149536558305e-06,
        8.907507532205309e-07,
        -2.292934834000805e-07,
        2.956794137544049e-11,
        2.8865829742708783e-08,
        -1.4189739437803219e-08,
        3.4463580499464896e-09,
        -2.3024517174528067e-13,
        -3.9409233028046403e-10,
        1.86023389685045e-10,
        -4.356323005056618e-11,
    ),
)


def _half_eta_squared(mu):
    """λ − 1 − ln λ at λ = 1 + μ without the cancellation near μ = 0: with t = μ/(2 + μ),
    ln(1 + μ) = 2 atanh t, so the difference is 2t²/(1 − t) − 2 Σ_{j≥1} t^(2j+1)/(2j + 1)
    (|t| ≤ 0.25 where it is used: 14 terms reach 10⁻¹⁷)."""
    t = mu / (2.0 + mu)
    t2 = t * t
    tail = jnp.zeros_like(t)
    for j in range(14, 0, -1):
        tail = tail * t2 + 1.0 / (2 * j + 1)
    return 2.0 * t2 / (1.0 - t) - 2.0 * t * t2 * tail


def _temme_q(a, x):
    """Q(a, x) by the expansion, and whether |η| is inside the region where it is exact."""
    mu = (x - a) / a  # x − a is exact near a (Sterbenz), so μ keeps its relative precision
    eta = jnp.sign(mu) * jnp.sqrt(2.0 * _half_eta_squared(mu))
    total = jnp.zeros_like(a)
    for row in reversed(TEMME_COEFFICIENTS):  # Σ_k c_k(η) a^(−k): Horner in 1/a and in η
        c = jnp.zeros_like(eta)
        for coefficient in reversed(row):
            c = c * eta + coefficient
        total = total / a + c
    tail = jnp.exp(-0.5 * a * eta**2) / jnp.sqrt(2.0 * jnp.pi * a) * total
    return 0.5 * erfc(eta * jnp.sqrt(0.5 * a)) + tail, jnp.abs(eta) <= TEMME_MAX_ETA


def poisson_cdf(k, rate):
    """P(X ≤ k) for X ~ Poisson(``rate``), elementwise (0 for k < 0).

    >>> import jax
    >>> with jax.enable_x64():
    ...     print(round(float(poisson_cdf(1_000_500.0, 1e6)), 6))
    0.691682
    """
    k, rate = jnp.broadcast_arrays(k, rate)
    a = jnp.maximum(k, 0) + 1.0
    if jnp.result_type(a, rate) == jnp.float64:
        large = a >= TEMME_MIN_SHAPE
        fast, inside = _temme_q(jnp.where(large, a, TEMME_MIN_SHAPE), jnp.where(large, rate, TEMME_MIN_SHAPE))
        use_fast = large & inside
    else:
        fast, use_fast = jnp.zeros_like(a), jnp.zeros(jnp.shape(a), bool)
    slow = gammaincc(jnp.where(use_fast, 1.0, a), jnp.where(use_fast, 1.0, rate))
    return jnp.where(k < 0, 0.0, jnp.where(use_fast, fast, slow))
