"""SoC block: a synchronizer grid driven through CSRs, with a completion FIFO and a latency counter."""
from migen import *
from migen.genlib.fifo import SyncFIFOBuffered
from migen.genlib.record import layout_len

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus

from cores.lib.counters import add_counter_csrs, add_counters
from cores.lib.header import csr_fields
from cores.lib.logic import reduce_or, round_robin
from cores.sync.common import (MAX_IDENTS, IDENT_BITS, MODE_BITS, DEFAULT_VALUE_WIDTH, DEFAULT_HOP_LATENCY,
                               NODE_BITS, LATENCY_BITS, BLOCK_COUNTERS, TRIG_CTRL, TRIG_STATUS, CPL_STATUS, CPL_INFO,
                               CPL_POP, INFO)
from cores.sync.grid import SyncGrid

_DESCRIPTIONS = {
    "node": "Participant: y * width + x; the lamlet is width * height.",
    "ident": "Sync ident.",
    "mode": "0 max, 1 umax, 2 min, 3 umin, 4 or, 5 and.",
    "go": "Write 1 to queue the trigger.",
    "busy": "A trigger is waiting for its node.",
    "pop": "Drop the head.",
    "error": "Modes differed between participants (the value is then undefined).",
    "valid": "A completion is at the head of the FIFO.",
    "level": "Completions queued.",
    "width": "Grid width (nodes).", "height": "Grid height (nodes).", "n_idents": "Sync idents per node.",
    "value_width": "Value width (bits).", "lamlet": "The lamlet participant is present.",
    "hop_latency": "Modelled cycles per hop.",
}


