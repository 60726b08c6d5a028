"""Gateware and ABI helpers shared by every core: stream buffers (`buffers`), block RAM (`block_ram`), the
commit/abort FIFO (`commit_fifo`), small logic helpers (`logic`: xorshift32, round-robin, first set bit,
reductions), event counters and their CSRs (`counters`) and the header-field descriptor (`header`)."""
