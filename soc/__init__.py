"""The project's LiteX SoC: Etherbone management port plus any subset of the cores."""
from soc.innet_soc import InnetSoC

__all__ = ["InnetSoC"]
