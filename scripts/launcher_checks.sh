# Checks shared by scripts/run_per_gpu.sh and scripts/slurm_array.sh (sourced, not run). Each failure prints
# "error: <script>: <what is wrong>" and exits 2, before anything is started or submitted.

# refuse_own_options SCRIPT ARGS...: the launchers add --shard, --output and --entail-cache themselves.
refuse_own_options() {
  local script=$1 arg
  shift
  for arg in "$@"; do
    case "$arg" in
      --output | --output=* | --shard | --shard=* | --entail-cache | --entail-cache=*)
        echo "error: $script sets $arg itself; leave it out" >&2
        exit 2
        ;;
    esac
  done
}

# require_positive_int SCRIPT NAME VALUE: VALUE is a whole number >= 1 written with the digits 0-9.
require_positive_int() {
  if ! [[ "$3" =~ ^[1-9][0-9]*$ ]]; then
    echo "error: $1: $2 must be a positive whole number; got '$3'" >&2
    exit 2
  fi
}

# require_gpu_list SCRIPT NAME ID...: GPU indices (0, 1, ...) or UUIDs (GPU-..., MIG-...), each given once.
require_gpu_list() {
  local script=$1 name=$2 id
  shift 2
  declare -A seen=()
  for id in "$@"; do
    if ! [[ "$id" =~ ^([0-9]+|(GPU|MIG)-[A-Za-z0-9/-]+)$ ]]; then
      echo "error: $script: $name must list GPU indices or UUIDs separated by spaces; '$id' is neither" >&2
      exit 2
    fi
    if [ -n "${seen[$id]:-}" ]; then
      echo "error: $script: $name lists GPU '$id' twice; each GPU takes one shard" >&2
      exit 2
    fi
    seen[$id]=1
  done
}
