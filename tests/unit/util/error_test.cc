#include "util/error.hh"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace mesh {
namespace {

// What a caller one level up does: name what it was doing, keep the error.
void readingTheConfig(void (*inner)()) {
  try {
    inner();
  } catch (Error& e) {
    e.addContext("EnvironmentFile=/etc/app.env");
    e.addHint("prefix the path with '-' if it is optional");
    throw;
  }
}

TEST(ErrorContext, ASysErrorKeepsItsClassAndErrno) {
  try {
    readingTheConfig([] { throw SysError(EACCES, "cannot read /etc/app.env"); });
    FAIL() << "nothing thrown";
  } catch (const SysError& e) {
    EXPECT_EQ(e.err(), EACCES);
    EXPECT_EQ(std::string(e.what()),
              "EnvironmentFile=/etc/app.env: cannot read /etc/app.env: Permission denied; "
              "prefix the path with '-' if it is optional");
  } catch (const Error& e) {
    FAIL() << "became a plain Error: " << e.what();
  }
}

TEST(ErrorContext, AnInputErrorStaysInputWithItsProblems) {
  try {
    readingTheConfig([] {
      throw InputError("bad", std::vector<InputProblem>{{"f", 1, 2, "bad", ""}});
    });
    FAIL() << "nothing thrown";
  } catch (const InputError& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].line, 1);
    EXPECT_EQ(std::string(e.what()),
              "EnvironmentFile=/etc/app.env: bad; prefix the path with '-' if it is optional");
  }
}

TEST(ErrorContext, ContextNestsOutermostFirst) {
  Error e("no such unit");
  e.addContext("stop of web failed");
  e.addContext("cycle 3");
  EXPECT_EQ(std::string(e.what()), "cycle 3: stop of web failed: no such unit");
}

}  // namespace
}  // namespace mesh
