"""The SoC's ABI, shared by the gateware (soc/, boards/, sim/), the host software and the tests: how a host
reaches an innet SoC over Etherbone and what each core's CSRs are called."""

ETHERBONE_UDP_PORT = 1234
SOC_IP_ADDRESS = "192.168.1.50"        # the SoC's default IP (boards and simulation)
SOC_MAC_ADDRESS = 0x10e2d5000000       # MAC of the Etherbone management port
# Name of each core's block in the SoC, hence its CSR prefix (Migen reserves `sync`, so the mesh is `syncnet`).
CORE_NAMES = {"minisharp": "minisharp", "rifl": "rifl", "rifl_net": "riflnet", "switch": "switch", "sparsr": "sparsr",
              "sync": "syncnet"}
# The other cores' options in the ECP5 board builds (the SoC blocks' defaults otherwise): a RIFL network of 2
# hosts and a 2 x 2 synchronizer grid (the 4-host network and the 4 x 4 grid take ~62k and ~57k LUT4 in a
# board build, more than either device).
BOARD_CORE_OPTIONS = {"rifl_net": dict(n=2), "sync": dict(width=2, height=2)}
