"""The SoC's ABI, shared by the gateware (soc/, boards/, sim/), the host software and the tests: how a host
reaches an innet SoC over Etherbone and what each core's CSRs are called."""

ETHERBONE_UDP_PORT = 1234
SOC_IP_ADDRESS = "192.168.1.50"        # the SoC's default IP (boards and simulation)
SOC_MAC_ADDRESS = 0x10e2d5000000       # MAC of the Etherbone management port
# Name of each core's block in the SoC, hence its CSR prefix (Migen reserves `sync`, so the mesh is `syncnet`).
CORE_NAMES = {"minisharp": "minisharp", "rifl": "rifl", "rifl_net": "riflnet", "switch": "switch", "sparsr": "sparsr",
              "sync": "syncnet"}
