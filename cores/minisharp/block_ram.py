"""Simple dual-port block RAM as yosys maps it to ECP5 DP16KD without extra logic."""
from migen import Memory


def block_ram(module, width, depth):
    """Adds a `width` x `depth` Memory with a write port and an asynchronous read port to `module` and
    returns (write port, read port). The read data must go straight into a register: synthesis takes it
    as the block RAM's own register. The memory is marked `no_rw_check`: the user guarantees that a read
    never meets a write to the same address in the same cycle (without it, yosys emulates the Verilog
    read-during-write semantics with a bypass register as wide as the RAM and a multiplexer after it)."""
    mem = Memory(width, depth)
    mem.attr = {("no_rw_check", 1)}
    wr = mem.get_port(write_capable=True)
    rd = mem.get_port(async_read=True)
    module.specials += mem, wr, rd
    return wr, rd
