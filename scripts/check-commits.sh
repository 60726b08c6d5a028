#!/usr/bin/env bash
# Commit subjects of at most 72 characters (the why goes in the body), for the commits after SINCE
# (7548732: the history before it is kept as it landed). `git log --oneline` then reads as a list of changes.
set -euo pipefail
cd "$(dirname "$0")/.."
SINCE=${1:-7548732}
MAX=72
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    echo "usage: scripts/check-commits.sh [SINCE]   # commit subjects after SINCE (default 7548732) <= $MAX characters"
    exit 0
fi
if ! git cat-file -e "$SINCE^{commit}" 2>/dev/null; then
    echo "check-commits: $SINCE is not in this clone's history; checking HEAD only"
    range=(-1 HEAD)
else
    range=("$SINCE..HEAD")
fi
bad=$(git log --format='%h %s' "${range[@]}" | awk -v max="$MAX" '{ s = substr($0, index($0, " ") + 1) } length(s) > max')
if [ -n "$bad" ]; then
    echo "check-commits: subjects over $MAX characters:" >&2
    echo "$bad" >&2
    exit 1
fi
echo "check-commits: $(git log --format=%h "${range[@]}" | wc -l) commits, every subject <= $MAX characters"
