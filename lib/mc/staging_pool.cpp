#include "staging_pool.hpp"

#include <algorithm>

namespace bagua {

StagingPool::~StagingPool() {
  for (const std::unique_ptr<Slot> &s : slots_) {
    if (s->host != nullptr) device_.release_host(s->host);
    device_.destroy_event(s->event);
    device_.destroy_stream(s->stream);
  }
  for (void *p : retired_) device_.release_host(p);
}

Status StagingPool::make_slot(std::unique_ptr<Slot> *out) {
  auto slot = std::make_unique<Slot>();
  BAGUA_TRY(device_.create_stream(&slot->stream));
  const Status s = device_.create_event(&slot->event);
  if (s != BAGUA_SUCCESS) {
    device_.destroy_stream(slot->stream);
    return s;
  }
  *out = std::move(slot);
  return BAGUA_SUCCESS;
}

Status StagingPool::take(size_t bytes, Slot **out) {
  bytes = std::max<size_t>(bytes, 1);
  const std::lock_guard lock(mutex_);
  if (free_.empty()) {
    std::unique_ptr<Slot> slot;
    BAGUA_TRY(make_slot(&slot));
    free_.push_back(slot.get());
    slots_.push_back(std::move(slot));
  }
  // The free slot with the largest buffer, grown when it is too small.
  const auto best = std::max_element(free_.begin(), free_.end(),
                                     [](Slot *a, Slot *b) { return a->bytes < b->bytes; });
  Slot *slot = *best;
  if (slot->bytes < bytes) {
    void *p = device_.allocate_host(bytes);
    if (p == nullptr)
      return fail(BAGUA_ERR_OUT_OF_MEMORY,
                  "could not allocate %zu bytes of page-locked staging memory", bytes);
    if (slot->host != nullptr) retired_.push_back(slot->host);
    slot->host = p;
    slot->bytes = bytes;
  }
  free_.erase(best);
  *out = slot;
  return BAGUA_SUCCESS;
}

void StagingPool::give_back(Slot *slot) {
  const std::lock_guard lock(mutex_);
  free_.push_back(slot);
}

Status StagedCopy::take(StagingPool &pool, size_t bytes, StagedCopy *out) {
  out->release();
  BAGUA_TRY(pool.take(bytes, &out->slot_));
  out->pool_ = &pool;
  return BAGUA_SUCCESS;
}

void StagedCopy::release() {
  if (slot_ != nullptr) pool_->give_back(slot_);
  slot_ = nullptr;
  ready_pending_ = false;
}

Status StagedCopy::mark_ready(void *stream) {
  BAGUA_TRY(device().record_event(slot_->event, stream));
  ready_pending_ = true;
  return BAGUA_SUCCESS;
}

Status StagedCopy::copy_in(size_t offset, const void *src, size_t bytes) {
  if (ready_pending_) {
    BAGUA_TRY(device().wait_event(slot_->event));
    ready_pending_ = false;
  }
  return device().copy(static_cast<unsigned char *>(slot_->host) + offset, src, bytes,
                       slot_->stream);
}

Status StagedCopy::copy_out(void *dst, size_t offset, size_t bytes) {
  return device().copy(dst, static_cast<const unsigned char *>(slot_->host) + offset, bytes,
                       slot_->stream);
}

Status StagedCopy::finish() { return device().synchronize(slot_->stream); }

Status StagedCopy::fill(const void *src, size_t bytes) {
  BAGUA_TRY(copy_in(0, src, bytes));
  return finish();
}

Status stage_in(StagingPool &pool, const void *src, size_t bytes, void *stream, StagedCopy *out) {
  BAGUA_TRY(StagedCopy::take(pool, bytes, out));
  BAGUA_TRY(out->mark_ready(stream));
  return out->fill(src, bytes);
}

Status stage_out(StagedCopy &staged, void *dst, size_t bytes) {
  BAGUA_TRY(staged.copy_out(dst, 0, bytes));
  return staged.finish();
}

}  // namespace bagua
