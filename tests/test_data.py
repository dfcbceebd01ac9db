"""funcgrad.utils.data: datasets, samplers, collate, DataLoader (PyTorch's behaviour and messages)."""

import collections
import threading

import numpy as np
import pytest

import funcgrad
from funcgrad.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                                 IterableDataset, RandomSampler, SequentialSampler, StackDataset,
                                 Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                                 default_collate, default_convert, get_worker_info, random_split)


def _xy(n=10):
    x = funcgrad.arange(n * 3, dtype=funcgrad.float32).view(n, 3)
    y = funcgrad.arange(n)
    return x, y


class Squares(Dataset):
    def __init__(self, n=7):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.full(2, i, dtype=np.float32), "y": i * i, "name": f"s{i}", "w": 0.5 * i}


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# ---- datasets ----------------------------------------------------------------------------------
def test_tensor_dataset():
    x, y = _xy()
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    xi, yi = ds[3]
    assert xi.tolist() == [9.0, 10.0, 11.0] and yi.item() == 3
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, funcgrad.arange(9))


def test_concat_subset_stack_chain():
    a, b = TensorDataset(funcgrad.arange(3)), TensorDataset(funcgrad.arange(3, 5))
    c = a + b
    assert isinstance(c, ConcatDataset) and len(c) == 5
    assert c[3][0].item() == 3 and c[-1][0].item() == 4
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        c[-6]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Stream(2)])
    s = Subset(c, [4, 0])
    assert len(s) == 2 and s[0][0].item() == 4
    st = StackDataset(a=[1, 2], b=["x", "y"])
    assert st[1] == {"a": 2, "b": "y"}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset([1], [1, 2])
    assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]
    assert isinstance(Stream(2) + Stream(3), ChainDataset)
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        Dataset()[0]


def test_random_split():
    g = funcgrad.Generator().manual_seed(1)
    parts = random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    again = random_split(range(10), [3, 7], generator=funcgrad.Generator().manual_seed(1))
    assert list(again[0]) == list(parts[0])
    fr = random_split(range(10), [0.5, 0.3, 0.2], generator=g)
    assert [len(p) for p in fr] == [5, 3, 2]
    assert [len(p) for p in random_split(range(11), [0.5, 0.5])] == [6, 5]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(10), [3, 3])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [0.99, 0.01])


# ---- samplers ----------------------------------------------------------------------------------
def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    r = RandomSampler(range(6), generator=funcgrad.Generator().manual_seed(0))
    e1, e2 = list(r), list(r)
    assert sorted(e1) == list(range(6)) and sorted(e2) == list(range(6))
    assert e1 != e2 or e1 != list(RandomSampler(range(6), generator=funcgrad.Generator().manual_seed(3)))
    assert len(RandomSampler(range(6), num_samples=14)) == 14
    long = list(RandomSampler(range(6), num_samples=14))
    assert len(long) == 14 and sorted(long[:12]) == sorted(list(range(6)) * 2)
    wr = list(RandomSampler(range(3), replacement=True, num_samples=20))
    assert len(wr) == 20 and set(wr) <= {0, 1, 2}
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    assert sorted(SubsetRandomSampler([5, 7, 9])) == [5, 7, 9]
    w = WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], 5)
    assert list(w) == [2] * 5 and len(w) == 5
    assert sorted(WeightedRandomSampler([1, 1, 1], 3, replacement=False)) == [0, 1, 2]
    with pytest.raises(ValueError, match="weights should be a 1d sequence but given weights have shape"):
        WeightedRandomSampler([[1.0]], 1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], True)
    assert list(BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(5), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(5), 2, 1)


