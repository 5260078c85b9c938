"""End-to-end proof of the asv tracking suite (slow): planted changes are flagged exactly, at the
right commits, and the published history renders as graphs in a real headless browser.

A throwaway git repository starts with a commit that has no package yet, then a base commit made
from this work tree (where the golden baseline is refreshed deliberately, as a maintainer would), then
five planted commits:

    unchanged (README) -> 2x slowdown -> parity break -> image-hash change with r unchanged -> unchanged

asv runs over all seven with the engine timings (PathThroughput), parity and determinism tracks (the compiled path's hash count included), and ``detsim-track`` must report exactly
the three planted changes. The parity
break necessarily changes its case's image too, so that case's hash is flagged at the same commit.
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from detsim.track.report.asvpage import remote_loads
from planted_history import append as _append, commit as _commit, copy_project, run as _run, start

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
ASSET_CACHE = REPO / ".asv" / "www-assets"  # the page's JavaScript libraries, fetched once with npm
MACHINE = "planted"
BENCHMARKS = r"PathThroughput|bench_parity|bench_determinism"
PARITY_CASE = "w01_nonsquare_detpixels"  # the only golden case with a 120 x 200 image
HASH_CASE = "w03_nonsquare_xds"  # the only golden case with a 176 x 96 image

# Each plant is appended to detsim/rendering/engine.py and wraps the render() of the commit before it.
SLOWDOWN = '''
_render_before_slowdown = render


def render(setup, **kwargs):  # planted: every image is rendered twice
    _render_before_slowdown(setup, **kwargs)
    return _render_before_slowdown(setup, **kwargs)
'''
PARITY_BREAK = '''
_render_before_parity_break = render


def render(setup, **kwargs):  # planted: one case's image is shifted by 5 pixels
    image, info = _render_before_parity_break(setup, **kwargs)
    if tuple(image.shape) == (120, 200):
        image = image.roll(5, dims=1)
    return image, info
'''
HASH_CHANGE = '''
_render_before_hash_change = render


def render(setup, **kwargs):  # planted: one case's image is scaled by 1 + 2^-40 (r unchanged)
    image, info = _render_before_hash_change(setup, **kwargs)
    if tuple(image.shape) == (176, 96):
        image = image * (1 + 2.0 ** -40)
    return image, info
'''


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The throwaway repository after ``asv run`` over the planted commits, and the commit ids."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("asv", reason="asv is not installed (pip install -e '.[dev]')")
    work = tmp_path_factory.mktemp("planted")
    root, env, log = start(work)
    (root / "README.md").write_text("detsim, before the package existed\n")
    commits = {"no_package": _commit(root, "Before the package: a README only")}

    copy_project(root)

    track = [sys.executable, "-m", "detsim.track.cli"]
    _run([*track, "baselines", "--refresh", "--allow-dirty"], root, env, log)
    commits["base"] = _commit(root, "Base: the project as it is, golden baseline refreshed here")
    _append(root / "README.md", "\nA line of documentation.\n")
    commits["unchanged"] = _commit(root, "Docs only")
    _append(root / "detsim" / "rendering" / "engine.py", SLOWDOWN)
    commits["slowdown"] = _commit(root, "Plant a 2x slowdown")
    _append(root / "detsim" / "rendering" / "engine.py", PARITY_BREAK)
    commits["parity"] = _commit(root, f"Plant a parity break in {PARITY_CASE}")
    _append(root / "detsim" / "rendering" / "engine.py", HASH_CHANGE)
    commits["hash"] = _commit(root, f"Plant a bitwise change in {HASH_CASE}")
    _append(root / "README.md", "\nAnother line of documentation.\n")
    commits["unchanged_tip"] = _commit(root, "Docs only, again")

    hashfile = work / "commits.txt"
    hashfile.write_text("\n".join(commits.values()) + "\n")
    asv = [sys.executable, "-m", "asv"]
    _run([*asv, "machine", "--yes", "--machine", MACHINE], root, env, log)
    started = time.monotonic()
    # asv exits 2 because the first commit cannot be built; a range over it must still go through
    _run([*asv, "run", "--machine", MACHINE, "--record-samples", "--show-stderr", "-b", BENCHMARKS,
          f"HASHFILE:{hashfile}"], root, env, log, ok=(0, 2))
    seconds = time.monotonic() - started
    report_path = work / "report.json"
    code = _run([*track, "regressions", "--json", str(report_path)], root, env, log, ok=(0, 1, 2))
    return {"root": root, "env": env, "log": log, "commits": commits, "exit": code, "asv_run_s": seconds,
            "report": next(iter(json.loads(report_path.read_text())["machines"].values()))}


def test_planted_changes_are_flagged_exactly_at_their_commits(planted):
    commits, report = planted["commits"], planted["report"]
    name = {sha: key for key, sha in commits.items()}
    # the flags: every finding but the timing steps that stayed suspects or were found to be noise
    flags = [r for r in report["regressions"] if r.get("confirmation") not in ("undecided", "noise")]
    found = [(r["family"], r.get("case") or r["benchmark"] + r["params"], name.get(r["first_bad"])) for r in flags]
    steps = [(r["confirmation"], r["benchmark"] + r["params"], name.get(r["first_bad"]))
             for r in report["regressions"] if r.get("confirmation") in ("undecided", "noise")]
    summary = ("\n".join(map(str, found + steps)) + f"\nnotes: {report['notes']}\nunmeasured: {report['unmeasured']}")

    assert report["unmeasured"] == [], summary
    assert planted["exit"] == 1, summary
    assert {commit for _, _, commit in found} == {"slowdown", "parity", "hash"}, summary

    # The slowdown doubles every render: the largest timing steps at its commit are re-measured at both
    # commits and confirmed; nothing is confirmed anywhere else (steps elsewhere are noise or suspects).
    timing = [f for f in found if f[0] == "timing"]
    assert timing and all(commit == "slowdown" for _, _, commit in timing), summary
    # (a render is only part of simulate(): the smallest detectors re-measured x1.35 in one run, the largest x1.8)
    confirmed = [r for r in flags if r.get("confirmation") == "confirmed"]
    assert confirmed and all(r["remeasured_ratio"] > 1.25 and r["remeasured_p"] < 0.01 for r in confirmed), summary
    assert max(r["remeasured_ratio"] for r in confirmed) > 1.6, summary

    parity = [(case, commit) for family, case, commit in found if family == "parity"]
    assert parity == [(PARITY_CASE, "parity")], summary
    [broken] = [r for r in report["regressions"] if r["family"] == "parity"]
    assert broken["new_r"] < 0.9995 and broken["last_good"] == commits["slowdown"], broken

    hashes = sorted((case, commit) for family, case, commit in found if family == "determinism")
    assert hashes == sorted([(PARITY_CASE, "parity"), (HASH_CASE, "hash")]), summary
    [changed] = [r for r in report["regressions"] if r.get("case") == HASH_CASE]
    assert changed["last_good"] == commits["parity"]
    # image fingerprints (the first 13 hex digits of the sha256) live in asv's own results
    assert re.fullmatch(r"[0-9a-f]{13}", changed["old_sha256"]) and re.fullmatch(r"[0-9a-f]{13}", changed["new_sha256"])
    assert changed["old_sha256"] != changed["new_sha256"]
    # the compiled path renders the planted images too: its count of changed cases rises at the parity break
    counted = [r for r in report["regressions"] if r["family"] == "hash count"]
    assert [(r["benchmark"], name.get(r["first_bad"]), r["new"]) for r in counted] == [
        ("bench_determinism.CompiledHashes.track_cases_changed", "parity", 2.0)], summary
    assert {family for family, *_ in found} <= {"timing", "parity", "determinism", "hash count"}, summary
    assert not (planted["root"] / "results" / "hashes").exists()  # asv's run writes nothing but its results
    assert report["commits"] == list(commits.values())
    # the commit without a package is recorded as failed: its build fails, so nothing of the commit
    # installed before it (the shared environment keeps one) is measured in its name
    rows = [row for path in (planted["root"] / "results" / "asv" / MACHINE).glob(commits["no_package"][:8] + "-*.json")
            for row in json.loads(path.read_text())["results"].values()]
    assert rows and all(value is None for row in rows for value in (row[0] if isinstance(row[0], list) else [row[0]]))


# -- the published page in a real browser --------------------------------------------------------

BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 # no network: every host name fails to resolve; the local server (an IP address) still answers
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


def _browser() -> tuple[str, str | None]:
    """Chromium, and chromedriver where installed (without it the DOM is checked instead of pixels)."""
    chromium = os.environ.get("DETSIM_CHROMIUM") or next(
        (found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None)
    if not chromium:
        pytest.skip("no Chromium binary found (install chromium, ideally with chromium-driver, or set DETSIM_CHROMIUM)")
    return chromium, os.environ.get("DETSIM_CHROMEDRIVER") or shutil.which("chromedriver")


def _dump_dom(chromium: str, url: str, profile: Path) -> str:
    """The page's DOM after its scripts ran (up to 20 s of virtual time), from headless Chromium alone."""
    done = subprocess.run([chromium, *BROWSER_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=20000",
                           "--dump-dom", url], capture_output=True, text=True, timeout=180)
    return done.stdout


