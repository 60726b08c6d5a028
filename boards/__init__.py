"""Board targets: platform + CRG + InnetSoC with Etherbone, built with yosys + nextpnr-ecp5."""
