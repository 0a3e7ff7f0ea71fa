"""scratch.l06_training: determinism, the schedule, that loss goes down, evaluation hooks, bad input; and
course.runs.SavedRun, a run stopped and resumed."""

import math

import pytest
import torch

from course.runs import SavedRun
from scratch import seed_everything
from scratch.l06_gpt import GPT, GPTConfig
from scratch.l06_training import (
    Run,
    decay_groups,
    default_loss,
    estimate_loss,
    eval_mode,
    lr_factor,
    pick_device,
    sequence_loss,
    train,
)
from scratch.l06_transformer import Transformer


def tiny_gpt(seed=0):
    seed_everything(seed)
    return GPT(GPTConfig.gpt2(vocab_size=12, d_model=16, h=2, N=1, d_ff=32, max_len=16, dropout=0.1))


def counting_batches():
    """Sequences that count up modulo 12: x = a, a+1, ...; y the next numbers. Easy to learn."""

    def get_batch():
        start = torch.randint(12, (8, 1))
        x = (start + torch.arange(9)) % 12
        return x[:, :-1], x[:, 1:]

    return get_batch


def test_same_seed_same_losses():
    runs = [
        train(
            tiny_gpt(),
            counting_batches(),
            15,
            lr=3e-3,
            warmup=3,
            eval_fn=lambda m: 0.5,
            eval_every=5,
            device="cpu",
            seed=7,
            progress=False,
        )
        for _ in range(2)
    ]
    assert runs[0].train_loss == runs[1].train_loss
    assert runs[0].step == list(range(1, 16)) and runs[0].eval_step == [5, 10, 15]
    other = train(tiny_gpt(), counting_batches(), 15, lr=3e-3, device="cpu", seed=8, progress=False)
    assert other.train_loss != runs[0].train_loss


def test_progress_bar_is_plain_text(capsys):
    """The bar is tqdm's text bar on stderr (a stored notebook keeps its last line), not tqdm.auto's widget."""
    import tqdm.std

    from scratch import l06_training as training

    assert training.tqdm is tqdm.std.tqdm
    train(tiny_gpt(), counting_batches(), 3, lr=3e-3, device="cpu", eval_fn=lambda m: 0.5, eval_every=3)
    last = capsys.readouterr().err.split("\r")[-1]
    assert "training: 100%" in last and "3/3" in last and "eval=0.5000" in last, last


def test_loss_goes_down_and_eval_is_called():
    model = tiny_gpt()
    get_batch = counting_batches()
    seen = []
    history = train(
        model,
        get_batch,
        60,
        lr=1e-2,
        warmup=10,
        device="cpu",
        progress=False,
        eval_fn=lambda m: estimate_loss(m, get_batch, iters=2),
        eval_every=20,
        on_eval=lambda h: seen.append((h.eval_step[-1], model.training)),
    )
    assert history.train_loss[0] > math.log(12) - 0.5  # starts near uniform guessing
    assert history.eval_loss[-1] < 0.5 * history.eval_loss[0]
    assert seen == [(20, False), (40, False), (60, False)]  # evaluated in eval mode
    assert not model.training  # and left in eval mode
    assert len(history.lr) == 60 and history.lr[9] == pytest.approx(1e-2)


def test_transformer_batches_and_padding_are_ignored():
    """A (src, tgt_in, tgt_out) batch; targets equal to pad_id do not count in the loss."""
    seed_everything(0)
    model = Transformer(10, 10, d_model=16, h=2, N=1, d_ff=32, dropout=0.0, max_len=8)
    src = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    tgt_in, tgt_out = torch.tensor([[1, 3, 4], [1, 6, 0]]), torch.tensor([[3, 4, 2], [6, 2, 0]])
    loss = default_loss(model, (src, tgt_in, tgt_out))
    logits = model(src, tgt_in)
    real = tgt_out != 0
    expected = torch.nn.functional.cross_entropy(logits[real], tgt_out[real])
    torch.testing.assert_close(loss, expected)
    history = train(model, lambda: (src, tgt_in, tgt_out), 30, lr=1e-2, device="cpu", progress=False)
    assert history.train_loss[-1] < 0.3 * history.train_loss[0]


