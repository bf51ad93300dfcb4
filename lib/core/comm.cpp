#include "comm.hpp"

#include <string>
#include <string_view>

#include "../base/env.hpp"
#include "../base/live_objects.hpp"
#include "../mc/device_scratch.hpp"
#include "../mc/staging_pool.hpp"
#include "../transport/locked_transport.hpp"
#include "../transport/mpi_bounded.hpp"
#include "../transport/mpi_transport.hpp"
#include "../transport/ucx_transport.hpp"
#include "exchange.hpp"
#include "hierarchy.hpp"
#include "progress_engine.hpp"
#include "runtime.hpp"

namespace bagua {
namespace {

// The largest tag the communicator uses: the transport's, capped by BAGUA_TAG_UB.
Tag largest_tag(const Transport &t, const Options &o) {
  return o.tag_ub > 0 && Tag(o.tag_ub) < t.max_tag() ? Tag(o.tag_ub) : t.max_tag();
}

// The name of the handles bagua_comm_create_oob makes, which tells them
// from the user's communicators.
constexpr const char *kOobName = "bagua_comm_create_oob";

bool is_oob_handle(MPI_Comm comm) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  MPI_Comm_get_name(comm, name, &length);
  return std::string_view(name, size_t(length)) == kOobName;
}

MpiPieces mpi_pieces(const Options &o) {
  MpiPieces pieces = o.mpi_piece_bytes == Options::kAutoPieces
                         ? mpi_transport_auto_pieces()
                         : MpiPieces{size_t(o.mpi_piece_bytes), false};
  pieces.in_flight = size_t(o.mpi_pieces_in_flight);
  return pieces;
}

// Collective over `exchange`: every rank learns whether all ranks loaded
// valid settings (`loaded`: the outcome of loading `options`), and whether the
// settings that shape messages are equal everywhere (otherwise ranks would
// cut messages differently and fail mid-call).
Status agree_options(Exchange &exchange, Status loaded, const Options &options) {
  // What auto resolves to takes part, so ranks that would cut messages
  // differently are caught here.
  const MpiPieces pieces = mpi_pieces(options);
  const auto fingerprint =
      static_cast<int64_t>((env_fingerprint() ^ pieces.bytes ^ (pieces.remote_only ? 1 : 0)) >> 2);
  const int64_t local[3] = {loaded != BAGUA_SUCCESS, fingerprint, -fingerprint};
  int64_t global[3];
  BAGUA_TRY(exchange.max(local, global, "agreeing on BAGUA_* settings"));
  if (loaded != BAGUA_SUCCESS) return loaded;
  if (global[0] != 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "another rank has an invalid BAGUA_* setting (see its bagua_last_error)");
  if (global[1] != -global[2])
    return fail(BAGUA_ERR_MISMATCH,
                "BAGUA_* settings differ across ranks; set them identically everywhere "
                "(e.g. mpirun -x), bagua-info --env shows them");
  return BAGUA_SUCCESS;
}

// Loads the settings and agrees on them over `user_comm`, bounded by this
// rank's BAGUA_TIMEOUT_MS (its default when the settings are invalid).
Status load_agreed_options(MPI_Comm user_comm, Options *out) {
  const Status loaded = options_load(out);
  MpiExchange exchange(user_comm, loaded == BAGUA_SUCCESS ? out->timeout_ms : Options{}.timeout_ms);
  return agree_options(exchange, loaded, *out);
}

// A transport that threads share serialises its calls.
std::unique_ptr<Transport> shareable(std::unique_ptr<Transport> t, bool shared_by_threads) {
  if (!shared_by_threads) return t;
  return std::make_unique<LockedTransport>(std::move(t));
}

// A transport used from background threads makes MPI calls there only when
// it is the mpi one (the ucx transport makes no MPI calls after creation).
Status require_thread_level(TransportKind kind, const char *feature) {
  if (kind != TransportKind::mpi || require_thread_multiple(feature) == BAGUA_SUCCESS)
    return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_THREAD_LEVEL, "%s, or set BAGUA_TRANSPORT=ucx",
              std::string(last_error_message()).c_str());
}

}  // namespace

Status create_transport(const Options &options, MPI_Comm dup, bool shared_by_threads,
                        std::unique_ptr<Transport> *out) {
  MpiExchange exchange(dup, options.timeout_ms);
  BAGUA_TRY(options.transport == TransportKind::ucx
                ? ucx_transport_create(exchange, out)
                : mpi_transport_create(dup, mpi_pieces(options), options.timeout_ms, out));
  *out = shareable(std::move(*out), shared_by_threads);
  return BAGUA_SUCCESS;
}

Status check_mpi_initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return fail(BAGUA_ERR_NOT_INITIALIZED,
                "call bagua functions between MPI_Init and MPI_Finalize");
  return BAGUA_SUCCESS;
}

