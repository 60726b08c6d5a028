"""The synchronizer node's stages alone: the slot table (SyncSlots) against a per-slot Python model of the
round rules under random merges, completions and message starts, and one link receiver (SyncLinkReceiver)
against a FIFO model under random flits, takes and slot decisions."""
import random

from migen import Module, Signal
from migen.sim import run_simulation

from cores.sync.common import DIRS, N, E, NE, SW, LINK_WIDTH, pack, packet_bits
from cores.sync.node import SyncLinkReceiver, SyncSlots


class SlotModel:
    """The round rules per slot, written from the node's description (docs/sync.md), one slot at a time."""
    def __init__(self, neighbours, fold, n):
        self.nb, self.fold, self.n = neighbours, fold, n
        blank = lambda: {"self": 0, "act": 0, "mode": 0, "err": 0, "acc": 0, "arr": dict.fromkeys(neighbours, 0)}
        self.cur = [dict(blank(), done=0, sent=dict.fromkeys(neighbours, 0)) for _ in range(n)]
        self.nxt = [blank() for _ in range(n)]
        self.retiring = [0] * n

    def retire(self, s):
        """The slot retires now: it was done with every message sent in the previous cycle."""
        return self.retiring[s]

    def retire_next(self, s):
        c = self.cur[s]
        return int(c["done"] and all(c["sent"][d] for d in self.nb) and not self.retiring[s])

    def complete(self, s):
        c = self.cur[s]
        return c["self"] and all(c["arr"][d] for d in self.nb)

    def self_eff(self, s):
        c = self.cur[s]
        return c["self"] and (c["arr"][self.fold] if self.fold is not None else 1)

    def step(self, ok, ident, to_cur, src, merged, cpl, tx):
        retiring = [self.retire(s) for s in range(self.n)]
        self.retiring = [self.retire_next(s) for s in range(self.n)]
        local = src == len(self.nb)
        for s in range(self.n):
            c, x, hit = self.cur[s], self.nxt[s], ok and ident == s
            vals = dict(zip(("mode", "err", "acc"), merged))
            if retiring[s]:
                # the next round (with this merge) becomes current
                c["self"], c["act"], c["done"] = int(x["self"] or (hit and local)), int(x["act"] or hit), 0
                c.update(vals if hit else {k: x[k] for k in vals})
                for i, d in enumerate(self.nb):
                    c["arr"][d], c["sent"][d], x["arr"][d] = int(x["arr"][d] or (hit and src == i)), 0, 0
                x["self"] = x["act"] = 0
            elif hit:
                r = c if to_cur else x
                r["act"] = 1
                r.update(vals)
                r["self"] |= local
                for i, d in enumerate(self.nb):
                    r["arr"][d] |= src == i
            if cpl is not None and cpl == s:
                c["done"] = 1
            for d, t in tx.items():
                if t is not None and t == s:
                    c["sent"][d] = 1

    def vectors(self):
        vec = lambda f: sum(int(bool(f(s))) << s for s in range(self.n))
        out = {"self_": vec(lambda s: self.cur[s]["self"]), "act": vec(lambda s: self.cur[s]["act"]),
               "done": vec(lambda s: self.cur[s]["done"]), "nself": vec(lambda s: self.nxt[s]["self"]),
               "nact": vec(lambda s: self.nxt[s]["act"]), "self_eff": vec(self.self_eff),
               "complete": vec(self.complete), "retire": vec(self.retire),
               "retire_next": vec(self.retire_next)}
        for d in self.nb:
            out[f"arr{d}"] = vec(lambda s: self.cur[s]["arr"][d])
            out[f"narr{d}"] = vec(lambda s: self.nxt[s]["arr"][d])
            out[f"sent{d}"] = vec(lambda s: self.cur[s]["sent"][d])
        for s in range(self.n):
            for k in ("mode", "err", "acc"):       # the values of a round that is not active mean nothing
                out[f"{k}{s}"] = self.cur[s][k] if self.cur[s]["act"] else None
                out[f"n{k}{s}"] = self.nxt[s][k] if self.nxt[s]["act"] else None
        return out


def _read(slots, neighbours, n):
    out = {}
    for k in ("self_", "act", "done", "nself", "nact", "self_eff", "complete", "retire", "retire_next"):
        out[k] = yield getattr(slots, k)
    for d in neighbours:
        out[f"arr{d}"] = yield slots.arr[d]
        out[f"narr{d}"] = yield slots.narr[d]
        out[f"sent{d}"] = yield slots.sent[d]
    bank, act, nact = (yield slots.bank), out["act"], out["nact"]
    for s in range(n):
        for prefix, active, b in (("", act, 0), ("n", nact, 1)):
            adr = s | ((bank >> s & 1 ^ b) << slots.ib)
            word = (yield slots.w_dat) if (yield slots.w_we) and (yield slots.w_adr) == adr else (yield slots.mem[adr])
            fields = {"err": word & 1, "mode": word >> 1 & 7, "acc": word >> 4}
            for k in ("mode", "err", "acc"):
                out[f"{prefix}{k}{s}"] = fields[k] if active >> s & 1 else None
    return out


