"""Host software of the RIFL network SoC block (cores.rifl_net.soc_block.RIFLNetBlock): its `make sim` demo."""
