import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The tests' models are tiny: one thread beats two, which mostly wait for each other on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def smollm2():
    """The real SmolLM2-135M-Instruct, loaded once for every test file that needs it:
    transformers' model with its reference (eager) attention, ours built from it, and the tokenizer."""
    import scratch  # noqa: F401  (offline environment before transformers is imported)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from scratch import assets
    from scratch.models import GPT

    path = assets.smollm2_dir()
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
    return hf, GPT.from_hf_llama(hf), AutoTokenizer.from_pretrained(path)
