#include "adapters/script/stubs.h"

#include <array>

namespace attune::script {
namespace {

// What every stub starts with, after its settings: recording a call, running the system's own
// program, and skipping a launcher's options.
constexpr std::string_view kPrelude = R"sh(
# A script that exported SHELLOPTS would hand its -e/-u/-x to every stub.
set +o errexit +o nounset +o xtrace +o pipefail
name=${0##*/}

# Writes one record (see adapters/script/stubs.h) and sets record_id.
# Usage: record KIND COMMAND_AT ARGV...
record() {
  local kind=$1 command_at=$2 taken n
  shift 2
  taken=("$records"/call-*)
  n=${#taken[@]}
  [[ -e ${taken[0]} ]] || n=0
  record_id=""
  set -o noclobber
  while (( n < calls_max )); do
    n=$((n + 1))
    printf -v record_id 'call-%06d' "$n"
    { : > "$records/$record_id"; } 2> /dev/null && break
    record_id=""
  done
  set +o noclobber
  [[ -n $record_id ]] || return 1
  { printf '%s\0' "$kind" "${ATTUNE_STUB_LAUNCHER:-}" "$PWD" "$command_at" "$#" "$@"
    command env -0; } >> "$records/$record_id"
}

# Runs this system's own program of that name, past the stubs, or fails like a missing command.
run_real() {
  local program=$1 dir
  shift
  for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [[ -x $dir/$program ]] && exec "$dir/$program" "$@"
  done
  echo "$program: command not found" >&2
  exit 127
}

# Sets operand_at to the number of leading words that are options, so that what the launcher
# runs is ${@:operand_at+1}. $1: the options that take a value, '_' written '-'; $2: the short
# options that take a value inside a getopt cluster such as -lN2; then the words.
count_options() {
  local with_value=" ${1//$'\n'/ } " short_with_value=$2 word i
  shift 2
  operand_at=0
  while (( $# > 0 )); do
    word=$1
    case $word in
      --) operand_at=$((operand_at + 1)); return ;;
      --*=*) ;;
      -?*)
        if [[ $with_value == *" ${word//_/-} "* ]]; then
          (( $# >= 2 )) || { operand_at=$((operand_at + 1)); return; }
          shift
          operand_at=$((operand_at + 1))
        elif [[ -n $short_with_value && $word != --* ]]; then
          for (( i = 1; i < ${#word}; i++ )); do
            [[ $short_with_value == *"${word:i:1}"* ]] || continue
            if (( i == ${#word} - 1 && $# >= 2 )); then
              shift
              operand_at=$((operand_at + 1))
            fi
            break
          done
        fi ;;
      *) return ;;
    esac
    shift
    operand_at=$((operand_at + 1))
  done
}

torchrun_options="--nnodes --nproc-per-node --rdzv-backend --rdzv-endpoint --rdzv-id --rdzv-conf
  --max-restarts --monitor-interval --start-method --role --log-dir --redirects -r --tee -t
  --local-ranks-filter --node-rank --master-addr --master-port --local-addr --logs-specs
  --event-log-handler --numa-binding --signals-to-handle"

# Records a launcher's command line and runs its program: python3 PROGRAM ARGS, the program
# itself after --no-python, python3 -m MODULE after -m. The program's record names this one.
# Usage: launch OWN OPTIONS_AT ARGV... where ARGV[0..OWN) are the launcher's words and its own
# options start at ARGV[OPTIONS_AT].
launch() {
  local own=$1 options_at=$2 mode=python word
  shift 2
  for word in "${@:options_at+1:own-options_at}"; do
    case ${word//_/-} in
      --no-python) mode=direct ;;
      -m|--module) mode=module ;;
    esac
  done
  record launcher "$own" "$@"
  export ATTUNE_STUB_LAUNCHER=$record_id
  shift "$own"
  (( $# > 0 )) || exit 0
  case $mode in
    direct) exec "$@" ;;
    module) exec "$stub_dir/python3" -m "$@" ;;
    *) exec "$stub_dir/python3" "$@" ;;
  esac
}
)sh";

// The python interpreter: the interpreter's own options, then -c CMD, -m MODULE, a program
// file or stdin.
constexpr std::string_view kPython = R"sh(
words=("$@")
at=0
module=""
program_at=0
while (( at < ${#words[@]} )); do
  word=${words[at]}
  case $word in
    -c*) break ;;
    -m) module=${words[at+1]}; at=$((at + 2)); break ;;
    -m*) module=${word#-m}; at=$((at + 1)); break ;;
    -W|-X|--check-hash-based-pycs) at=$((at + 2)) ;;
    -W*|-X*) at=$((at + 1)) ;;
    --) at=$((at + 1)); program_at=$((at + 1)); break ;;
    -) break ;;
    --*) at=$((at + 1)) ;;
    -?*)
      [[ $word == *c* ]] && break
      if [[ $word == *m ]]; then module=${words[at+1]}; at=$((at + 2)); break; fi
      at=$((at + 1)) ;;
    *) program_at=$((at + 1)); break ;;
  esac
done
case $module in
  torch.distributed.run|torch.distributed.launch)
    count_options "$torchrun_options" "" "${words[@]:at}"
    launch "$((1 + at + operand_at))" "$((1 + at))" "$name" "$@" ;;
