"""JupyterHub for a class of the course, as tests/test_hub.py runs it on one machine (docs/teaching.md).

    .venv/bin/jupyterhub -f jupyterhub_config.py      after `make setup` (which installs jupyterhub and the proxy)

As it stands this is the smoke-test hub: any user name logs in (with SCRATCH_HUB_PASSWORD, if set), and every user's
server runs as the hub's own system user with its home in /tmp/<name> (jupyterhub's SimpleLocalProcessSpawner: no
isolation between students). For a real class change three things (docs/teaching.md says how for TLJH and Zero
to JupyterHub): the authenticator (your school's OAuth/LDAP, or nativeauthenticator), the spawner (systemd, Docker
or Kubernetes, running the course's image so that each student is a separate user with their own limits), and
the limits below, from the sizing table in docs/teaching.md. Students get the notebooks with an nbgitpuller link.

Environment variables (the test sets them; a trial on one machine needs none):
    SCRATCH_HUB_STATE     folder for the hub's database, cookie secret and proxy pid (default build/hub)
    SCRATCH_HUB_PORT      the port students open (default 8000); the hub listens on 127.0.0.1 only
    SCRATCH_HUB_API_PORT  the hub's internal API port (default 8081); the proxy's API takes the next one
    SCRATCH_HUB_PASSWORD  the one password every user name logs in with (default: any password)
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (JupyterHub defines it when it loads this file)

ROOT = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent  # the environment the hub runs in: the course's, with jupyterhub installed
STATE = Path(os.environ.get("SCRATCH_HUB_STATE", ROOT / "build" / "hub"))
STATE.mkdir(parents=True, exist_ok=True)
PORT = int(os.environ.get("SCRATCH_HUB_PORT", "8000"))
API_PORT = int(os.environ.get("SCRATCH_HUB_API_PORT", "8081"))

# ---------------------------------------------------------------- where the hub listens and keeps its state
c.JupyterHub.bind_url = f"http://127.0.0.1:{PORT}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{API_PORT}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{API_PORT + 1}"
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
# The proxy from npm that `make setup` installs (tools/hub/package-lock.json), else one on PATH.
proxy = Path(sys.prefix) / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
if proxy.exists():
    c.ConfigurableHTTPProxy.command = [str(proxy)]

# ---------------------------------------------------------------- who may log in (for a real class: change this)
c.JupyterHub.authenticator_class = "dummy"
if os.environ.get("SCRATCH_HUB_PASSWORD"):
    c.DummyAuthenticator.password = os.environ["SCRATCH_HUB_PASSWORD"]
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {"instructor"}

# ---------------------------------------------------------------- each student's server (for a real class: change this)
c.JupyterHub.spawner_class = "simple"  # every server as this system user, home in /tmp/<name>: a test, not a class
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
if hasattr(os, "getuid") and os.getuid() == 0:  # containers and CI run as root; JupyterLab refuses it unless told
    c.Spawner.args = ["--ServerApp.allow_root=True"]
# A server and the course's kernel start in seconds, but a loaded machine or a class logging in at once is slower.
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 120
# Per student, from the sizing table in docs/teaching.md (peak memory of the heaviest lecture, one core). Spawners
# that can enforce them (systemd, Docker, Kubernetes) do; this test spawner only passes them on as MEM_LIMIT/CPU_LIMIT.
c.Spawner.mem_limit = "3G"
c.Spawner.cpu_limit = 1.0
c.Spawner.environment = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
