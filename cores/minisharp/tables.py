"""MiniSharp validation tables: the installed collectives (MSContextTable) and the chunk slots (MSSlotTable)."""
from migen import *

from litex.gen import LiteXModule

from cores.minisharp.common import DONE_WINDOW, TIMEOUT_BITS


# The per-context tree fields (v0.2) the context table keeps, as (name, bits) for `num_ports` ports.
def tree_fields(num_ports):
    return [("v02", 1), ("child", 1), ("in_exact", 1), ("out_exact", 1), ("allreduce", 1),
            ("uplink", num_ports), ("parent_rank", 8), ("parent_mac", 48)]


class MSContextTable(LiteXModule):
    """`n_contexts` installed collectives (registers): Collective ID, expected contributors, last chunk,
    elements of the last chunk, output ports; per context its completion window (`base`, the oldest
    incomplete chunk, and a bitmap of the `window` chunks from there, chunk c at bit c mod window) and its
    idle age (ticks since its last accepted frame).

    Lookups (combinational): match (bit i: context i is valid and holds `coll`), free (bit i: context i is
    not valid), is_last (bit i: `chunk` is context i's last chunk), and context `idx`'s expected, lastchunk,
    lastlen, targets, tree (the v0.2 fields: tree_fields), base and done_bit (the bitmap's bit of `chunk`).
    expired (registered): bit i: context i is valid and idle for `timeout` ticks (0: never); a pulse for
    context i clears it for three cycles. `install()` / `remove()` give the statements (NextValue, for an FSM
    state) that install / remove the context at `idx`; pulses, for context `idx`:
    win_clear (a new window, age 0), win_set (`chunk` completed), touch (age 0).
    Each context's window advances by itself, one chunk a cycle, while the bit of `base` is set.
    """
    def __init__(self, n_contexts, num_ports, expected_bits, lastlen_bits, window=DONE_WINDOW):
        tf = tree_fields(num_ports)
        if window < 2 or window & (window - 1):
            raise ValueError(f"window must be a power of two >= 2, got {window}")
        lw = log2_int(window)
        self.coll = Signal(32)
        self.chunk = Signal(16)
        self.idx = Signal(max=max(n_contexts, 2))
        self.match, self.free, self.is_last = Signal(n_contexts), Signal(n_contexts), Signal(n_contexts)
        self.expected, self.lastchunk = Signal(expected_bits), Signal(16)
        self.lastlen, self.targets = Signal(lastlen_bits), Signal(num_ports)
        self.base, self.done_bit = Signal(17), Signal()
        self.tree = {name: Signal(w, name=f"ctx_{name}") for name, w in tf}
        self.win_clear, self.win_set, self.touch = Signal(), Signal(), Signal()
        self.tick, self.timeout = Signal(), Signal(TIMEOUT_BITS)
        self.expired = Signal(n_contexts)

        # # #

        self._valid = Array(Signal(name=f"c_valid{i}") for i in range(n_contexts))
        self._id = Array(Signal(32) for _ in range(n_contexts))
        self._expected = Array(Signal(expected_bits, name=f"c_expected{i}") for i in range(n_contexts))
        self._lastchunk = Array(Signal(16) for _ in range(n_contexts))         # number of chunks - 1
        self._lastlen = Array(Signal(lastlen_bits) for _ in range(n_contexts))  # elements of the last chunk
        self._targets = Array(Signal(num_ports) for _ in range(n_contexts))
        self._tree = {name: Array(Signal(w, name=f"c_{name}{i}") for i in range(n_contexts)) for name, w in tf}
        base = Array(Signal(17, name=f"c_base{i}") for i in range(n_contexts))
        done = Array(Signal(window, name=f"c_done{i}") for i in range(n_contexts))
        age = [Signal(TIMEOUT_BITS) for _ in range(n_contexts)]
        self.comb += [
            self.match.eq(Cat(*[self._valid[i] & (self._id[i] == self.coll) for i in range(n_contexts)])),
            self.free.eq(Cat(*[~self._valid[i] for i in range(n_contexts)])),
            self.is_last.eq(Cat(*[self.chunk == self._lastchunk[i] for i in range(n_contexts)])),
            self.expected.eq(self._expected[self.idx]), self.lastchunk.eq(self._lastchunk[self.idx]),
            self.lastlen.eq(self._lastlen[self.idx]), self.targets.eq(self._targets[self.idx]),
            self.base.eq(base[self.idx]), self.done_bit.eq(Array(done[self.idx])[self.chunk[:lw]]),
            [self.tree[name].eq(self._tree[name][self.idx]) for name, _ in tf],
        ]
        # The pulses reach the windows and ages one cycle later, from per-context registers (the FSM's
        # decision does not fan out to 8 x 64 bitmap flip-flops); the next frame reads them 5 cycles later.
        chunk_bit = Signal(window)
        self.sync += chunk_bit.eq(1 << self.chunk[:lw])
        for i in range(n_contexts):
            me = self.idx == i
            clear_r, set_r, touch_r = Signal(name=f"clear_r{i}"), Signal(name=f"set_r{i}"), Signal(name=f"touch_r{i}")
            busy = me & (self.win_clear | self.touch)
            self.sync += clear_r.eq(me & self.win_clear), set_r.eq(me & self.win_set), touch_r.eq(busy)
            at_base = Signal()
            self.comb += at_base.eq(Array(done[i])[base[i][:lw]])
            self.sync += [
                If(clear_r, base[i].eq(0), done[i].eq(0)
                ).Else(
                    If(at_base, base[i].eq(base[i] + 1)),
                    done[i].eq((done[i] & ~Mux(at_base, 1 << base[i][:lw], 0)) | Mux(set_r, chunk_bit, 0))),
                If(touch_r, age[i].eq(0)).Elif(self.tick & (age[i] != 2**TIMEOUT_BITS - 1), age[i].eq(age[i] + 1)),
                self.expired[i].eq(self._valid[i] & ~busy & ~touch_r & (self.timeout != 0) &
                                   (age[i] >= self.timeout)),
            ]

    def install(self, coll, expected, lastchunk, lastlen, targets, tree):
        i = self.idx
        return [
            NextValue(self._valid[i], 1), NextValue(self._id[i], coll), NextValue(self._expected[i], expected),
            NextValue(self._lastchunk[i], lastchunk), NextValue(self._lastlen[i], lastlen),
            NextValue(self._targets[i], targets),
            [NextValue(self._tree[name][i], v) for name, v in tree.items()],
        ]

    def remove(self):
        return [NextValue(self._valid[self.idx], 0)]


