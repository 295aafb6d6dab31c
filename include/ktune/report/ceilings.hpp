#pragma once
// The roofline ceilings of a traced GPU, one way for every command: the newest `ktune calibrate`
// of that GPU in the store (--db), else the datasheet of its model. ktune profile files them into
// each trace it leaves; ktune report reads a trace's own, and these only for a trace older than
// the ceilings (schema 5), as does the Python package's report.
#include <string>
#include <vector>

#include "ktune/analyze/counters.hpp"
#include "ktune/trace/ktrace.hpp"

namespace ktune::report {

// One entry per GPU of the trace's identity block that has a calibration or a datasheet.
std::vector<trace::TraceCeilings> resolve_ceilings(const trace::TraceMetadata& metadata,
                                                   const std::string& db);

// The ceilings a report reads `metadata`'s trace against: its own, else (an older trace) those of
// the reading machine's store or the datasheet, labelled as such.
analyze::Ceilings report_ceilings(const trace::TraceMetadata& metadata, const std::string& db);

}  // namespace ktune::report
