"""The tracking run (.ci/track) keeps tools' caches inside the checkout: what it writes elsewhere is only
what docs/tracking.md names."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / ".ci" / "track").read_text()


def test_virtualenv_keeps_its_app_data_in_the_checkout_for_every_asv_call():
    export = re.search(r'^export VIRTUALENV_APP_DATA="\$PWD/(\.asv/[^"]+)"$', SCRIPT, re.M)
    assert export, "the tracking run must export VIRTUALENV_APP_DATA inside .asv (else ~/.cache/virtualenv)"
    first_asv = re.search(r"^\$V/asv ", SCRIPT, re.M)
    assert first_asv and export.start() < first_asv.start()
    assert SCRIPT.index("cd \"$(dirname \"$0\")/..\"") < export.start()  # $PWD is the checkout there