# ---- collate -----------------------------------------------------------------------------------
def test_default_collate_types():
    P = collections.namedtuple("P", "a b")
    out = default_collate([(1, 2.5, True, "a", np.float32(1), P(1, 2)),
                           (3, 4.5, False, "b", np.float32(2), P(3, 4))])
    assert isinstance(out, list) and len(out) == 6
    assert out[0].dtype is funcgrad.int64 and out[0].tolist() == [1, 3]
    assert out[1].dtype is funcgrad.float64 and out[1].tolist() == [2.5, 4.5]
    assert out[2].dtype is funcgrad.bool and out[2].tolist() == [True, False]
    assert out[3] == ("a", "b")
    assert out[4].dtype is funcgrad.float32
    assert isinstance(out[5], P) and out[5].a.tolist() == [1, 3]
    d = default_collate([{"x": np.ones((2, 2), np.float32), "k": [1, 2]}] * 3)
    assert tuple(d["x"].shape) == (3, 2, 2) and d["x"].dtype is funcgrad.float32
    assert [t.tolist() for t in d["k"]] == [[1, 1, 1], [2, 2, 2]]
    od = default_collate([collections.OrderedDict(a=funcgrad.zeros(2))] * 2)
    assert type(od) is collections.OrderedDict and tuple(od["a"].shape) == (2, 2)
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, "
                                        "numbers, dicts or lists; found <class 'object'>"):
        default_collate([object()])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([funcgrad.zeros(2), funcgrad.zeros(3)])


def test_default_collate_keeps_grad():
    w = funcgrad.ones(3, requires_grad=True)
    out = default_collate([w * 2, w * 3])
    out.sum().backward()
    assert w.grad.tolist() == [5.0, 5.0, 5.0]


def test_default_convert():
    out = default_convert({"a": np.array([1, 2]), "b": (np.float64(1.5), "s")})
    assert out["a"].tolist() == [1, 2] and out["a"].dtype is funcgrad.int64
    assert isinstance(out["b"], list) and out["b"][0].dtype is funcgrad.float64 and out["b"][1] == "s"
    assert default_convert(3) == 3


# ---- DataLoader --------------------------------------------------------------------------------
def test_loader_batches_and_len():
    x, y = _xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [tuple(b[0].shape) for b in batches] == [(4, 3), (4, 3), (2, 3)]
    assert isinstance(batches[0], list)
    assert batches[2][1].tolist() == [8, 9]
    assert funcgrad.cat([b[0] for b in batches]).tolist() == x.tolist()
    dl = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_fast_path_equals_generic_collate():
    x, y = _xy(5)
    ds = TensorDataset(x, y)
    fast = list(DataLoader(ds, batch_size=3))
    slow = list(DataLoader(ds, batch_size=3, collate_fn=lambda b: default_collate(b)))
    for f, s in zip(fast, slow):
        assert f[0].tolist() == s[0].tolist() and f[1].tolist() == s[1].tolist()
        assert f[0].dtype is s[0].dtype and f[1].dtype is s[1].dtype
    sub = random_split(ds, [3, 2], generator=funcgrad.Generator().manual_seed(0))[0]
    got = funcgrad.cat([b[1] for b in DataLoader(sub, batch_size=2)]).tolist()
    assert got == list(sub.indices)


def test_shuffle_reproducible_and_reshuffles():
    ds = TensorDataset(funcgrad.arange(32))

    def epoch(loader):
        return funcgrad.cat([b[0] for b in loader]).tolist()

    funcgrad.manual_seed(0)
    loader = DataLoader(ds, batch_size=5, shuffle=True)
    a1, a2 = epoch(loader), epoch(loader)
    funcgrad.manual_seed(0)
    b1, b2 = epoch(loader), epoch(loader)
    assert (a1, a2) == (b1, b2)
    assert a1 != a2 and sorted(a1) == list(range(32))
    assert a1 != list(range(32))
    g1 = DataLoader(ds, batch_size=5, shuffle=True, generator=funcgrad.Generator().manual_seed(1))
    g2 = DataLoader(ds, batch_size=5, shuffle=True, generator=funcgrad.Generator().manual_seed(1))
    funcgrad.manual_seed(123)  # the global generator does not matter when generator= is given
    assert epoch(g1) == epoch(g2)


def test_custom_collate_sampler_batch_sampler():
    ds = Squares(6)
    loader = DataLoader(ds, batch_size=3, collate_fn=lambda b: [s["y"] for s in b])
    assert list(loader) == [[0, 1, 4], [9, 16, 25]]
    loader = DataLoader(ds, batch_size=2, sampler=[5, 0, 3])
    assert [b["y"].tolist() for b in loader] == [[25, 0], [9]]
    loader = DataLoader(ds, batch_sampler=[[1, 2], [5]])
    assert len(loader) == 2 and [b["y"].tolist() for b in loader] == [[1, 4], [25]]
    single = list(DataLoader(ds, batch_size=None))
    assert len(single) == 6 and single[2]["y"] == 4 and single[2]["x"].tolist() == [2.0, 2.0]


