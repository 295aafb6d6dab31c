#pragma once
// The per-rank traces of one job read as one (`ktune report --merge run.*.ktrace`): each rank's
// devices become devices of their own, and the ids that are only unique within one process
// (correlation, context, stream, process, GEMM call rows) are shifted so ranks cannot collide.
// Times are kept: ranks on one host share CUPTI's clock; ranks on different hosts are only as
// aligned as the hosts' clocks.
//
// The ranks are streamed, never loaded: a visit reads rank after rank, shifting each record as it
// passes. Records therefore arrive in start order within each rank, and so on each device, stream
// and thread, which is the order the analysis relies on (ranks share none of them).
#include <memory>
#include <vector>

#include "ktune/analyze/source.hpp"

namespace ktune::analyze {

class MergedSource : public TraceSource {
 public:
  // Rank r's device d becomes device (devices of the ranks before r) + d, in the order of the
  // device ids rank r mentions. Opening reads each rank once for the ids it uses. The metadata is
  // the first rank's, with the command lines of all ranks joined by "+", the record kinds of all,
  // complete only if every rank is, and drop counts summed.
  explicit MergedSource(std::vector<std::unique_ptr<TraceSource>> ranks);
  ~MergedSource() override;

  void kernels(const Visitor<trace::KernelRecord>& visit) override;
  void memcpys(const Visitor<trace::MemcpyRecord>& visit) override;
  void memsets(const Visitor<trace::MemsetRecord>& visit) override;
  void api_calls(const Visitor<trace::ApiRecord>& visit) override;
  void syncs(const Visitor<trace::SyncRecord>& visit) override;
  void nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) override;
  void counters(const Visitor<trace::CounterRecord>& visit) override;
  void gemm_calls(const Visitor<trace::GemmCallRecord>& visit) override;
  void gemm_events(const Visitor<trace::GemmEventRecord>& visit) override;
  const trace::TraceMetadata& metadata() const override { return metadata_; }
  std::optional<std::uint64_t> origin_ns() override;
  trace::SkippedRecords skipped() const override;

 private:
  struct Rank;  // one rank's source and the shifts of its ids
  std::vector<Rank> ranks_;
  trace::TraceMetadata metadata_;
};

}  // namespace ktune::analyze
