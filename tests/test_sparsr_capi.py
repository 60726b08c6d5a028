"""The C host library (sparsr.h, software/sparsr/capi.py): its frames against the Python encoder, its answers
against the reference card, every refusal, its Etherbone transport and example against a fake SoC on
loopback (requests decoded by LiteX's own packet classes), and the SoC block's RTL through a CSR bank."""
import os
import random
import subprocess

import pytest

from cores.sparsr.common import (CMD_WRITE_WMEM, CMD_WRITE_XMEM, CMD_ANSWER_STATUS, FRAME_WORDS, HDR_ADDR, KIND_REFUSED,
                                 ROW_LANES, RX_OFFSET, STATUS_RX_VALID, TAG, TX_OFFSET, WIRE_VERSION,
                                 WMEM_COMPRESSED_MAX_NONZERO, WINDOW_BYTES, CONFIG_ROWS_BITS)
from cores.sparsr.soc_block import SparsrBlock
from software.sparsr import capi
from software.sparsr.api import FrameRefused, RowRefused
from software.sparsr.frames import AnswerError, encode_rows, status_frame
from software.sparsr.links import EtherboneLink, LinkTimeout
from software.sparsr.reference import CardModel
from software.sparsr.rows import random_row
from tests.harness.csr import run_demo
from tests.harness.etherbone import FakeEtherboneTarget

WROWS, XROWS = 16, 8
DENSITIES = (0, 1, 7, 48, 49, 101, 102, 103, 200, 256)


class ModelLink:
    """The reference card behind the link interface; `frames` records what the host sent. `corrupt(frame)`
    may change a frame on its way (a faulty link); `version` replaces the card's announced version."""
    def __init__(self, wmem_rows=WROWS, xmem_rows=XROWS, corrupt=None, version=None):
        self.card = CardModel(wmem_rows, xmem_rows)
        self.frames, self.answers = [], []
        self.corrupt, self.version = corrupt, version

    def send_frame(self, words):
        self.frames.append(list(words))
        words = self.corrupt(list(words)) if self.corrupt else words
        for a in self.card.receive(list(words)):
            if a[0] == CMD_ANSWER_STATUS and self.version is not None:
                a[HDR_ADDR] = self.version
            self.answers.append(a)

    def recv_frame(self):
        if not self.answers:
            raise LinkTimeout("no answer")
        return self.answers.pop(0)


def rows_of(rng, n, densities=DENSITIES):
    return [random_row(rng, rng.choice(densities)) for _ in range(n)]


def test_frames_equal_the_python_encoder():
    """For every write call the C library sends the frames of software/sparsr/frames.py, then one STATUS."""
    rng = random.Random(5)
    link = ModelLink()
    with capi.SparsrC(link, WROWS, XROWS) as lib:
        assert lib.card_version == WIRE_VERSION
        total = 1                                   # the status frame of sparsr_open
        for trial in range(40):
            n = rng.randint(1, XROWS)
            start = rng.randrange(XROWS - n + 1)
            sparse = rows_of(rng, n, [d for d in DENSITIES if d <= WMEM_COMPRESSED_MAX_NONZERO])
            any_rows = rows_of(rng, n)
            for call, rows, expected in (
                    (lib.write_data_xmem, any_rows, encode_rows(start, any_rows, CMD_WRITE_XMEM)),
                    (lib.write_data_wmem_raw, any_rows, encode_rows(start, any_rows, CMD_WRITE_WMEM, allow_lil=False)),
                    (lib.write_data_wmem, sparse, encode_rows(start, sparse, CMD_WRITE_WMEM))):
                link.frames.clear()
                call(start, rows)
                assert link.frames == expected + [status_frame()], (trial, call.__name__)
                total += len(expected) + 1
        assert lib.frames_sent == total


def test_rows_and_counters_against_the_reference_card():
    """Writes of every kind, DMA and reads: the rows read back are the reference card's, and the status equals
    its counters."""
    rng = random.Random(9)
    link = ModelLink()
    with capi.SparsrC(link, WROWS, XROWS) as lib:
        for _ in range(12):
            rows = rows_of(rng, rng.randint(1, XROWS))
            start = rng.randrange(XROWS - len(rows) + 1)
            choice = rng.randrange(3)
            if choice == 0:
                lib.write_data_wmem_raw(start, rows)
            elif choice == 1:
                lib.write_data_wmem(start, [random_row(rng, rng.randint(0, 48)) for _ in rows])
            else:
                lib.write_data_xmem(start, rows)
                lib.dma_xmem_to_wmem(start, WROWS - len(rows), len(rows))
                assert lib.read_data_wmem(WROWS - len(rows), len(rows)) == rows
            n = rng.randint(1, WROWS)
            first = rng.randrange(WROWS - n + 1)
            assert lib.read_data_wmem(first, n) == link.card.wmem[first:first + n]
        assert lib.status() == link.card.counters
        assert link.card.counters["slots_stored"] > 30
        assert not any(v for k, v in link.card.counters.items() if k.startswith("refused"))


