// SPDX-License-Identifier: Apache-2.0
// fwdsink-central: the reference ingest receiver. See LLP/0011-reference-receiver.md and
// `fwdsink-central --help`.
//
// Threads: main parses options, binds, then waits for SIGINT/SIGTERM with sigwait();
// httplib's listener thread and its worker pool serve requests through one Receiver.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <httplib.h>
#include <openssl/crypto.h>
#include <zstd.h>

#include "options.h"
#include "receiver.h"

namespace {

constexpr int kExitUsage = 64;  // EX_USAGE: bad command line
constexpr int kExitFailure = 1;
// How long a clean shutdown may wait for httplib's workers. An idle keep-alive
// connection can hold a worker for httplib's keep-alive timeout (5 s), so past this the
// process flushes and exits without joining. @ref LLP 0011#shutdown
constexpr auto kShutdownGrace = std::chrono::milliseconds(300);

// Writes the port to path atomically (temp file, then rename), so a poller never reads
// a half-written number.
bool WritePortFile(const std::filesystem::path& path, int port) {
  const auto tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

// Prints the --help text or the versions when asked; returns whether it did.
bool PrintHelpOrVersion(const central::Options& options) {
  if (options.help) {
    std::cout << central::Usage();
    return true;
  }
  if (options.version) {
    // The receiver does not link the fwdsink library: the same lines, from here.
    std::cout << "fwdsink-central " FWDSINK_VERSION "\n"
              << OpenSSL_version(OPENSSL_VERSION) << "\n"
              << "zstd " << ZSTD_versionString() << "\n"
              << "cpp-httplib " CPPHTTPLIB_VERSION "\n";
    return true;
  }
  return false;
}

// Blocks the stop signals in every thread (the mask is inherited by the threads started
// after) so that they are taken synchronously with sigwait(); no async-signal-safety
// puzzles. Returns the set to wait for.
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  return stop_signals;
}

// The HTTP (or, with --tls-cert, HTTPS) server, set up as an ingest tier needs it; null
// (and a message said) when the certificate or key cannot be loaded.
std::unique_ptr<httplib::Server> MakeServer(const central::Options& options) {
  std::unique_ptr<httplib::Server> server;
  if (options.tls_cert) {
    server =
        std::make_unique<httplib::SSLServer>(options.tls_cert->c_str(), options.tls_key->c_str());
  } else {
    server = std::make_unique<httplib::Server>();
  }
  if (!server->is_valid()) {
    std::cerr << "fwdsink-central: --tls-cert/--tls-key: cannot load certificate or key\n";
    return nullptr;
  }
  // httplib refuses (and drains) a body whose Content-Length is past this; the handler
  // turns that into our JSON 413.
  server->set_payload_max_length(static_cast<std::size_t>(options.max_body));
  // cpp-httplib writes a response's headers and body in separate send()s; with Nagle on,
  // the body waits for the client's delayed ACK (~40 ms) on every request, which made
  // the receiver, not the client, the bottleneck of every benchmark.
  // @ref LLP 0011#tcp-nodelay
  server->set_tcp_nodelay(true);
  // cpp-httplib closes a keep-alive connection after 5 requests by default, so a
  // forwarder reconnected every 5 chunks. An ingest tier keeps connections open.
  server->set_keep_alive_max_count(100000);
  // A connection holds its thread until it closes or its keep-alive times out (5 s):
  // with cpp-httplib's default pool (8 here) a forwarder with a window of requests in
  // flight on more connections than that waited 5 s for each extra one.
  // @ref LLP 0011#threads
  const auto threads = static_cast<std::size_t>(options.threads);
  server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  return server;
}

// Binds --listen; returns the bound port, or -1 (and a message said). cpp-httplib
// listens with a backlog of 5, compiled into Debian's shared library: a window's connects
// at once overflowed it and lost their SYNs for a second. listen() again on the bound
// socket raises it to nginx's default. @ref LLP 0011#backlog
int Bind(httplib::Server& server, const central::Options& options) {
  constexpr int kListenBacklog = 511;
  int listening = -1;
  server.set_socket_options([&listening](int sock) {
    httplib::default_socket_options(sock);
    listening = sock;
  });
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  server.set_socket_options(httplib::default_socket_options);
  if (port > 0 && ::listen(listening, kListenBacklog) != 0) {
    std::cerr << "fwdsink-central: --listen: listen(): " << std::strerror(errno) << "\n";
    return -1;
  }
  if (port <= 0) {
    std::cerr << "fwdsink-central: --listen: cannot bind " << options.host << ":" << options.port
              << "\n";
    return -1;
  }
  return port;
}

// Serves on a listener thread until one of `stop_signals` arrives (or the listener
// dies), then shuts down; returns the exit code, or does not return when the workers
// outlast kShutdownGrace.
int ServeUntilSignal(httplib::Server& server, central::Receiver& receiver,
                     const sigset_t& stop_signals) {
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;      // guarded by done_mu
  bool stopping = false;  // guarded by done_mu
  std::thread listener([&] {
    server.listen_after_bind();
    bool unexpected = false;
    {
      std::lock_guard lock(done_mu);
      done = true;
      unexpected = !stopping;
    }
    done_cv.notify_all();
    // The listener died on its own: wake main's sigwait() so the process ends.
    if (unexpected) ::kill(::getpid(), SIGTERM);
  });

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  {
    std::lock_guard lock(done_mu);
    stopping = !done;
  }
  receiver.BeginShutdown();
  server.stop();

  bool joined = false;
  {
    std::unique_lock lock(done_mu);
    joined = done_cv.wait_for(lock, kShutdownGrace, [&] { return done; });
  }
  if (!joined) {
    // Workers are stuck on idle keep-alive sockets; every accepted chunk is already
    // flushed, so exit without waiting for them.
    receiver.FlushAndLockForExit();
    std::cout.flush();
    std::_Exit(0);
  }
  listener.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Request bodies of a MiB or more, on many threads: without this glibc maps and unmaps
  // each one and the receiver spends more CPU faulting pages in than decoding and
  // storing rows (5.5 s against 2.2 s for 512 MiB at 32 requests in flight).
  // @ref LLP 0011#malloc
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  const central::ParseResult parsed =
      central::ParseOptions(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.options) {
    std::cerr << "fwdsink-central: " << parsed.error << "\n";
    return kExitUsage;
  }
  const central::Options& options = *parsed.options;
  if (PrintHelpOrVersion(options)) return 0;
  const sigset_t stop_signals = BlockStopSignals();

  std::string error;
  std::unique_ptr<central::Receiver> receiver = central::Receiver::Create(options, &error);
  if (!receiver) {
    std::cerr << "fwdsink-central: " << error << "\n";
    return kExitFailure;
  }
  std::unique_ptr<httplib::Server> server = MakeServer(options);
  if (!server) return kExitUsage;
  receiver->Register(*server);

  const int port = Bind(*server, options);
  if (port <= 0) return kExitFailure;
  std::cout << "listening on " << options.host << ":" << port << std::endl;
  if (options.port_file && !WritePortFile(*options.port_file, port)) {
    std::cerr << "fwdsink-central: --port-file: cannot write " << *options.port_file << "\n";
    return kExitFailure;
  }
  return ServeUntilSignal(*server, *receiver, stop_signals);
}
