// The `service` kind's keys: what parses, what is refused and how, and its
// compiled form read back to the letter.
#include <gtest/gtest.h>

#include "decl/compiled.hh"
#include "decl/parse.hh"
#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::defaultOptions;
using test::errorOf;
using test::parse;

const std::string kService = R"(
[module.web.file.config]
path = "/etc/nginx/nginx.conf"
content = "x"

[module.web.service.nginx]
unit = "nginx.service"
state = "running"
enabled = false
restart-on = ["web.config"]
dropin = { LimitNOFILE = "65536", Environment = ["A=1", "B=2"], After = "network-online.target" }
)";

TEST(ServiceKind, ParsesItsKeys) {
  auto d = parse(kService);
  ASSERT_EQ(d.resources.size(), 2u);
  const Resource& r = d.resources[1];
  EXPECT_EQ(r.kind, Kind::Service);
  EXPECT_EQ(r.path(), "");
  ASSERT_NE(r.service(), nullptr);
  EXPECT_EQ(*r.service(), "nginx.service");
  EXPECT_EQ(r.restartOn, std::vector<std::string>{"web.config"});
  const auto& s = std::get<ServiceSpec>(r.spec);
  EXPECT_EQ(s.running, true);
  EXPECT_EQ(s.enabled, false);
  ASSERT_EQ(s.dropin.size(), 3u);
  EXPECT_EQ(s.dropin.at("Environment"), (UnitValue{"A=1", "B=2"}));
}

TEST(ServiceKind, StateAndEnabledLeftOutAreLeftAsFound) {
  auto d = parse("[module.web.service.nginx]\nunit = \"nginx.service\"\n");
  const auto& s = std::get<ServiceSpec>(d.resources.at(0).spec);
  EXPECT_FALSE(s.running);
  EXPECT_FALSE(s.enabled);
  EXPECT_TRUE(s.dropin.empty());
}

TEST(ServiceKind, BadValuesAreRefusedWithWhatToWrite) {
  EXPECT_NE(errorOf("[module.web.service.nginx]\nstate = \"running\"\n")
                .find("service web.nginx has no 'unit'; add it, e.g. unit = \"nginx.service\""),
            std::string::npos);
  EXPECT_NE(errorOf("[module.web.service.nginx]\nunit = \"nginx\"\n")
                .find("unit 'nginx' in service web.nginx is not a valid service name"),
            std::string::npos);
  EXPECT_NE(errorOf("[module.web.service.nginx]\nunit = \"nginx.service\"\nstate = \"up\"\n")
                .find("state 'up' in service web.nginx is not a service state; use \"running\" or "
                      "\"stopped\""),
            std::string::npos);
  EXPECT_NE(errorOf("[module.web.service.nginx]\nunit = \"nginx.service\"\n"
                    "dropin = { Restrat = \"always\" }\n")
                .find("'Restrat'"),
            std::string::npos);
  EXPECT_NE(errorOf("[module.web.service.nginx]\nunit = \"nginx.service\"\nbundle = \"x\"\n")
                .find("bundle"),
            std::string::npos);
}

TEST(ServiceKind, OneUnitHasOneOwner) {
  const std::string text = R"(
[module.a.service.nginx]
unit = "nginx.service"

[module.b.service.nginx]
unit = "nginx.service"
)";
  EXPECT_NE(errorOf(text).find("duplicate service 'nginx.service'"), std::string::npos)
      << errorOf(text);
  const std::string withProcess = std::string(R"(
[module.a.service.x]
unit = "b.service"

[module.b.process.runtime]
bundle = ")") + test::kDigestA + R"("
unit = { ExecStart = "{bundle}/bin/b" }
)";
  EXPECT_NE(errorOf(withProcess).find("duplicate service 'b.service'"), std::string::npos)
      << errorOf(withProcess);
}

TEST(ServiceKind, ItsCompiledFormReadsBackToTheLetter) {
  const Declaration d = parse(kService);
  const std::string form = compileDeclaration(d);
  auto back = loadCompiled(form, d.digest, defaultOptions());
  ASSERT_TRUE(back);
  EXPECT_EQ(compileDeclaration(*back), form);
  const auto& a = std::get<ServiceSpec>(d.resources[1].spec);
  const auto& b = std::get<ServiceSpec>(back->resources[1].spec);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.running, b.running);
  EXPECT_EQ(a.enabled, b.enabled);
  EXPECT_EQ(a.dropin, b.dropin);
  EXPECT_EQ(back->resources[1].restartOn, d.resources[1].restartOn);
}

}  // namespace
}  // namespace mesh::decl
