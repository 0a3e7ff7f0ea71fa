"""Wrong and borrowed solutions to the exercises of notebooks/02_embeddings.ipynb; each must fail its check."""

WRONG_SOLUTIONS = {
    1: {
        "no exclusion: the answer is usually c itself": """
def solve_analogies(E, questions):
    unit = E / E.norm(dim=1, keepdim=True)
    target = unit[questions[:, 0]] - unit[questions[:, 1]] + unit[questions[:, 2]]
    return (target @ unit.T).argmax(dim=1)
""",
        "dot products instead of cosines: long rows win": """
def solve_analogies(E, questions):
    target = E[questions[:, 0]] - E[questions[:, 1]] + E[questions[:, 2]]
    similarity = (target @ E.T).scatter(1, questions, -math.inf)
    return similarity.argmax(dim=1)
""",
        "excludes every question's words from every question": """
def solve_analogies(E, questions):
    unit = E / E.norm(dim=1, keepdim=True)
    target = unit[questions[:, 0]] - unit[questions[:, 1]] + unit[questions[:, 2]]
    similarity = target @ unit.T
    similarity[:, questions.flatten()] = -math.inf
    return similarity.argmax(dim=1)
""",
        "excludes only c, not a and b": """
def solve_analogies(E, questions):
    unit = E / E.norm(dim=1, keepdim=True)
    target = unit[questions[:, 0]] - unit[questions[:, 1]] + unit[questions[:, 2]]
    similarity = (target @ unit.T).scatter(1, questions[:, 2:], -math.inf)
    return similarity.argmax(dim=1)
""",
        "a + b - c: the offset the wrong way round": """
def solve_analogies(E, questions):
    unit = E / E.norm(dim=1, keepdim=True)
    target = unit[questions[:, 0]] + unit[questions[:, 1]] - unit[questions[:, 2]]
    similarity = (target @ unit.T).scatter(1, questions, -math.inf)
    return similarity.argmax(dim=1)
""",
    },
    2: {
        "bit-exact comparison: rounding makes equal things differ": """
def is_permutation_equivariant(f, n=8, d=16, trials=5):
    X = torch.randn(n, d)
    for _ in range(trials):
        perm = torch.randperm(n)
        if not torch.equal(f(X[perm]), f(X)[perm]):
            return False
    return True
""",
        "tests invariance f(PX) = f(X) instead of equivariance": """
def is_permutation_equivariant(f, n=8, d=16, trials=5):
    X = torch.randn(n, d)
    for _ in range(trials):
        perm = torch.randperm(n)
        if not torch.allclose(f(X[perm]), f(X), atol=1e-5):
            return False
    return True
""",
        "permutes the output the inverse way": """
def is_permutation_equivariant(f, n=8, d=16, trials=5):
    X = torch.randn(n, d)
    for _ in range(trials):
        perm = torch.randperm(n)
        if not torch.allclose(f(X[perm]), f(X)[perm.argsort()], atol=1e-5):
            return False
    return True
""",
        "never really permutes (the identity passes everything)": """
def is_permutation_equivariant(f, n=8, d=16, trials=5):
    X = torch.randn(n, d)
    perm = torch.arange(n)
    return torch.allclose(f(X[perm]), f(X)[perm], atol=1e-5)
""",
        "compares only the set of output rows (sorted), not where they are": """
def is_permutation_equivariant(f, n=8, d=16, trials=5):
    X = torch.randn(n, d)
    for _ in range(trials):
        perm = torch.randperm(n)
        a, b = f(X[perm]), f(X)
        if not torch.allclose(a.sort(dim=0).values, b.sort(dim=0).values, atol=1e-5):
            return False
    return True
""",
    },
    3: {
        "borrowed: scratch's RotaryEmbedding with the dimensions reordered": """
def rope_complex(x, positions):
    from scratch.embeddings import RotaryEmbedding
    d_head = x.shape[-1]
    halves = torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)])
    out = torch.empty_like(x)
    out[:, halves] = RotaryEmbedding(d_head, max_len=10000).rotate(x[:, halves], positions)
    return out
""",
        "rotate-half layout: pairs (j, j + d/2) instead of neighbours": """
def rope_complex(x, positions):
    n, d_head = x.shape
    theta = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    angles = positions.double()[:, None] * theta
    z = torch.complex(x[:, :d_head // 2].double(), x[:, d_head // 2:].double())
    turned = z * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([turned.real, turned.imag], dim=-1).to(x.dtype)
""",
        "theta_j = 10000^(-j/d_head): the factor 2 forgotten": """
def rope_complex(x, positions):
    n, d_head = x.shape
    theta = 10000.0 ** (-torch.arange(d_head // 2, dtype=torch.float64) / d_head)
    angles = positions.double()[:, None] * theta
    z = torch.view_as_complex(x.double().reshape(n, d_head // 2, 2))
    turned = z * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(turned).reshape(n, d_head).to(x.dtype)
""",
        "turns the wrong way, by e^(-i m theta)": """
def rope_complex(x, positions):
    n, d_head = x.shape
    theta = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    angles = positions.double()[:, None] * theta
    z = torch.view_as_complex(x.double().reshape(n, d_head // 2, 2))
    turned = z * torch.polar(torch.ones_like(angles), -angles)
    return torch.view_as_real(turned).reshape(n, d_head).to(x.dtype)
""",
        "angles in float32: far positions lose the relative property": """
def rope_complex(x, positions):
    n, d_head = x.shape
    theta = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)
    angles = positions.float()[:, None] * theta
    z = torch.view_as_complex(x.float().reshape(n, d_head // 2, 2).contiguous())
    turned = z * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(turned).reshape(n, d_head).to(x.dtype)
""",
    },
    4: {
        "slopes start at 1: m_k = 2^(-8k/h)": """
def alibi_bias(h, n):
    slopes = 2.0 ** (-8.0 * torch.arange(h) / h)
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    return (-slopes[:, None, None] * distance).masked_fill(distance < 0, -math.inf).float()
""",
        "a reward for distance instead of a penalty": """
def alibi_bias(h, n):
    slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1) / h)
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    return (slopes[:, None, None] * distance).masked_fill(distance < 0, -math.inf).float()
""",
        "no causal mask: -m |i - j| on both sides": """
def alibi_bias(h, n):
    slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1) / h)
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs()
    return (-slopes[:, None, None] * distance).float()
""",
        "slopes that ignore h (always the 8-head ones)": """
def alibi_bias(h, n):
    slopes = 2.0 ** (-torch.arange(1, h + 1).double())
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    return (-slopes[:, None, None] * distance).masked_fill(distance < 0, -math.inf).float()
""",
    },
    5: {
        "rotation the wrong way: M_k shifts back by k": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        b = k * 10000.0 ** (-2 * i / d_model)
        c, s = math.cos(b), math.sin(b)
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = c, -s
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = s, c
    return M
""",
        "omega_i = 10000^(-i/d_model): the factor 2 forgotten": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        b = k * 10000.0 ** (-i / d_model)
        c, s = math.cos(b), math.sin(b)
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = c, s
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -s, c
    return M
""",
        "one rotation angle for every pair": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    c, s = math.cos(k), math.sin(k)
    for i in range(d_model // 2):
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = c, s
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -s, c
    return M
""",
        "fitted to the first 50 positions in float32: not exact": """
def shift_matrix(k, d_model):
    pe = sinusoidal_positional_encoding(50 + abs(k), d_model)              # float32
    A, B = (pe[:50], pe[k:50 + k]) if k >= 0 else (pe[-k:50 - k], pe[:50])
    return torch.linalg.lstsq(A, B).solution.T.double()
""",
    },
}