def test_dict_batches():
    batch = next(iter(DataLoader(Squares(7), batch_size=4)))
    assert tuple(batch["x"].shape) == (4, 2) and batch["x"].dtype is funcgrad.float32
    assert batch["y"].tolist() == [0, 1, 4, 9] and batch["y"].dtype is funcgrad.int64
    assert batch["w"].dtype is funcgrad.float64
    assert batch["name"] == ["s0", "s1", "s2", "s3"]


def test_iterable_dataset():
    loader = DataLoader(Stream(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(loader) == 3
    assert len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle "
                                         "option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Stream(3), batch_sampler=[[0]])


def test_num_workers_threads():
    x, y = _xy(23)
    ds = TensorDataset(x, y)
    funcgrad.manual_seed(5)
    ref = [b[1].tolist() for b in DataLoader(ds, batch_size=4, shuffle=True)]
    seen = []
    funcgrad.manual_seed(5)
    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2,
                        worker_init_fn=lambda wid: seen.append((wid, threading.current_thread().name)))
    got = [b[1].tolist() for b in loader]
    assert got == ref
    assert seen and seen[0][0] == 0 and seen[0][1] != threading.current_thread().name
    info = []

    class Probe(Stream):
        def __iter__(self):
            info.append(get_worker_info())
            return super().__iter__()

    assert [b.tolist() for b in DataLoader(Probe(5), batch_size=2, num_workers=2)] == [[0, 1], [2, 3], [4]]
    assert info[0].id == 0 and info[0].num_workers == 1
    assert get_worker_info() is None
    # abandoning an iterator part-way does not hang, and a new epoch starts over
    it = iter(loader)
    next(it)
    del it
    assert len(list(loader)) == 6


def test_worker_error_is_reraised():
    class Bad(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError("boom")
            return i

    for nw in (0, 2):
        with pytest.raises(KeyError, match="boom"):
            list(DataLoader(Bad(), batch_size=1, num_workers=nw))


def test_loader_argument_errors():
    ds = Squares(4)
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing."),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2),
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True),
         "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
        (dict(batch_size=0), "batch_size should be a positive integer value, but got batch_size=0"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(ValueError) as e:
            DataLoader(ds, **kwargs)
        assert str(e.value).startswith(msg), (kwargs, str(e.value))
    loader = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    assert loader.batch_size == 1
    loader.num_workers = 0  # other attributes stay settable, as in PyTorch


def test_fast_path_bounds_and_grad_mode_in_worker():
    x, y = _xy(4)
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        list(DataLoader(TensorDataset(x, y), batch_size=2, sampler=[0, 4]))
    w = funcgrad.ones(4, 2, requires_grad=True)
    with funcgrad.no_grad():
        batches = list(DataLoader(TensorDataset(w), batch_size=2, num_workers=1))
    assert all(b[0].grad_fn is None and not b[0].requires_grad for b in batches)
    batches = list(DataLoader(TensorDataset(w), batch_size=2, num_workers=1))
    assert batches[0][0].requires_grad


def _worker_warnings(m, persistent):
    """The warnings a loader with two workers more than this process's CPUs gives: made, then
    iterated twice (PyTorch checks as the loader is made and as each iterator's workers start)."""
    import os
    import warnings
    n = len(os.sched_getaffinity(0)) + 2 if hasattr(os, "sched_getaffinity") else os.cpu_count() + 2
    ds = m.utils.data.TensorDataset(m.arange(4.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = m.utils.data.DataLoader(ds, batch_size=2, num_workers=n, persistent_workers=persistent)
        got = [[b.tolist() for b, in loader] for _ in range(2)]
        few = m.utils.data.DataLoader(ds, batch_size=2, num_workers=1)  # within the CPUs: silent
        got.append([b.tolist() for b, in few])
    # (the loader's own warnings: torch's forked workers also get JAX's fork warning, as funcgrad
    # ran in this process)
    return got, [(w.category, str(w.message)) for w in caught if w.filename.endswith("dataloader.py")]


@pytest.mark.torch
@pytest.mark.parametrize("persistent", [False, True])
def test_more_workers_than_cpus_warn_as_torch(persistent):
    torch = pytest.importorskip("torch")
    ours = _worker_warnings(funcgrad, persistent)
    assert ours == _worker_warnings(torch, persistent)
    assert len(ours[1]) == (2 if persistent else 3)
