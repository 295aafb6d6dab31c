#pragma once
// The one reader of NAME=VALUE,NAME=VALUE lists, the syntax of --config, --shape, --stop and --tag.
// Each caller gives the values their meaning; this only splits and names what is malformed.
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

}  // namespace ktune
