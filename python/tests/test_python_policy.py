"""Policies written in Python, replayed by the engine beside the built-ins."""
import pickle

import pytest

import allocsim
from best_fit import BestFit


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("on_oom", ["stop", "continue"])
def test_best_fit_in_python_is_the_built_in_bestfit(seed, on_oom):
    workload = f"random:n=3000,seed={seed},live=256MiB"
    ours = allocsim.run(workload, policy=BestFit, capacity="300MiB", on_oom=on_oom)
    theirs = allocsim.run(workload, policy="bestfit", capacity="300MiB", on_oom=on_oom)
    assert ours.policy == "py:BestFit"
    for field in ("peak_allocated_bytes", "peak_reserved_bytes", "peak_requested_bytes", "oom_count",
                  "first_oom_event", "first_oom_bytes", "device_mallocs", "device_frees", "events_replayed"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert [oom.event for oom in ours.ooms] == [oom.event for oom in theirs.ooms]


def test_some_seed_runs_out_of_memory():
    assert allocsim.run("random:n=3000,seed=1,live=256MiB", policy=BestFit, capacity="300MiB",
                        on_oom="continue").oom_count > 0


def test_a_python_policy_beside_a_built_in_tenant():
    result = allocsim.run("random:n=500,seed=5", policy=BestFit, capacity="4GiB",
                          tenants=["random:n=500,seed=6@caching"])
    assert [t.policy for t in result.tenants] == ["py:BestFit", "caching"]
    assert result.timeline.reserved.max() > 0


def test_release_and_check_mode():
    trace = allocsim.Trace.from_arrays([0, 1, 2, 3], ["alloc", "free", "release", "alloc"], [1, 1, -1, 2],
                                       [1000, 0, 0, 5000])
    result = allocsim.run(trace, policy=BestFit, check=True)
    assert result.device_frees == 1 and result.device_mallocs == 2


class Raises(allocsim.Policy):
    def allocate(self, request):
        if request.id == 2:
            raise KeyError("boom")
        segment = self.device.malloc(max(256, request.bytes))
        return allocsim.Block(segment.addr, segment.bytes, request)

    def deallocate(self, block):
        pass


def test_an_exception_names_the_event():
    with pytest.raises(allocsim.PolicyError, match=r"event 2 \(alloc of allocation 2") as raised:
        allocsim.run("random:n=100,seed=1", policy=Raises)
    assert isinstance(raised.value.__cause__, KeyError)


class Overlapping(allocsim.Policy):
    def allocate(self, request):
        if not hasattr(self, "segment"):
            self.segment = self.device.malloc(1 << 30)
        return allocsim.Block(self.segment.addr, max(256, request.bytes), request)

    def deallocate(self, block):
        pass


class Misaligned(Overlapping):
    def allocate(self, request):
        block = super().allocate(request)
        return allocsim.Block(block.addr + 8, block.size, request)


class Outside(allocsim.Policy):
    def allocate(self, request):
        return allocsim.Block(1 << 40, max(256, request.bytes), request)

    def deallocate(self, block):
        pass


class Small(Overlapping):
    def allocate(self, request):
        return allocsim.Block(self.device.malloc(1 << 20).addr, 256, request)


class NotABlock(allocsim.Policy):
    def allocate(self, request):
        return 42

    def deallocate(self, block):
        pass


@pytest.mark.parametrize("policy, why", [
    (Overlapping, "overlaps the live block"),
    (Misaligned, "not aligned to 256"),
    (Outside, "outside every segment"),
    (NotABlock, "returned int, not an allocsim.Block"),
])
def test_a_broken_block_is_refused(policy, why):
    trace = allocsim.Trace.from_arrays([0, 1], ["alloc", "alloc"], [1, 2], [1000, 1000])
    with pytest.raises(allocsim.PolicyError, match=why):
        allocsim.run(trace, policy=policy)


def test_a_smaller_block_is_refused():
    trace = allocsim.Trace.from_arrays([0], ["alloc"], [1], [1000])
    with pytest.raises(allocsim.PolicyError, match="smaller than the 1000 bytes"):
        allocsim.run(trace, policy=Small)


def test_the_device_outlives_no_run():
    policy = BestFit()
    allocsim.run("random:n=50,seed=1", policy=policy)
    assert policy.device is None


def test_the_guide_shows_this_best_fit(source):
    guide = (source / "docs" / "python.md").read_text()
    code = (source / "python" / "tests" / "best_fit.py").read_text()
    start = code.index("class BestFit")
    assert code[start:].strip() in guide


class Paged(allocsim.Policy):
    """A range of addresses, pages mapped into it one after another: the VMM calls from Python."""

    PAGE = 2 << 20

    def allocate(self, request):
        if not hasattr(self, "base"):
            self.base = self.top = self.device.reserve_addresses(1 << 34)
            self.pages = []
        size = -(-max(request.bytes, 1) // self.PAGE) * self.PAGE
        page = self.device.create_physical(size)
        if page is None:
            return None
        self.device.map(self.top, [page])
        self.pages.append((self.top, page))
        block = allocsim.Block(self.top, size, request)
        self.top += size
        return block

    def deallocate(self, block):
        for i, (at, page) in enumerate(self.pages):
            if at == block.addr:
                self.device.unmap(at, page.bytes)
                self.device.release_physical(page)
                del self.pages[i]
                return


def test_a_policy_of_mapped_pages():
    result = allocsim.run("random:n=400,seed=2,live=64MiB,max=4MiB", policy=Paged, capacity="4GiB", check=True)
    assert result.oom_count == 0 and result.peak_reserved_bytes >= result.peak_allocated_bytes > 0


def test_compare_puts_a_python_policy_beside_the_built_ins():
    rows = allocsim.compare(workload="random:n=3000,seed=2,live=256MiB", policy=["bestfit", BestFit, "caching"],
                            capacity="300MiB", on_oom="continue")
    assert list(rows["policy"]) == ["bestfit", "py:BestFit", "caching"]
    theirs, ours = rows.iloc[0], rows.iloc[1]
    assert ours["oom_count"] > 0
    for column in ("peak_allocated_bytes", "peak_reserved_bytes", "oom_count", "first_oom_event", "device_mallocs"):
        assert ours[column] == theirs[column], column


def test_a_sweep_runs_a_python_policy_on_its_threads():
    rows = allocsim.sweep(workload="random:n=2000,live=256MiB", param=["seed=1:4:1"], policy=[BestFit, "bestfit"],
                          capacity="300MiB", on_oom="continue", threads=2, quiet=True)
    ours = rows[rows["policy"] == "py:BestFit"].reset_index(drop=True)
    theirs = rows[rows["policy"] == "bestfit"].reset_index(drop=True)
    assert len(ours) == len(theirs) == 4
    for column in ("workload", "peak_allocated_bytes", "peak_reserved_bytes", "oom_count", "first_oom_event"):
        assert list(ours[column]) == list(theirs[column]), column


class Renamed(BestFit):
    name = "renamed_best_fit"


def test_two_studies_from_two_threads_at_once_answer_as_one_after_the_other():
    # Each study carries its own Python policies: neither finds the other's, neither waits.
    import threading
    import pandas
    studies = [
        lambda: allocsim.sweep(workload="random:n=2000,live=256MiB", param=["seed=1:4:1"], policy=[BestFit, "bestfit"],
                               capacity="300MiB", on_oom="continue", threads=2),
        lambda: allocsim.sweep(workload="random:n=2000,live=256MiB", param=["seed=5:8:1"], policy=["caching", Renamed],
                               capacity="300MiB", on_oom="continue", threads=2),
        lambda: allocsim.compare(workload="random:n=3000,seed=2,live=256MiB", policy=[Renamed, "bfc"],
                                 capacity="300MiB", on_oom="continue"),
    ]
    alone = [study() for study in studies]
    together = [None] * len(studies)
    errors = []
    start = threading.Barrier(len(studies))

    def run(index):
        start.wait()
        try:
            together[index] = studies[index]()
        except Exception as error:  # noqa: BLE001 (reported below, with the thread's study)
            errors.append((index, error))

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(studies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    wall_clock = ["replay_seconds", "events_per_second"]
    for one, other in zip(alone, together):
        pandas.testing.assert_frame_equal(one.drop(columns=wall_clock, errors="ignore"),
                                          other.drop(columns=wall_clock, errors="ignore"))
    assert set(together[1]["policy"]) == {"caching", "renamed_best_fit"}
    assert list(together[2]["policy"]) == ["renamed_best_fit", "bfc"]


def test_a_command_takes_the_class_and_names_its_errors():
    with pytest.raises(TypeError, match="the class BestFit"):
        allocsim.compare(workload="random:n=10", policy=[BestFit()])
    with pytest.raises(allocsim.PolicyError, match=r"event 2 \(alloc of allocation 2"):
        allocsim.compare(workload="random:n=100,seed=1", policy=["bestfit", Raises])


# A recording: each Python policy starts as every built-in outside PyTorch's own does, by
# allocating the blocks live at the recording's start (replay), or from an empty allocator
# with those blocks allocated first (run), so the Python best fit gives built-in bestfit's figures.
FIELDS = ("peak_allocated_bytes", "peak_reserved_bytes", "oom_count", "first_oom_event", "device_mallocs")


@pytest.mark.parametrize("capacity", [None, "200MiB"])
def test_replay_takes_a_python_policy_among_the_specs(snapshot_path, capacity):
    details = allocsim.replay_details(snapshot_path, policies=[BestFit, "caching", "bestfit"], capacity=capacity)
    results = details.results
    assert list(results) == ["py:BestFit", "caching", "bestfit"]
    assert details.starts == {"py:BestFit": "live blocks placed", "caching": "recorded segments adopted",
                              "bestfit": "live blocks placed"}
    ours, theirs = results["py:BestFit"], results["bestfit"]
    assert ours.policy == "py:BestFit"
    for field in FIELDS:
        assert getattr(ours, field) == getattr(theirs, field), field
    assert [oom.event for oom in ours.ooms] == [oom.event for oom in theirs.ooms]
    assert ours.timeline.reserved.max() == theirs.timeline.reserved.max()


def test_replay_of_the_dict_takes_a_python_policy(snapshot_path):
    snapshot = pickle.loads(snapshot_path.read_bytes())
    from_dict = allocsim.replay(snapshot, policies=[BestFit, "caching"])
    from_path = allocsim.replay(snapshot_path, policies=[BestFit, "caching"])
    assert list(from_dict) == ["py:BestFit", "caching"]
    for policy in from_path:
        for field in FIELDS:
            assert getattr(from_dict[policy], field) == getattr(from_path[policy], field), (policy, field)
    assert allocsim.replay(snapshot, policies=BestFit)["py:BestFit"].peak_reserved_bytes > 0


def test_replay_of_a_log_takes_a_python_policy(source):
    log = source / "tests" / "data" / "rmm_pool_oom.dev0.csv"
    results = allocsim.replay(log, policies=[BestFit, "bestfit"], capacity="1GiB")
    assert list(results) == ["py:BestFit", "bestfit"]
    for field in FIELDS:
        assert getattr(results["py:BestFit"], field) == getattr(results["bestfit"], field), field


def test_run_takes_a_snapshot_dict_with_a_python_policy(snapshot_path):
    snapshot = pickle.loads(snapshot_path.read_bytes())
    ours = allocsim.run(snapshot, policy=BestFit, capacity="200MiB", on_oom="continue")
    theirs = allocsim.run(snapshot, policy="bestfit", capacity="200MiB", on_oom="continue")
    from_path = allocsim.run(snapshot_path, policy=BestFit, capacity="200MiB", on_oom="continue")
    assert ours.policy == "py:BestFit" and ours.events == theirs.events == from_path.events
    for field in FIELDS:
        assert getattr(ours, field) == getattr(theirs, field) == getattr(from_path, field), field


def test_replay_names_a_bad_policy():
    snapshot = {"segments": [], "device_traces": []}
    with pytest.raises(TypeError, match=r"policies\[1\]"):
        allocsim.replay(snapshot, policies=[BestFit, 3])

    class Other(BestFit):
        name = "py:BestFit"

    with pytest.raises(ValueError, match="two policies named py:BestFit"):
        allocsim.replay(snapshot, policies=[BestFit, Other])
    with pytest.raises(ValueError, match="no 'device_traces' key"):
        allocsim.run({"segments": []}, policy=BestFit)


def test_an_exception_in_a_replay_is_a_policy_error(snapshot_path):
    with pytest.raises(allocsim.PolicyError, match=r"policy py:Raises raised KeyError in allocate") as raised:
        allocsim.replay(snapshot_path, policies=[Raises, "caching"])
    assert isinstance(raised.value.__cause__, KeyError)
