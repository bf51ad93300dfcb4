#include "env.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace bagua {
namespace {

constexpr int64_t kMaxRanks = 1 << 24;

constexpr EnvVar kVars[] = {
    {"BAGUA_TRANSPORT", "mpi",
     "Point-to-point transport per communicator: mpi (Open MPI pml on a duplicated "
     "communicator) or ucx (bagua's own UCP worker)."},
    {.name = "BAGUA_TIMEOUT_MS",
     .default_value = "120000",
     .description = "How long any wait for a peer may last before the call fails with "
                    "BAGUA_ERR_TIMEOUT and the communicator is marked broken.",
     .per_rank = true,
     .range = {1, int64_t{1} << 40}},
    {"BAGUA_ALLREDUCE_SCHEDULE", "auto",
     "Exact allreduce schedule: auto (by BAGUA_RING_THRESHOLD), ring, or rd (recursive "
     "doubling). Its earlier name BAGUA_ALLREDUCE_ALGO is read when it is not set.",
     false, "BAGUA_ALLREDUCE_ALGO"},
    {.name = "BAGUA_RING_THRESHOLD",
     .default_value = "65536",
     .description =
         "Message size in bytes from which auto uses the ring instead of recursive doubling.",
     .range = {0, int64_t{1} << 40}},
    {.name = "BAGUA_SEGMENT_BYTES",
     .default_value = "1048576",
     .description =
         "Pipeline segment size in bytes for ring algorithms (4096 .. 1 GiB); compressed "
         "allreduces cut a chunk shorter than 8 segments into 8, none below 64 KiB of "
         "float32 nor a message below 16 KiB.",
     .range = {4096, int64_t{1} << 30}},
    {.name = "BAGUA_CHECK_CALLS",
     .default_value = "1",
     .description =
         "1 = before any data moves, the ranks of each call compare a fingerprint of it (family, "
         "algorithm, count, datatype, op) and all return BAGUA_ERR_MISMATCH if they differ (a "
         "16-byte recursive doubling per call); 0 = skip the check, except in calls that keep "
         "state (sign, low precision), whose exchange also agrees that every input is finite.",
     .range = {0, 1}},
    {.name = "BAGUA_MAX_IN_FLIGHT",
     .default_value = "1024",
     .description =
         "Most nonblocking calls (bagua_iallreduce*) started and not yet waited for per "
         "communicator, 1 .. 1024 (each running one holds a tag slot); a call beyond "
         "it is refused with BAGUA_ERR_INVALID_ARGUMENT and still takes its place in the call "
         "order.",
     .range = {1, 1024}},
    {.name = "BAGUA_MPI_PIECE_BYTES",
     .default_value = "auto",
     .description =
         "mpi transport: a message of at least this many bytes travels as MPI messages of this "
         "size (1024 .. 1 GiB), to every peer; 0 = whole messages; auto = Open MPI's TCP eager "
         "limit less 128 bytes of headers, rounded down to 4 KiB (61440 by default), for the "
         "peers Open MPI may reach over ob1 and TCP (all when its shared-memory BTL is not "
         "selected, else those on other hosts), so two ranks sending to each other keep the full "
         "link (doc/transports.md, \"Message pieces\"); else 0.",
     .range = {0, int64_t{1} << 30}},
    {.name = "BAGUA_MPI_PIECES_IN_FLIGHT",
     .default_value = "64",
     .description =
         "mpi transport: the most pieces (BAGUA_MPI_PIECE_BYTES) of sends to one peer that are "
         "posted to MPI at once (0 .. 1048576); the others wait, in order, until earlier ones "
         "complete. Open MPI over TCP slows with the sends it holds: a 64 MiB exchange between 2 "
         "emulated 10 Gbit hosts ran at 640 MB/s with all 1093 pieces posted, 870 with 64 "
         "(doc/transports.md, \"Pieces in flight\"); 0 = post every piece at once.",
     .range = {0, 1 << 20}},
    {.name = "BAGUA_TAG_UB",
     .default_value = "0",
     .description =
         "Largest message tag bagua uses: 0 = the transport's limit (MPI_TAG_UB for mpi); "
         ">= 32767 caps it (e.g. 32767, the MPI standard's minimum, to test the smallest tag "
         "space).",
     .range = {0, INT32_MAX}},
    {.name = "BAGUA_HIERARCHICAL",
     .default_value = "0",
     .description =
         "Compressed allreduce (q8, q4, fp16, sign): 1 = exact reduce to a leader per node, "
         "compressed allreduce among the leaders, broadcast inside the node; 0 = flat.",
     .range = {0, 1}},
    {.name = "BAGUA_NODE_SIZE",
     .default_value = "0",
     .description =
         "Nodes of hierarchical mode: 0 = ranks that share memory (MPI_COMM_TYPE_SHARED); "
         "k > 0 = groups of k consecutive ranks (models several nodes on one machine).",
     .range = {0, kMaxRanks}},
    {.name = "BAGUA_CODEC_BLOCK",
     .default_value = "2048",
     .description =
         "Elements per q8 / sign block (power of two, 64 .. 1048576): smaller blocks lower "
         "the error, larger ones the header overhead.",
     .range = {64, 1 << 20}},
    {.name = "BAGUA_Q4_BLOCK",
     .default_value = "256",
     .description =
         "Elements per q4 block (power of two, 64 .. 1048576): 4 bits leave 15 steps per block "
         "range, so q4 needs smaller blocks than q8 (doc/codecs.md).",
     .range = {64, 1 << 20}},
    {.name = "BAGUA_PARTIAL_GROUP_SIZE",
     .default_value = "0",
     .description =
         "Partial reduce: group size P used when a call passes group_size 0; 0 means half "
         "the ranks, rounded up.",
     .range = {0, kMaxRanks}},
    {.name = "BAGUA_PARTIAL_MIN_GROUP_SIZE",
     .default_value = "2",
     .description =
         "Partial reduce: a group closed by the deadline below this size doubles the deadline; "
         "any other group multiplies it by 0.9.",
     .range = {1, kMaxRanks}},
    {.name = "BAGUA_PARTIAL_DEADLINE_MS",
     .default_value = "10",
     .description =
         "Partial reduce: initial time after a group's first arrival at which it closes with "
         "fewer than P members (adapted within the bounds below).",
     .range = {1, int64_t{1} << 40}},
    {.name = "BAGUA_PARTIAL_DEADLINE_MIN_MS",
     .default_value = "1",
     .description = "Partial reduce: lower bound of the adaptive deadline.",
     .range = {1, int64_t{1} << 40}},
    {.name = "BAGUA_PARTIAL_DEADLINE_MAX_MS",
     .default_value = "1000",
     .description = "Partial reduce: upper bound of the adaptive deadline.",
     .range = {1, int64_t{1} << 40}},
    {.name = "BAGUA_PARTIAL_TAU",
     .default_value = "0",
     .description =
         "Partial reduce: connectivity window; within every tau groups all ranks become "
         "connected (a bridging group waits for the missing components); 0: four times the "
         "fewest groups of P that connect the active ranks, at least 16.",
     .range = {0, 1 << 30}},
    {"BAGUA_PARTIAL_WEIGHTS", "uniform",
     "Partial reduce: averaging weights, uniform (1/size) or staleness "
     "(proportional to 1/(1 + max iteration - own iteration))."},
    {.name = "BAGUA_PARTIAL_CONTROLLER",
     .default_value = "0",
     .description = "Partial reduce: rank that runs the group controller thread.",
     .range = {0, kMaxRanks}},
    {"BAGUA_PARTIAL_COMPRESSION", "none",
     "Partial reduce: none = exact group average; q8 = the group averages with the q8 "
     "compressed allreduce (BAGUA_CODEC_BLOCK; float, float16, bfloat16; uniform weights)."},
    {.name = "BAGUA_BUCKET_BYTES",
     .default_value = "10485760",
     .description =
         "Bucketed communicator: default byte cap of a bucket (bagua_bucket_config_init); "
         "10 MiB as BAGUA.",
     .range = {1, int64_t{1} << 40}},
    {.name = "BAGUA_BUCKET_AUTO",
     .default_value = "0",
     .description =
         "Bucketed communicator: 1 = automatic bucket size by default (bagua_bucket_config_init): "
         "the first steps try caps of 1 .. 64 MiB and keep the fastest, agreed by all ranks "
         "(doc/buckets.md); 0 = BAGUA_BUCKET_BYTES.",
     .range = {0, 1}},
    {"BAGUA_TIMELINE", "",
     "Bucketed communicator: if set, each rank writes a Chrome-tracing JSON of every "
     "bucket's ready/start/encode/decode/end to this name with .rank<R> before .json.",
     true},
    // @env torch (read by the Python package bagua_torch, doc/pytorch.md)
    {"BAGUA_TORCH_BACKEND", "gloo",
     "bagua_torch.init(): torch.distributed backend of the default group when init() is not "
     "given one (gloo, or bagua for the c10d backend)."},
    {"BAGUA_TORCH_ALGORITHM", "exact",
     "bagua_torch c10d backend: allreduce algorithm of floating-point sums (any algorithm "
     "bagua lists without state: exact, q8, ...) in groups whose pg_options name none."},
    {"BAGUA_TORCH_MASTER_ADDR", "",
     "bagua_torch.init() under mpirun: address other ranks reach rank 0's TCPStore at; empty = "
     "rank 0's hostname.",
     true},
    {"BAGUA_TORCH_VERSION", "2.11.0",
     "bin/bagua-venv: the torch (from PyPI) it installs into the development venv .venv, which "
     "bin/bagua-test and bin/bagua-main --torch build bagua_torch for."},
    // @env bench (read by bagua-bench and bagua-bench-compressed, doc/tools.md)
    {"BAGUA_BENCH_LINK", "",
     "Benchmarks: link rate (tc syntax, e.g. 100mbit, 1gbit) for the columns bytes sent, link "
     "time and fraction of the link limit; --link overrides it; bench/netemu.sh sets it to its "
     "rate; empty = no link columns.",
     true},
    {"BAGUA_BENCH_LINK_BURST", "",
     "bagua-bench-compressed: bytes sent around the ring before each timed call, to empty an "
     "emulated link's token bucket (--drain overrides it; bench/netemu.sh sets it to its burst); "
     "empty = 0, none.",
     true},
    // @env pmpi (read by libbagua-pmpi, doc/pmpi.md)
    {"BAGUA_PMPI", "off",
     "PMPI interposer: where MPI_Allreduce goes: off (MPI), or an algorithm bagua lists "
     "(bagua-info --support): exact (bagua_allreduce), or a compressed one (float32 sums "
     "only)."},
    {.name = "BAGUA_PMPI_MIN_COUNT",
     .default_value = "16384",
     .description =
         "PMPI interposer: calls with fewer elements stay with MPI (measured in doc/pmpi.md).",
     .range = {0, INT32_MAX}},
    {.name = "BAGUA_PMPI_IALLREDUCE",
     .default_value = "1",
     .description =
         "PMPI interposer: 1 = route MPI_Iallreduce in the modes with a nonblocking call (every "
         "algorithm the iallreduce family offers, not sign), raising MPI_Init's thread level to "
         "MPI_THREAD_MULTIPLE; 0 = leave MPI_Iallreduce and the level to MPI.",
     .range = {0, 1}},
    {.name = "BAGUA_PMPI_VERBOSE",
     .default_value = "0",
     .description =
         "PMPI interposer: 1 = each rank prints one line at MPI_Finalize: calls routed and "
         "passed through (and why), bytes, time.",
     .per_rank = true,
     .range = {0, 1}},
};

// A set, non-empty variable's value, or nullptr.
const char *set_value(const char *name) {
  const char *value = name == nullptr ? nullptr : std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

const EnvVar *find_var(const char *name) {
  for (const EnvVar &v : kVars)
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

const char *lookup(const char *name) {
  if (const char *value = set_value(name)) return value;
  const EnvVar *v = find_var(name);
  if (v != nullptr && set_value(v->alias) != nullptr) return set_value(v->alias);
  return env_default(name);
}

}  // namespace

const char *env_default(const char *name) {
  const EnvVar *v = find_var(name);
  return v != nullptr ? v->default_value : "";
}

std::span<const EnvVar> env_vars() { return kVars; }

uint64_t env_fingerprint() {
  // FNV-1a over "name=value;" of every setting that must agree.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const EnvVar &v : kVars) {
    if (v.per_rank) continue;
    const std::string item = std::string(v.name) + "=" + lookup(v.name) + ";";
    for (unsigned char ch : item) hash = (hash ^ ch) * 0x100000001b3ull;
  }
  return hash;
}

std::string env_string(const char *name) { return lookup(name); }

namespace {

bool parse_int(const char *text, EnvRange range, int64_t *out) {
  char *end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < range.lo || value > range.hi)
    return false;
  *out = value;
  return true;
}

}  // namespace