def _publish_offline(planted: dict) -> Path:
    """``detsim-track publish``: the status page beside asv's, and asv's CDN scripts and styles pointed at
    local copies of the same releases, from npm packages cached under .asv/www-assets (this machine and CI
    reach only package registries). The published folder."""
    html = planted["root"] / "reports" / "html"
    _run([sys.executable, "-m", "detsim.track.cli", "publish", "--assets", str(ASSET_CACHE)], planted["root"],
         planted["env"], planted["log"])
    if remote_loads((html / "index.html").read_text()):
        pytest.skip(f"npm is needed once to fetch asv's scripts into {ASSET_CACHE} (asv's page loads them from CDNs)")
    return html


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _WebDriver:
    """The few W3C WebDriver calls the test needs, over plain HTTP to a local chromedriver."""

    def __init__(self, driver: str, chromium: str, profile: Path):
        self.port = _free_port()
        self.process = subprocess.Popen([driver, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                self._call("GET", "/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.process.kill()
                    raise
                time.sleep(0.2)
        options = {"binary": chromium, "args": [*BROWSER_FLAGS, f"--user-data-dir={profile}"]}
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}}
        self.session = self._call("POST", "/session", caps)["value"]["sessionId"]

    def _call(self, method: str, path: str, body=None):
        request = urllib.request.Request(self.base + path, method=method, headers={"Content-Type": "application/json"},
                                         data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def get(self, url: str) -> None:
        self._call("POST", f"/session/{self.session}/url", {"url": url})

    def run(self, script: str):
        return self._call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": []})["value"]

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self._call("GET", f"/session/{self.session}/screenshot")["value"]))

    def close(self) -> None:
        try:
            self._call("DELETE", f"/session/{self.session}")
        finally:
            self.process.terminate()
            self.process.wait(timeout=30)


