"""Write docs/images/report.png, the README's picture of the report: the demo's report
opened in Debian's Chromium at 1200x760 (run `gamut demo --out runs/demo` first)."""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    report = Path("runs/demo/report.html").resolve()
    if not report.is_file():
        print(f"{report}: no report; run `gamut demo --out runs/demo` first", file=sys.stderr)
        return 2
    out = ROOT / "docs" / "images" / "report.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=str(out))
        browser.close()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
