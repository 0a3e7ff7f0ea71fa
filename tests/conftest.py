import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The tests' models are tiny: one thread beats two, which mostly wait for each other on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
