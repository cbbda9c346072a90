"""Several contexts of one engine on several Python threads (the GIL is released while a run executes)."""

import threading

import numpy as np

from conftest import batch, mlp_reference


def _hammer(engine, seed, results, errors):
    try:
        ctx = engine.create_execution_context()
        for i in range(25):
            x = batch(1 + (seed + i) % 8, seed=seed * 100 + i)
            y = ctx.run({"x": x})["y"]
            results.append(np.allclose(y, mlp_reference(x), rtol=1e-5, atol=1e-5))
        ctx.close()
    except Exception as e:  # noqa: BLE001 - reported by the main thread
        errors.append(e)


def test_two_contexts_two_threads(engine):
    results, errors = [], []
    threads = [threading.Thread(target=_hammer, args=(engine, s, results, errors)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 50 and all(results)


def test_one_context_shared_by_threads(streaming_engine):
    """A context used from two threads: runs wait for each other instead of racing."""
    streaming_engine.weight_streaming_budget = 0
    ctx = streaming_engine.create_execution_context()
    results, errors = [], []

    def work(seed):
        try:
            for i in range(20):
                x = batch(4, seed=seed * 1000 + i)
                results.append(np.allclose(ctx.run({"x": x})["y"], mlp_reference(x), rtol=1e-5, atol=1e-5))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 40 and all(results)
