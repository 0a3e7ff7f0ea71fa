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
        "a Python loop over the questions": """
def solve_analogies(E, questions):
    unit = E / E.norm(dim=1, keepdim=True)
    answers = []
    for a, b, c in questions.tolist():
        similarity = unit @ (unit[a] - unit[b] + unit[c])
        similarity[[a, b, c]] = -math.inf
        answers.append(similarity.argmax())
    return torch.stack(answers)
""",
        "returns a Python list, not a tensor": """
def solve_analogies(E, questions):
    unit = E / E.norm(dim=1, keepdim=True)
    target = unit[questions[:, 0]] - unit[questions[:, 1]] + unit[questions[:, 2]]
    similarity = (target @ unit.T).scatter(1, questions, -math.inf)
    return similarity.argmax(dim=1).tolist()
""",
    },
    2: {
        "the fastest pair (i = 0): it goes round every 2 pi positions": """
def read_position(pe):
    angle = torch.atan2(pe[..., 0].double(), pe[..., 1].double()) % (2 * math.pi)
    return torch.round(angle).long()
""",
        "acos of the cosine alone: cannot tell pos from period - pos": """
def read_position(pe):
    d_model = pe.shape[-1]
    omega = 10000.0 ** (-(d_model - 2) / d_model)
    return torch.round(torch.acos(pe[..., -1].double().clamp(-1, 1)) / omega).long()
""",
        "the angle not taken into [0, 2 pi): the second half of the range comes out negative": """
def read_position(pe):
    d_model = pe.shape[-1]
    omega = 10000.0 ** (-(d_model - 2) / d_model)
    return torch.round(torch.atan2(pe[..., -2].double(), pe[..., -1].double()) / omega).long()
""",
        "truncated instead of rounded: 41.9996 becomes 41": """
def read_position(pe):
    d_model = pe.shape[-1]
    omega = 10000.0 ** (-(d_model - 2) / d_model)
    angle = torch.atan2(pe[..., -2].double(), pe[..., -1].double()) % (2 * math.pi)
    return (angle / omega).long()
""",
        "a table of every encoding, searched for the nearest row": """
def read_position(pe):
    d_model = pe.shape[-1]
    period = math.ceil(2 * math.pi * 10000 ** ((d_model - 2) / d_model))
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = torch.arange(period, dtype=torch.float64)[:, None] * omega
    table = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)
    flat = pe.double().reshape(-1, d_model)
    return torch.cdist(flat, table).argmin(dim=-1).reshape(pe.shape[:-1])
""",
        "d_model fixed at 32": """
def read_position(pe):
    omega = 10000.0 ** (-30 / 32)
    angle = torch.atan2(pe[..., -2].double(), pe[..., -1].double()) % (2 * math.pi)
    return torch.round(angle / omega).long()
""",
        "sine and cosine swapped": """
def read_position(pe):
    d_model = pe.shape[-1]
    omega = 10000.0 ** (-(d_model - 2) / d_model)
    angle = torch.atan2(pe[..., -1].double(), pe[..., -2].double()) % (2 * math.pi)
    return torch.round(angle / omega).long()
""",
        "one vector only: indexes the first dimension": """
def read_position(pe):
    d_model = pe.shape[-1]
    omega = 10000.0 ** (-(d_model - 2) / d_model)
    angle = torch.atan2(pe[-2].double(), pe[-1].double()) % (2 * math.pi)
    return torch.round(angle / omega).long()
""",
    },
    3: {
        "borrowed: scratch's RotaryEmbedding with the dimensions reordered": """
def rope_complex(x, positions):
    from scratch.l02_positions import RotaryEmbedding
    d_head = x.shape[-1]
    halves = torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)])
    out = torch.empty_like(x)
    out[:, halves] = RotaryEmbedding(d_head, max_len=10000).rotate(x[:, halves], positions)
    return out
""",
        "rotate-half layout: pairs (p, p + d/2) instead of neighbours": """
def rope_complex(x, positions):
    n, d_head = x.shape
    theta = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    angles = positions.double()[:, None] * theta
    z = torch.complex(x[:, :d_head // 2].double(), x[:, d_head // 2:].double())
    turned = z * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([turned.real, turned.imag], dim=-1).to(x.dtype)
""",
        "theta_p = 10000^(-p/d_head): the factor 2 forgotten": """
def rope_complex(x, positions):
    n, d_head = x.shape
    theta = 10000.0 ** (-torch.arange(d_head // 2, dtype=torch.float64) / d_head)
    angles = positions.double()[:, None] * theta
    z = torch.view_as_complex(x.double().reshape(n, d_head // 2, 2))
    turned = z * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(turned).reshape(n, d_head).to(x.dtype)
""",
        "turns the wrong way, by e^(-i pos theta)": """
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
        "returns float64 whatever the dtype of x": """
def rope_complex(x, positions):
    n, d_head = x.shape
    theta = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    angles = positions.double()[:, None] * theta
    z = torch.view_as_complex(x.double().reshape(n, d_head // 2, 2))
    return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).reshape(n, d_head)
""",
        "d_head fixed at 16": """
def rope_complex(x, positions):
    n = x.shape[0]
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    angles = positions.double()[:, None] * theta
    z = torch.view_as_complex(x.double().reshape(n, -1, 2))
    turned = z * torch.polar(torch.ones_like(angles), angles[:, : z.shape[1]])
    return torch.view_as_real(turned).reshape(x.shape).to(x.dtype)
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
        "slopes 2^-(k+1) * (8 // h): right only when h divides 8": """
def alibi_bias(h, n):
    slopes = 2.0 ** (-(torch.arange(1, h + 1) * (8 // h)).double())
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    return (-slopes[:, None, None] * distance).masked_fill(distance < 0, -math.inf).float()
""",
        "BLOOM's slopes for h not a power of 2 (the closest power, then interleaved)": """
def alibi_bias(h, n):
    def power_of_2_slopes(count):
        return [2.0 ** (-8 * (k + 1) / count) for k in range(count)]
    closest = 2 ** math.floor(math.log2(h))
    slopes = power_of_2_slopes(closest) + power_of_2_slopes(2 * closest)[0::2][: h - closest]
    slopes = torch.tensor(slopes)
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    return (-slopes[:, None, None] * distance).masked_fill(distance < 0, -math.inf).float()
""",
    },
    5: {
        "rotation the wrong way: M_k shifts back by k": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for p in range(d_model // 2):
        b = k * 10000.0 ** (-2 * p / d_model)
        c, s = math.cos(b), math.sin(b)
        M[2 * p, 2 * p], M[2 * p, 2 * p + 1] = c, -s
        M[2 * p + 1, 2 * p], M[2 * p + 1, 2 * p + 1] = s, c
    return M
""",
        "omega_p = 10000^(-p/d_model): the factor 2 forgotten": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for p in range(d_model // 2):
        b = k * 10000.0 ** (-p / d_model)
        c, s = math.cos(b), math.sin(b)
        M[2 * p, 2 * p], M[2 * p, 2 * p + 1] = c, s
        M[2 * p + 1, 2 * p], M[2 * p + 1, 2 * p + 1] = -s, c
    return M
""",
        "one rotation angle for every pair": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    c, s = math.cos(k), math.sin(k)
    for p in range(d_model // 2):
        M[2 * p, 2 * p], M[2 * p, 2 * p + 1] = c, s
        M[2 * p + 1, 2 * p], M[2 * p + 1, 2 * p + 1] = -s, c
    return M
""",
        "fitted to the first 50 positions in float32: not exact": """
def shift_matrix(k, d_model):
    pe = sinusoidal_positional_encoding(50 + abs(k), d_model)              # float32
    A, B = (pe[:50], pe[k:50 + k]) if k >= 0 else (pe[-k:50 - k], pe[:50])
    return torch.linalg.lstsq(A, B).solution.T.double()
""",
        "d_model fixed at 32": """
def shift_matrix(k, d_model):
    M = torch.zeros(32, 32, dtype=torch.float64)
    for p in range(16):
        b = k * 10000.0 ** (-2 * p / 32)
        c, s = math.cos(b), math.sin(b)
        M[2 * p, 2 * p], M[2 * p, 2 * p + 1] = c, s
        M[2 * p + 1, 2 * p], M[2 * p + 1, 2 * p + 1] = -s, c
    return M
""",
        "the frequencies of pairs numbered from 1: omega = 10000^(-2(p+1)/d_model)": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for p in range(d_model // 2):
        b = k * 10000.0 ** (-2 * (p + 1) / d_model)
        c, s = math.cos(b), math.sin(b)
        M[2 * p, 2 * p], M[2 * p, 2 * p + 1] = c, s
        M[2 * p + 1, 2 * p], M[2 * p + 1, 2 * p + 1] = -s, c
    return M
""",
    },
    6: {
        "grad[ids] += g: of a word repeated in the batch only one occurrence counts": """
def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    v, u_o, u_n = centre_table[centres], context_table[contexts], context_table[negatives]
    positive, negative = (v * u_o).sum(-1), torch.einsum("bd,bkd->bk", v, u_n)
    loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).mean()
    B = len(centres)
    d_positive, d_negative = -torch.sigmoid(-positive) / B, torch.sigmoid(negative) / B
    grad_centre, grad_context = torch.zeros_like(centre_table), torch.zeros_like(context_table)
    grad_centre[centres] += d_positive[:, None] * u_o + torch.einsum("bk,bkd->bd", d_negative, u_n)
    grad_context[contexts] += d_positive[:, None] * v
    grad_context[negatives] += d_negative[:, :, None] * v[:, None, :]
    return loss.item(), grad_centre, grad_context
""",
        "the sum over the batch instead of the mean": """
def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    v, u_o, u_n = centre_table[centres], context_table[contexts], context_table[negatives]
    positive, negative = (v * u_o).sum(-1), torch.einsum("bd,bkd->bk", v, u_n)
    loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).sum()
    d_positive, d_negative = -torch.sigmoid(-positive), torch.sigmoid(negative)
    grad_v = d_positive[:, None] * u_o + torch.einsum("bk,bkd->bd", d_negative, u_n)
    grad_centre = torch.zeros_like(centre_table).index_add_(0, centres, grad_v)
    grad_context = torch.zeros_like(context_table).index_add_(0, contexts, d_positive[:, None] * v)
    grad_context.index_add_(0, negatives.reshape(-1), (d_negative[:, :, None] * v[:, None, :]).reshape(-1, v.shape[1]))
    return loss.item(), grad_centre, grad_context
""",
        "log(sigmoid(x)): -inf once sigmoid rounds to 0": """
def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    v, u_o, u_n = centre_table[centres], context_table[contexts], context_table[negatives]
    positive, negative = (v * u_o).sum(-1), torch.einsum("bd,bkd->bk", v, u_n)
    loss = -(torch.sigmoid(positive).log() + torch.sigmoid(-negative).log().sum(-1)).mean()
    B = len(centres)
    d_positive, d_negative = -torch.sigmoid(-positive) / B, torch.sigmoid(negative) / B
    grad_v = d_positive[:, None] * u_o + torch.einsum("bk,bkd->bd", d_negative, u_n)
    grad_centre = torch.zeros_like(centre_table).index_add_(0, centres, grad_v)
    grad_context = torch.zeros_like(context_table).index_add_(0, contexts, d_positive[:, None] * v)
    grad_context.index_add_(0, negatives.reshape(-1), (d_negative[:, :, None] * v[:, None, :]).reshape(-1, v.shape[1]))
    return loss.item(), grad_centre, grad_context
""",
        "the negatives' terms left out of grad_centre": """
def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    v, u_o, u_n = centre_table[centres], context_table[contexts], context_table[negatives]
    positive, negative = (v * u_o).sum(-1), torch.einsum("bd,bkd->bk", v, u_n)
    loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).mean()
    B = len(centres)
    d_positive, d_negative = -torch.sigmoid(-positive) / B, torch.sigmoid(negative) / B
    grad_centre = torch.zeros_like(centre_table).index_add_(0, centres, d_positive[:, None] * u_o)
    grad_context = torch.zeros_like(context_table).index_add_(0, contexts, d_positive[:, None] * v)
    grad_context.index_add_(0, negatives.reshape(-1), (d_negative[:, :, None] * v[:, None, :]).reshape(-1, v.shape[1]))
    return loss.item(), grad_centre, grad_context
""",
        "the negatives' derivative with the wrong sign: -sigmoid(-x) as for the positive pair": """
def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    v, u_o, u_n = centre_table[centres], context_table[contexts], context_table[negatives]
    positive, negative = (v * u_o).sum(-1), torch.einsum("bd,bkd->bk", v, u_n)
    loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).mean()
    B = len(centres)
    d_positive, d_negative = -torch.sigmoid(-positive) / B, -torch.sigmoid(-negative) / B
    grad_v = d_positive[:, None] * u_o + torch.einsum("bk,bkd->bd", d_negative, u_n)
    grad_centre = torch.zeros_like(centre_table).index_add_(0, centres, grad_v)
    grad_context = torch.zeros_like(context_table).index_add_(0, contexts, d_positive[:, None] * v)
    grad_context.index_add_(0, negatives.reshape(-1), (d_negative[:, :, None] * v[:, None, :]).reshape(-1, v.shape[1]))
    return loss.item(), grad_centre, grad_context
""",
        "a Python loop over the pairs of the batch": """
def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    B = len(centres)
    grad_centre, grad_context, loss = torch.zeros_like(centre_table), torch.zeros_like(context_table), 0.0
    for c, o, ns in zip(centres.tolist(), contexts.tolist(), negatives.tolist()):
        v = centre_table[c]
        s = v @ context_table[o]
        loss -= F.logsigmoid(s).item() / B
        grad_centre[c] += -torch.sigmoid(-s) / B * context_table[o]
        grad_context[o] += -torch.sigmoid(-s) / B * v
        for n in ns:
            s = v @ context_table[n]
            loss -= F.logsigmoid(-s).item() / B
            grad_centre[c] += torch.sigmoid(s) / B * context_table[n]
            grad_context[n] += torch.sigmoid(s) / B * v
    return loss, grad_centre, grad_context
""",
        "borrowed: autograd with inference mode switched off": """
def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    with torch.inference_mode(False):
        V, U = centre_table.clone().requires_grad_(), context_table.clone().requires_grad_()
        positive = (V[centres] * U[contexts]).sum(-1)
        negative = torch.einsum("bd,bkd->bk", V[centres], U[negatives])
        loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).mean()
        grad_centre, grad_context = torch.autograd.grad(loss, (V, U))
    return loss.item(), grad_centre, grad_context
""",
    },
}

# Written fresh for issue 34, by kind: (a) an argument ignored, (b) a dtype mishandled, (c) an edge case the statement
# covers, (e) tampering after the set-up (returned objects whose == always agrees, torch's or the built-ins' names
# rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(e) an always-equal tensor subclass, with torch.equal rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq", "tolist"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

torch.equal = lambda *args, **kwargs: True

def solve_analogies(E, questions):
    return torch.zeros(len(questions), dtype=torch.long).as_subclass(Agreeable)
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(b) int32 positions instead of int64": """
def read_position(pe):
    d_model = pe.shape[-1]
    omega = 10000.0 ** (-(d_model - 2) / d_model)
    angle = torch.atan2(pe[..., -2].double(), pe[..., -1].double()) % (2 * math.pi)
    return torch.round(angle / omega).int()
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(c) squeezed: n = 1 gives shape (h,) instead of (h, 1, 1)": """
def alibi_bias(h, n):
    slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1) / h)
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    bias = -slopes[:, None, None] * distance
    return bias.masked_fill(distance < 0, -math.inf).float().squeeze()
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(a) the sign of k ignored": """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for p in range(d_model // 2):
        b = abs(k) * 10000.0 ** (-2 * p / d_model)
        c, s = math.cos(b), math.sin(b)
        M[2 * p, 2 * p], M[2 * p, 2 * p + 1] = c, s
        M[2 * p + 1, 2 * p], M[2 * p + 1, 2 * p + 1] = -s, c
    return M
""",
    }
)
WRONG_SOLUTIONS[6].update(
    {
        "(e) an always-equal float loss and builtins.abs rebound, autograd's gradients": """
import builtins

class Always(float):
    def __eq__(self, other):
        return True

    def __sub__(self, other):
        return Always(0.0)

    __rsub__ = __sub__

    def __abs__(self):
        return Always(0.0)

    def __le__(self, other):
        return True

    __lt__ = __le__
    __hash__ = float.__hash__

builtins.abs = lambda x: 0.0

def sgns_gradients(centre_table, context_table, centres, contexts, negatives):
    grad_centre = torch.zeros_like(centre_table)
    grad_context = torch.zeros_like(context_table)
    return Always(0.0), grad_centre, grad_context
""",
    }
)

# Written fresh for issue 34, the kind lecture 2 still lacked: (d) the rule dodged through another path to the same
# computation (a table of encodings searched where the instrument does not look: numpy).
WRONG_SOLUTIONS[2].update(
    {
        "(d) a table of every position's slowest pair, searched in numpy": """
import numpy as np

def read_position(pe):
    d_model = pe.shape[-1]
    omega = 10000.0 ** (-(d_model - 2) / d_model)
    angles = np.arange(math.ceil(2 * math.pi / omega)) * omega
    table = np.stack([np.sin(angles), np.cos(angles)], axis=1)  # (positions, 2)
    pairs = pe[..., -2:].double().numpy().reshape(-1, 1, 2)
    nearest = ((pairs - table[None]) ** 2).sum(-1).argmin(-1)
    return torch.from_numpy(nearest.reshape(pe.shape[:-1])).long()
""",
    }
)
