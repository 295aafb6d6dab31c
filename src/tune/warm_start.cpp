#include "ktune/tune/warm_start.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ktune/tune/replay.hpp"

namespace ktune::tune {
namespace {

// For each target position, the source position with the same parameter values, if recorded.
// Empty when the source cannot be matched (a multi-valued parameter the target lacks).
std::vector<std::optional<std::size_t>> match(const IndexedSpace& target,
                                              const IndexedSpace& source) {
  const auto& tp = target.space().parameters();
  const auto& sp = source.space().parameters();
  // value_map[q][v]: target value index -> source value index for source parameter q.
  std::vector<std::optional<std::size_t>> from_target(sp.size());
  std::vector<std::vector<std::optional<std::uint32_t>>> value_map(sp.size());
  for (std::size_t q = 0; q < sp.size(); ++q) {
    const auto p = target.space().parameter_index(sp[q].name);
    if (!p) {
      if (sp[q].values.size() != 1) return {};
      continue;  // a constant of the source: index 0
    }
    from_target[q] = *p;
    for (const Value& v : tp[*p].values) {
      std::optional<std::uint32_t> k;
      for (std::uint32_t s = 0; s < sp[q].values.size() && !k; ++s)
        if (sp[q].values[s] == v) k = s;
      value_map[q].push_back(k);
    }
  }
  std::vector<std::optional<std::size_t>> out(target.size());
  Configuration c(sp.size(), 0);
  for (std::size_t i = 0; i < target.size(); ++i) {
    const Configuration t = target.at(i);
    bool ok = true;
    for (std::size_t q = 0; q < sp.size() && ok; ++q) {
      if (!from_target[q]) continue;
      const auto v = value_map[q][t[*from_target[q]]];
      if (!v)
        ok = false;
      else
        c[q] = *v;
    }
    if (ok) out[i] = source.find(c);
  }
  return out;
}

}  // namespace

std::vector<std::size_t> warm_start_order(const IndexedSpace& target,
                                          const WarmStartSources& sources, std::size_t limit) {
  std::vector<std::size_t> out;
  std::set<std::size_t> taken;
  for (const auto& w : sources.winners) {
    if (out.size() >= limit) return out;
    const auto c = target.space().from_values(w);
    const auto pos = c ? target.find(*c) : std::nullopt;
    if (pos && taken.insert(*pos).second) out.push_back(*pos);
  }
  // Each source's recorded configurations, fastest first; the ordering takes them in turns, so
  // the best of every other GPU or shape is tried early, whichever the target resembles.
  std::vector<std::vector<std::size_t>> lists;
  for (const RecordedSpace* s : sources.spaces) {
    const auto m = match(target, s->index());
    std::vector<std::pair<double, std::size_t>> ranked;
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (!m[i]) continue;
      const Evaluation e = s->evaluate(*m[i]);
      if (e.status == Status::ok) ranked.emplace_back(e.time_ns, i);
    }
    std::sort(ranked.begin(), ranked.end());
    lists.emplace_back();
    for (const auto& [t, i] : ranked) lists.back().push_back(i);
  }
  for (std::size_t k = 0; out.size() < limit; ++k) {
    bool any = false;
    for (const auto& l : lists) {
      if (k >= l.size()) continue;
      any = true;
      if (out.size() < limit && taken.insert(l[k]).second) out.push_back(l[k]);
    }
    if (!any) break;
  }
  return out;
}

std::size_t warm_start_count(std::size_t budget) {
  return budget / 2;
}

}  // namespace ktune::tune