class MSSlotTable(LiteXModule):
    """`n_slots` chunk slots (registers): context (one-hot of `n_contexts`), Chunk Index, rank bitmap
    (`max_ranks` bits) and contribution count.

    Lookups (combinational): match (bit j: slot j is valid and holds context `ctx_oh`, chunk `chunk`), empty
    (bit j: slot j is free), rank_seen (bit j: rank `rank_oh` (one-hot) contributed to slot j), completes
    (bit j: one more contribution brings slot j to `expected`), count (slot `idx`'s count).
    Writes, one cycle after `commit` (with the one-hot `upd` / `free` of the frame), `replace` (frees
    the slots of context `ctx_oh`) or `expire` (frees the `expired` slots), from registered per-slot enables:
    `upd` (re)opens or adds to a slot for ctx_oh/chunk (the rank's bit set in its bitmap, cleared first with
    `init`, count set to `count_w`). expired (registered): bit j: slot j is valid and got no contribution for
    `timeout` ticks (0: never); never set for a slot being written.
    """
    def __init__(self, n_slots, n_contexts, max_ranks):
        rw = bits_for(max_ranks)
        self.ctx_oh, self.chunk, self.rank_oh = Signal(n_contexts), Signal(16), Signal(max_ranks)
        self.expected = Signal(rw)
        self.idx = Signal(max=max(n_slots, 2))
        self.match, self.empty, self.rank_seen, self.completes = (Signal(n_slots) for _ in range(4))
        self.count = Signal(rw)
        self.commit, self.replace, self.init = Signal(name="commit"), Signal(name="replace"), Signal()
        self.upd, self.free = Signal(n_slots, name="upd"), Signal(n_slots, name="free")
        self.count_w = Signal(rw)
        self.tick, self.timeout, self.expire = Signal(), Signal(TIMEOUT_BITS), Signal()
        self.expired = Signal(n_slots)

        # # #

        s_valid = [Signal(name=f"s_valid{j}") for j in range(n_slots)]
        s_ctx = [Signal(n_contexts, name=f"s_ctx{j}") for j in range(n_slots)]      # one-hot context
        s_chunk = [Signal(16, name=f"s_chunk{j}") for j in range(n_slots)]
        s_bitmap = [Signal(max_ranks, name=f"s_bitmap{j}") for j in range(n_slots)]
        s_count = [Signal(rw, name=f"s_count{j}") for j in range(n_slots)]
        of_ctx = Signal(n_slots)
        self.comb += [
            of_ctx.eq(Cat(*[(s_ctx[j] & self.ctx_oh) != 0 for j in range(n_slots)])),
            self.match.eq(Cat(*[s_valid[j] & of_ctx[j] & (s_chunk[j] == self.chunk) for j in range(n_slots)])),
            self.empty.eq(Cat(*[~s_valid[j] for j in range(n_slots)])),
            # the rank's bit: an AND-OR with the one-hot Rank (no select decoding)
            self.rank_seen.eq(Cat(*[(s_bitmap[j] & self.rank_oh) != 0 for j in range(n_slots)])),
            self.completes.eq(Cat(*[(s_count[j] + 1)[:rw] == self.expected for j in range(n_slots)])),
            self.count.eq(Array(s_count)[self.idx]),
        ]
        # `commit`/`replace` do not fan out to the table: registered per-slot enables.
        ap_upd, ap_free = Signal(n_slots, name="ap_upd"), Signal(n_slots, name="ap_free")
        self.sync += [
            ap_upd.eq(Mux(self.commit, self.upd, 0)),
            ap_free.eq(Mux(self.commit, self.free, 0) | Mux(self.replace, of_ctx, 0) |
                       Mux(self.expire, self.expired, 0)),
            [If(ap_free[j], s_valid[j].eq(0)) for j in range(n_slots)],
            [If(ap_upd[j],
                s_valid[j].eq(1), s_ctx[j].eq(self.ctx_oh), s_chunk[j].eq(self.chunk),
                s_bitmap[j].eq(Mux(self.init, 0, s_bitmap[j]) | self.rank_oh), s_count[j].eq(self.count_w)
             ) for j in range(n_slots)],
        ]
        age = [Signal(TIMEOUT_BITS) for _ in range(n_slots)]
        for j in range(n_slots):
            writing = ((self.commit | self.expire) & (self.upd[j] | self.free[j] | self.expired[j])) | \
                      (self.replace & of_ctx[j]) | ap_upd[j] | ap_free[j]
            self.sync += [
                If(ap_upd[j], age[j].eq(0)).Elif(self.tick & (age[j] != 2**TIMEOUT_BITS - 1), age[j].eq(age[j] + 1)),
                self.expired[j].eq(s_valid[j] & ~writing & (self.timeout != 0) & (age[j] >= self.timeout)),
            ]

