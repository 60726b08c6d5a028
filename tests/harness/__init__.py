"""The shared test harness: `csr` (a CSR driver on a real CSR bank, for every SoC-block test), `streams`
(stream send/collect with seeded random valid/ready), `rifl` (the RIFL link bench), `etherbone` (a fake
Etherbone target on loopback), `verilog` (checks of generated Verilog), `tiers` (`extended(...)`: a parametrize
case that only `make test-long` runs)."""