def run_slots(neighbours, fold, n, cycles, seed):
    vw = 8
    slots = SyncSlots(neighbours, fold, n, vw)
    # the merge writes the addressed round's entry; a retiring slot's next round becomes current
    slots.comb += slots.adr.eq(slots.entry(slots.ident, ~(slots.to_cur & ~slots.bit(slots.retire, slots.ident))))
    model = SlotModel(neighbours, fold, n)
    rng = random.Random(seed)
    mismatches = []

    def gen():
        prev = None
        for t in range(cycles):
            ok = rng.random() < 0.6
            ident, to_cur, src = rng.randrange(n), rng.random() < 0.6, rng.randrange(len(neighbours) + 1)
            merged = (rng.randrange(6), rng.randrange(2), rng.getrandbits(vw))
            cpl = rng.randrange(n) if rng.random() < 0.3 else None
            tx = {d: (rng.randrange(n) if rng.random() < 0.3 else None) for d in neighbours}
            yield slots.ok.eq(ok)
            yield slots.ident.eq(ident)
            yield slots.to_cur.eq(to_cur)
            yield slots.src.eq(src)
            for sig, v in zip((slots.m_mode, slots.m_err, slots.m_acc), merged):
                yield sig.eq(v)
            yield slots.cpl_taken.eq(cpl is not None)
            yield slots.cpl_ident.eq(cpl or 0)
            for d in neighbours:
                yield slots.tx_slot[d].eq(1 << (tx[d] or 0))
                yield slots.tx_start[d].eq(tx[d] is not None)
            yield
            # inputs written before a clock edge are seen from that edge on: the state read now holds the
            # previous cycle's inputs
            if prev is not None:
                model.step(*prev)
            prev = (ok, ident, to_cur, src, merged, cpl, tx)
            got = yield from _read(slots, neighbours, n)
            want = model.vectors()
            if got != want:
                mismatches.append((t, {k: (v, want[k]) for k, v in got.items() if v != want[k]}))
    run_simulation(slots, gen())
    return mismatches


def test_slot_table_matches_the_per_slot_model():
    for neighbours, fold, n, seed in [(DIRS, None, 8, 1), ((N, E, NE, SW), SW, 3, 2), ((NE,), None, 1, 3),
                                      ((), None, 2, 4)]:
        mism = run_slots(neighbours, fold, n, 1500, seed)
        assert not mism, (neighbours, mism[:3])


def test_link_receiver_offers_packets_in_order_and_counts_overflow():
    """Flits of random packets arrive back to back with random gaps; the selector chooses the offered head at
    random and takes it the cycle after (the link is busy then). The receiver must offer exactly the packets
    that fit its 2 n_idents FIFO, in order, and pulse `overflow` once for each packet it lost."""
    n, vw = 2, 8
    nf = -(-packet_bits(vw) // LINK_WIDTH)
    rng = random.Random(7)
    top = Module()
    rx = type("Link", (), {})()
    rx.valid, rx.data = Signal(), Signal(LINK_WIDTH)
    flags = (Signal(n), Signal(n), Signal(n))
    busy = Signal()
    rcv = SyncLinkReceiver(rx, flags, Signal(n), busy, n, vw)
    go = Signal()
    top.submodules += rcv
    top.sync += rcv.take.eq(rcv.valid & go)
    top.comb += busy.eq(rcv.take)
    packets = [pack(rng.randrange(n), rng.randrange(6), 0, rng.getrandbits(vw), vw) for _ in range(120)]
    taken, state = [], {"overflows": 0}

    def stream():
        for flits in packets:
            for _ in range(rng.choice([0, 0, 0, 0, 1, 12])):
                yield rx.valid.eq(0)
                yield
            for f in flits:
                yield rx.valid.eq(1)
                yield rx.data.eq(f)
                yield
        yield rx.valid.eq(0)
        for _ in range(400):
            yield

    def select():
        yield "passive"
        while True:
            yield go.eq(rng.random() < 0.15)
            yield
            state["overflows"] += (yield rcv.overflow)
            if (yield rcv.take):
                taken.append((yield rcv.entry) & ((1 << packet_bits(vw)) - 1))

    run_simulation(top, [stream(), select()])
    sent = [sum(f << (LINK_WIDTH * i) for i, f in enumerate(flits)) for flits in packets]
    overflows = state["overflows"]
    assert nf == 2 and overflows > 0, "the test must send 2-flit packets and overfill the FIFO"
    # every packet is taken once, in order, unless it was lost (counted)
    it = iter(sent)
    assert all(any(p == q for q in it) for p in taken), "a packet was taken out of order or twice"
    assert len(taken) + overflows == len(sent)
