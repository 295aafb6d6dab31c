#pragma once
// The traces one `ktune profile` run writes (OUT.ktrace, OUT.<pid>.ktrace and, with periodic
// windows, OUT[.<pid>].wK.ktrace), each handed over once. A window's trace is handed over as soon
// as the tracer has closed it (its metadata says complete), so `ktune profile --ingest --period`
// brings a service traced for weeks to the store window by window, and a process killed mid-run
// loses at most its open window; whatever is left is handed over when the run ends. Times are
// seconds on the caller's clock, which is all the watch knows of time: tests drive it by hand.
#include <filesystem>
#include <set>
#include <vector>

namespace ktune::trace {

// OUT's traces modified at or after `since`, OUT itself first, then the others by name (shorter
// first, so OUT.w2 before OUT.w10).
std::vector<std::filesystem::path> traces_written(const std::filesystem::path& output,
                                                  std::filesystem::file_time_type since);

class TraceWatch {
 public:
  // Looks at the folder at most once every `every_s` seconds.
  TraceWatch(std::filesystem::path output, std::filesystem::file_time_type since, double every_s);

  // Finished traces (a closed window, a process that exited) not handed over before; empty until
  // `every_s` has passed since the last look (the first call looks). A trace that cannot be read
  // yet counts as open.
  std::vector<std::filesystem::path> closed(double now_s);
  // Every trace of the run not handed over before, closed or not (the run has ended).
  std::vector<std::filesystem::path> rest();

 private:
  std::filesystem::path output_;
  std::filesystem::file_time_type since_;
  double every_s_;
  double next_s_ = -1e300;
  std::set<std::filesystem::path> given_;
};

}  // namespace ktune::trace