Status require_thread_multiple(const char *feature) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    return fail(BAGUA_ERR_THREAD_LEVEL,
                "%s calls MPI from a background thread: initialise MPI with "
                "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) (provided level: %d)",
                feature, provided);
  return BAGUA_SUCCESS;
}

Communicator::Communicator(MPI_Comm dup, Options options, std::unique_ptr<Transport> transport,
                           TagLayout tags)
    : dup_(dup),
      options_(options),
      policy_(SelectionPolicy::of(options_)),
      transport_(std::move(transport)),
      tags_(tags) {
  live_add(Live::communicator, 1);
}

Communicator::~Communicator() {
  for (auto &extension : extensions_) extension.reset();
  engine_.reset();
  const bool late_bytes_possible = transport_->late_messages_possible();
  transport_.reset();
  // Late bytes (of abandoned sends, or peers' messages this rank gave up
  // on) must not reach a communicator that reuses dup's context: keep it (a
  // broken communicator's small leak).
  if (!late_bytes_possible && dup_ != MPI_COMM_NULL) free_dup(&dup_);
  live_add(Live::communicator, -1);
}

std::shared_ptr<ProgressEngine> Communicator::engine() {
  std::lock_guard lock(engine_mutex_);
  if (!engine_) engine_ = std::make_shared<ProgressEngine>();
  return engine_;
}

Status Communicator::get(MPI_Comm user_comm, Communicator **out) {
  BAGUA_TRY(runtime_ensure());
  if (user_comm == MPI_COMM_NULL) return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
  int is_inter = 0;
  if (MPI_Comm_test_inter(user_comm, &is_inter) != MPI_SUCCESS || is_inter)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is not a valid intra-communicator");
  *out = find(user_comm);
  if (*out != nullptr) return BAGUA_SUCCESS;
  if (is_oob_handle(user_comm))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_finalize freed the state of this communicator made by "
                "bagua_comm_create_oob; free it with bagua_comm_free and create a new one");
  std::unique_ptr<Communicator> created;
  BAGUA_TRY(create_checked(user_comm, /*shared_by_threads=*/false, &created));
  *out = attach(user_comm, std::move(created));
  return BAGUA_SUCCESS;
}

Communicator *Communicator::find(MPI_Comm user_comm) {
  void *value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(user_comm, runtime_comm_keyval(), &value, &found);
  return found ? static_cast<Communicator *>(value) : nullptr;
}

Communicator *Communicator::attach(MPI_Comm user_comm, std::unique_ptr<Communicator> created) {
  Communicator *c = created.release();  // owned by the registry and the attribute
  registry_add(c, user_comm);
  MPI_Comm_set_attr(user_comm, runtime_comm_keyval(), c);
  return c;
}

Status Communicator::create_oob(Exchange &exchange, MPI_Comm *handle) {
  BAGUA_TRY(runtime_ensure());
  Options options;
  const Status loaded = options_load(&options);
  BAGUA_TRY(agree_options(exchange, loaded, options));
  options.transport = TransportKind::ucx;
  std::unique_ptr<Communicator> created;
  BAGUA_TRY(create_without_mpi(exchange, options, /*shared_by_threads=*/false, &created));
  MPI_Comm_dup(MPI_COMM_SELF, handle);
  MPI_Comm_set_name(*handle, kOobName);
  attach(*handle, std::move(created));
  return BAGUA_SUCCESS;
}

Status Communicator::free_oob(MPI_Comm *handle) {
  if (*handle == MPI_COMM_NULL) return BAGUA_SUCCESS;
  if (!is_oob_handle(*handle))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "comm was not made by bagua_comm_create_oob (free it with MPI_Comm_free)");
  MPI_Comm_free(handle);  // the attribute's delete callback frees the state
  return BAGUA_SUCCESS;
}

Status Communicator::create_private(MPI_Comm user_comm, const char *feature,
                                    std::unique_ptr<Communicator> *out) {
  Communicator *parent = find(user_comm);
  if (parent != nullptr && !parent->has_mpi_group())
    return parent->create_private_over_transport(out);
  return create_checked(user_comm, /*shared_by_threads=*/true, out, feature);
}

TransportExchange Communicator::exchange_in_next_slot() {
  const AlgoContext ctx = next_call();
  return TransportExchange(*transport_, ctx.tags, ctx.deadline);
}

Status Communicator::create_private_over_transport(std::unique_ptr<Communicator> *out) {
  BAGUA_TRY(check_usable());
  TransportExchange exchange = exchange_in_next_slot();
  return record(create_without_mpi(exchange, options_, /*shared_by_threads=*/true, out));
}

Status Communicator::connect_transport(std::unique_ptr<Transport> *out) {
  TransportExchange exchange = exchange_in_next_slot();
  BAGUA_TRY(record(ucx_transport_create(exchange, out)));
  *out = shareable(std::move(*out), /*shared_by_threads=*/true);
  return BAGUA_SUCCESS;
}

