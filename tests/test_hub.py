"""A class on one server: a real JupyterHub (jupyterhub_config.py), two students, a lecture each, offline.

The hub starts on localhost with the course's config (dummy authenticator, local process spawner, the proxy from
npm). Where this process may make a network namespace (root on Linux: CI, containers), the hub, the proxy, every
student's server and kernel, and Chromium all run inside one that has only a loopback interface: the network
is really cut off. Elsewhere the hub runs on the host's loopback with Python's proxies pointed at a closed port.
Either way Chromium aborts and records any request that leaves 127.0.0.1.

Two students log in at once (separate browser contexts), each opens the nbgitpuller link docs/teaching.md gives for
handing out a lecture (from a local git repository holding it, since the test has no network), and runs the
lecture's first code cells in the notebook's own kernel. On the pinned path their printed outputs must equal
the committed ones; on any machine no cell may fail. Then the hub stops and takes the servers with it; their
kernels must follow within seconds.
Screenshots go to build/hub-screenshots/ for a human to look at.
"""

import configparser
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import kernel, numerics

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
LECTURE = ROOT / "notebooks" / "03_attention.ipynb"  # loads no pretrained model: its first cells take seconds
CODE_CELLS = 4  # how many of its visible code cells each student runs (and the collapsed checks among them)
USERS = ("student-a", "student-b")
PASSWORD = "smoke-test"
REPO_NAME = "transformers-from-scratch"
BUDGET = 420  # seconds for the whole scenario, set-up and shut-down included
KERNEL_GRACE = 15  # seconds a student's kernel may take to exit after its server has gone
SCREENSHOTS = ROOT / "build" / "hub-screenshots"
BIN = Path(sys.executable).parent


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self, at_most=None):
        left = self.end - time.monotonic()
        if left <= 0:
            pytest.fail(f"the hub scenario ran past its {BUDGET} s budget")
        return left if at_most is None else min(left, at_most)

    def ms(self, at_most):
        return 1000 * self.left(at_most)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def network_namespace_prefix():
    """`unshare --net` plus bringing up loopback, where this process may make a network namespace; else None."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip") or shutil.which("ip", path="/usr/sbin:/sbin")
    if not (unshare and ip and shutil.which("nsenter")):
        return None
    probe = subprocess.run([unshare, "--net", ip, "link", "set", "lo", "up"], capture_output=True)
    if probe.returncode != 0:
        return None
    return [unshare, "--net", "sh", "-c", f'{ip} link set lo up && exec "$0" "$@"']


def sanitize(text: str) -> str:
    """What nbval compares: the text with tests/nbval_sanitize.cfg's replacements (addresses, timings) made."""
    rules = configparser.ConfigParser()
    rules.read(ROOT / "tests" / "nbval_sanitize.cfg")
    for section in rules.sections():
        text = re.sub(rules[section]["regex"], rules[section]["replace"], text)
    return " ".join(text.split())


def compared(cell) -> bool:
    """nbval compares this cell's output (no ignore-output marker)."""
    tags = cell["metadata"].get("tags", [])
    return "nbval-ignore-output" not in tags and "NBVAL_IGNORE_OUTPUT" not in "".join(cell["source"])


def committed_outputs(cell):
    """The text a cell printed when it was committed (stream and plain-text results), '' if none."""
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append("".join(output["text"]))
        elif "text/plain" in output.get("data", {}) and not output["data"].keys() - {"text/plain"}:
            parts.append("".join(output["data"]["text/plain"]))
    return "".join(parts)


