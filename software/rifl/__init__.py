"""Host software for RIFL: reference frame encoder/decoder, Layer 2 segmentation/reassembly, demo."""
