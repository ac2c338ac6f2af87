"""Screenshots of every mycel-insight page for docs/insight.md: builds the demo log directory
(tests/python/insight_demo_logdir.py), serves it, and saves one PNG per page from headless
Chromium.   .venv/bin/python scripts/insight_screenshots.py [--out docs/insight]"""
import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

from insight_browser import browser_missing, chromium, live_server, open_page  # noqa: E402
from insight_demo_logdir import make_demo_logdir  # noqa: E402

PAGES = ("scalars", "histograms", "images", "graph", "dataset", "profiler", "lineage")


def prepare(driver, page):
    """What a reader would click before looking: the graph page opens a scope and an op."""
    if page == "graph":
        for scope in ("Default/network", "Default/network/_backbone"):
            driver.execute_script(
                "document.querySelector(`.group[data-scope='${arguments[0]}'] > .group-head`)"
                ".click()", scope)
        driver.execute_script("document.querySelector('.op[data-name*=conv2d]').click()")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "insight"))
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    args = ap.parse_args()
    why = browser_missing()
    if why:
        sys.exit(f"insight_screenshots: {why}")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        make_demo_logdir(tmp)
        with live_server(tmp) as base, chromium(args.width, args.height) as driver:
            for page in PAGES:
                open_page(driver, f"{base}/{page}")
                prepare(driver, page)
                path = os.path.join(args.out, f"{page}.png")
                tmp_png = path + ".tmp.png"
                driver.save_screenshot(tmp_png)
                os.replace(tmp_png, path)
                print(path)


if __name__ == "__main__":
    main()