def test_lr_schedule():
    factors = [lr_factor(s, 100, warmup=10) for s in range(100)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert factors[99] == pytest.approx(0.1)  # cosine down to min_factor
    assert all(a >= b for a, b in zip(factors[9:], factors[10:]))
    assert lr_factor(50, 100, schedule="constant") == 1.0


def test_lr_schedule_can_decay_during_warmup():
    """The warm-up ramp times a cosine that starts at step 0 (the tiny T5s' schedule), to min_factor at the end."""
    for step in (0, 5, 9, 10, 50, 99):
        cosine = 0.5 * (1 + math.cos(math.pi * step / 99))
        expected = min((step + 1) / 10, 1.0) * (0.2 + 0.8 * cosine)
        assert lr_factor(step, 100, 10, min_factor=0.2, decay_during_warmup=True) == pytest.approx(expected)
    assert lr_factor(5, 100, 10, schedule="constant", decay_during_warmup=True) == pytest.approx(0.6)


def counting_run(folder=None, steps=12):
    model = tiny_gpt()
    optimizer = torch.optim.AdamW(decay_groups(model), lr=3e-3)
    rng = torch.Generator().manual_seed(3)

    def next_batches():  # two batches a step, drawn from the run's own generator
        starts = torch.randint(12, (2, 4, 1), generator=rng)
        x = (starts + torch.arange(9)) % 12
        return [(row[:, :-1], row[:, 1:]) for row in x]

    schedule = lambda step: lr_factor(step, steps, 3)  # noqa: E731
    if folder is None:
        run = Run(model, optimizer, steps, schedule)
    else:
        run = SavedRun(model, optimizer, steps, schedule, folder=folder, save_every=4, rng=rng)
    return run, next_batches


def test_run_stopped_and_resumed_equals_one_run(tmp_path):
    whole, batches = counting_run()
    whole.train(batches, lambda m: {"loss": 1.0, "accuracy": 0.5}, eval_every=4, progress=False)
    stopped, batches = counting_run(tmp_path)
    stopped.train(batches, lambda m: {"loss": 1.0, "accuracy": 0.5}, eval_every=4, stop_after=6, progress=False)
    assert stopped.step == 6 and (tmp_path / "state.pt").is_file()
    resumed, batches = counting_run(tmp_path)  # a new process would build the same run: it resumes at step 6
    assert resumed.step == 6 and resumed.history.train_loss == stopped.history.train_loss
    resumed.train(batches, lambda m: {"loss": 1.0, "accuracy": 0.5}, eval_every=4, progress=False)
    assert resumed.history.train_loss == whole.history.train_loss
    assert [e["step"] for e in whole.history.evals] == [4, 8, 12]
    assert [e["step"] for e in resumed.history.evals] == [4, 6, 8, 12]  # and where the stopped run ended
    for ours, theirs in zip(resumed.model.parameters(), whole.model.parameters()):
        assert torch.equal(ours, theirs)
    assert resumed.history.lr == pytest.approx([3e-3 * lr_factor(s, 12, 3) for s in range(12)])


def test_decay_groups_leave_biases_and_gains_alone():
    model = tiny_gpt()
    decayed, kept = decay_groups(model, 0.1)
    assert decayed["weight_decay"] == 0.1 and kept["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decayed["params"]) and all(p.dim() < 2 for p in kept["params"])
    assert len(decayed["params"]) + len(kept["params"]) == len(list(model.parameters()))


def test_sequence_loss():
    logits = torch.zeros(2, 3, 5)
    targets = torch.tensor([[1, 2, -100], [0, -100, -100]])
    assert sequence_loss(logits, targets).item() == pytest.approx(math.log(5))


def test_pick_device_follows_cuda_availability(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device() == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device() == torch.device("cpu")


def test_eval_mode_turns_dropout_off_and_restores_the_mode():
    model = tiny_gpt()
    x = torch.randint(12, (2, 8))
    for was_training in (True, False):
        model.train(was_training)
        with eval_mode(model):
            assert not model.training and not torch.is_grad_enabled()
            assert torch.equal(model(x), model(x))  # no dropout: the same output twice
        assert model.training == was_training and torch.is_grad_enabled()
    with pytest.raises(RuntimeError), eval_mode(model):  # restored after an error too
        model.train()
        raise RuntimeError
    assert not model.training


def test_bad_input():
    model = tiny_gpt()
    with pytest.raises(ValueError, match="steps must be at least 1"):
        train(model, counting_batches(), 0, progress=False)
    with pytest.raises(ValueError, match="lr must be > 0"):
        train(model, counting_batches(), 5, lr=0, progress=False)
    with pytest.raises(ValueError, match="warmup"):
        train(model, counting_batches(), 5, warmup=6, progress=False)
    with pytest.raises(ValueError, match="unknown schedule .linear."):
        train(model, counting_batches(), 5, schedule="linear", progress=False)
    with pytest.raises(ValueError, match="grad_clip"):
        train(model, counting_batches(), 5, grad_clip=0, progress=False)
    with pytest.raises(ValueError, match=r"logits must be \(batch, T, V\)"):
        sequence_loss(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
