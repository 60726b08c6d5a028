#!/usr/bin/env bash
# Put yosys/nextpnr-ecp5/ecppack (the names LiteX calls) and sby/yosys-smtbmc/yosys-witness (the names
# SymbiYosys calls) and boolector beside the YoWASP tools as thin wrappers.
set -euo pipefail
bindir=$1
for tool in yosys nextpnr-ecp5 ecppack sby yosys-smtbmc yosys-witness boolector; do
	printf '#!/usr/bin/env bash\nexec "$(dirname "$(readlink -f "$0")")/yowasp-%s" "$@"\n' "$tool" > "$bindir/$tool"
	chmod +x "$bindir/$tool"
done