def course_repository(folder: Path) -> Path:
    """A git repository holding the lecture, as the course's repository holds it, for nbgitpuller to clone."""
    repo = folder / REPO_NAME
    (repo / "notebooks").mkdir(parents=True)
    shutil.copy(LECTURE, repo / "notebooks" / LECTURE.name)
    git = ["git", "-c", "user.name=hub test", "-c", "user.email=hub@test", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "notebooks"], ["commit", "-q", "-m", "the lecture"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return repo


def our_processes(home: Path):
    """Processes whose home is under this test's hub folder: the students' servers and kernels."""
    marker = f"HOME={home}/".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes():
                    yield int(entry.name)
            except OSError:
                continue


def command_line(pid: int) -> str:
    """A process's command line, shortened, or '' once it has gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return ""


@pytest.fixture(scope="module")
def hub(tmp_path_factory, chromium):
    jupyterhub = BIN / "jupyterhub"
    proxy = Path(sys.prefix) / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    assert jupyterhub.exists(), "jupyterhub is not installed: run `make setup` (requirements-hub.lock)"
    assert proxy.exists() or shutil.which("configurable-http-proxy"), (
        "the hub's proxy is not installed: run `make setup` (npm ci in .venv/hub-proxy, from tools/hub)"
    )
    deadline = Deadline(BUDGET)
    state = tmp_path_factory.mktemp("hub")
    repo = course_repository(tmp_path_factory.mktemp("course"))
    namespace = network_namespace_prefix()
    port, api_port = (8000, 8081) if namespace else (free_port(), free_port())
    env = dict(
        os.environ,
        SCRATCH_HUB_STATE=str(state),
        SCRATCH_HUB_PORT=str(port),
        SCRATCH_HUB_API_PORT=str(api_port),
        SCRATCH_HUB_PASSWORD=PASSWORD,
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
    )
    if not namespace:  # no namespace: at least Python's own requests go nowhere
        closed = f"http://127.0.0.1:{free_port()}"
        env.update(http_proxy=closed, https_proxy=closed, HTTP_PROXY=closed, HTTPS_PROXY=closed)
        env.update(no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost")
    log_path = state / "jupyterhub.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [*(namespace or []), str(jupyterhub), "-f", str(ROOT / "jupyterhub_config.py")],
        cwd=state,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def log_tail():
        return log_path.read_text(errors="replace")[-4000:]

    try:
        while "JupyterHub is now running" not in log_path.read_text(errors="replace"):
            assert process.poll() is None, f"the hub exited ({process.returncode}):\n{log_tail()}"
            if deadline.left() < BUDGET - 120:
                pytest.fail(f"the hub did not start within 120 s:\n{log_tail()}")
            time.sleep(0.5)
        executable = chromium.path
        if namespace:  # Chromium joins the hub's namespace; Playwright talks to it over a pipe, not the network
            executable = state / "chromium-in-hub-namespace"
            executable.write_text(f'#!/bin/sh\nexec nsenter --net=/proc/{process.pid}/ns/net "{chromium.path}" "$@"\n')
            executable.chmod(0o755)
        yield {
            "url": f"http://127.0.0.1:{port}",
            "repo": repo,
            "chromium": str(executable),
            "isolated": namespace is not None,
            "deadline": deadline,
            "log": log_tail,
        }
    finally:
        process.send_signal(signal.SIGTERM)  # the hub stops the students' servers and the proxy
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
        # The hub stops each server with SIGINT; a server without a terminal exits on it without shutting its
        # kernels down, and each kernel exits on its own once it sees its server gone (ipykernel polls every
        # second). So the kernels get a few seconds; anything still running after that was left behind.
        grace = time.monotonic() + KERNEL_GRACE
        while (left := list(our_processes(state / "home"))) and time.monotonic() < grace:
            time.sleep(0.25)
        commands = {pid: command_line(pid) for pid in left}
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert not left, (
            f"{KERNEL_GRACE} s after the hub stopped, {len(left)} of the students' processes still ran: "
            f"{commands}\nhub log:\n{log_tail()}"
        )
        print(f"hub log:\n{log_tail()}")


class Student:
    """One student's browser session: logs in, pulls the lecture, runs its first code cells."""

    def __init__(self, browser, hub, name):
        self.hub, self.name, self.deadline = hub, name, hub["deadline"]
        self.off_loopback, self.errors = [], []
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.route("**/*", self._loopback_only)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _loopback_only(self, route):
        url = route.request.url
        if re.match(r"(https?|wss?)://(127\.0\.0\.1|localhost)[:/]", url) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.off_loopback.append(url)
            route.abort()

    def log_in(self):
        page = self.page
        page.goto(f"{self.hub['url']}/hub/login", timeout=self.deadline.ms(60))
        page.fill("#username_input", self.name)
        page.fill("#password_input", PASSWORD)
        page.click("#login_submit")  # the hub spawns the server, then sends the browser on to JupyterLab

    def wait_for_lab(self):
        self.page.wait_for_url(re.compile(rf"/user/{self.name}/lab"), timeout=self.deadline.ms(200))

    def open_lecture(self):
        """docs/teaching.md's nbgitpuller link: clone the course into the home folder, open the lecture in
        JupyterLab."""
        link = (
            f"{self.hub['url']}/hub/user-redirect/git-pull?repo=file://{self.hub['repo']}&branch=main"
            f"&urlpath=lab/tree/{REPO_NAME}/notebooks/{LECTURE.name}"
        )
        self.page.goto(link, timeout=self.deadline.ms(60))

    def wait_for_lecture(self):
        self.page.wait_for_url(re.compile(rf"/lab/tree/{REPO_NAME}/notebooks/"), timeout=self.deadline.ms(120))
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=self.deadline.ms(120))
        # the kernel the notebook names has started (a cell sent before that is dropped)
        self.page.wait_for_function(
            "name => (document.querySelector('#jp-main-statusbar')?.textContent || '').replace(/\\s+/g, ' ')"
            " .includes(name + ' | Idle')",
            arg=kernel.KERNEL_DISPLAY_NAME,
            timeout=self.deadline.ms(120),
        )

    def run_first_code_cells(self, cells):
        """Shift+Enter from the top, through the markdown, until the last of the wanted code cells has been sent."""
        last = cells[-1][0]
        first = self.page.locator(".jp-Notebook .jp-Cell").first
        first.click(position={"x": 5, "y": 5})
        self.page.keyboard.press("Escape")  # command mode: Shift+Enter runs a cell and selects the next
        for _ in range(last + 1):
            self.page.keyboard.press("Shift+Enter")

    def cell(self, index):
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def wait_until_run(self, index):
        prompt = self.cell(index).locator(".jp-InputPrompt").first
        self.page.wait_for_function(
            "el => /\\[\\d+\\]/.test(el.textContent)", arg=prompt.element_handle(), timeout=self.deadline.ms(240)
        )

    def outputs(self, index):
        return self.cell(index).locator(".jp-OutputArea-output").all_inner_texts()

    def screenshot(self):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        try:
            self.page.screenshot(path=SCREENSHOTS / f"{self.name}.png", timeout=10_000)
        except Exception as error:  # a screenshot is for a human; the test's own assertion says what failed
            print(f"no screenshot of {self.name}'s page: {error}")


