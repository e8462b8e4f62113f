#include "apply/kinds/unit_text.hh"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mesh::apply