esac
record python "$program_at" "$name" "$@"
exit 0
)sh";

constexpr std::string_view kTorchrun = R"sh(
count_options "$torchrun_options" "" "$@"
launch "$((operand_at + 1))" 1 "$name" "$@"
)sh";

constexpr std::string_view kDeepspeed = R"sh(
count_options "--hostfile -H --include -i --exclude -e --num-nodes --min-elastic-nodes
  --max-elastic-nodes --num-gpus --master-port --master-addr --node-rank --launcher
  --launcher-args --enable-each-rank-log --autotuning --bind-core-list --ssh-port --comment
  --venv-script" "" "$@"
launch "$((operand_at + 1))" 1 "$name" "$@"
)sh";

// Open MPI's options (and MPICH's -genv/-env); -x VAR=VALUE and -genv VAR VALUE set a variable
// for the ranks, -x VAR passes one through.
constexpr std::string_view kMpirun = R"sh(
args=("$@")
at=0
size=1
with_value="-npernode --npernode -N -ppn -npersocket --npersocket -hostfile --hostfile
  -machinefile --machinefile -host --host -H -hosts -f -bind-to --bind-to -map-by --map-by
  -rank-by --rank-by -prefix --prefix -output-filename --output-filename -launch-agent
  --launch-agent -am -tune --tune -rankfile --rankfile -path --path -cpu-set --cpu-set
  -timeout --timeout -iface -bootstrap -cpus-per-proc --cpus-per-proc -cpus-per-rank
  --cpus-per-rank --report-bindings-file"
while (( at < ${#args[@]} )); do
  word=${args[at]}
  case $word in
    -x)
      assignment=${args[at+1]}
      if [[ $assignment =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then export "$assignment"; fi
      at=$((at + 2)) ;;
    -np|-n|-c|--np|--n) size=${args[at+1]}; at=$((at + 2)) ;;
    -mca|--mca|-gmca|--gmca) at=$((at + 3)) ;;
    -genv|-env)
      if [[ ${args[at+1]} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        export "${args[at+1]}=${args[at+2]}"
      fi
      at=$((at + 3)) ;;
    -wdir|--wdir|-wd|--wd) cd "${args[at+1]}" 2> /dev/null; at=$((at + 2)) ;;
    --*=*) at=$((at + 1)) ;;
    -?*)
      if [[ " ${with_value//$'\n'/ } " == *" $word "* ]]; then
        at=$((at + 2))
      else
        at=$((at + 1))
      fi ;;
    *) break ;;
  esac