Status env_int(const char *name, int64_t *out) {
  const EnvVar *v = find_var(name);
  if (v == nullptr || !v->range.integer())
    return fail(BAGUA_ERR_INTERNAL, "%s is not an integer setting of the table", name);
  const char *text = lookup(name);
  if (!parse_int(text, v->range, out))
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s='%s' is not an integer in [%lld, %lld]", name, text,
                static_cast<long long>(v->range.lo), static_cast<long long>(v->range.hi));
  return BAGUA_SUCCESS;
}

int64_t env_default_int(const char *name) {
  const EnvVar *v = find_var(name);
  int64_t value = 0;
  // The table's own defaults are in range (test_env checks every row).
  if (v == nullptr || !parse_int(v->default_value, v->range, &value)) return 0;
  return value;
}

Status env_choice(const char *name, std::span<const char *const> choices, int *out) {
  const char *text = lookup(name);
  for (size_t i = 0; i < choices.size(); ++i) {
    if (std::strcmp(text, choices[i]) == 0) {
      *out = static_cast<int>(i);
      return BAGUA_SUCCESS;
    }
  }
  std::string allowed;
  for (const char *c : choices) allowed += std::string(allowed.empty() ? "" : ", ") + c;
  return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s='%s' is not one of: %s", name, text, allowed.c_str());
}

}  // namespace bagua
