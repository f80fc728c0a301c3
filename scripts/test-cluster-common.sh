# Helpers shared by scripts/hadoop-test-cluster and scripts/slurm-test-cluster;
# sourced, never run. The sourcing script sets PROG (its name in messages) first.

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Does something listen on 127.0.0.1:$1?
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# cluster_dir CMD PATH: sets DIR, PATH's physical absolute form. start creates
# it; any other command on a PATH that does not exist says "not running" and
# exits: 0 for stop (nothing to stop), 3 (status's "not running") otherwise.
cluster_dir() {
  if [[ "$1" == start ]]; then
    mkdir -p "$2" || die "cannot create $2"
  elif [[ ! -d "$2" ]]; then
    echo "not running ($2 does not exist)"
    [[ "$1" == stop ]] && exit 0
    exit 3
  fi
  DIR="$(cd "$2" && pwd -P)"
}
