"""W x H synchronizer grid plus the lamlet (control core) synchronizer, with modelled hop latency."""
from migen import *

from litex.gen import LiteXModule

from cores.sync.common import (DIRS, VECTORS, OPPOSITE, LAMLET_DIR, MAX_IDENTS, DEFAULT_VALUE_WIDTH,
                               DEFAULT_HOP_LATENCY, min_hop_latency)
from cores.sync.node import SyncNode


class SyncGrid(LiteXModule):
    """`nodes[y][x]` (x East, y North) linked to their 8 neighbours; `lamlet` (if with_lamlet) is one more
    participant on the south-west port of node (0, 0), which folds it into its own trigger.

    Parameters: width, height (nodes), n_idents, value_width, hop_latency (cycles from a message's
    condition holding at the sender to the receiver having merged it, without contention; the links get
    hop_latency - min_hop_latency(value_width) extra register stages), with_lamlet.
    `participants` lists every node (grid nodes row by row from (0, 0), then the lamlet)."""
    def __init__(self, width=4, height=4, n_idents=MAX_IDENTS, value_width=DEFAULT_VALUE_WIDTH,
                 hop_latency=DEFAULT_HOP_LATENCY, with_lamlet=True):
        if width < 1 or height < 1:
            raise ValueError(f"grid must be at least 1x1, not {width}x{height}")
        if hop_latency < min_hop_latency(value_width):
            raise ValueError(f"hop_latency {hop_latency} is below the {min_hop_latency(value_width)} cycles a "
                             f"{value_width}-bit packet needs")
        self.width, self.height, self.with_lamlet = width, height, with_lamlet
        self.hop_latency, self.value_width, self.n_idents = hop_latency, value_width, n_idents
        stages = hop_latency - min_hop_latency(value_width)

        # # #

        def neighbours(x, y):
            ds = [d for d in DIRS if 0 <= x + VECTORS[d][0] < width and 0 <= y + VECTORS[d][1] < height]
            if with_lamlet and (x, y) == (0, 0):
                ds.append(LAMLET_DIR)
            return ds

        self.nodes = []
        for y in range(height):
            row = []
            for x in range(width):
                fold = LAMLET_DIR if with_lamlet and (x, y) == (0, 0) else None
                node = SyncNode(neighbours(x, y), fold=fold, n_idents=n_idents, value_width=value_width)
                setattr(self, f"node_{x}_{y}", node)
                row.append(node)
            self.nodes.append(row)
        self.participants = [n for row in self.nodes for n in row]
        if with_lamlet:
            self.lamlet = SyncNode([OPPOSITE[LAMLET_DIR]], n_idents=n_idents, value_width=value_width)
            self.participants.append(self.lamlet)

        def connect(src, dst):
            for a, b in ((src.valid, dst.valid), (src.data, dst.data)):
                for _ in range(stages):
                    q = Signal.like(a)
                    self.sync += q.eq(a)
                    a = q
                self.comb += b.eq(a)

        for y in range(height):
            for x in range(width):
                node = self.nodes[y][x]
                for d in node.neighbours:
                    if with_lamlet and (x, y) == (0, 0) and d == LAMLET_DIR:
                        connect(node.tx[d], self.lamlet.rx[OPPOSITE[d]])
                        connect(self.lamlet.tx[OPPOSITE[d]], node.rx[d])
                    else:
                        dx, dy = VECTORS[d]
                        connect(node.tx[d], self.nodes[y + dy][x + dx].rx[OPPOSITE[d]])
