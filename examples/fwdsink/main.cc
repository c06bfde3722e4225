// SPDX-License-Identifier: Apache-2.0
// fwdsink: the command-line daemon. Dispatches to a sub-command; see options.h for the
// flags and exit codes, LLP/0022-daemon.md for the decisions behind them.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "fwdsink/settings.h"
#include "fwdsink/version.h"
#include "options.h"

namespace {

template <typename Config>
int Dispatch(const fwdsink_cli::Parsed<Config>& parsed, const std::string& usage,
             int (*run)(const Config&)) {
  if (!parsed.config) {
    std::cerr << parsed.error.Text() << "\n";
    return fwdsink_cli::kExitUsage;
  }
  if (parsed.config->help) {
    std::cout << usage;
    return fwdsink_cli::kExitOk;
  }
  return run(*parsed.config);
}

int Main(int argc, char** argv) {
  using namespace fwdsink_cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << MainUsage();
    return kExitUsage;
  }
  const std::string& command = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--version" || command == "version") {
    std::cout << fwdsink::VersionInfo();
    return kExitOk;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << MainUsage();
    return kExitOk;
  }
  if (command == "forward") {
    const auto parsed = ParseForward(rest, fwdsink::ProcessEnvironmentEntries());
    if (parsed.config && parsed.config->print_config) {
      std::cout << PrintConfig(*parsed.config);
      return parsed.config->print_error.empty() ? kExitOk : kExitUsage;
    }
    return Dispatch(parsed, ForwardUsage(), RunForward);
  }
  if (command == "dead") return Dispatch(ParseDead(rest), DeadUsage(), RunDead);
  if (command == "generate") return Dispatch(ParseGenerate(rest), GenerateUsage(), RunGenerate);
  if (command == "status") return Dispatch(ParseStatus(rest), StatusUsage(), RunStatus);
  std::cerr << "fwdsink: unknown command '" << command << "' (forward, dead, generate, status)\n";
  return kExitUsage;
}

}  // namespace

// No exception leaves main: a bug the daemon did not foresee is a message and exit 70
// (EX_SOFTWARE), never SIGABRT. @ref LLP 0023#regular-files
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fwdsink: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "fwdsink: internal error: unknown exception\n";
  }
  return 70;
}
