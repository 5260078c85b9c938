"""``detsim-track publish``: the published folder, after ``asv publish``, readable at a glance and offline.

* :mod:`.vendor`: asv's page loads jQuery, flot and bootstrap from public CDNs; the same releases are
  copied from npm packages into ``reports/html/vendor/`` and the page's tags pointed at them;
* :mod:`.navlink`: one link to the status page in asv's navigation bar;
* :mod:`.rows`, :mod:`.links`: the latest verdict per family, with links into asv's graphs;
* :mod:`.graphs`: parity histories as inline SVG on a log scale of 1 - r, with the acceptance line;
* :mod:`.fingerprints`: per commit and golden case, whether the image is the same as at the previous
  recorded commit (the one place that reads the per-commit hashes for the page);
* :mod:`.page`: ``status.html``, self-contained (inline CSS and SVG, no script, no network).
"""
