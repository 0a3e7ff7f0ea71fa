"""Fingerprints of the float32 operations the course's trainings use: compare two machines operation by operation.

Each fingerprint is the SHA-256 of one result's bytes (one differing bit shows). Run it on the course's pinned
numeric path on each machine, then compare the two files; an operation that differs computes other bits there, and
a training that uses it drifts apart:

    .venv/bin/python tools/fingerprints.py > mine.json
    .venv/bin/python tools/fingerprints.py --compare mine.json tools/fingerprints/intel-xeon-avx2.json

tools/fingerprints/ holds the files of the machines the notebooks' outputs were made or checked on. On those, MKL's
vector-math sqrt (`sqrt(abs)`, `pow 0.5`, and the for-loop and foreach Adam that call it) splits Intel from AMD; every
other operation agrees. The fused Adam/AdamW lines are the course's own path (course.numerics explains why); a file
made before they were added lacks them, and `--compare` says so.
"""

import hashlib
import json
import platform
import sys

if len(sys.argv) == 4 and sys.argv[1] == "--compare":
    a, b = (json.load(open(p)) for p in sys.argv[2:])
    print(f"{a['cpu']}\n   vs {b['cpu']}")
    differ = [k for k in a["ops"] if k in b["ops"] and a["ops"][k] != b["ops"][k]]
    missing = [k for k in a["ops"] if k not in b["ops"]]
    for k in a["ops"]:
        print(("DIFFERS " if k in differ else "missing " if k in missing else "same    ") + k)
    print(
        f"{len(differ)} of {len(a['ops']) - len(missing)} compared differ"
        + (f"; {len(missing)} missing in the second file" if missing else "")
    )
    sys.exit(1 if differ else 0)

import course

course.prepare_process()  # the pinned numeric path before torch loads, as the course's kernel has it

# isort: split
import torch
import torch.nn.functional as F

from course import numerics

torch.manual_seed(0)
ops = {}


