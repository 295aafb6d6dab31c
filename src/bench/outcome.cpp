#include "ktune/bench/outcome.hpp"

#include "ktune/core/enum_names.hpp"

namespace ktune::bench {
namespace {

constexpr EnumName<Status> kNames[] = {
    {Status::ok, "ok"},
    {Status::compile_failed, "compile_failed"},
    {Status::launch_failed, "launch_failed"},
    {Status::resources_exceeded, "resources_exceeded"},
    {Status::wrong_result, "wrong_result"},
    {Status::slower, "slower"},
    {Status::timeout, "timeout"},
};

}  // namespace

const char* to_string(Status s) {
  return name_of(kNames, s);
}

std::optional<Status> status_from_string(std::string_view s) {
  return value_of(kNames, s);
}

CandidateOutcome CandidateOutcome::failed(Status status, std::string detail, bool context_lost) {
  CandidateOutcome o;
  o.status = status;
  o.detail = std::move(detail);
  o.context_lost = context_lost;
  return o;
}

void CandidateOutcome::set_time(double median_ns, double noise_ns, std::size_t samples) {
  Summary& t = measurement.time_ns;
  t.median = median_ns;
  t.p5 = median_ns - noise_ns;
  t.p95 = median_ns + noise_ns;
  t.count = samples;
}

}  // namespace ktune::bench