Status Communicator::agree_max(std::span<const int64_t> in, std::span<int64_t> out,
                               const char *what) {
  if (has_mpi_group()) return bounded_allreduce_max(dup_, in, out, options_.timeout_ms, what);
  return record(exchange_in_next_slot().max(in, out, what));
}

Status Communicator::agree_equal(int64_t value, const char *what, bool *same) {
  const int64_t mine[2] = {value, -value};
  int64_t all[2];
  BAGUA_TRY(agree_max(mine, all, what));
  *same = all[0] == value && -all[1] == value;
  return BAGUA_SUCCESS;
}

Status Communicator::create_without_mpi(Exchange &exchange, const Options &options,
                                        bool shared_by_threads,
                                        std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Transport> transport;
  BAGUA_TRY(ucx_transport_create(exchange, &transport));
  TagLayout tags;
  BAGUA_TRY(TagLayout::make(largest_tag(*transport, options), &tags));
  out->reset(new Communicator(MPI_COMM_NULL, options,
                              shareable(std::move(transport), shared_by_threads), tags));
  return BAGUA_SUCCESS;
}

Status Communicator::require_mpi_group(const char *feature) const {
  if (has_mpi_group()) return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_INVALID_ARGUMENT,
              "%s needs a communicator of MPI processes (e.g. launched by mpirun); this one was "
              "formed without MPI by bagua_comm_create_oob",
              feature);
}

Status Communicator::create_checked(MPI_Comm user_comm, bool shared_by_threads,
                                    std::unique_ptr<Communicator> *out, const char *feature) {
  BAGUA_TRY(runtime_check_setup_usable(user_comm));
  Options options;
  Status s = load_agreed_options(user_comm, &options);
  if (s == BAGUA_SUCCESS && shared_by_threads) s = require_thread_level(options.transport, feature);
  if (s == BAGUA_SUCCESS) s = create(user_comm, options, shared_by_threads, out);
  // A setup collective left posted would pair with the peer's next one.
  if (s == BAGUA_ERR_TIMEOUT) runtime_mark_setup_failed(user_comm, last_error_message());
  return s;
}

Status Communicator::create(MPI_Comm user_comm, const Options &options, bool shared_by_threads,
                            std::unique_ptr<Communicator> *out) {
  MPI_Comm dup;
  BAGUA_TRY(bounded_dup(user_comm, options.timeout_ms, &dup));
  std::unique_ptr<Transport> transport;
  TagLayout tags;
  Status s = create_transport(options, dup, shared_by_threads, &transport);
  if (s == BAGUA_SUCCESS) s = TagLayout::make(largest_tag(*transport, options), &tags);
  if (s != BAGUA_SUCCESS) {
    transport.reset();
    // A setup collective that timed out is still posted on dup, and MPI
    // crashes when a late peer completes it on a freed communicator.
    if (s != BAGUA_ERR_TIMEOUT) free_dup(&dup);
    return s;
  }
  out->reset(new Communicator(dup, options, std::move(transport), tags));
  return BAGUA_SUCCESS;
}

Status ExclusiveUse::status() const {
  if (held_) return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_INVALID_ARGUMENT,
              "another thread is in a bagua call on this communicator; calls on one "
              "communicator must come from one thread at a time (use one communicator per "
              "thread, e.g. MPI_Comm_dup)");
}

AlgoContext Communicator::next_call() {
  return call_in_slot(next_slot_++ % tags_.collective_slots(), scratch_);
}

AlgoContext Communicator::point_to_point() { return call_in_slot(tags_.p2p_slot(), scratch_); }

AlgoContext Communicator::call_in_slot(uint64_t slot, Bytes &scratch) {
  return AlgoContext{*transport_, tags_.call(slot), Deadline::after_ms(options_.timeout_ms),
                     scratch, options_.segment_bytes};
}

Status Communicator::device_scratch(DeviceScratch **out) {
  if (!device_scratch_) {
    Device *device = nullptr;
    BAGUA_TRY(require_active_device(&device));
    device_scratch_ = std::make_unique<DeviceScratch>(*device);
  }
  *out = device_scratch_.get();
  return BAGUA_SUCCESS;
}

Status Communicator::staging(StagingPool **out) {
  std::lock_guard lock(staging_mutex_);
  if (!staging_) {
    Device *device = nullptr;
    BAGUA_TRY(require_active_device(&device));
    staging_ = std::make_unique<StagingPool>(*device);
  }
  *out = staging_.get();
  return BAGUA_SUCCESS;
}

Status Communicator::hierarchy(Hierarchy **out) {
  if (!hierarchy_) {
    BAGUA_TRY(require_mpi_group("hierarchical mode (BAGUA_HIERARCHICAL)"));
    BAGUA_TRY(Hierarchy::create(dup_, options_.compressed.node_size, &hierarchy_));
  }
  *out = hierarchy_.get();
  return BAGUA_SUCCESS;
}

}  // namespace bagua