done
[[ $size =~ ^[0-9]+$ ]] || size=1
export OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_SIZE=$size
record launcher "$((at + 1))" "$name" "$@"
export ATTUNE_STUB_LAUNCHER=$record_id
(( at < ${#args[@]} )) || exit 0
exec "${args[@]:at}"
)sh";

// Slurm's options that take a value, shared by srun and sbatch; each adds its own.
constexpr std::string_view kSlurmOptions = R"sh(
slurm_options="--account --acctg-freq --array --begin --chdir --clusters --comment --constraint
  --container --container-image --container-mounts --container-workdir --container-name
  --container-env --core-spec --cores-per-socket --cpu-freq --cpus-per-gpu --cpus-per-task
  --deadline --delay-boot --dependency --distribution --error --exclude --export --extra-node-info
  --gid --gpu-bind --gpus --gpus-per-node --gpus-per-socket --gpus-per-task --gres --gres-flags
  --hint --input --job-name --licenses --mail-type --mail-user --mcs-label --mem --mem-bind
  --mem-per-cpu --mem-per-gpu --mincpus --network --nice --nodefile --nodelist --nodes --ntasks
  --ntasks-per-core --ntasks-per-gpu --ntasks-per-node --ntasks-per-socket --open-mode --output
  --partition --power --priority --profile --qos --reservation --signal --sockets-per-node
  --switches --thread-spec --threads-per-core --time --time-min --tmp --uid --wckey --image
  --volume --module"
)sh";

constexpr std::string_view kSrun = R"sh(
count_options "$slurm_options --cpu-bind --epilog --het-group --jobid --mpi --prolog --relative
  --task-epilog --task-prolog --threads --wait" "AbcCdDeGiJLmMnNopqrStTwWx" "$@"
shift "$operand_at"
export SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0
(( $# > 0 )) || exit 0
exec "$@"
)sh";

// The job runs at once, its output thrown away as a real job's goes to its own file.
constexpr std::string_view kSbatch = R"sh(
count_options "$slurm_options --wrap" "aAbcCdDeFGiJLmMnNopqStwx" "$@"
wrap=""
parsable=0
for (( i = 1; i <= operand_at; i++ )); do
  case ${!i} in
    --wrap=*) wrap=${!i#--wrap=} ;;
    --wrap) j=$((i + 1)); wrap=${!j} ;;
    --parsable) parsable=1 ;;
  esac
done
shift "$operand_at"
export SLURM_JOB_ID=${SLURM_JOB_ID:-4242}
if [[ -n $wrap ]]; then
  bash -c "$wrap" < /dev/null > /dev/null
elif (( $# > 0 )); then
  bash "$@" < /dev/null > /dev/null
else
  job=$(mktemp "$scratch/sbatch.XXXXXX")
  cat > "$job"
  bash "$job" < /dev/null > /dev/null
fi
if (( parsable )); then echo "$SLURM_JOB_ID"; else echo "Submitted batch job $SLURM_JOB_ID"; fi
exit 0
)sh";

constexpr std::string_view kNumactl = R"sh(
count_options "--interleave --preferred --preferred-many --membind --cpunodebind --physcpubind
  --weighted-interleave" "ipmNCP" "$@"
shift "$operand_at"
(( $# > 0 )) || exit 0
exec "$@"
)sh";

constexpr std::string_view kShifter = R"sh(
count_options "--image --volume --module --workdir --env --env-file" "iVmwe" "$@"
shift "$operand_at"
(( $# > 0 )) || exit 0
exec "$@"
)sh";

// singularity/apptainer exec [OPTIONS] IMAGE COMMAND...: the command runs here, without the image.
constexpr std::string_view kContainer = R"sh(
[[ $1 == exec ]] || exit 0
shift
count_options "--bind --env --env-file --pwd --home --overlay --security --workdir --scratch --app
  --network --network-args --hostname --mount --fusemount --dns --apply-cgroups --add-caps
  --drop-caps --cpus --memory" "BHoWS" "$@"
shift "$operand_at"
(( $# > 1 )) || exit 0
shift
exec "$@"
)sh";

// `ray job submit ... -- COMMAND` runs the command; every other ray command does nothing.
constexpr std::string_view kRay = R"sh(
[[ $1 == job && $2 == submit ]] || exit 0
shift 2
while (( $# > 0 )) && [[ $1 != -- ]]; do shift; done
(( $# > 1 )) || exit 0
shift
exec "$@"
)sh";

// DeepSpeed's ds_ssh runs a command on every host of its hostfile: here, once, on this one.
constexpr std::string_view kDsSsh = R"sh(
exec bash -c "$*"
)sh";

constexpr std::string_view kNvidiaSmi = R"sh(
gpu_count=8
gpu_name='NVIDIA H100 80GB HBM3'
first_gpu=0

gpu_uuid() { printf 'GPU-5e0d%04x-8a1b-4c2d-9e3f-00000000%04x' "$1" "$1"; }

# One field of --query-gpu for GPU $2; $3 is "nounits" to leave the unit out.
gpu_field() {
  local value unit=""
  case $1 in
    name|gpu_name) value=$gpu_name ;;
    index) value=$2 ;;
    count) value=$gpu_count ;;
    uuid|gpu_uuid) value=$(gpu_uuid "$2") ;;
    pci.bus_id|gpu_bus_id) printf -v value '00000000:%02X:00.0' $((0x18 + 16 * $2)) ;;
    driver_version) value=550.54.15 ;;
    compute_cap) value=9.0 ;;
    memory.total) value=81559; unit=' MiB' ;;
    memory.free) value=81004; unit=' MiB' ;;
    memory.used) value=0; unit=' MiB' ;;
    memory.reserved) value=555; unit=' MiB' ;;
    utilization.gpu|utilization.memory) value=0; unit=' %' ;;
    temperature.gpu) value=31 ;;
    power.draw) value=69.52; unit=' W' ;;
    power.limit|enforced.power.limit|power.max_limit|power.default_limit) value=700.00; unit=' W' ;;
    clocks.sm|clocks.current.sm|clocks.max.sm|clocks.max.graphics) value=1980; unit=' MHz' ;;
    persistence_mode) value=Enabled ;;
    mig.mode.current|mig.mode.pending) value=Disabled ;;
    *) value='[N/A]' ;;
  esac
  [[ $3 == nounits ]] && unit=""
  printf '%s%s' "$value" "$unit"
}

