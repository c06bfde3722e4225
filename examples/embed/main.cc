// SPDX-License-Identifier: Apache-2.0
// The shortest useful embedding: forward one spool until SIGINT/SIGTERM.
//   fwdsink-embed SPOOL_DIR URL
#include <fwdsink/driver.h>

#include <memory>

#include <csignal>
#include <cstdio>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: %s SPOOL_DIR URL\n", argv[0]), 64;
  fwdsink::DriverOptions options;
  options.spool_dir = argv[1];
  options.forward.url = argv[2];
  fwdsink::ForwardDeps deps;
  deps.on_event = [](const fwdsink::Event& e) { std::fprintf(stderr, "%s\n", ToJson(e).c_str()); };
  auto created = fwdsink::Driver::Create(options, deps);
  if (!created.ok()) return std::fprintf(stderr, "%s\n", created.status().ToString().c_str()), 64;
  std::unique_ptr<fwdsink::Driver> driver = std::move(created).value();

  // Shutdown: block the signals, wait for one on a thread, then Close() (prompt, loses nothing).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&set, &sig);
    driver->Close();
  });
  driver->Run();
  if (!driver->closed()) driver->Close();
  pthread_kill(stopper.native_handle(), SIGTERM);  // wake the waiter if Run() ended first
  stopper.join();
  return 0;
}
