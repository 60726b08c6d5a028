"""The MiniSharp tests' check of the COL_RES frames a port sent (tests.harness.minisharp.check_results, with
its callers' `sorted(seen) == chunks`) fed synthetic frames: a clean set passes; a lost, duplicated or
misaddressed frame, a wrong value, header field or length is reported, each by its own check."""
import random
import struct
from types import SimpleNamespace

import pytest

from cores.minisharp import common as ms
from software.minisharp import packets as P
from software.minisharp.reference import exact_sum_fp32
from tests.harness.minisharp import CE, check_results, port_macs, rand_value

COLL, PORTS, PORT, RANKS = 0xC0FFEE, 3, 1, 3
N = 4 * CE - 3                                  # elements: the last chunk is short
CHUNKS = ms.num_chunks(N, CE)


def clean(rng):
    """The contributions and the COL_RES frames of every chunk to PORT, in a random order (results leave
    in the order chunks complete)."""
    vecs = [[rand_value(rng, special=0.1) for _ in range(N)] for _ in range(RANKS)]
    sums = [exact_sum_fp32(col) for col in zip(*vecs)]
    dst, src = port_macs(PORTS)[PORT]
    frames = [bytearray(P.res_frame(dst, src, COLL, c, sums[c * CE:(c + 1) * CE], pad=False)) for c in range(CHUNKS)]
    rng.shuffle(frames)
    return vecs, frames


def seen(frames, vecs):
    outputs = [[] for _ in range(PORTS)]
    outputs[PORT] = [bytes(f) for f in frames]
    return check_results(SimpleNamespace(outputs=outputs), PORT, COLL, N, vecs, PORTS)


def chunk_of(f):
    return P.parse(bytes(f))["chunk_index"]


def field_byte(name):
    """Offset of header field `name`'s first byte in a COL_RES frame."""
    return ms.OP_HEADERS[ms.MS_OP_COL_RES].fields[name].byte


def test_clean_results_pass():
    vecs, frames = clean(random.Random(1))
    assert sorted(seen(frames, vecs)) == list(range(CHUNKS))


@pytest.mark.parametrize("fault", ["lost", "duplicated", "other_collective", "ethertype"])
def test_missing_or_extra_frames_change_the_chunks_seen(fault):
    """The chunks seen (what the callers compare with every chunk once) lack a lost frame's chunk, or one
    whose EtherType or collective is wrong (not this reduction's frame), and hold a duplicated one twice."""
    rng = random.Random(2)
    vecs, frames = clean(rng)
    k = rng.randrange(CHUNKS)
    c = chunk_of(frames[k])
    want = sorted(list(range(CHUNKS)) + [c]) if fault == "duplicated" else [x for x in range(CHUNKS) if x != c]
    if fault == "lost":
        del frames[k]
    elif fault == "duplicated":
        frames.insert(k, frames[k])
    elif fault == "other_collective":
        frames[k][field_byte("collective_id")] ^= 1
    else:
        frames[k][ms.ETH_HEADER.fields["ethertype"].byte] ^= 1
    assert sorted(seen(frames, vecs)) == want


CORRUPTIONS = {                 # fault -> the check that must report it (a piece of its statement)
    "value": "p[\"values\"] == exp",
    "dst_mac": "p[\"dst_mac\"]",
    "src_mac": "p[\"src_mac\"]",
    "version": "p[\"major\"]",
    "reserved": "p[\"reserved0\"] == 0",
    "padded": "len(f) ==",
}


@pytest.mark.parametrize("fault", sorted(CORRUPTIONS))
def test_corrupted_frames_are_reported(fault):
    """A frame with a wrong value, MAC, version, reserved byte or length fails check_results at the check of
    that field."""
    rng = random.Random(3)
    vecs, frames = clean(rng)
    f = frames[rng.randrange(CHUNKS)]
    if fault == "value":
        f[ms.MS_HEADER_BYTES + rng.randrange(len(f) - ms.MS_HEADER_BYTES)] ^= 1 << rng.randrange(8)
    elif fault in ("dst_mac", "src_mac"):
        f[(0 if fault == "dst_mac" else 6) + rng.randrange(6)] ^= 1 << rng.randrange(8)
    elif fault == "version":
        f[ms.MS_HEADER.fields["version"].byte] ^= 0x10
    elif fault == "reserved":
        f[field_byte("reserved0")] ^= 1 << rng.randrange(8)
    else:
        f += bytes(4)
    with pytest.raises(AssertionError) as e:
        seen(frames, vecs)
    assert CORRUPTIONS[fault] in str(e.traceback[-1].statement)


def test_truncated_frame_is_reported():
    """A frame short of its chunk's values fails when its values are parsed."""
    rng = random.Random(4)
    vecs, frames = clean(rng)
    del frames[0][-4:]
    with pytest.raises(struct.error):
        seen(frames, vecs)
