"""Host side of the synchronization network: reference reduction model and the SoC demo."""
