"""Host side of the Sparsr wire format: frame encoder/decoder, reference card model, API, links, demo."""
