// The loopback cluster's choice of ports (slurm_cluster.sh): a block of ports with one held by a
// socket of this machine is passed over for the next block, so that a daemon never loses its port
// to another process at start (the cause of an earlier CI failure).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "tests/tools/shell_command.h"

namespace attune {
namespace {

std::string script() { return std::string(ATTUNE_SOURCE_DIR) + "/tests/slurm/slurm_cluster.sh"; }

// The block the script would take from `port` on; -1 when it names none.
int free_block(int port) {
  const testing_support::CommandOutcome run =
      testing_support::run_shell("bash " + script() + " free-block " + std::to_string(port));
  if (run.exit_code != 0 || run.out.empty()) return -1;
  return std::stoi(run.out);
}

// A TCP socket listening on 127.0.0.1:`port`; -1 when the port cannot be bound.
int listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(SlurmClusterPorts, ABlockWithAPortInUseIsPassedOver) {
  // A block free now, below the ephemeral range and apart from the test cluster's own.
  const int block = free_block(20000 + static_cast<int>(::getpid() % 1000) * 8);
  ASSERT_GE(block, 20000);
  const int held = block + 2;  // a slurmd's port (the cluster uses block .. block + nodes)
  const int fd = listen_on(held);
  ASSERT_GE(fd, 0) << "port " << held;
  const int next = free_block(block);
  ::close(fd);
  EXPECT_GE(next, block + 8) << "the block holding port " << held << " was passed over";
  EXPECT_EQ((next - block) % 8, 0);
  EXPECT_EQ(free_block(block), block) << "free again once the socket is closed";
}

}  // namespace
}  // namespace attune