query_gpus() {
  local fields field line g units=units header=1
  [[ ,$2, == *,nounits,* ]] && units=nounits
  [[ ,$2, == *,noheader,* ]] && header=0
  IFS=, read -ra fields <<< "${1// /}"
  if (( header )); then
    line=""
    for field in "${fields[@]}"; do line+="${line:+, }$field"; done
    echo "$line"
  fi
  for (( g = first_gpu; g < first_gpu + gpu_count; g++ )); do
    line=""
    for field in "${fields[@]}"; do line+="${line:+, }$(gpu_field "$field" "$g" "$units")"; done
    echo "$line"
  done
}

topology() {
  local g h line=$'\t'
  for (( g = 0; g < 8; g++ )); do line+="GPU$g"$'\t'; done
  echo "${line}CPU Affinity"$'\t'"NUMA Affinity"
  for (( g = 0; g < 8; g++ )); do
    line="GPU$g"$'\t'
    for (( h = 0; h < 8; h++ )); do
      if (( g == h )); then line+=$' X \t'; else line+=$'NV18\t'; fi
    done
    if (( g < 4 )); then
      echo "${line}0-55,112-167"$'\t'"0"
    else
      echo "${line}56-111,168-223"$'\t'"1"
    fi
  done
  echo
  echo "Legend:"
  echo "  X    = Self"
  echo "  NV#  = Connection traversing a bonded set of # NVLinks"
}

table() {
  local g
  local border='+-----------------------------------------+'
  border+='------------------------+----------------------+'
  echo 'Thu Jan  1 00:00:00 2026'
  echo '+-----------------------------------------------------------------------------------------+'
  echo '| NVIDIA-SMI 550.54.15             Driver Version: 550.54.15      CUDA Version: 12.4     |'
  echo '|-----------------------------------------+------------------------+----------------------+'
  echo '| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |'
  echo '| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |'
  echo '|=========================================+========================+======================|'
  for (( g = first_gpu; g < first_gpu + gpu_count; g++ )); do
    printf '| %3d  %-28s  On  |   %s Off |                    0 |\n' "$g" "$gpu_name" \
      "$(gpu_field pci.bus_id "$g")"
    printf '%s%s\n' '| N/A   31C    P0             69W /  700W |' \
      '       0MiB /  81559MiB |      0%      Default |'
    echo "$border"
  done
}

query=""
format=""
while (( $# > 0 )); do
  case $1 in
    -L|--list-gpus)
      for (( g = 0; g < gpu_count; g++ )); do
        echo "GPU $g: $gpu_name (UUID: $(gpu_uuid "$g"))"
      done
      exit 0 ;;
    topo) topology; exit 0 ;;
    --query-gpu=*) query=${1#*=} ;;
    --query-gpu) query=$2; shift ;;
    --format=*) format=${1#*=} ;;
    --format) format=$2; shift ;;
    -i|--id) first_gpu=$2; gpu_count=1; shift ;;
    --id=*) first_gpu=${1#*=}; gpu_count=1 ;;
    --query-*|nvlink|-pm|-r|--gpu-reset|-c|-e|-ac|-rac|-pl) exit 0 ;;
  esac
  shift
