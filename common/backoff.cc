#include "common/backoff.h"

#include <algorithm>
#include <cmath>

namespace msgq {
namespace {

BackoffOptions Sanitize(BackoffOptions options) {
  options.multiplier = std::max(1.0, options.multiplier);
  options.jitter = std::clamp(options.jitter, 0.0, 1.0);
  if (options.initial < absl::ZeroDuration()) {
    options.initial = absl::ZeroDuration();
  }
  if (options.max < options.initial) options.max = options.initial;
  return options;
}

}  // namespace

Backoff::Backoff(const BackoffOptions& options, uint64_t seed)
    : options_(Sanitize(options)), rng_(seed) {}

absl::Duration Backoff::Next() {
  const double initial = absl::ToDoubleSeconds(options_.initial);
  const double max = absl::ToDoubleSeconds(options_.max);
  // Stop growing once past the cap so the power never overflows.
  double nominal = initial * std::pow(options_.multiplier, attempt_);
  if (nominal < max) ++attempt_;
  nominal = std::min(nominal, max);
  double factor = 1.0;
  if (options_.jitter > 0) {
    std::uniform_real_distribution<double> u(-options_.jitter, options_.jitter);
    factor += u(rng_);
  }
  return absl::Seconds(std::min(max, nominal * factor));
}

}  // namespace msgq