def test_every_refusal():
    """Host-side refusals send nothing; the card's refusals come back as the Python API's exceptions."""
    rng = random.Random(3)
    link = ModelLink()
    lib = capi.SparsrC(link, WROWS, XROWS)
    sent = len(link.frames)
    with pytest.raises(capi.DenseRow, match=f"{WMEM_COMPRESSED_MAX_NONZERO + 1} non-zero lanes"):
        lib.write_data_wmem(0, [random_row(rng, 3), random_row(rng, WMEM_COMPRESSED_MAX_NONZERO + 1)])
    with pytest.raises(capi.SparsrCError, match="WMEM has 16 rows") as e:
        lib.read_data_wmem(WROWS - 1, 2)
    assert e.value.code == capi.EINVAL
    with pytest.raises(ValueError):
        lib.write_data_wmem_raw(0, [[1 << 32] * ROW_LANES])
    with pytest.raises(ValueError):
        lib.write_data_wmem_raw(0, [[1] * (ROW_LANES - 1)])
    assert len(link.frames) == sent
    lib.write_data_wmem(0, [random_row(rng, WMEM_COMPRESSED_MAX_NONZERO)])        # the limit itself is taken
    with pytest.raises(RowRefused) as e:
        lib.write_data_xmem(XROWS - 1, rows_of(rng, 3, [5]))
    assert e.value.n == 2

    def bad_tag(words):
        if words[0] == CMD_WRITE_WMEM:
            words[3] = TAG.pack(check=False, **{**TAG.unpack(words[3]), "kind": KIND_REFUSED})
        return words
    link.corrupt = bad_tag
    with pytest.raises(FrameRefused) as e:
        lib.write_data_wmem(0, rows_of(rng, 2, [4]))
    assert e.value.reasons == {"tag": 1}
    link.corrupt = None
    lib.write_data_wmem(0, rows_of(rng, 1, [4]))             # the next call is clean again
    lib.close()


def test_version_and_link_failures():
    """A card that announces another wire protocol version is refused at open; a link's exception reaches the
    caller; bad sizes at open get a one-line error."""
    with pytest.raises(AnswerError, match=f"version 2; this host speaks {WIRE_VERSION}"):
        capi.SparsrC(ModelLink(version=2), WROWS, XROWS)
    link = ModelLink()
    lib = capi.SparsrC(link, WROWS, XROWS)
    link.recv_frame = lambda: (_ for _ in ()).throw(LinkTimeout("card gone"))
    with pytest.raises(LinkTimeout, match="card gone"):
        lib.status()
    with pytest.raises(capi.SparsrCError, match="each takes 1..4096"):
        capi.SparsrC(ModelLink(), 0, XROWS)


# Etherbone ----------------------------------------------------------------------------------------------

PORT = 12360 + int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:])
IDENT, CSR, MEM = 0x2000, 0x4000, 0x40000000
TX_GO, RX_POP, STATUS, CONFIG = CSR, CSR + 4, CSR + 8, CSR + 12
CSR_CSV = f"""csr_base,identifier_mem,{IDENT:#010x},,
csr_base,sparsr,{CSR:#010x},,
csr_register,sparsr_tx_go,{TX_GO:#010x},1,rw
csr_register,sparsr_rx_pop,{RX_POP:#010x},1,rw
csr_register,sparsr_status,{STATUS:#010x},1,ro
csr_register,sparsr_config,{CONFIG:#010x},1,ro
memory_region,sparsr,{MEM:#010x},{WINDOW_BYTES},io
"""


