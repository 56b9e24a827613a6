"""A real JupyterLab in headless Chromium runs the investigation notebook and shows the Explorer."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK = "notebooks/01_investigate_run.ipynb"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
RUN_ALL_TIMEOUT_MS = 240_000
SERVER_LOGS: dict[str, Path] = {}  # url -> the jupyter server's log, shown when a test fails


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium, installed with apt when missing (CI is a fresh machine and runs as root)."""
    if not CHROMIUM.exists():
        if os.geteuid() != 0:
            pytest.skip(f"{CHROMIUM} is missing and installing it needs root (apt-get install chromium)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run("apt-get update -qq && apt-get install -y -qq chromium", shell=True, check=True, env=env,
                       timeout=900, stdout=subprocess.DEVNULL)
    return CHROMIUM


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(url: str, proc: subprocess.Popen, timeout_s: float = 90) -> None:
    """Poll the server's status API until it answers (or the server died)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/api/status", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"jupyter lab did not answer at {url} within {timeout_s} s")


def _user_settings(root: Path) -> Path:
    """JupyterLab settings for the test: no autosave (outputs never reach the repo), no news or update checks."""
    settings = {"docmanager-extension/plugin": {"autosave": False},
                "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}}
    for name, values in settings.items():
        path = root / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return root


@pytest.fixture(scope="session")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`jupyter lab` on a free loopback port, no token, rooted at the repo; stopped by PID at the end."""
    home = tmp_path_factory.mktemp("jupyter")
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "IPYTHONDIR": str(home / "ipython")}
    cmd = [str(Path(sys.executable).with_name("jupyter-lab")), "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--IdentityProvider.token=",
           "--ServerApp.password=", f"--ServerApp.root_dir={ROOT}",
           f"--LabApp.user_settings_dir={_user_settings(home / 'user-settings')}",
           f"--LabApp.workspaces_dir={home / 'workspaces'}", "--ServerApp.jpserver_extensions=jupyter_lsp=False"]
    if os.geteuid() == 0:  # CI runs as root; jupyter refuses that unless told
        cmd.append("--allow-root")
    log = (home / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    SERVER_LOGS[url] = home / "server.log"
    try:
        _wait_up(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_notebook_runs_in_jupyterlab_and_shows_the_explorer(chromium: Path, jupyter: str, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (a test dependency)")
    before = (ROOT / NOTEBOOK).read_bytes()
    t0 = time.perf_counter()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1500})
            page.goto(f"{jupyter}/lab/tree/{NOTEBOOK}")
            try:
                _run_all_cells(page)
            except sync_api.TimeoutError:
                page.screenshot(path=str(tmp_path / "timeout.png"))
                prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
                log = _tail(SERVER_LOGS[jupyter])
                raise AssertionError(f"the cells did not all run; prompts {prompts}; screenshot "
                                     f"{tmp_path / 'timeout.png'}; server log tail:\n{log}") from None
            shot = _check_explorer(page, tmp_path)
        finally:
            browser.close()
    print(f"browser test: {time.perf_counter() - t0:.1f} s; screenshot {shot}")
    assert (ROOT / NOTEBOOK).read_bytes() == before, "the notebook file was modified"
    shutil.rmtree(ROOT / "notebooks" / ".ipynb_checkpoints", ignore_errors=True)


def _tail(path: Path, n: int = 3000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else "(none)"


def _accept_kernel_dialog(page) -> None:
    """JupyterLab sometimes asks which kernel to start even though the notebook names one: take its default.

    The modal dialog would otherwise swallow the clicks on the Run menu.
    """
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    try:
        dialog.wait_for(timeout=5_000)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError: no dialog, nothing to do
        return
    dialog.locator(".jp-mod-accept").click()
    dialog.wait_for(state="detached", timeout=10_000)


def _run_all_cells(page) -> None:
    """Wait for an idle kernel, run every cell through the Run menu, wait until the last one has run."""
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    _accept_kernel_dialog(page)
    page.wait_for_function("() => document.querySelector('.jp-Notebook-ExecutionIndicator')"
                           "?.getAttribute('data-status') === 'idle'", timeout=60_000)
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function("""() => {
        const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
        return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
    }""", timeout=RUN_ALL_TIMEOUT_MS)


def _check_explorer(page, tmp_path: Path) -> Path:
    """The Explorer's controls and plot images are in the page, with no error output; returns the screenshot."""
    errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    assert errors.count() == 0, errors.first.inner_text()
    explorer = page.locator(".jp-CodeCell").last.locator(".jp-OutputArea-output")
    explorer.locator(".widget-tab").wait_for(timeout=60_000)
    for label in ("provider", "cluster", "run", "time", "incident", "host"):
        assert explorer.locator(".widget-label", has_text=label).count() >= 1, f"no {label} control"
    assert explorer.locator("select").first.is_visible()
    assert "llama8b-pretrain" in explorer.locator("select").nth(2).input_value()
    images = explorer.locator("img.widget-image")
    assert images.count() >= 2
    page.wait_for_function("(n) => [...document.querySelectorAll('img.widget-image')].slice(0, n)"
                           ".every(i => i.complete && i.naturalWidth > 100)", arg=2, timeout=30_000)
    assert "Error displaying widget" not in page.content()
    # NOTE: the notebook panel is the scroller, so the Explorer is brought to the top of it before the shot
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    shot = tmp_path / "explorer.png"
    page.screenshot(path=str(shot))
    return shot
