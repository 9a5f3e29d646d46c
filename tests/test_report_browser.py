"""The HTML report opened in a real headless browser (Debian's ``chromium``): every chart image loads, the
tables are there, and a screenshot shows a drawn page. Skipped, saying why, where chromium is not installed
(``make test-browser`` installs it and runs this)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report import runs  # noqa: F401 - the two fake evaluation runs, as a fixture

from tinytool.eval.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no headless browser: Debian's chromium package is not "
                                                         "installed (make test-browser installs it)")

#: appended to a copy of the page: once everything has loaded, what the page holds, written into the page
PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const out = {images: imgs.length, broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0))
                 .map(i => i.getAttribute('src')),
               tables: document.querySelectorAll('table').length, rows: document.querySelectorAll('tr').length};
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--allow-file-access-from-files", *args],
                          check=False, capture_output=True, text=True, timeout=120)


def test_the_report_renders_with_every_chart_loaded(runs, tmp_path):  # noqa: F811
    paths = write_report(list(runs), tmp_path / "report", worst=6)
    html = paths["html"]
    probe = html.with_name("probe.html")
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    res = _chromium("--virtual-time-budget=5000", "--dump-dom", probe.as_uri(), profile=tmp_path / "p1")
    m = re.search(r'<pre id="probe">(.*?)</pre>', res.stdout)
    assert m, res.stderr[-2000:]
    seen = json.loads(m.group(1).replace("&quot;", '"'))
    assert seen["images"] == len(paths["charts"]) >= 2 and seen["broken"] == []
    assert seen["tables"] >= 2 and seen["rows"] >= 6

    shot = tmp_path / "shot.png"
    _chromium(f"--screenshot={shot}", "--window-size=1280,1600", "--hide-scrollbars", html.as_uri(),
              profile=tmp_path / "p2")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (1600, 1280) and float(pixels.std()) > 0.02  # something is drawn, not a blank page
