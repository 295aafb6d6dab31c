#pragma once
// A Triton kernel that torch.compile's Inductor generated, as a tuning problem. The measuring
// program is Python (`python3 -m ktune.inductor serve KERNEL.py`, docs/inductor.md): it loads the
// kernel module, describes its configuration space (Inductor's own candidates and a wider one),
// compiles candidates ahead and measures each against Inductor's choice, speaking the isolated
// evaluator's protocol. The host side here makes the session's space from that description, as
// the library search does from cuBLASLt's candidates, and files the winner so that
// `ktune.inductor.use()` hands it to Inductor's lookup table: op `inductor:<lookup_hash>`, shape
// the kernel's numels, toolkit extended with the Triton and PyTorch versions (an upgrade misses).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/core/identity.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/store/cache_entry.hpp"
#include "ktune/tune/isolated_evaluator.hpp"
#include "ktune/tune/session.hpp"

namespace ktune::tune {

inline constexpr int kInductorDescriptionSchemaVersion = 1;

// The folder to put on PYTHONPATH so that `import ktune` finds the package of this ktune, for the
// binary at `exe`: the build tree's assembled package (build/src/cli/ktune -> build/python), or
// the wheel's (site-packages/ktune/bin/ktune -> site-packages); nullopt when neither holds it (a
// ktune installed without its Python package: the interpreter's own `ktune` is used).
std::optional<std::filesystem::path> ktune_python_path(const std::filesystem::path& exe);

// `PYTHON -m ktune.inductor ARGS...`: PYTHON is `python` when given, else $KTUNE_PYTHON, else
// python3; PYTHONPATH leads with ktune_python_path() of this binary.
ChildProgram ktune_inductor_program(const std::vector<std::string>& args,
                                    const std::string& python = "");

// What the measuring program's describe() answers (docs/inductor.md, "serve").
struct InductorDescription {
  std::string name, kind, lookup_hash, source_hash, dtype, torch, triton, timing;
  std::vector<std::pair<std::string, std::int64_t>> numels;  // xnumel, ynumel?, r0_numel...
  std::vector<std::string> parameters;
  std::vector<std::vector<Value>> configs;    // the whole space, values in `parameters` order
  std::vector<std::size_t> inductor;          // positions of Inductor's own candidates
  std::optional<std::size_t> default_config;  // Inductor's choice
  std::vector<std::string> ops;               // not described by serve: filled from a scan record
};
// ktune::Error naming the field when `d` is not a description of this schema.
InductorDescription inductor_description(const nlohmann::json& d);
// The configuration at `position` of the description's space, by parameter name.
ConfigMap inductor_config(const InductorDescription& d, std::size_t position);

// The session's space over the described configurations, Inductor's choice proposed first, then
// its other candidates, then the strategy's.
class InductorSpace {
 public:
  explicit InductorSpace(const InductorDescription& description);
  const IndexedSpace& index() const { return *index_; }
  const std::vector<std::size_t>& first() const { return first_; }

 private:
  std::unique_ptr<SearchSpace> space_;
  std::unique_ptr<IndexedSpace> index_;
  std::vector<std::size_t> first_;
};

// The session target: source "<kernel name> (Inductor)", op inductor:<lookup_hash>, the numels.
SearchTarget inductor_target(const InductorDescription& d, const InductorSpace& space);

// Inductor's choice's record in the session, when it was measured fully.
const SessionRecord* inductor_default_record(const InductorDescription& d,
                                             const SessionSummary& session);

// The winner's cache entry: the session's best, unless Inductor's choice is slower by no more than
// the spread of the two (kept_winner), config the winning configuration object as Inductor's
// lookup table takes it; kernel name, ops, timing and the default's median in its provenance.
// ktune::Error when nothing was verified.
store::CacheEntry inductor_winner_entry(const InductorDescription& d, const SessionSummary& session,
                                        const store::Environment& env, const HostIdentity& host);

// The toolkit a winner is filed under: the environment's, then +triton-<ver>+torch-<ver>.
std::string inductor_toolkit(const std::string& toolkit, const std::string& triton,
                             const std::string& torch);

}  // namespace ktune::tune