class FakeSparsrSoC(FakeEtherboneTarget):
    """The SoC block's registers and window on a fake Etherbone target, with the reference card behind them."""
    def __init__(self):
        FakeEtherboneTarget.__init__(self, port=PORT,
                                     memory={CONFIG: WROWS | XROWS << CONFIG_ROWS_BITS, STATUS: 0})
        self.card, self.answers = CardModel(WROWS, XROWS), []

    def on_write(self, addr, value):
        if addr == TX_GO:
            frame = [self.memory.get(MEM + 4 * (TX_OFFSET + i), 0) for i in range(FRAME_WORDS)]
            self.answers += self.card.receive(frame)
        elif addr == RX_POP:
            self.memory[STATUS] = 0
        if addr in (TX_GO, RX_POP) and not self.memory[STATUS] and self.answers:
            for i, w in enumerate(self.answers.pop(0)):
                self.memory[MEM + 4 * (RX_OFFSET + i)] = w
            self.memory[STATUS] = STATUS_RX_VALID


@pytest.fixture
def csr_csv(tmp_path):
    path = tmp_path / "csr.csv"
    path.write_text(CSR_CSV)
    return str(path)


def test_etherbone_transport_and_example_against_a_fake_soc(csr_csv):
    """The library's own Etherbone transport: rows written and read back through the fake SoC; the example
    program passes; an unreachable SoC and a csr.csv without the block are one-line errors."""
    rng = random.Random(2)
    with FakeSparsrSoC() as fake:
        with capi.SparsrC.etherbone("127.0.0.2", csr_csv, port=PORT, timeout_s=5) as lib:
            assert (lib.wmem_rows, lib.xmem_rows) == (WROWS, XROWS)
            rows = rows_of(rng, 5)
            lib.write_data_xmem(2, rows)
            lib.dma_xmem_to_wmem(2, 9, 5)
            assert lib.read_data_wmem(9, 5) == rows
            assert lib.status() == fake.card.counters
        done = subprocess.run([capi.EXAMPLE_BIN, f"127.0.0.2:{PORT}", csr_csv, "12", "7"], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1] == "ok"
        assert "refused: row 0 has 49 non-zero lanes" in done.stdout
        assert fake.card.counters["slots_refused_row"] == 1
        assert all(p.records for p in fake.requests)            # every request decoded by LiteX's classes
    with pytest.raises(capi.SparsrCError, match="no Etherbone answer from 127.0.0.2"):
        capi.SparsrC.etherbone("127.0.0.2", csr_csv, port=PORT, timeout_s=0.3)
    with open(csr_csv, "w") as f:
        f.write(CSR_CSV.replace("sparsr_rx_pop", "other_rx_pop"))
    with pytest.raises(capi.SparsrCError, match="has no csr_register sparsr_rx_pop"):
        capi.SparsrC.etherbone("127.0.0.2", csr_csv, port=PORT, timeout_s=0.3)
    done = subprocess.run([capi.EXAMPLE_BIN, "not-an-ip", csr_csv], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (1, "error: not an IPv4 address: not-an-ip\n")


def test_soc_block_rtl_through_csrs():
    """The C library drives the SoC block's RTL (Migen, real CSR bank and window) through EtherboneLink: the
    block announces WIRE_VERSION, stores what the library sends and refuses a row past its end."""
    rng = random.Random(8)
    block = SparsrBlock(wmem_rows=4, xmem_rows=2)
    rows = [random_row(rng, 30), random_row(rng, 200)]

    def host(bus):
        with capi.SparsrC(EtherboneLink(bus), 4, 2) as lib:
            lib.write_data_xmem(0, rows)
            lib.dma_xmem_to_wmem(0, 2, 2)
            after_dma = lib.read_data_wmem(2, 2)
            lib.write_data_wmem(0, [rows[0]])
            with pytest.raises(RowRefused) as refused:
                lib.write_data_wmem_raw(3, [rows[0], rows[1]])      # row 3 stored, row 4 past the end
            return lib.card_version, after_dma, lib.read_data_wmem(0, 4), refused.value.n, lib.status()

    (version, after_dma, back, n_refused, status), _ = run_demo(block, "sparsr", host,
                                                                mems={"sparsr": (block.bus, 0x10000, WINDOW_BYTES)})
    assert version == WIRE_VERSION
    assert after_dma == rows
    assert back[0] == back[2] == back[3] == rows[0]           # row 2 from the DMA, row 3 from the raw write
    assert n_refused == 2 and status["slots_refused_row"] == 2  # the two pieces of row 4
    assert status["slots_stored"] == 3 + 1 + 2           # XMEM: a LIL slot and two pieces; a LIL slot; a piece
