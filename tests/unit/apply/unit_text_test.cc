#include "apply/kinds/unit_text.hh"

#include <gtest/gtest.h>

#include "util/unit_keys.hh"

namespace mesh::apply {
namespace {

decl::ProcessSpec spec() {
  decl::ProcessSpec s;
  s.bundle = Digest::ofBytes("b");
  s.service = "demo.service";
  s.unit["ExecStart"] = {"{bundle}/bin/app --config {root}/etc/demo.toml"};
  s.unit["Restart"] = {"always"};
  s.unit["Environment"] = {"B=2", "A=1"};
  s.unit["After"] = {"network.target"};
  return s;
}

TEST(UnitText, SortedSectionsAndExpansion) {
  auto u = renderUnit("demo.runtime", spec(), "/state/bundles/abc", "/tmp/root");
  EXPECT_EQ(u.name, "demo.service");
  EXPECT_EQ(u.text,
            "# Managed by mesh-host (demo.runtime); edits are drift and will be reverted.\n"
            "[Unit]\n"
            "After=network.target\n"
            "Description=mesh-host process demo.runtime\n"
            "\n"
            "[Service]\n"
            "Environment=B=2\n"
            "Environment=A=1\n"
            "ExecStart=/state/bundles/abc/bin/app --config /tmp/root/etc/demo.toml\n"
            "Restart=always\n"
            "\n"
            "[Install]\n"
            "WantedBy=multi-user.target\n");
  EXPECT_EQ(u.service.at("Environment"), (std::vector<std::string>{"B=2", "A=1"}));
  EXPECT_EQ(u.service.count("After"), 0u);
}

TEST(UnitText, RootSlashExpandsToNothing) {
  auto u = renderUnit("demo.runtime", spec(), "/b", "/");
  EXPECT_NE(u.text.find("--config /etc/demo.toml\n"), std::string::npos) << u.text;
}

TEST(UnitText, SameInputSameText) {
  EXPECT_EQ(renderUnit("d.r", spec(), "/b", "/").text, renderUnit("d.r", spec(), "/b", "/").text);
}

TEST(UnitText, DescriptionCanBeDeclared) {
  auto s = spec();
  s.unit["Description"] = {"my app"};
  auto u = renderUnit("demo.runtime", s, "/b", "/");
  EXPECT_NE(u.text.find("Description=my app\n"), std::string::npos);
  EXPECT_EQ(u.text.find("Description=mesh-host"), std::string::npos);
}

// The lines of the section `name` in a rendered unit, each after a "\n" ("" when
// there is no such section).
std::string sectionOf(const std::string& text, const std::string& name) {
  const std::string head = "[" + name + "]\n";
  const auto at = text.find(head);
  if (at == std::string::npos) return "";
  const auto from = at + head.size();
  return "\n" + text.substr(from, text.find("\n[", from) - from);
}

// Regression: [Unit] keys outside a short list of the renderer's own (OnFailure,
// DefaultDependencies, JobTimeoutSec, …) were written into [Service], where systemd
// ignores them. Every key the declaration accepts lands in the section the unit-key
// table names.
TEST(UnitText, EveryDeclarableKeyIsWrittenInItsSection) {
  for (const auto& [key, row] : unitKeys()) {
    if (!row.declarable) continue;
    auto s = spec();
    s.unit[std::string(key)] = {"v"};
    const std::string text = renderUnit("demo.runtime", s, "/b", "/").text;
    const char* section = row.section == UnitSection::Unit      ? "Unit"
                          : row.section == UnitSection::Install ? "Install"
                                                                : "Service";
    const std::string line = "\n" + std::string(key) + "=v\n";
    EXPECT_NE(sectionOf(text, section).find(line), std::string::npos) << key << "\n" << text;
    for (const char* other : {"Unit", "Service", "Install"}) {
      if (std::string(other) == section) continue;
      EXPECT_EQ(sectionOf(text, other).find(line), std::string::npos) << key << "\n" << text;
    }
  }
}

TEST(UnitText, OnFailureIsAUnitKey) {
  auto s = spec();
  s.unit["OnFailure"] = {"alert@%n.service"};
  s.unit["DefaultDependencies"] = {"no"};
  auto u = renderUnit("demo.runtime", s, "/b", "/");
  EXPECT_NE(sectionOf(u.text, "Unit").find("\nOnFailure=alert@%n.service\n"), std::string::npos)
      << u.text;
  EXPECT_NE(sectionOf(u.text, "Unit").find("\nDefaultDependencies=no\n"), std::string::npos)
      << u.text;
  EXPECT_EQ(u.service.count("OnFailure"), 0u);
  EXPECT_EQ(u.service.count("DefaultDependencies"), 0u);
}

}  // namespace
}  // namespace mesh::apply
