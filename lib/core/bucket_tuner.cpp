#include "bucket_tuner.hpp"

#include <algorithm>
#include <utility>

namespace bagua {

BucketSizeTuner::BucketSizeTuner(std::vector<size_t> candidates, int warmup_steps, int timed_steps)
    : candidates_(std::move(candidates)),
      total_(candidates_.size(), 0.0),
      warmup_(std::max(warmup_steps, 0)),
      timed_(std::max(timed_steps, 1)) {
  tuning_ = candidates_.size() > 1;
}

bool BucketSizeTuner::on_step(double seconds, const Agree &agree) {
  if (!tuning_) return false;
  if (step_ >= warmup_) total_[choice_] += seconds;
  if (++step_ < warmup_ + timed_) return false;
  // This candidate's trial is over: the next one, or the decision.
  step_ = 0;
  if (choice_ + 1 < candidates_.size()) {
    choice_++;
    return true;
  }
  return finish(agree);
}

// Every rank has the same agreed means, so the same first minimum.
bool BucketSizeTuner::finish(const Agree &agree) {
  tuning_ = false;
  std::vector<double> mean = total_;
  for (double &m : mean) m /= timed_;
  agree(mean);
  const size_t best = size_t(std::min_element(mean.begin(), mean.end()) - mean.begin());
  const bool changed = best != choice_;
  choice_ = best;
  return changed;
}

std::vector<size_t> default_bucket_candidates() {
  std::vector<size_t> caps;
  for (size_t mib = 1; mib <= 64; mib *= 2) caps.push_back(mib << 20);
  return caps;
}

}  // namespace bagua