class SyncBlock(LiteXModule):
    """A width x height synchronizer grid (plus the lamlet) for the SoC.

    Host use: write `trig_value`, then `trig_ctrl` (node, ident, mode, go=1); the trigger is held until the
    node takes it (`trig_status.busy`). Every completion of every participant is queued in a FIFO with its
    latency (cycles from the most recent trigger of that ident taken anywhere in the grid to the cycle the
    node presented the completion); read `cpl_info`,
    `cpl_value`, `cpl_latency` while `cpl_status.valid`, then write `cpl_pop`. Counters: `trigger_drops`
    (bad node/ident/mode, ident in flight, or go while busy), `rx_drops`, `mismatches`, `completions`.

    Parameters: width, height, n_idents, value_width (<= 32), hop_latency, with_lamlet.
    """
    def __init__(self, width=4, height=4, n_idents=MAX_IDENTS, value_width=DEFAULT_VALUE_WIDTH,
                 hop_latency=DEFAULT_HOP_LATENCY, with_lamlet=True):
        if not 1 <= value_width <= 32:
            raise ValueError(f"value_width must be 1..32 for the CSR interface, not {value_width}")
        self.grid = grid = SyncGrid(width, height, n_idents=n_idents, value_width=value_width,
                                    hop_latency=hop_latency, with_lamlet=with_lamlet)
        parts = grid.participants
        n = len(parts)
        for name, v in (("width", width), ("height", height), ("hop_latency", hop_latency)):
            if v >> INFO.width(name):
                raise ValueError(f"{name}={v} does not fit the {INFO.width(name)}-bit info field")
        fifo_depth = 1 << (n * n_idents).bit_length()     # room for every node's completion of every ident

        self.trig_value = CSRStorage(value_width, description="Value of the next trigger.")
        self.info = CSRStatus(fields=csr_fields(INFO, _DESCRIPTIONS))
        self.trig_ctrl = CSRStorage(fields=csr_fields(TRIG_CTRL, _DESCRIPTIONS, pulse=("go",)))
        self.trig_status = CSRStatus(fields=csr_fields(TRIG_STATUS, _DESCRIPTIONS))
        self.cpl_status = CSRStatus(fields=csr_fields(CPL_STATUS, _DESCRIPTIONS))
        self.cpl_info = CSRStatus(fields=csr_fields(CPL_INFO, _DESCRIPTIONS))
        self.cpl_value = CSRStatus(value_width, description="Reduction result.")
        self.cpl_latency = CSRStatus(LATENCY_BITS, description="Cycles from the ident's last trigger to "
                                                                "this completion.")
        self.cpl_pop = CSRStorage(fields=csr_fields(CPL_POP, _DESCRIPTIONS, pulse=("pop",)))

        # # #

        info = self.info.fields
        self.comb += [info.width.eq(width), info.height.eq(height), info.n_idents.eq(n_idents),
                      info.value_width.eq(value_width), info.lamlet.eq(with_lamlet),
                      info.hop_latency.eq(hop_latency)]
        now = Signal(LATENCY_BITS)
        last = Array(Signal(LATENCY_BITS) for _ in range(n_idents))
        self.sync += now.eq(now + 1)

        # Trigger: one pending trigger, offered to its node until taken.
        busy = Signal()
        p_node, p_ident, p_mode, p_value = Signal(NODE_BITS), Signal(IDENT_BITS), Signal(MODE_BITS), \
            Signal(value_width)
        taken = Signal()
        bad_node = Signal()
        go = self.trig_ctrl.fields.go
        self.comb += [
            self.trig_status.fields.busy.eq(busy),
            bad_node.eq(self.trig_ctrl.fields.node >= n),
            taken.eq(reduce_or([p.sink.valid & p.sink.ready for p in parts])),
        ]
        for i, p in enumerate(parts):
            self.comb += [
                p.sink.valid.eq(busy & (p_node == i)),
                p.sink.ident.eq(p_ident), p.sink.mode.eq(p_mode), p.sink.value.eq(p_value),
            ]
        self.sync += [
            If(go & ~busy & ~bad_node,
                busy.eq(1), p_node.eq(self.trig_ctrl.fields.node), p_ident.eq(self.trig_ctrl.fields.ident),
                p_mode.eq(self.trig_ctrl.fields.mode), p_value.eq(self.trig_value.storage),
            ).Elif(taken, busy.eq(0)),
            If(taken, last[p_ident].eq(now)),
        ]

        # Completions: round-robin over the participants into one FIFO.
        layout = [("node", NODE_BITS), ("ident", IDENT_BITS), ("mode", MODE_BITS), ("error", 1),
                  ("value", value_width), ("latency", LATENCY_BITS)]
        self.fifo = fifo = SyncFIFOBuffered(layout_len(layout), fifo_depth)
        req = Signal(n)
        self.comb += [req[i].eq(p.source.valid) for i, p in enumerate(parts)]
        _, grant, _ = round_robin(self, req, n)
        # A completion's time is the cycle its node first presents it (not when the FIFO takes it).
        held = Array(Signal() for _ in parts)
        stamp = Array(Signal(LATENCY_BITS) for _ in parts)
        for i, p in enumerate(parts):
            self.sync += [held[i].eq(p.source.valid & ~p.source.ready), If(~held[i], stamp[i].eq(now))]
        entry = Record(layout)
        sel = [Array(getattr(p.source, f) for p in parts)[grant] for f in ("ident", "mode", "error", "value")]
        self.comb += [
            entry.node.eq(grant), entry.ident.eq(sel[0]), entry.mode.eq(sel[1]), entry.error.eq(sel[2]),
            entry.value.eq(sel[3]), entry.latency.eq(Mux(held[grant], stamp[grant], now) -
                             Mux(taken & (p_ident == sel[0]), now, last[sel[0]])),
            fifo.din.eq(entry.raw_bits()),
            fifo.we.eq(req != 0),
            *[p.source.ready.eq(fifo.writable & (grant == i)) for i, p in enumerate(parts)],
        ]
        head = Record(layout)
        self.comb += [
            head.raw_bits().eq(fifo.dout),
            fifo.re.eq(self.cpl_pop.fields.pop),
            self.cpl_status.fields.valid.eq(fifo.readable), self.cpl_status.fields.level.eq(fifo.level),
            self.cpl_info.fields.node.eq(head.node), self.cpl_info.fields.ident.eq(head.ident),
            self.cpl_info.fields.mode.eq(head.mode), self.cpl_info.fields.error.eq(head.error),
            self.cpl_value.status.eq(head.value), self.cpl_latency.status.eq(head.latency),
        ]

        # Counters.
        add_counters(self, BLOCK_COUNTERS, {
            "trigger_drops": (go & (busy | bad_node)) + sum(p.ev_trigger_drop for p in parts),
            "rx_drops": sum(p.ev_rx_drop for p in parts),
            "mismatches": sum(p.ev_mismatch for p in parts),
            "completions": fifo.we & fifo.writable,
        })
        add_counter_csrs(self, BLOCK_COUNTERS)
