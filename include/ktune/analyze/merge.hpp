#pragma once
// The per-rank traces of one job as one trace (`ktune report --merge run.*.ktrace`): each rank's
// devices become devices of their own, and the ids that are only unique within one process
// (correlation, context, stream, process) are shifted so ranks cannot collide. Times are kept:
// ranks on one host share CUPTI's clock; ranks on different hosts are only as aligned as the
// hosts' clocks.
#include <vector>

#include "ktune/trace/ktrace.hpp"

namespace ktune::analyze {

// Rank r's device d becomes device (sum of the devices of ranks before r) + d, and its identity
// block's devices follow. The metadata is the first rank's, with command lines of all ranks
// joined; complete only if every rank is; drop counts summed.
trace::Trace merge_ranks(std::vector<trace::Trace> ranks);

}  // namespace ktune::analyze
