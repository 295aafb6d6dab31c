#pragma once
// The one reader of NAME=VALUE,NAME=VALUE lists, the syntax of --config, --shape, --stop and --tag.
// Each caller gives the values their meaning; this only splits and names what is malformed.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

struct Assignment {
  std::string name;
  std::string value;  // as written; may be empty only when the caller allows it
};

// Splits "a=1,b=x" in order; empty items (",,", a trailing comma) are skipped. Throws ktune::Error
// with one sentence naming `flag` and the item when an item has no '=', no name, no value, or
// repeats a name, with `example` (e.g. "n=4096,k=8192") as the fix.
std::vector<Assignment> parse_assignments(std::string_view text, std::string_view flag,
                                          std::string_view example);

struct NamedSize {
  std::string name;
  std::int64_t value = 0;  // >= least
};

// A shape by name, "n=4096,k=8192" (the --shape of tune, queue and cache), in the order written:
// parse_assignments with every value an integer of at least `least` (1: sizes; 0 where a size of
// 0 means something, as a GEMM's batch stride 0 repeats one matrix for every batch). The old
// positional form "4096x4096" is refused with one sentence saying how to write it.
std::vector<NamedSize> parse_named_sizes(std::string_view text, std::string_view flag,
                                         std::string_view example, std::int64_t least = 1);

}  // namespace ktune