done
[[ $first_gpu =~ ^[0-7]$ ]] || { echo "No devices were found" >&2; exit 6; }
if [[ -n $query ]]; then query_gpus "$query" "$format"; else table; fi
exit 0
)sh";

constexpr std::string_view kHostname = R"sh(
case $1 in
  ""|-f|--fqdn|--long|-A|--all-fqdns|-a|--alias) echo "$stub_hostname" ;;
  -s|--short) echo "${stub_hostname%%.*}" ;;
  -i|--ip-address|-I|--all-ip-addresses) echo 127.0.0.1 ;;
esac
exit 0
)sh";

// `scontrol show hostnames LIST` expands a Slurm node list such as node[001-003,007],gpu5.
constexpr std::string_view kScontrol = R"sh(
hosts_max=100000

# One name with zero or more bracket groups.
expand_host() {
  local host=$1 prefix ranges suffix range low high n IFS=,
  if [[ $host != *\[*\]* ]]; then echo "$host"; return; fi
  prefix=${host%%\[*}
  ranges=${host#*\[}
  suffix=${ranges#*\]}
  ranges=${ranges%%\]*}
  for range in $ranges; do
    low=${range%%-*}
    high=${range#*-}
    if ! [[ $low =~ ^[0-9]+$ && $high =~ ^[0-9]+$ ]] || (( 10#$high - 10#$low > hosts_max )); then
      echo "$host"
      return
    fi
    for (( n = 10#$low; n <= 10#$high; n++ )); do
      expand_host "$prefix$(printf "%0${#low}d" "$n")$suffix"
    done
  done
}

# A list: names separated by commas outside brackets.
expand_list() {
  local list=$1 current="" depth=0 i c
  for (( i = 0; i < ${#list}; i++ )); do
    c=${list:i:1}
    case $c in
      '[') depth=$((depth + 1)) ;;
      ']') depth=$((depth - 1)) ;;
      ',') if (( depth == 0 )); then expand_host "$current"; current=""; continue; fi ;;
    esac
    current+=$c
  done
  [[ -n $current ]] && expand_host "$current"
}

if [[ $1 == show && ( $2 == hostnames || $2 == hostname ) ]]; then
  shift 2
  (( $# > 0 )) || set -- "${SLURM_JOB_NODELIST:-$stub_hostname}"
  for list in "$@"; do expand_list "$list"; done
fi
exit 0
)sh";

// date at a pinned moment, unless the script names its own (-d, -r, -f); never sets the clock.
constexpr std::string_view kDate = R"sh(
for word; do
  case $word in
    -s|--set|--set=*) exit 0 ;;
    -d|-d?*|--date|--date=*|-r|--reference|--reference=*|-f|--file|--file=*) run_real date "$@" ;;
  esac
done
run_real date -u -d "@$pinned_unix_seconds" "$@"
)sh";

// shuf without chance: -i LOW-HIGH gives LOW, LOW+1, ...; lines and -e words keep their order.
constexpr std::string_view kShuf = R"sh(
count=-1
range=""
echo_words=0
repeat=0
words=()
while (( $# > 0 )); do
  case $1 in
    -i) range=$2; shift ;;
    -i?*) range=${1#-i} ;;
    --input-range=*) range=${1#*=} ;;
    -n) count=$2; shift ;;
    -n?*) count=${1#-n} ;;
    --head-count=*) count=${1#*=} ;;
    -e|--echo) echo_words=1 ;;
    -r|--repeat) repeat=1 ;;
    -o|--random-source) shift ;;
    -z|--zero-terminated|--output=*|--random-source=*) ;;
    *) words+=("$1") ;;
  esac
  shift
done
[[ $count =~ ^[0-9]+$ ]] || count=-1
if [[ -n $range ]]; then
  low=${range%-*}
  high=${range#*-}
  (( count < 0 )) && count=$((high - low + 1))
  for (( n = 0; n < count; n++ )); do
    if (( repeat )); then echo "$low"; elif (( low + n <= high )); then echo $((low + n)); fi
  done
elif (( echo_words )); then
  printf '%s\n' "${words[@]}" | { if (( count >= 0 )); then head -n "$count"; else cat; fi; }
else
  cat "${words[@]}" | { if (( count >= 0 )); then head -n "$count"; else cat; fi; }
fi
exit 0
)sh";

constexpr std::string_view kQuiet = R"sh(
exit 0
)sh";

