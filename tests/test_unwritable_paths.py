"""A folder that cannot be made (its parent is not a place for one: /proc on Linux) is said as
such, with the option to change, and nothing is written elsewhere."""
import sys

import pytest

from sparkpredict.errors import InputError, StoreError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")


def test_a_store_whose_folder_cannot_be_made_names_a_writable_folder():
    from sparkpredict import store as store_mod

    with pytest.raises(StoreError) as err:
        store_mod.open("/proc/sparkpredict-no-such/store", create=True)
    # ENOENT while making the folder: not "the batch's files went while they were written"
    assert "choose a writable folder" in err.value.fix and "went while" not in err.value.fix


def test_demo_work_folder_that_cannot_be_made_names_workdir(tmp_path):
    from sparkpredict.demo import run_demo

    with pytest.raises(InputError) as err:
        run_demo(store=str(tmp_path / "store"), workdir="/proc/sparkpredict-no-such/demo")
    assert "cannot create the demo's work folder" in err.value.message
    assert "--workdir" in err.value.fix and "--store" in err.value.fix
    assert list(tmp_path.iterdir()) == []  # refused before the store was made
