"""The README's screenshots, made from the demo as it runs now: `clusterlab demo`'s scorecard and incident report,
shot in headless Chromium (Debian's `chromium`).

    python docs/make_screenshots.py                  # docs/img/scorecard.png and docs/img/incident-report.png
    python docs/make_screenshots.py --out DIR --quick  # CI: the demo and its pages; shots only where Chromium is

The demo runs through its command, as a reader runs it, into a temporary folder; each page is shot at
1,280 x 1,600 px, the top of the page as a reader first sees it. The facts the shots show (the ranking, the
incident's evidence lines) are printed beside them, to compare with what the demo prints.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
CHROMIUM = "chromium"
INCIDENT = "llama8b-pretrain:1:end"  # the README's incident: the Xid 79 that ended the demo's first attempt
SIZE = (1280, 1600)
SHOT_TIMEOUT_S = 120


def run_demo(folder: Path) -> Path:
    """`clusterlab demo --out FOLDER`; the folder of reports it wrote."""
    out = folder / "demo"
    res = subprocess.run([sys.executable, "-m", "clusterlab.cli", "demo", "--out", str(out)], capture_output=True,
                         text=True, timeout=600, check=False)
    if res.returncode != 0:
        raise SystemExit(f"clusterlab demo failed ({res.returncode}):\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return out / "reports"


def pages(reports: Path) -> dict[str, Path]:
    """The pages the README shows, by the name of their screenshot."""
    from clusterlab.reports.render import report_filename

    scorecards = sorted(reports.glob("scorecard-*.html"))
    incident = reports / f"{report_filename(INCIDENT)}.html"
    if not scorecards or not incident.exists():
        raise SystemExit(f"the demo wrote no scorecard or no report of {INCIDENT} in {reports}")
    return {"scorecard.png": scorecards[-1], "incident-report.png": incident}


def facts(reports: Path) -> dict:
    """What the shots show, read off the demo's own Markdown (the same data as the HTML)."""
    card = next(iter(sorted(reports.glob("scorecard-*.md"))), None)
    ranking = re.findall(r"^\d+\. \*\*(.+?)\*\*", card.read_text(), re.M) if card else []
    text = pages(reports)["incident-report.png"].with_suffix(".md").read_text()
    lines = re.search(r"\| Evidence lines \| ([\d,]+) \|", text)
    return {"ranking": ranking, "incident": INCIDENT, "evidence_lines": int(lines[1].replace(",", "")) if lines
            else None}


def shoot(page: Path, png: Path, chromium: str) -> None:
    """The top of `page` as a PNG, in a headless Chromium window of SIZE."""
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    # NOTE: --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
    argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--disable-background-networking", f"--window-size={SIZE[0]},{SIZE[1]}", f"--screenshot={png}",
            page.resolve().as_uri()]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=SHOT_TIMEOUT_S, check=False)
    if not png.exists() or png.stat().st_size == 0:
        raise SystemExit(f"chromium made no screenshot of {page} ({res.returncode}): {res.stderr[-1000:]}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=IMG, help=f"folder for the PNGs (default {IMG.relative_to(ROOT)})")
    p.add_argument("--quick", action="store_true", help="skip the shots where Chromium is missing (CI)")
    args = p.parse_args(argv)
    chromium = shutil.which(CHROMIUM)
    if chromium is None and not args.quick:
        raise SystemExit("needs Debian's chromium (apt-get install chromium), or --quick to check the rest")
    with tempfile.TemporaryDirectory(prefix="clusterlab-shots-") as tmp:
        reports = run_demo(Path(tmp))
        shown = facts(reports)
        for name, page in pages(reports).items():
            if chromium is None:
                print(f"{name}: {page.name} written (no chromium: not shot)")
                continue
            shoot(page, args.out / name, chromium)
            print(f"{name}: {args.out / name}")
    print(json.dumps(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
