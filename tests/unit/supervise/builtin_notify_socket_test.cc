// The notify socket on its own: parsing sd_notify messages, where the socket
// lives, what it receives (and closes), and whose messages count.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>

#include "../../support/temp_dir.hh"
#include "supervise/builtin/notify_socket.hh"
#include "util/error.hh"
#include "util/fd.hh"

namespace mesh::supervise::builtin {
namespace {

TEST(BuiltinNotify, ParsesMessages) {
  EXPECT_TRUE(parseNotifyMessage("READY=1").ready);
  EXPECT_TRUE(parseNotifyMessage("STATUS=warming up\nREADY=1\n").ready);
  EXPECT_FALSE(parseNotifyMessage("READY=0").ready);
  EXPECT_FALSE(parseNotifyMessage("XREADY=1\nREADY=10").ready);
  EXPECT_FALSE(parseNotifyMessage("").ready);
  auto m = parseNotifyMessage("STATUS=one\nMAINPID=42\nSTATUS=two words\n");
  EXPECT_FALSE(m.ready);
  EXPECT_EQ(m.status, "two words");
  EXPECT_FALSE(parseNotifyMessage("READY=1\nWATCHDOG=1").status);
}

TEST(BuiltinNotify, TheSocketIsInTheServiceDirectoryWhenItFitsAndIsReachable) {
  const std::string dir = "/var/lib/mesh-host/services/demo.service";
  EXPECT_EQ(notifySocketAddress(dir, true), dir + "/notify.sock");
  // Another user cannot pass the state directory; a long path does not fit sun_path.
  // As root: in the directory only root may write, which no user can squat;
  // otherwise abstract.
  const std::string other = notifySocketAddress(dir, false);
  const std::string prefix = ::geteuid() == 0 ? "/run/mesh-host-notify/" : "@mesh-host-supervise/";
  EXPECT_EQ(other.rfind(prefix, 0), 0u) << other;
  const std::string deep = "/srv/" + std::string(100, 'x') + "/services/demo.service";
  EXPECT_EQ(notifySocketAddress(deep, true).rfind(prefix, 0), 0u);
  const std::string abstract = other;
  // The same for every supervisor of a service, different between services.
  EXPECT_EQ(notifySocketAddress(dir, false), abstract);
  EXPECT_NE(notifySocketAddress(dir + "x", false), abstract);
  EXPECT_LT(abstract.size(), sizeof(sockaddr_un{}.sun_path));
}

// Sends `text` to `address` the way sd_notify does, optionally passing `fd` along.
void send(const std::string& address, const std::string& text, int fd = -1) {
  Fd s(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(s);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, address.data(), address.size());
  socklen_t len = sizeof addr;
  if (address[0] == '@') {
    addr.sun_path[0] = '\0';
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
  }
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ASSERT_GE(::sendmsg(s.get(), &msg, 0), 0) << std::strerror(errno);
}

class NotifySocketTest : public ::testing::Test {
 protected:
  mesh::test::TempDir tmp{"mesh-notify"};
  std::string dir = tmp.path;
};

TEST_F(NotifySocketTest, ReceivesWithTheSendersPid) {
  auto sock = NotifySocket::bind(dir + "/notify.sock");
  EXPECT_EQ(sock.address(), dir + "/notify.sock");
  EXPECT_TRUE(sock.receiveAll().empty());  // never blocks
  send(sock.address(), "READY=1\nSTATUS=up");
  send(sock.address(), "STATUS=still up\n");
  auto got = sock.receiveAll();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].sender, ::getpid());
  EXPECT_EQ(got[0].text, "READY=1\nSTATUS=up");
  EXPECT_EQ(got[1].text, "STATUS=still up\n");
  EXPECT_TRUE(sock.receiveAll().empty());
}