GRAPH_STATE = """
const base = document.querySelector('#graph-display canvas.flot-base') || document.querySelector('canvas.flot-base');
let coloured = 0;  // series are drawn in colour; the frame, grid and ticks are grey
if (base) {
  const d = base.getContext('2d').getImageData(0, 0, base.width, base.height).data;
  for (let i = 0; i < d.length; i += 4)
    if (d[i + 3] > 0 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) coloured++;
}
return {title: document.title, coloured: coloured,
        text: document.body.innerText,
        loaded: performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/graphs/'))};
"""


# the graph drawn last is erased before the next page opens: on a busy machine the old drawing is still there
# while the new page's data is fetched, and would be counted as the new page's series
ERASE_GRAPHS = """
for (const c of document.querySelectorAll('canvas.flot-base')) {
  const x = c.getContext('2d');
  x.save(); x.setTransform(1, 0, 0, 1, 0, 0); x.clearRect(0, 0, c.width, c.height); x.restore();
}
"""


def _graph_data_loaded(state: dict, benchmark: str) -> bool:
    return any("/machine-" in url and url.split("?")[0].endswith(f"/{benchmark}.json") for url in state["loaded"])


def _wait_for_graph(browser: _WebDriver, min_coloured: int, benchmark: str | None = None,
                    timeout: float = 60) -> dict:
    """The page's state once ``min_coloured`` pixels of series are drawn (and ``benchmark``'s graph data was
    fetched), or at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        state = browser.run(GRAPH_STATE)
        ready = state["coloured"] >= min_coloured and (benchmark is None or _graph_data_loaded(state, benchmark))
        if ready or time.monotonic() > deadline:
            return state
        time.sleep(0.5)


def test_published_history_renders_parity_and_determinism_next_to_timings(planted, tmp_path):
    chromium, driver = _browser()
    root, env = planted["root"], planted["env"]
    _run([sys.executable, "-m", "asv", "publish"], root, env, planted["log"])
    assert (root / "reports" / "html" / "index.html").exists()
    html = _publish_offline(planted)
    status = (html / "status.html").read_text()
    for family in ("parity", "determinism"):  # the planted exact changes, red on the status page
        assert f'data-family="{family}" data-status="regressed"' in status, family
    # the slowdown: red, or grey "undecided" where the re-measurement could not decide it on this busy machine
    assert re.search(r'data-family="timing" data-status="(regressed|not measured)"', status), "timing"

    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    try:
        if driver:
            _check_pixels(driver, chromium, site, tmp_path)
        else:
            _check_dom(chromium, site, tmp_path)
    finally:
        server.shutdown()


PAGES = ("bench_engine.PathThroughput.track_ns_per_pixel_step", f"bench_parity.track_parity_{PARITY_CASE}",
         f"bench_determinism.track_hash_changed_{HASH_CASE}")


def _check_pixels(driver: str, chromium: str, site: str, tmp_path: Path) -> None:
    """Through chromedriver: each graph's data was fetched and its series drawn in colour."""
    browser = _WebDriver(driver, chromium, tmp_path / "profile")
    try:
        browser.get(site)
        grid = _wait_for_graph(browser, min_coloured=1)
        browser.screenshot(tmp_path / "grid.png")
        assert "airspeed velocity" in grid["title"], grid["title"]
        for family in ("bench_engine", "bench_parity", "bench_determinism"):
            assert family in grid["text"], f"{family} missing from the benchmark grid"
        for benchmark in PAGES:
            # the browser keeps 250 resource timings by default; the grid's own fetches can fill that, and
            # later ones are dropped: keep room, and list only what opening this benchmark fetches
            browser.run("performance.setResourceTimingBufferSize(100000); performance.clearResourceTimings();"
                        + ERASE_GRAPHS)
            browser.get(f"{site}#{benchmark}")
            state = _wait_for_graph(browser, min_coloured=200, benchmark=benchmark)
            browser.screenshot(tmp_path / f"{benchmark}.png")
            assert benchmark in state["text"], f"{benchmark}: page did not open ({state['title']})"
            assert _graph_data_loaded(state, benchmark), f"{benchmark}: its graph data was never loaded: {state['loaded']}"
            assert state["coloured"] >= 200, f"{benchmark}: no series drawn ({state['coloured']} coloured px)"
    finally:
        browser.close()


def _check_dom(chromium: str, site: str, tmp_path: Path) -> None:
    """Chromium alone: each graph page ends up with a flot plot with its axis ticks."""
    grid = _dump_dom(chromium, site, tmp_path / "profile")
    for family in ("bench_engine", "bench_parity", "bench_determinism"):
        assert family in grid, f"{family} missing from the benchmark grid"
    for benchmark in PAGES:
        dom = _dump_dom(chromium, f"{site}#{benchmark}", tmp_path / "profile")
        (tmp_path / f"{benchmark}.html").write_text(dom)
        assert benchmark in dom, f"{benchmark}: page did not open"
        assert 'class="flot-base"' in dom, f"{benchmark}: no plot"
        assert dom.count("flot-tick-label") >= 4, f"{benchmark}: the plot has no axis ticks (no data drawn)"
