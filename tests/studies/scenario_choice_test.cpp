// A tenant as the user gave it, spelled back (studies/scenario_choice.hpp): what advise
// prints and a user pastes into `allocsim run --tenant`.
#include <catch2/catch.hpp>

#include "studies/scenario_choice.hpp"

namespace allocsim {

TEST_CASE("a tenant is spelled as --tenant reads it, its start in the largest exact unit", "[tenant]") {
  CHECK(to_string(parse_tenant("random@bfc")) == "random@bfc");
  CHECK(to_string(parse_tenant("random@bfc@start=0")) == "random@bfc");
  CHECK(to_string(parse_tenant("resnet50_tf_b32@growth@start=1s")) == "resnet50_tf_b32@growth@start=1s");
  CHECK(to_string(parse_tenant("random@bfc@start=1.5s")) == "random@bfc@start=1500ms");
  CHECK(to_string(parse_tenant("random@bfc@start=2.5ms")) == "random@bfc@start=2500us");
  CHECK(to_string(parse_tenant("random@bfc@start=7")) == "random@bfc@start=7ns");
  CHECK(to_string(parse_tenant("random@caching:fraction=0.5@start=3000ms")) == "random@caching:fraction=0.5@start=3s");
  // Read back, it is the same tenant.
  for (const char* text : {"random@bfc@start=1s", "random@growth@start=1500ms", "random@bfc@start=123456789"}) {
    const TenantChoice tenant = parse_tenant(text);
    const TenantChoice again = parse_tenant(to_string(tenant));
    CHECK(again.start == tenant.start);
    CHECK(again.policy.text == tenant.policy.text);
    CHECK(again.workload.text == tenant.workload.text);
  }
}

}  // namespace allocsim