TEST_F(NotifySocketTest, AStaleSocketIsReplaced) {
  { auto first = NotifySocket::bind(dir + "/notify.sock"); }  // closed, its file left behind
  auto second = NotifySocket::bind(dir + "/notify.sock");
  send(second.address(), "READY=1");
  EXPECT_EQ(second.receiveAll().size(), 1u);
}

TEST_F(NotifySocketTest, AbstractNamesWorkAndATakenOneGetsAVariant) {
  const std::string name = "@mesh-host-test/" + std::to_string(::getpid());
  auto a = NotifySocket::bind(name);
  EXPECT_EQ(a.address(), name);
  auto b = NotifySocket::bind(name);  // taken by `a`
  EXPECT_NE(b.address(), name);
  EXPECT_EQ(b.address().rfind(name, 0), 0u);
  send(b.address(), "READY=1");
  ASSERT_EQ(b.receiveAll().size(), 1u);
  EXPECT_TRUE(a.receiveAll().empty());
}

// systemd-notify sends BARRIER=1 with a pipe's write end and waits until the
// receiver closes it: receiving must close every descriptor passed along.
TEST_F(NotifySocketTest, DescriptorsPassedAlongAreClosedOnceTheDatagramIsHandled) {
  auto sock = NotifySocket::bind(dir + "/notify.sock");
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  Fd readEnd(p[0]), writeEnd(p[1]);
  send(sock.address(), "BARRIER=1", writeEnd.get());
  writeEnd.reset();  // now only the copy in flight keeps the pipe open
  pollfd before{readEnd.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&before, 1, 0), 0);
  auto received = sock.receiveAll();
  ASSERT_EQ(received.size(), 1u);
  // Still open while the datagram is being handled: a sender waiting on its barrier
  // must outlive the check of its READY=1 (it is checked through /proc/<pid>).
  pollfd during{readEnd.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&during, 1, 0), 0);
  received.clear();
  pollfd after{readEnd.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&after, 1, 0), 1);
  EXPECT_TRUE(after.revents & POLLHUP);
}

TEST(BuiltinNotify, AcceptsTheMainProcessAndItsDescendantsOnly) {
  const pid_t self = ::getpid();
  EXPECT_TRUE(notifySenderAccepted(self, self, NotifyAccess::Main));
  EXPECT_TRUE(notifySenderAccepted(self, self, NotifyAccess::All));
  EXPECT_FALSE(notifySenderAccepted(self, self, NotifyAccess::None));
  EXPECT_FALSE(notifySenderAccepted(self, 0, NotifyAccess::All));  // no process running
  EXPECT_FALSE(notifySenderAccepted(0, self, NotifyAccess::All));  // no credentials

  // A grandchild in a process group of its own: found through its parents.
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  Fd readEnd(p[0]), writeEnd(p[1]);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::setpgid(0, 0);
      ::pause();
      ::_exit(0);
    }
    (void)!::write(writeEnd.get(), &grandchild, sizeof grandchild);
    ::pause();
    ::_exit(0);
  }
  writeEnd.reset();
  pid_t grandchild = 0;
  ASSERT_EQ(::read(readEnd.get(), &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  EXPECT_TRUE(notifySenderAccepted(child, self, NotifyAccess::All));
  EXPECT_TRUE(notifySenderAccepted(grandchild, self, NotifyAccess::All));
  EXPECT_TRUE(notifySenderAccepted(grandchild, child, NotifyAccess::All));
  EXPECT_FALSE(notifySenderAccepted(grandchild, self, NotifyAccess::Main));
  EXPECT_FALSE(notifySenderAccepted(self, child, NotifyAccess::All));  // a parent is no child
  EXPECT_FALSE(notifySenderAccepted(1, self, NotifyAccess::All));
  ::kill(grandchild, SIGKILL);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // Gone (the grandchild is reaped by init): it cannot be placed, so it is refused.
  EXPECT_FALSE(notifySenderAccepted(child, self, NotifyAccess::All));
}

}  // namespace
}  // namespace mesh::supervise::builtin
