// The tests' FIFO credential (tests/support/fifo_feeder.hh).
#include "../../support/fifo_feeder.hh"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "../../support/temp_dir.hh"

namespace mesh::test {
namespace {

// Regression (CI, session 11): a reader that let go of the FIFO while held (an agent
// killed in its read, or one done before the writer's next turn) made the feeder's
// write raise SIGPIPE, which ended the whole test binary with the agent left running.
TEST(FifoFeeder, AReaderGoneBeforeTheWriteEndsNothingAndTheNextReaderGetsTheSecret) {
  TempDir tmp{"mesh-fifo-feeder"};
  const std::string fifo = tmp.path + "/secret";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  FifoFeeder feeder(fifo, "s3cret");
  const int gone = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(gone, 0);
  ASSERT_TRUE(feeder.awaitHeld());
  ::close(gone);
  feeder.release();  // the held write now meets no reader: EPIPE, not SIGPIPE
  ASSERT_TRUE(feeder.awaitWrites(1));

  // A blocking open waits for the feeder's next turn; the secret is then read (as
  // often as the feeder wrote it while the reader was open).
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  char buf[16];
  const ssize_t n = ::read(reader, buf, sizeof buf);
  ::close(reader);
  ASSERT_GT(n, 0);
  EXPECT_TRUE(std::string(buf, static_cast<size_t>(n)).starts_with("s3cret"))
      << std::string(buf, static_cast<size_t>(n));

  // And nothing here ignores SIGPIPE for a child to inherit.
  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace mesh::test
