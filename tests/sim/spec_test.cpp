#include <array>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/sim_device.hpp"
#include "sim/spec.hpp"

namespace allocsim {
namespace {

constexpr std::array kParams{
    ParamInfo{"limit", ParamKind::bytes, "4GiB", "a size"},
    ParamInfo{"growth", ParamKind::boolean, "false", "a switch"},
    ParamInfo{"fraction", ParamKind::number, "0.5", "a real"},
    ParamInfo{"steps", ParamKind::count, "3", "a count"},
};

TEST_CASE("specs split into a name and key=value arguments", "[spec]") {
  const Spec spec = parse_spec("bfc:growth=true,limit=2GiB");
  CHECK(spec.name == "bfc");
  REQUIRE(spec.args.size() == 2);
  CHECK(spec.args[0] == std::pair<std::string, std::string>{"growth", "true"});
  CHECK(parse_spec("direct").args.empty());
  CHECK(parse_spec("direct:").args.empty());
  CHECK_THROWS_WITH(parse_spec(":a=1"), Catch::Contains("no name"));
  CHECK_THROWS_WITH(parse_spec("bfc:growth"), Catch::Contains("'growth' is not key=value"));
  CHECK_THROWS_WITH(parse_spec("bfc:=1"), Catch::Contains("is not key=value"));
}

// Found by the spec fuzz target (tests/fuzz/spec/trailing_comma): a trailing comma was
// dropped, so the spec did not print back as written, while ",," was an error.
TEST_CASE("a trailing comma is an empty item, as two commas are", "[spec]") {
  CHECK_THROWS_WITH(parse_spec("bfc:growth=true,"), Catch::Contains("'' is not key=value"));
  CHECK_THROWS_WITH(parse_spec("bfc:growth=true,,limit=1GiB"), Catch::Contains("'' is not key=value"));
  CHECK(parse_spec("bfc:growth=true,limit=[1,2]").args.size() == 2);
}

TEST_CASE("params take defaults, typed values, and reject unknown keys with the valid ones", "[spec]") {
  const Params defaults(parse_spec("x"), kParams, "policy x");
  CHECK(defaults.bytes("limit") == 4_GiB);
  CHECK_FALSE(defaults.boolean("growth"));
  CHECK(defaults.number("fraction") == 0.5);
  CHECK(defaults.count("steps") == 3);

  const Params given(parse_spec("x:limit=512MiB,growth=yes,steps=10"), kParams, "policy x");
  CHECK(given.bytes("limit") == 512_MiB);
  CHECK(given.boolean("growth"));
  CHECK(given.count("steps") == 10);

  CHECK_THROWS_WITH(Params(parse_spec("x:limt=1"), kParams, "policy x"),
                    "policy x: unknown key 'limt'; valid keys: limit=4GiB, growth=false, fraction=0.5, steps=3");
  // A bad value is refused where the Params are made, whether or not it is read.
  const auto made = [](const char* text) { return Params(parse_spec(text), kParams, "policy x"); };
  CHECK_THROWS_WITH(made("x:limit=4QB"), Catch::Contains("policy x: limit:") && Catch::Contains("unknown unit"));
  CHECK_THROWS_WITH(made("x:growth=maybe"), "policy x: growth=maybe is not true or false");
  CHECK_THROWS_WITH(made("x:fraction=half"), "policy x: fraction=half is not a number");
  CHECK_THROWS_WITH(made("x:fraction=inf"), "policy x: fraction=inf is not a number");
  // Issue 14: a negative count says so rather than "not a number".
  CHECK_THROWS_WITH(made("x:steps=-1"), "policy x: steps=-1 is negative");
  CHECK_THROWS_WITH(made("x:steps=99999999999999999999"),
                    Catch::StartsWith("policy x: steps=99999999999999999999 is too large"));
  CHECK_THROWS_WITH(made("x:steps=many"), "policy x: steps=many is not a non-negative integer");
  // Two bad values: the first declared is named, whatever the order written.
  CHECK_THROWS_WITH(made("x:steps=-1,growth=maybe"), "policy x: growth=maybe is not true or false");
  // An unknown key is found before any value is read.
  CHECK_THROWS_WITH(made("x:growth=maybe,limt=1"), Catch::StartsWith("policy x: unknown key 'limt'"));
}

TEST_CASE("params keep each value by its kind and its text as written", "[spec]") {
  const Params given(parse_spec("x:limit=512MiB,growth=on,fraction=0.25"), kParams, "policy x");
  CHECK(given.text("limit") == "512MiB");
  CHECK(given.text("growth") == "on");
  CHECK(given.text("steps") == "3");
  // Asking a key for a kind it was not declared as is a program's mistake, named.
  CHECK_THROWS_WITH(given.count("limit"), "policy x: parameter 'limit' is declared bytes but read as a count");
  CHECK_THROWS_WITH(given.bytes("steps"), "policy x: parameter 'steps' is declared a count but read as bytes");
  CHECK_THROWS_WITH(given.boolean("fraction"), "policy x: parameter 'fraction' is declared a number but read as true or false");
  CHECK_THROWS_WITH(given.number("nothing"), "policy x: parameter 'nothing' is read but was never declared");

  // with() reads its values by kind too, and leaves the original as it was.
  const Params changed = given.with({{"limit", "1GiB"}, {"growth", "off"}, {"steps", "7"}});
  CHECK(changed.bytes("limit") == 1_GiB);
  CHECK_FALSE(changed.boolean("growth"));
  CHECK(changed.count("steps") == 7);
  CHECK(changed.text("limit") == "1GiB");
  CHECK(given.bytes("limit") == 512_MiB);
  CHECK(given.boolean("growth"));
  CHECK_THROWS_WITH(given.with({{"fraction", "half"}}), "policy x: fraction=half is not a number");
  CHECK_THROWS_WITH(given.with({{"steps", "-2"}}), "policy x: steps=-2 is negative");
  CHECK_THROWS_WITH(given.with({{"limt", "1"}}), "policy x: unknown key 'limt'");
}

constexpr std::array kNativeParams{
    ParamInfo{"max_split_size", ParamKind::text, "unlimited", "a size or a word", "max_split_size_mb", "MiB"},
    ParamInfo{"gc_threshold", ParamKind::number, "0", "a real", "garbage_collection_threshold"},
    ParamInfo{"expandable_segments", ParamKind::boolean, "false", "a switch"},
};

TEST_CASE("params take the framework's own spelling, in its unit, and refuse a key given twice", "[spec]") {
  const Params native(parse_spec("caching:max_split_size_mb=128,garbage_collection_threshold=0.8,expandable_segments=True"),
                      kNativeParams, "policy caching");
  CHECK(native.bytes("max_split_size") == 128_MiB);
  CHECK(native.number("gc_threshold") == 0.8);
  CHECK(native.boolean("expandable_segments"));  // Python's True
  CHECK_FALSE(Params(parse_spec("c:expandable_segments=False"), kNativeParams, "policy c").boolean("expandable_segments"));
  CHECK(Params(parse_spec("c:max_split_size=128MiB"), kNativeParams, "policy c").bytes("max_split_size") == 128_MiB);
  // The native spelling counts in its unit: a unit of its own is a mistake, said with the fix.
  CHECK_THROWS_WITH(Params(parse_spec("c:max_split_size_mb=128MiB"), kNativeParams, "policy c"),
                    Catch::Contains("max_split_size_mb=128MiB is not a number of MiB") &&
                        Catch::Contains("max_split_size=128MiB"));
  // Twice, in either spelling: an error naming both.
  CHECK_THROWS_WITH(Params(parse_spec("c:max_split_size=256MiB,max_split_size_mb=128"), kNativeParams, "policy c"),
                    "policy c: max_split_size is given twice (max_split_size=256MiB and max_split_size_mb=128)");
  CHECK_THROWS_WITH(Params(parse_spec("x:steps=1,steps=2"), kParams, "policy x"), Catch::Contains("steps is given twice"));
  // The valid keys listed are ours.
  CHECK_THROWS_WITH(Params(parse_spec("c:max_split=1"), kNativeParams, "policy c"),
                    Catch::Contains("valid keys: max_split_size=unlimited"));
  // A text key (a word or a size) is read as a size only when asked, after its word.
  const Params word(parse_spec("c"), kNativeParams, "policy c");
  CHECK(word.text("max_split_size") == "unlimited");
  CHECK_THROWS_WITH(word.bytes("max_split_size"), Catch::StartsWith("policy c: max_split_size: "));
  CHECK_THROWS_WITH(Params(parse_spec("c:garbage_collection_threshold=high"), kNativeParams, "policy c"),
                    "policy c: gc_threshold=high is not a number");
}

TEST_CASE("a list of specs splits the way one spec parses", "[spec]") {
  using List = std::vector<std::string>;
  CHECK(split_spec_list("bfc:growth=true,limit=4GiB,caching", "--policy") == List{"bfc:growth=true,limit=4GiB", "caching"});
  // conf= values hold ':' and brackets hold ',' (both broke the old split).
  CHECK(split_spec_list("caching:conf=max_split_size_mb:128+roundup_power2_divisions:4,bfc", "--policy") ==
        List{"caching:conf=max_split_size_mb:128+roundup_power2_divisions:4", "bfc"});
  CHECK(split_spec_list("caching:roundup_power2_divisions=[256:1,512:2,>:4],fraction=0.5,direct", "--policy") ==
        List{"caching:roundup_power2_divisions=[256:1,512:2,>:4],fraction=0.5", "direct"});
  CHECK(split_spec_list("caching:fraction=0.5,conf=max_split_size_mb:128", "--policy") ==
        List{"caching:fraction=0.5,conf=max_split_size_mb:128"});
  CHECK(split_spec_list(" bfc , direct ", "--policy") == List{"bfc", "direct"});
  // Every item parses as run would parse it alone.
  for (const std::string& item : split_spec_list("caching:conf=max_split_size_mb:128,roundup_power2_divisions=[256:1,>:4],bfc", "--policy")) {
    CHECK_NOTHROW(parse_policy_spec(item));
  }
  CHECK_THROWS_WITH(split_spec_list("bfc,,direct", "--policy"), Catch::Contains("--policy: empty item"));
}

TEST_CASE("an unknown policy lists the valid ones", "[spec]") {
  SimDevice device(DeviceSpec{});
  CHECK_THROWS_WITH(make_policy("bfcc", device), Catch::StartsWith("unknown policy 'bfcc'; valid policies: ") &&
                                                     Catch::Contains("bfc") && Catch::Contains("direct"));
  for (const PolicyInfo& info : all_policies()) CHECK(make_policy(info.name, device) != nullptr);
}

TEST_CASE("a generic spec prints back as it was written", "[spec]") {
  for (const char* text : {"random", "random:n=100", "random:n=100,seed=1,live=1048576,sizes=uniform",
                           "caching:roundup_power2_divisions=[256:1,>:4],fraction=0.5", "a/b.csv:seed=1", "x:k=v=w"}) {
    INFO(text);
    CHECK(to_string(parse_spec(text)) == text);
  }
  const Spec spec{"frag", {{"pattern", "seed"}, {"pattern", "saw"}}};  // a key twice stays twice, in order
  CHECK(to_string(spec) == "frag:pattern=seed,pattern=saw");
  CHECK(parse_spec(to_string(spec)) == spec);
  CHECK(to_string(parse_spec("random:")) == "random");
}

}  // namespace
}  // namespace allocsim
