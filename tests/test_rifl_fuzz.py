"""Fuzzing the RIFL receivers (sim.verilated.rifl.RIFLFuzzLink: two endpoints with traffic both ways and an
injection point on each line in front of its receiver).

Hypothesis chooses what reaches the receivers on top of the live traffic: bit errors that CRC-12 always
detects (1 to 3 inverted bits anywhere, bursts of up to 12 bits), lost frames (all zeros: runs of 4 and more
take the link down), duplicates of the line's earlier frames, noise with an invalid sync header, data frames
with random content whose check matches no frame id the receiver can expect in the run (ids 3072..4095),
and forged control frames that pass the check (IDLE, PAUSE, RETRANS, REPLAY and undefined codes, with any
sequence number, recovery and flow-control fields); random receive back-pressure. What is out of reach
by design is left out: a forged numbered frame that matches the expected id is an undetectable error.

For every input: the link comes back up and delivers every packet sent within a cycle bound (no hang),
both checkers see every packet once, in order and intact (no loss, duplicate, reordering or corruption),
every numbered frame a sender sent new was accepted exactly once by the other end (tx_frames = rx_frames),
and a run without injections counts no error, replay or link down.
"""
from hypothesis import example, given, strategies as st

from cores.rifl.common import (CHK_FAULTS, CTRL_FC, CTRL_HEADER, CTRL_IDLE, CTRL_PAUSE, CTRL_REPLAY, CTRL_RETRANS,
                               LOOPBACK_DIRECTIONS, SYNC_CTRL, SYNC_DATA, payload_bits, payload_bytes, scrambler_mask)
from sim.verilated.rifl import FUZZ_HISTORY, fuzz_link, fuzz_run
from software.rifl.reference import encode_ctrl, encode_data
from tests.harness.fuzz import record

F = 64
ACTIVE = 1500                  # cycles with traffic and injections: fewer frames than the junk ids (3072+)
DRAIN_LIMIT = 20000            # cycles the link may take to deliver everything once the injections stop
JUNK_IDS = (3072, 4095)
FORGED_CODES = [CTRL_IDLE, CTRL_PAUSE, CTRL_RETRANS, CTRL_REPLAY, 0, 6, 15]
assert CTRL_FC not in FORGED_CODES          # numbered: a forged FC frame with the expected id is undetectable
_MODEL = []


def model():
    if not _MODEL:
        _MODEL.append(fuzz_link(F))
    return _MODEL[0]


def _ctrl_fields(draw):
    return {name: draw(st.integers(0, 2**f.width - 1)) for name, f in CTRL_HEADER.fields.items()}


@st.composite
def injection(draw):
    """(first cycle, direction, [(mode, value), ...] on consecutive cycles, kind)."""
    cycle = draw(st.integers(0, ACTIVE - 20))
    d = draw(st.sampled_from(LOOPBACK_DIRECTIONS))
    kind = draw(st.sampled_from(["flip", "burst", "lose", "repeat", "noise", "junk_data", "forged_ctrl"]))
    if kind == "flip":
        bits = draw(st.lists(st.integers(0, F - 1), min_size=1, max_size=3, unique=True))
        ops = [("xor", sum(1 << b for b in bits))]
    elif kind == "burst":
        n, at = draw(st.integers(1, 12)), draw(st.integers(0, F - 1))
        ops = [("xor", sum(1 << ((at + k) % F) for k in range(n)))]
    elif kind == "lose":
        ops = [("replace", 0)] * draw(st.integers(1, 12))
    elif kind == "repeat":
        ops = [("repeat", draw(st.integers(1, FUZZ_HISTORY - 1)))]
    elif kind == "noise":                   # any frame whose descrambled sync header is 00 or 11
        pbits = payload_bits(F)
        sync = draw(st.sampled_from([0, 3]))
        body = (sync << (pbits + 2)) | draw(st.integers(0, 2**(pbits + 2) - 1))
        ops = [("replace", ((body ^ scrambler_mask(pbits)) << 12) | draw(st.integers(0, 4095)))]
    elif kind == "junk_data":
        data = draw(st.binary(min_size=1, max_size=payload_bytes(F)))
        ops = [("replace", encode_data(F, data, draw(st.booleans()), draw(st.integers(*JUNK_IDS))))]
    else:
        fields = _ctrl_fields(draw)
        fields["code"] = draw(st.sampled_from(FORGED_CODES))
        ops = [("replace", encode_ctrl(F, **fields))]
    return cycle, d, ops, kind


def _events(injections):
    return [(cycle + k, d, mode, value) for cycle, d, ops, _ in injections for k, (mode, value) in enumerate(ops)]


@given(injections=st.lists(injection(), max_size=30), ready=st.sampled_from([0, 200, 64]))
@example(injections=[], ready=0)
@example(injections=[(300, "ab", [("replace", encode_ctrl(F, code=CTRL_RETRANS, seq=5))], "forged_ctrl"),
                     (302, "ba", [("replace", 0)] * 6, "lose")], ready=64)
@example(injections=[(400, "ab", [("repeat", 9)], "repeat"), (401, "ab", [("xor", 0b111 << 20)], "flip")], ready=0)
def test_rifl_receivers_under_junk(injections, ready):
    r = fuzz_run(model(), _events(injections), ACTIVE, DRAIN_LIMIT, ready)
    record("rifl_rx", injections=len(injections), junk_frames=len(_events(injections)),
           packets=sum(r[f"{d}_sent"] for d in LOOPBACK_DIRECTIONS),
           rx_errors=r["a_rx_errors"] + r["b_rx_errors"], replays=r["a_replays"] + r["b_replays"],
           link_downs=r["a_link_downs"] + r["b_link_downs"], cycles=ACTIVE + r["drain_cycles"])
    assert r["drain_cycles"] < DRAIN_LIMIT, f"the link did not deliver every packet in {DRAIN_LIMIT} cycles: {r}"
    for d in LOOPBACK_DIRECTIONS:
        assert r[f"{d}_sent"] > 0, r
        assert {k: r[f"{d}_{k}"] for k in CHK_FAULTS} == {k: 0 for k in CHK_FAULTS}, (d, r)
        assert r[f"{d}_delivered"] == r[f"{d}_sent"], (d, r)
    assert r["a_tx_frames"] == r["b_rx_frames"] and r["b_tx_frames"] == r["a_rx_frames"], r
    assert r["a_link_up"] and r["b_link_up"]
    if not injections:
        assert [r[f"{e}_{k}"] for e in "ab" for k in ("rx_errors", "replays", "link_downs")] == [0] * 6, r
