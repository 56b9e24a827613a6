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
WIDTH = 1400  # the window a person reviews the Explorer and the scorecard in
# screenshots kept after the run, for a person to look at (CI keeps the folder as an artefact)
ARTIFACTS = Path(os.environ.get("CLUSTERLAB_ARTIFACTS", ROOT / "test-artifacts")) / "screenshots"
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
            page = browser.new_page(viewport={"width": WIDTH, "height": 1500})
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
            _check_views_fit(page)
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


def _shoot(target, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    target.screenshot(path=str(path))
    return path


def _open_tab(explorer, title: str):
    explorer.locator(".lm-TabBar-tab", has_text=title).first.click()
    pane = explorer.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)").first
    pane.wait_for(timeout=30_000)
    return pane


# what is cut off: an element whose content is wider than its box, or whose box ends past the window
_CUT = """(els) => els.filter(e => e.offsetParent !== null).map(e => {
    const r = e.getBoundingClientRect();
    return {text: (e.innerText || '').slice(0, 60), cut: e.scrollWidth > e.clientWidth + 1,
            past: r.right > window.innerWidth + 1, width: r.width};
}).filter(x => x.cut || x.past)"""


def _open_file_browser(page) -> None:
    """The file browser open beside the notebook, as a person works: the notebook keeps ~1,100 of 1,400 px."""
    if not page.locator("#filebrowser").is_visible():
        page.locator('.lm-TabBar-tab[data-id="filebrowser"]').first.click()
        page.locator("#filebrowser").wait_for(state="visible", timeout=10_000)
    page.wait_for_timeout(500)


def _check_views_fit(page) -> None:
    """At 1,400 px with the file browser open every view of the Explorer is readable: the incidents table scrolls
    in its box (never past the notebook's edge), the tab titles are whole, the evidence text has room, the buttons
    and the relaunch command are whole, the figures are not cut; a screenshot of each is kept."""
    _open_file_browser(page)
    explorer = page.locator(".jp-CodeCell").last.locator(".jp-OutputArea-output")
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    _shoot(page, "explorer-1400.png")
    assert page.evaluate(_CUT, explorer.locator("img.widget-image").element_handles()) == []
    assert page.evaluate(_CUT, explorer.locator(".lm-TabBar-tabLabel").element_handles()) == []
    incidents = explorer.locator(".cl-box").first  # the incidents table, wider than the notebook
    right, edge = incidents.evaluate("b => [b.getBoundingClientRect().right, "
                                     "Math.min(window.innerWidth, b.closest('.jp-OutputArea-output')"
                                     ".getBoundingClientRect().right)]")
    assert right <= edge + 1, f"the incidents table runs {right - edge:.0f} px past the notebook's edge"

    pane = _open_tab(explorer, "Evidence")
    pane.locator("td.cl-text").first.wait_for(timeout=30_000)
    text_cells = pane.locator("td.cl-text")
    widths = text_cells.evaluate_all("cs => cs.map(c => [c.getBoundingClientRect().width, c.getBoundingClientRect()"
                                     ".right, c.closest('.cl-box').getBoundingClientRect().right])")
    assert all(w >= 400 for w, _, _ in widths), f"evidence text squeezed: {widths}"
    assert all(right <= box + 1 for _, right, box in widths), f"evidence text cut off: {widths}"
    pane.scroll_into_view_if_needed()
    _shoot(page, "explorer-evidence-1400.png")

    pane = _open_tab(explorer, "Review")
    assert page.evaluate(_CUT, pane.locator("button").element_handles()) == []
    _shoot(page, "explorer-review-1400.png")

    pane = _open_tab(explorer, "Step times")
    page.wait_for_function("(p) => [...p.querySelectorAll('img.widget-image')].every(i => i.naturalWidth > 100)",
                           arg=pane.element_handle(), timeout=60_000)
    assert page.evaluate(_CUT, pane.locator("img.widget-image").element_handles()) == []
    _shoot(page, "explorer-step-times-1400.png")

    pane = _open_tab(explorer, "Relaunch")
    pane.locator("pre").first.wait_for(timeout=60_000)
    assert "sbatch" in pane.locator("pre").first.inner_text()
    assert page.evaluate(_CUT, pane.locator("pre, button").element_handles()) == []
    _shoot(page, "explorer-relaunch-1400.png")


def test_the_scorecard_fits_a_1400_px_window(chromium: Path, tmp_path: Path, bundle_db_copy: Path) -> None:
    """No table of the week's scorecard hides a column behind a horizontal scroller at 1,400 px."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (a test dependency)")
    from clusterlab import Lab
    from clusterlab.reports.render import write_week

    with Lab(bundle_db_copy, read_only=True) as lab:
        write_week(lab.con, "2026-W48", tmp_path, fmts=("html",))
    page_path = next(tmp_path.glob("scorecard-*.html"))
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
            page.goto(page_path.as_uri())
            scrolled = page.evaluate("""() => [...document.querySelectorAll('div.wide')]
                .filter(d => d.scrollWidth > d.clientWidth + 1)
                .map(d => (d.querySelector('th') || d).textContent.slice(0, 40))""")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "scorecard-1400.png"), full_page=True)
        finally:
            browser.close()
    assert scrolled == [], f"tables that scroll sideways at {WIDTH} px: {scrolled}"