constexpr std::string_view kOffline = R"sh(
echo "$name: no network here (attune runs launch scripts offline)" >&2
exit 1
)sh";

// git works on local repositories; what would reach a remote fails.
constexpr std::string_view kGit = R"sh(
for word; do
  case $word in
    clone|fetch|pull|push|ls-remote|submodule|lfs)
      echo "git $word: no network here (attune runs launch scripts offline)" >&2
      exit 1 ;;
  esac
done
run_real git "$@"
)sh";

struct StubBody {
  std::string_view name;
  std::string_view body;
  bool needs_slurm_options = false;
};

constexpr std::array kStubs = {
    StubBody{"python", kPython},
    StubBody{"python3", kPython},
    StubBody{"python3.6", kPython},
    StubBody{"python3.7", kPython},
    StubBody{"python3.8", kPython},
    StubBody{"python3.9", kPython},
    StubBody{"python3.10", kPython},
    StubBody{"python3.11", kPython},
    StubBody{"python3.12", kPython},
    StubBody{"python3.13", kPython},
    StubBody{"torchrun", kTorchrun},
    StubBody{"deepspeed", kDeepspeed},
    StubBody{"mpirun", kMpirun},
    StubBody{"mpiexec", kMpirun},
    StubBody{"srun", kSrun, true},
    StubBody{"sbatch", kSbatch, true},
    StubBody{"numactl", kNumactl},
    StubBody{"shifter", kShifter},
    StubBody{"singularity", kContainer},
    StubBody{"apptainer", kContainer},
    StubBody{"ray", kRay},
    StubBody{"ds_ssh", kDsSsh},
    StubBody{"nvidia-smi", kNvidiaSmi},
    StubBody{"hostname", kHostname},
    StubBody{"scontrol", kScontrol},
    StubBody{"date", kDate},
    StubBody{"shuf", kShuf},
    StubBody{"sleep", kQuiet},
    StubBody{"pip", kQuiet},
    StubBody{"pip3", kQuiet},
    StubBody{"module", kQuiet},
    StubBody{"ml", kQuiet},
    StubBody{"conda", kQuiet},
    StubBody{"pkill", kQuiet},
    StubBody{"killall", kQuiet},
    StubBody{"pytest", kQuiet},
    StubBody{"wget", kOffline},
    StubBody{"curl", kOffline},
    StubBody{"ssh", kOffline},
    StubBody{"scp", kOffline},
    StubBody{"git", kGit},
};

// A word bash reads back unchanged.
std::string single_quoted(std::string_view text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string settings_text(const StubSettings& settings) {
  return "stub_dir=" + single_quoted(settings.stub_dir) + "\nrecords=${" +
         std::string(kStubRecordsVariable) + ":-" + single_quoted(settings.records_dir) +
         "}\nscratch=" + single_quoted(settings.scratch_dir) +
         "\nstub_hostname=" + single_quoted(settings.hostname) +
         "\ncalls_max=" + std::to_string(kStubCallsMax) +
         "\npinned_unix_seconds=" + std::to_string(kStubDateUnixSeconds) + "\n";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> stub_programs(const StubSettings& settings) {
  const std::string header =
      "#!/bin/bash\n# attune's stand-in for a program a launch script calls "
      "(adapters/script/stubs.h).\n" +
      settings_text(settings);
  std::vector<std::pair<std::string, std::string>> programs;
  programs.reserve(kStubs.size());
  for (const StubBody& stub : kStubs) {
    std::string text = header;
    text += kPrelude;
    if (stub.needs_slurm_options) text += kSlurmOptions;
    text += stub.body;
    programs.emplace_back(std::string(stub.name), std::move(text));
  }
  return programs;
}

}  // namespace attune::script
