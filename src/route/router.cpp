#include "ktune/route/router.hpp"

#include <unistd.h>

namespace ktune::route {

const char* entry_name(int entry) {
  static constexpr const char* kNames[KTUNE_GEMM_ENTRY_COUNT] = {"cublasLtMatmul",
                                                                 "cublasGemmEx",
                                                                 "cublasGemmStridedBatchedEx",
                                                                 "cublasSgemm_v2",
                                                                 "cublasSgemmStridedBatched",
                                                                 "cublasHgemm",
                                                                 "cublasHgemmStridedBatched",
                                                                 "cublasGemmBatchedEx"};
  return entry >= 0 && entry < KTUNE_GEMM_ENTRY_COUNT ? kNames[entry] : "unknown";
}

Router::Router(RouteTable table, bool field_trial)
    : table_(std::move(table)), field_trial_(field_trial) {
  for (const auto& w : table_.winners()) {
    auto p = std::make_unique<Plan>();
    p->winner = &w;
    if (w.kept || w.confirmed || !field_trial_)
      p->verdict = static_cast<int>(w.kept ? Verdict::demoted : Verdict::routed);
    plans_.push_back(std::move(p));
  }
}

void Router::near_miss(const std::string& why) {
  std::lock_guard lock(miss_mu_);
  if (near_misses_.size() < 64 || near_misses_.contains(why)) ++near_misses_[why];
}

nlohmann::json Router::stats_json() const {
  nlohmann::json entries = nlohmann::json::object();
  for (int e = 0; e < KTUNE_GEMM_ENTRY_COUNT; ++e) {
    const auto seen = seen_[e].load(), passed = passed_[e].load();
    if (seen) entries[entry_name(e)] = {{"calls", seen}, {"passed", passed}};
  }
  nlohmann::json winners = nlohmann::json::array();
  for (const auto& p : plans_) {
    const Winner& w = *p->winner;
    nlohmann::json j = {{"op", w.op},
                        {"dtype", w.dtype},
                        {"shape", w.shape},
                        {"problem", w.problem},
                        {"tuned_kept", w.kept},
                        {"verdict", to_string(static_cast<Verdict>(p->verdict.load()))},
                        {"routed_calls", p->routed.load()},
                        {"kept_calls", p->kept.load()},
                        {"trial_calls", p->trial_calls.load()},
                        {"tuned_ns", w.median_ns},
                        {"tuned_default_ns", w.default_median_ns}};
    {
      std::lock_guard lock(p->mu);
      if (p->trial.fallback_ns() > 0)
        j["field"] = {{"winner_ns", p->trial.winner_ns()},
                      {"default_ns", p->trial.fallback_ns()},
                      {"spread_ns", p->trial.spread_ns()}};
    }
    winners.push_back(std::move(j));
  }
  nlohmann::json misses = nlohmann::json::array();
  {
    std::lock_guard lock(miss_mu_);
    for (const auto& [why, calls] : near_misses_)
      misses.push_back({{"why", why}, {"calls", calls}});
  }
  return {{"schema_version", kStatsSchemaVersion}, {"pid", static_cast<std::int64_t>(::getpid())},
          {"field_trial", field_trial_},           {"entries", std::move(entries)},
          {"winners", std::move(winners)},         {"near_misses", std::move(misses)}};
}

}  // namespace ktune::route
