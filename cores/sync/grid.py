"""W x H synchronizer grid plus the lamlet (control core) synchronizer, with modelled hop latency."""
from migen import *

from litex.gen import LiteXModule

from cores.sync.common import (DIRS, VECTORS, OPPOSITE, LAMLET_DIR, MAX_IDENTS, DEFAULT_VALUE_WIDTH,
                               DEFAULT_HOP_LATENCY, min_hop_latency)
from cores.sync.node import SyncNode


def grid_nodes(width, height, with_lamlet=True):
    """Every participant as (neighbour directions, fold direction or None): grid nodes row by row from (0, 0),
    then the lamlet (a node whose only neighbour is (0, 0), to its north-east)."""
    out = []
    for y in range(height):
        for x in range(width):
            ds = [d for d in DIRS if 0 <= x + VECTORS[d][0] < width and 0 <= y + VECTORS[d][1] < height]
            lam = with_lamlet and (x, y) == (0, 0)
            out.append((tuple(ds + [LAMLET_DIR]) if lam else tuple(ds), LAMLET_DIR if lam else None))
    if with_lamlet:
        out.append(((OPPOSITE[LAMLET_DIR],), None))
    return out


def grid_links(width, height, with_lamlet=True):
    """Every directed link as (sender index, sender's direction, receiver index); the receiver's port is the
    opposite direction. Indices as in `grid_nodes`."""
    out = []
    for y in range(height):
        for x in range(width):
            for d in grid_nodes(width, height, with_lamlet)[y * width + x][0]:
                if with_lamlet and (x, y) == (0, 0) and d == LAMLET_DIR:
                    out += [(0, d, width * height), (width * height, OPPOSITE[d], 0)]
                else:
                    out.append((y * width + x, d, (y + VECTORS[d][1]) * width + x + VECTORS[d][0]))
    return out


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
        self.stages = stages = hop_latency - min_hop_latency(value_width)

        # # #

        self.participants = []
        for i, (neighbours, fold) in enumerate(grid_nodes(width, height, with_lamlet)):
            node = SyncNode(neighbours, fold=fold, n_idents=n_idents, value_width=value_width)
            if i < width * height:
                setattr(self, f"node_{i % width}_{i // width}", node)
            else:
                self.lamlet = node
            self.participants.append(node)
        self.nodes = [self.participants[y * width:(y + 1) * width] for y in range(height)]

        for src, d, dst in grid_links(width, height, with_lamlet):
            tx, rx = self.participants[src].tx[d], self.participants[dst].rx[OPPOSITE[d]]
            for a, b in ((tx.valid, rx.valid), (tx.data, rx.data)):
                for _ in range(stages):
                    q = Signal.like(a)
                    self.sync += q.eq(a)
                    a = q
                self.comb += b.eq(a)
