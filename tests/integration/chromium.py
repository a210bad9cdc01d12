"""A page as a person sees it: a screenshot in headless Chromium and the colours in it, for the
fleet audit page (test_fleet.py) and the preview report (test_preview_report_job.py)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def screenshot_colours(page: Path, screenshot: Path, size: tuple[int, int]) -> set:
    """The RGB colours of a ``size`` screenshot of ``page`` saved as ``screenshot``; skips the test
    when Chromium is not installed."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (make chromium installs it from Debian's packages); "
                    "the page's other checks ran")
    with tempfile.TemporaryDirectory(prefix="applyset-chromium-") as profile:
        proc = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                               f"--screenshot={screenshot}", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert screenshot.exists(), proc.stdout + proc.stderr
    from PIL import Image  # matplotlib's dependency, in requirements-dev.txt

    with Image.open(screenshot) as image:
        assert image.size == size
        return {colour for _count, colour in image.convert("RGB").getcolors(maxcolors=1 << 24)}
