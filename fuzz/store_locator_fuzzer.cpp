// store::parse_locator and describe_locator: --db, KTUNE_DB and db= as the user types them. A bad
// locator must end in ktune::Error; an accepted SQLite one must name a file SQLite keeps (no
// ":memory:", no "file:" URI in any case, nothing blank), and a PostgreSQL one a lower-case
// scheme libpq reads. Anything else, or a sanitizer report, is a finding.
#include <cctype>
#include <cstdint>
#include <string>

#include "ktune/core/error.hpp"
#include "ktune/store/store.hpp"

namespace {

bool starts_with_nocase(const std::string& s, const char* prefix) {
  for (std::size_t i = 0; prefix[i]; ++i)
    if (i >= s.size() || std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ktune::store::Locator where = ktune::store::parse_locator(text);
    if (where.kind == ktune::store::Locator::Kind::sqlite) {
      if (where.location.empty() || where.location == ":memory:" ||
          starts_with_nocase(where.location, "file:"))
        __builtin_trap();  // a store that would keep nothing
    } else if (where.location.rfind("postgresql:", 0) != 0 &&
               where.location.rfind("postgres:", 0) != 0) {
      __builtin_trap();  // libpq reads the scheme in lower case only
    }
  } catch (const ktune::Error&) {
  }
  (void)ktune::store::describe_locator(text);  // never throws
  return 0;
}
