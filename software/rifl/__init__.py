"""Host software for RIFL: the reference model (Layer 1 frame codec, Layer 2 segmentation/reassembly) and the SoC demo."""
