#pragma once
// Warm start: tuning an op on a new GPU or shape begins with what is known from the others. The
// recorded spaces of other GPUs or shapes (T4 files, Kernel Tuner caches) and single winners (the
// cache store's entries) become an ordering of the new space's configurations; the first
// proposals follow it (Strategy::propose_first), and the strategy's model learns from them.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "ktune/spec/expression.hpp"
#include "ktune/spec/space.hpp"

namespace ktune::tune {

class RecordedSpace;

struct WarmStartSources {
  std::vector<const RecordedSpace*> spaces;           // not owned; other GPUs' or shapes' results
  std::vector<std::map<std::string, Value>> winners;  // single known-good configurations, by name
};

// Positions in `target`, at most `limit`: the winners that are in the space (in the given order),
// then the sources' successful configurations taken in turns, each source's fastest first (its
// 1st, the next source's 1st, ..., then the 2nds), duplicates once. Taking turns rather than
// averaging keeps every other GPU's or shape's best early, whichever the target resembles; an
// average of slowdowns was tried and reached less of the optimum (logs/2026-11-23-replay-cpu.md).
// A source is matched by parameter name and value; a source parameter the target lacks must have
// one value, else that source is skipped. Configurations no source ran well are left out.
std::vector<std::size_t> warm_start_order(const IndexedSpace& target,
                                          const WarmStartSources& sources, std::size_t limit);

// How many of a search's evaluations follow the ordering before the strategy proper takes over:
// half the budget, the other half for the model to correct what did not carry over.
std::size_t warm_start_count(std::size_t budget);

}  // namespace ktune::tune
