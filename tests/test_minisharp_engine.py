"""The collective engine's submodules alone (Migen sim): MSSetupCheck's rules, MSSlotTable against a Python
model, MSPayloadStage's accumulator ops against the jobs, and MSValidation's decisions on a scenario with
every data-frame and setup rule (context table, slot table, replace, table full)."""
import random

import pytest
from migen import run_simulation

from cores.minisharp import common as ms
from cores.minisharp.accumulator import ACC_OP_ADD
from cores.minisharp.payload import MSPayloadStage
from cores.minisharp.tables import MSSlotTable
from cores.minisharp.validation import MSSetupCheck, MSValidation, job_layout
from tests.harness.streams import collect, send

JOB_FIELDS = [name for name, _ in job_layout(2, 2)]


def until(done, limit=5000, tail=20):
    """Generator: cycles until done() (at most `limit`), then `tail` more (for anything unexpected)."""
    for _ in range(limit):
        if done():
            break
        yield
    for _ in range(tail):
        yield


def test_setup_check_rules():
    """v0.1 records (minor 1: 16 bytes, the tree fields ignored) and v0.2 ones (minor 2: 32 bytes) against
    the rules written from the spec and docs/minisharp.md."""
    rng = random.Random(1)
    num_ports, max_ranks, ce = 3, 8, 64
    ce2 = ms.v02_chunk_elements(ce)
    dut = MSSetupCheck(num_ports, max_ranks, ce, partials=True)
    good = dict(collective=ms.MS_COL_REDUCE, reduce_op=ms.MS_RED_SUM, input_fmt=ms.MS_FMT_FP32,
                acc_mode=ms.MS_ACC_EXACT_FP32_MAG277, output_fmt=ms.MS_FMT_FP32, egress_first=0, egress_last=2,
                expected_local=2, element_count=100, role=ms.MS_ROLE_ROOT, uplink_port=0, parent_rank=3,
                parent_mac=0x024D5300AB00)
    edges = dict(collective=[0, 2, 3], reduce_op=[0, 7], input_fmt=[2, 3], acc_mode=[0], output_fmt=[2, 3],
                 egress_first=[1, 2, 3], egress_last=[0, 1, 3, 255], expected_local=[0, 1, 8, 9, 300],
                 element_count=[0, 1, 32, 33, 65536 * ce2, 65536 * ce2 + 1, 65536 * ce, 65536 * ce + 1],
                 reserved0=[1], reserved1=[0x100], role=[0, 2, 2, 3], uplink_port=[1, 2, 3, 9],
                 reserved2=[1], reserved3=[1 << 40])
    records = [(good, v2) for v2 in (0, 1)]
    for _ in range(500):
        r = dict(good)
        for name in rng.sample(sorted(edges), rng.randrange(1, 4)):
            r[name] = rng.choice(edges[name])
        records.append((r, rng.random() < 0.6))
    got = []

    def gen():
        for r, v2 in records:
            yield dut.record.eq(ms.SETUP_RECORD_V02.pack(**r))
            yield dut.minor2.eq(v2)
            yield
            row = []
            for sig in (dut.reserved_bad, dut.checks, dut.expected, dut.lastchunk, dut.lastlen, dut.targets):
                row.append((yield sig))
            tree = {}
            for name, sig in dut.tree.items():
                tree[name] = yield sig
            row.append(tree)
            got.append(row)

    run_simulation(dut, gen())
    for (r, v2), (res_bad, checks, expected, lastchunk, lastlen, targets, tree) in zip(records, got):
        child = v2 and r["role"] == ms.MS_ROLE_CHILD
        fmt_ok = lambda f: f == ms.MS_FMT_FP32 or (v2 and f == ms.MS_FMT_EXACT)
        n = r["element_count"]
        rules = [not (r["collective"] == ms.MS_COL_REDUCE or (v2 and r["collective"] == ms.MS_COL_ALLREDUCE)),
                 r["reduce_op"] != ms.MS_RED_SUM, not fmt_ok(r["input_fmt"]),
                 r["acc_mode"] != ms.MS_ACC_EXACT_FP32_MAG277, not fmt_ok(r["output_fmt"]),
                 not child and r["output_fmt"] != ms.MS_FMT_FP32,
                 v2 and r["role"] not in (ms.MS_ROLE_ROOT, ms.MS_ROLE_CHILD),
                 child and r["uplink_port"] >= num_ports,
                 r["egress_first"] > r["egress_last"], r["egress_last"] >= num_ports,
                 r["expected_local"] == 0, r["expected_local"] > max_ranks, n == 0,
                 not v2 and n > 65536 * ce, v2 and n > 65536 * ce2]
        assert checks == sum(bool(v) << i for i, v in enumerate(rules)), (r, v2)
        assert res_bad == bool(r.get("reserved0") or r.get("reserved1") or
                               (v2 and (r.get("reserved2") or r.get("reserved3"))))
        if not checks:
            c = ce2 if v2 else ce
            assert (expected, lastchunk, lastlen) == (r["expected_local"], (n - 1) // c, n - c * ((n - 1) // c))
            assert targets == sum(1 << i for i in range(r["egress_first"], r["egress_last"] + 1))
            assert tree["v02"] == v2 and tree["child"] == child
            assert tree["in_exact"] == (v2 and r["input_fmt"] == ms.MS_FMT_EXACT)
            assert tree["uplink"] == (1 << r["uplink_port"] if child else 0)
            if child:
                assert (tree["parent_rank"], tree["parent_mac"]) == (r["parent_rank"], r["parent_mac"])
    assert sum(1 for g in got if g[1] == 0) > 10 and sum(1 for g in got if g[1]) > 300
    assert sum(1 for (r, v2), g in zip(records, got) if g[1] == 0 and v2 and r["role"] == ms.MS_ROLE_CHILD) > 3


def test_slot_table_against_a_model():
    rng = random.Random(2)
    n_slots, n_contexts, max_ranks = 4, 3, 8
    dut = MSSlotTable(n_slots, n_contexts, max_ranks)
    model = [dict(valid=0, ctx=0, chunk=0, bitmap=0, count=0) for _ in range(n_slots)]
    checked = [0]

    def gen():
        for _ in range(400):
            ctx_oh, chunk, rank = 1 << rng.randrange(n_contexts), rng.randrange(3), rng.randrange(max_ranks)
            expected, idx = rng.randrange(1, max_ranks + 1), rng.randrange(n_slots)
            for sig, v in ((dut.ctx_oh, ctx_oh), (dut.chunk, chunk), (dut.rank_oh, 1 << rank),
                           (dut.expected, expected), (dut.idx, idx)):
                yield sig.eq(v)
            yield
            match = sum((s["valid"] and s["ctx"] == ctx_oh and s["chunk"] == chunk) << j for j, s in enumerate(model))
            assert (yield dut.match) == match
            assert (yield dut.empty) == sum((not s["valid"]) << j for j, s in enumerate(model))
            assert (yield dut.rank_seen) == sum(bool(s["bitmap"] >> rank & 1) << j for j, s in enumerate(model))
            assert (yield dut.completes) == sum((s["count"] + 1 == expected) << j for j, s in enumerate(model))
            assert (yield dut.count) == model[idx]["count"]
            checked[0] += 1
            kind, j = rng.choice(["upd", "upd", "free", "replace", "none"]), rng.randrange(n_slots)
            init, count = rng.random() < 0.4, rng.randrange(1, max_ranks)
            yield dut.init.eq(init)
            yield dut.count_w.eq(count)
            yield dut.upd.eq(1 << j if kind == "upd" else 0)
            yield dut.free.eq(1 << j if kind == "free" else 0)
            yield dut.commit.eq(kind in ("upd", "free"))
            yield dut.replace.eq(kind == "replace")
            yield
            yield dut.commit.eq(0)
            yield dut.replace.eq(0)
            yield                                            # the write, one cycle after commit/replace
            if kind == "upd":
                s = model[j]
                s.update(valid=1, ctx=ctx_oh, chunk=chunk, count=count,
                         bitmap=(0 if init else s["bitmap"]) | (1 << rank))
            elif kind == "free":
                model[j]["valid"] = 0
            elif kind == "replace":
                for s in model:
                    if s["ctx"] == ctx_oh:
                        s["valid"] = 0

    run_simulation(dut, gen())
    assert checked[0] == 400


@pytest.mark.parametrize("wpc", [1, 4])
def test_payload_stage_ops_follow_the_jobs(wpc):
    rng = random.Random(3 + wpc)
    num_ports, lanes, n_slots = 2, 1, 4
    dut = MSPayloadStage(num_ports, lanes, wpc, n_slots)
    jobs, words, want = [], [[] for _ in range(num_ports)], []
    for _ in range(100):
        port, nwords = rng.randrange(num_ports), rng.randrange(1, 8)
        job = dict(port=port, drop=int(rng.random() < 0.2), emit=rng.randrange(2), init=rng.randrange(2),
                   slot=rng.randrange(n_slots), lastw=nwords - 1, awords=rng.randrange(1, min(nwords, wpc) + 1))
        jobs.append(job)
        for w in range(nwords):
            data = rng.getrandbits(32)
            words[port].append({"data": data})
            if not job["drop"] and w < job["awords"]:
                want.append(dict(op=ACC_OP_ADD, addr=job["slot"] * wpc + w, init=job["init"], emit=job["emit"],
                                 data=data))
    got = []
    fields = ["op", "addr", "init", "emit", "data"]
    gens = [send(dut.jobs, jobs, rng, valid_p=0.5)]
    gens += [send(dut.sinks[p], words[p], rng, valid_p=0.7) for p in range(num_ports)]
    gens += [collect(dut.source, got, rng, fields, ready_p=0.6), until(lambda: len(got) >= len(want))]
    run_simulation(dut, gens)
    assert len(want) > 70
    assert got == want


def descriptor(kind, coll, rank=0, chunk=0, payload_bytes=0, **record):
    rec = dict(collective=ms.MS_COL_REDUCE, reduce_op=ms.MS_RED_SUM, input_fmt=ms.MS_FMT_FP32,
               acc_mode=ms.MS_ACC_EXACT_FP32_MAG277, output_fmt=ms.MS_FMT_FP32)
    rec.update(record)
    return dict(kind=kind, collective_id=coll, rank=rank, chunk_index=chunk, payload_bytes=payload_bytes,
                record=ms.SETUP_RECORD.pack(**rec) if kind == ms.KIND_SETUP else 0)


def setup(coll, elements, ranks, first=0, last=1, **kw):
    return descriptor(ms.KIND_SETUP, coll, element_count=elements, expected_local=ranks, egress_first=first,
                      egress_last=last, **kw)


def data(coll, rank, chunk, payload_bytes):
    return descriptor(ms.KIND_DATA, coll, rank, chunk, payload_bytes)


def test_validation_decisions():
    """Chunks of 4 elements, 2 contexts, 2 slots, 4 ranks at most. Each descriptor's outcome: a job for the
    payload stage (and a meta record when it completes its chunk), a drop with its reason, or a setup."""
    rng = random.Random(4)
    dut = MSValidation(num_ports=2, lanes=1, chunk_elements=4, n_contexts=2, n_slots=2, max_ranks=4)
    job = lambda port, slot, lastw, awords, init=1, emit=0: dict(port=port, drop=0, emit=emit, init=init, slot=slot,
                                                                lastw=lastw, awords=awords)
    dropped = lambda port, lastw: dict(port=port, drop=1, lastw=lastw)
    steps = [  # (port, descriptor, job, meta, drop reason)
        (0, setup(7, 6, 2), None, None, None),                          # chunks of 4 and 2 elements
        (0, data(7, 0, 0, 16), job(0, 0, 3, 4), None, None),
        (0, data(7, 0, 0, 16), dropped(0, 3), None, "duplicate"),
        (1, data(9, 0, 0, 16), dropped(1, 3), None, "unknown_coll"),
        (0, data(7, 2, 0, 16), dropped(0, 3), None, "bad_rank"),
        (0, data(7, 0, 2, 8), dropped(0, 1), None, "bad_chunk"),
        (0, data(7, 1, 0, 12), dropped(0, 2), None, "bad_length"),
        (0, data(7, 1, 1, 36), job(0, 1, 8, 2), None, None),            # the last chunk, padded to 60 bytes
        (1, data(7, 1, 0, 16), job(1, 0, 3, 4, init=0, emit=1), (7, 0, 4, 0b11), None),
        (0, data(7, 0, 1, 8), job(0, 1, 1, 2, init=0, emit=1), (7, 1, 2, 0b11), None),
        (0, setup(8, 4, 1, 1, 1), None, None, None),
        (1, setup(10, 4, 1), None, None, "ctx_full"),
        (0, setup(10, 4, 1, acc_mode=0), None, None, "bad_setup"),
        (0, setup(10, 4, 1, reserved1=1), None, None, "bad_reserved"),
        (0, data(8, 0, 0, 16), job(0, 0, 3, 4, emit=1), (8, 0, 4, 0b10), None),    # one rank: opens and completes
        (0, setup(7, 12, 2), None, None, None),                         # replaces context 7: 3 chunks
        (0, data(7, 0, 0, 16), job(0, 0, 3, 4), None, None),
        (1, data(7, 0, 1, 16), job(1, 1, 3, 4), None, None),
        (0, data(7, 0, 2, 16), dropped(0, 3), None, "no_slot"),
    ]
    jobs, metas, drops, pulses = [], [], [], {"setup_done": 0, "chunk_done": 0}

    def feed():
        for port, desc, _, _, _ in steps:
            yield from send(dut.desc_sinks[port], [desc], rng)
        yield from until(lambda: len(jobs) + len(metas) >= sum((j is not None) + (m is not None)
                                                               for _, _, j, m, _ in steps))

    def monitor():
        yield "passive"
        while True:
            yield
            if (yield dut.drop):
                drops.append(((yield dut.drop_port), (yield dut.drop_reason)))
            for name in pulses:
                pulses[name] += (yield getattr(dut, name))

    run_simulation(dut, [feed(), monitor(), collect(dut.job, jobs, rng, JOB_FIELDS, ready_p=0.5),
                         collect(dut.meta, metas, rng, ["collective_id", "chunk_index", "n_elements", "targets"])])
    want_jobs = [j for _, _, j, _, _ in steps if j]
    assert [{k: g[k] for k in w} for g, w in zip(jobs, want_jobs)] == want_jobs and len(jobs) == len(want_jobs)
    assert [tuple(m.values()) for m in metas] == [m for _, _, _, m, _ in steps if m]
    assert drops == [(port, ms.DROP[r]) for port, _, _, _, r in steps if r]
    assert pulses == {"setup_done": 3, "chunk_done": 3}