def fp(name, *tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    ops[name] = h.hexdigest()[:16]


def grads(fn, *shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(*s, generator=g, requires_grad=True) for s in shapes]
    out = fn(*xs)
    out.backward(torch.randn(out.shape, generator=g))
    return out, [x.grad for x in xs]


g = torch.Generator().manual_seed(1)
for m, k, n in [(3, 5, 7), (32, 64, 48), (64, 16, 81), (128, 128, 128), (1, 384, 1536), (257, 33, 65)]:
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    fp(f"matmul {m}x{k}@{k}x{n}", a @ b)
    fp(f"matmul T {m}x{k}@{k}x{n}", (b.T.contiguous() @ a.T.contiguous()))
bm = torch.randn(4, 2, 16, 8, generator=g), torch.randn(4, 2, 8, 16, generator=g)
fp("batched matmul 4x2x16x8@8x16", bm[0] @ bm[1])
fp("einsum bhqd,bhkd->bhqk", torch.einsum("bhqd,bhkd->bhqk", bm[0], bm[1].transpose(-1, -2)))
for d_in, d_out in [(16, 32), (64, 81), (384, 1536)]:
    lin = torch.nn.Linear(d_in, d_out)
    out, gr = grads(lin, (8, 12, d_in))
    fp(f"linear fwd {d_in}->{d_out}", out)
    fp(f"linear bwd input {d_in}->{d_out}", *gr)
    fp(f"linear bwd weight {d_in}->{d_out}", lin.weight.grad, lin.bias.grad)
x = torch.randn(16, 32, 81, generator=g) * 3
for name, f in [
    ("softmax", lambda t: t.softmax(-1)),
    ("log_softmax", lambda t: t.log_softmax(-1)),
    ("exp", torch.exp),
    ("log(abs+1)", lambda t: (t.abs() + 1).log()),
    ("tanh", torch.tanh),
    ("sigmoid", torch.sigmoid),
    ("gelu", F.gelu),
    ("gelu tanh", lambda t: F.gelu(t, approximate="tanh")),
    ("relu", F.relu),
    ("silu", F.silu),
    ("sqrt(abs)", lambda t: t.abs().sqrt()),
    ("rsqrt(abs+1)", lambda t: (t.abs() + 1).rsqrt()),
    ("reciprocal(abs+1)", lambda t: (t.abs() + 1).reciprocal()),
    ("sin", torch.sin),
    ("cos", torch.cos),
    ("pow 0.5", lambda t: (t.abs() + 1).pow(0.5)),
    ("sum -1", lambda t: t.sum(-1)),
    ("mean -1", lambda t: t.mean(-1)),
    ("var -1", lambda t: t.var(-1)),
    ("sum all", lambda t: t.sum()),
    ("cumsum", lambda t: t.cumsum(-1)),
    ("norm", lambda t: t.norm()),
    ("max -1", lambda t: t.max(-1).values),
]:
    fp(f"{name} fwd", f(x))
    out, gr = grads(f, tuple(x.shape))
    fp(f"{name} bwd", *gr)
ln = torch.nn.LayerNorm(81)
out, gr = grads(lambda t: ln(t), (16, 32, 81))
fp("layer_norm fwd", out)
fp("layer_norm bwd", *gr, ln.weight.grad, ln.bias.grad)
fp("rms_norm fwd", F.rms_norm(x, (81,)))
logits, target = torch.randn(64, 81, generator=g, requires_grad=True), torch.randint(0, 81, (64,), generator=g)
loss = F.cross_entropy(logits, target)
loss.backward()
fp("cross_entropy fwd", loss)
fp("cross_entropy bwd", logits.grad)
logits.grad = None
loss = F.cross_entropy(logits, target, label_smoothing=0.1)
loss.backward()
fp("cross_entropy label_smoothing fwd+bwd", loss, logits.grad)
emb = torch.nn.Embedding(81, 32)
ids = torch.randint(0, 81, (16, 40), generator=g)
out = emb(ids)
out.backward(torch.randn(out.shape, generator=g))
fp("embedding fwd", out)
fp("embedding bwd", emb.weight.grad)
q, k, v = (torch.randn(2, 4, 16, 8, generator=g, requires_grad=True) for _ in range(3))
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
out.backward(torch.ones_like(out))
fp("sdpa causal fwd", out)
fp("sdpa causal bwd", q.grad, k.grad, v.grad)
torch.manual_seed(3)
fp("dropout p=0.1", F.dropout(torch.ones(64, 64), 0.1))
torch.manual_seed(3)
fp("randn", torch.randn(1000))
fp("rand", torch.rand(1000))
fp("randint", torch.randint(0, 100, (1000,)).float())
fp("randperm", torch.randperm(1000).float())
fp("multinomial", torch.multinomial(torch.rand(4, 81), 20, replacement=True).float())
fp("normal_ init", torch.nn.init.normal_(torch.empty(64, 64), std=0.02))
fp("xavier_uniform_ init", torch.nn.init.xavier_uniform_(torch.empty(64, 64)))
lin = torch.nn.Linear(5, 5)
fp("Linear default init", lin.weight, lin.bias)
for opt_name, make in [
    ("AdamW foreach", lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=True)),
    ("AdamW for-loop", lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=False)),
    ("Adam", lambda p: torch.optim.Adam(p, lr=1e-2)),
    ("SGD momentum", lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9)),
    ("AdamW fused", lambda p: torch.optim.AdamW(p, lr=1e-2, fused=True)),
    ("Adam fused", lambda p: torch.optim.Adam(p, lr=1e-2, fused=True)),
]:
    torch.manual_seed(5)
    w = torch.nn.Parameter(torch.randn(64, 81))
    opt = make([w])
    for _ in range(20):
        loss = (w.sin() * w).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(w, 0.5)
        opt.step()
    fp(f"{opt_name} 20 steps (+clip_grad_norm)", w)
# a small transformer trained a few steps, the loss of every step fingerprinted: with the for-loop AdamW, then fused
for FUSED, SUFFIX in ((False, ""), (True, " (fused AdamW)")):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
    head = torch.nn.Linear(32, 81)
    embed = torch.nn.Embedding(81, 32)
    opt = torch.optim.AdamW([*layer.parameters(), *head.parameters(), *embed.parameters()], lr=3e-3, fused=FUSED)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(24)
    losses = []
    for step in range(30):
        ids = torch.randint(0, 81, (8, 25))
        h = layer(embed(ids[:, :-1]), src_mask=mask, is_causal=True)
        loss = F.cross_entropy(head(h).flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step in (0, 1, 2, 5, 10, 29):
            fp(f"tiny transformer{SUFFIX} step {step} loss", loss)

machine = numerics.this_machine()
print(
    json.dumps(
        {
            "cpu": f"{platform.machine()} {machine['cpu_vendor']} {machine['cpu_model']}",
            "torch": torch.__version__,
            "numerics": {k: str(v) for k, v in numerics.status().items()},
            "ops": ops,
        },
        indent=1,
    )
)
