"""detsim.track.base.where: the sidecar of detsim's own results read back as written, a commit recorded again
replacing its entries, a bad line named; the verdict's line counting workers recording by recording (two
recordings of two workers are not four workers), hosts and the commits measured here."""

from __future__ import annotations

import pytest

from detsim.track.base import where
from detsim.track.base.files import RecordingError
from detsim.track.base.where import Taken


def test_the_sidecar_is_read_back_as_written_and_a_commit_recorded_again_takes_its_new_entries(tmp_path):
    folder = tmp_path / "m"
    assert where.read_where(folder) == ()
    where.write_where(folder, ["a"], ())  # nothing measured on a cluster, none there: nothing written
    assert not folder.exists()
    first = [Taken("a", "r1", "tcp://h:1"), Taken("b", "r1", "tcp://h:2")]
    where.write_where(folder, ["a", "b"], first)
    assert where.read_where(folder) == tuple(first)
    where.write_where(folder, ["b", "c"], [Taken("c", "r2", "tcp://g:3")])  # b recorded here again
    assert where.read_where(folder) == (first[0], Taken("c", "r2", "tcp://g:3"))
    assert [p.name for p in folder.iterdir()] == [where.WHERE_FILE]  # no temporary file left
    assert not where.WHERE_FILE.endswith(".json")  # asv and the judge read every *.json as results


def test_a_line_that_is_no_record_is_named_and_the_recorder_refuses_to_rewrite_it(tmp_path):
    (tmp_path / where.WHERE_FILE).write_text('{"commit": "a", "run": "r", "worker": "w"}\n{"commit": "b"}\n')
    with pytest.raises(ValueError, match=rf"{where.WHERE_FILE}:2: not a record"):
        where.read_where(tmp_path)
    with pytest.raises(RecordingError, match="remove it to record again"):
        where.write_where(tmp_path, ["a"], ())


def test_workers_are_counted_per_recording_with_their_hosts_and_the_commits_measured_here():
    measured = [Taken("c1", "r1", "tcp://10.0.0.7:1"), Taken("c1", "r1", "tcp://10.0.0.7:2"),
                Taken("c2", "r2", "tcp://10.0.0.7:3"), Taken("c2", "r2", "tcp://10.0.0.8:4"),
                Taken("old", "r0", "tcp://10.0.0.9:5")]  # a commit not judged: not counted
    line = where.where_note("box", ["c1", "c2", "c3"], measured, "parity")
    assert line == ("where it was measured: the timings on machine box alone (the machine this history belongs to); "
                    "parity of 2 of the 3 commits judged by Dask workers in 2 recordings (2 + 2 worker processes) "
                    "on 10.0.0.7, 10.0.0.8 (`detsim-track record --workers/--scheduler`), of the other 1 on machine box")
    assert "by 2 Dask worker process(es) in one recording on 10.0.0.7 (" in where.where_note("box", ["c1"], measured,
                                                                                            "parity")
    assert where.where_note("box", ["c3"], measured, "parity") is None
    unnamed = where.where_note("box", ["c1", "c3"], [Taken("c1", None, "tcp://h:1"), Taken("c1", None, "tcp://h:2")],
                               "parity")
    assert "by 2 Dask worker address(es) of recordings that stored no name on h" in unnamed


def test_a_recordings_name_is_new_each_time():
    assert where.new_run() != where.new_run()
