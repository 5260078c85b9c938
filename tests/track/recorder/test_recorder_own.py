"""detsim's own recording: the second environment starts as a hard-linked copy of the first but for what asv
rewrites in place; asv's lines come out prefixed with their recording, its list of environments dropped; the
three phases take every benchmark once (the whole run, with stand-ins for asv: tests/test_ci_track.py)."""

from __future__ import annotations

import json
import os
import re
import sys

from detsim.track.recorder import own


def test_the_second_environment_is_the_first_linked_but_for_asvs_own_files(tmp_path):
    made = tmp_path / ".asv" / "env" / "abc"
    (made / "lib").mkdir(parents=True)
    (made / "lib" / "torch.so").write_text("big")
    (made / "asv-env-info.json").write_text(json.dumps({"python": "3.11"}))
    (made / "asv-install-status.json").write_text("{}")
    (made / "project").mkdir()
    (tmp_path / ".asv" / "env" / "unfinished").mkdir()  # no info file: asv never finished it
    own.copy_environments(tmp_path / ".asv" / "env")
    copy = tmp_path / ".asv" / "env-second" / "abc"
    assert sorted(p.name for p in copy.iterdir()) == ["asv-env-info.json", "lib"]
    assert os.stat(copy / "lib" / "torch.so").st_ino == os.stat(made / "lib" / "torch.so").st_ino
    assert os.stat(copy / "asv-env-info.json").st_ino != os.stat(made / "asv-env-info.json").st_ino
    assert sorted(p.name for p in copy.parent.iterdir()) == ["abc"]
    (copy / "lib" / "mine").write_text("kept")
    own.copy_environments(tmp_path / ".asv" / "env")  # an existing copy is left as it is
    assert (copy / "lib" / "mine").exists()


def test_asvs_lines_are_prefixed_with_their_recording_and_its_list_of_environments_dropped(tmp_path, capfd):
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "asv").write_text(f"#!{sys.executable}\nprint('Creating environment'); print('[<asv.env x>]')\n")
    (bin_ / "asv").chmod(0o755)
    recording = own.OwnRecording(tmp_path, "m")
    assert recording.wait(recording.asv("2", "c.json", "setup")) == 0
    assert recording.wait(recording.asv("1", "c.json", "run")) == 0
    assert capfd.readouterr().out == "[2] Creating environment\n[1] Creating environment\n[1] [<asv.env x>]\n"


def test_each_benchmark_name_is_in_exactly_one_phase():
    phases = [re.compile(p) for p in (own.EXACT_1, own.EXACT_2, own.TIMED)]
    for name, phase in [("bench_parity.track_x", 0), ("bench_determinism.CompiledHashes.track_h", 1),
                        ("bench_determinism.EagerHashes.track_h", 0), ("bench_engine.LargeDetectorMemory.peakmem", 1),
                        ("bench_engine.PathThroughput.track_ns_per_pixel_step", 2)]:
        assert [bool(p.search(name)) for p in phases] == [i == phase for i in range(3)], name