@pytest.fixture(scope="module")
def browser(hub, chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=hub["chromium"], args=chromium.flags)
        yield browser
        browser.close()


def test_two_students_run_a_lecture_on_the_hub_offline(hub, browser):
    notebook = json.loads(LECTURE.read_text())
    cells = [
        (i, c)
        for i, c in enumerate(notebook["cells"])
        if c["cell_type"] == "code" and "claims" not in c["metadata"].get("tags", [])
    ][:CODE_CELLS]  # the claims cells between them run too, collapsed
    students = [Student(browser, hub, name) for name in USERS]
    start, times = time.monotonic(), {}

    def both(step):  # each step is started for both students before either is waited for: they work at once
        for student in students:
            getattr(student, step)()
        times[step] = round(time.monotonic() - start)

    try:
        for step in ("log_in", "wait_for_lab", "open_lecture", "wait_for_lecture"):
            both(step)
        for student in students:
            student.run_first_code_cells(cells)
        strict = numerics.nbval_mode() == "strict"  # the pinned kernel prints the committed digits
        for student in students:
            for index, _ in cells:
                student.wait_until_run(index)
            kernel_name = student.page.locator(".jp-Toolbar .jp-KernelName, .jp-KernelName").first.inner_text()
            assert kernel_name.strip() == kernel.KERNEL_DISPLAY_NAME, (
                f"{student.name}: the lecture ran in {kernel_name}"
            )
            for index, cell in cells:
                shown = "".join(student.outputs(index))
                assert "Traceback" not in shown and "Error" not in shown.split("\n")[0], (
                    f"{student.name}: cell {index} failed on the hub:\n{shown[-2000:]}\nhub log:\n{hub['log']()}"
                )
                expected = committed_outputs(cell)
                if strict and expected and compared(cell):
                    assert sanitize(shown) == sanitize(expected), f"{student.name}: cell {index} printed other digits"
            assert not student.off_loopback, f"{student.name}'s browser asked beyond loopback: {student.off_loopback}"
            assert not student.errors, f"{student.name}: JavaScript errors in JupyterLab: {student.errors}"
        times["cells run"] = round(time.monotonic() - start)
        print(f"seconds since the first login: {times}")
        print(f"network: {'a namespace with only loopback' if hub['isolated'] else 'host loopback, proxies closed'}")
    finally:
        for student in students:
            student.screenshot()  # also when a step failed: what the student saw
            student.context.close()
