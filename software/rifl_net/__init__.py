"""Host software of the RIFL network SoC block (cores.rifl.soc_block.RIFLNetBlock): its `make sim` demo."""
