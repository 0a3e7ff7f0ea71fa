"""Transformers from Scratch: the code the lectures teach, one module per idea, named in the course's order.

`ls lib/scratch` is the table of contents: lNN_ is the lecture that derives the module. A module imports only
modules of earlier lectures, torch (numpy, regex, tqdm) and the standard library (tests/test_package.py holds it
to that); validate holds the argument checks at the doors (constructors, forward, generate) that every module
shares. The machinery the notebooks also use (numerics, data, checkpoints, diagrams, claim checks, exercise
checks) is the package `course`, which this one never imports.
"""


def seed_everything(seed: int = 0) -> None:
    """Fix every random seed (Python's, NumPy's, torch's on every device) and print tensors with 4 decimals."""
    import operator  # imported here, as all below: importing scratch loads no torch
    import random  # imported here

    import numpy as np  # imported here
    import torch  # imported here

    seed = operator.index(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    np.set_printoptions(precision=4, suppress=True)
