// SPDX-License-Identifier: Apache-2.0
// Saves one cursor record and exits: the process journal_model_test's crash matrix runs
// under the fault shim, so that it dies at a chosen write, fsync or rename of the save.
//   cursor_save_child <spool> <name> <offset> [<begin>-<end>:<f|a> ...]
// Exit 0: saved; 1: SaveCursor failed; 2: bad arguments; 86: killed by the shim.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fwdsink/spool.h"

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  auto spool = fwdsink::Spool::Open(argv[1]);
  if (!spool.ok()) return 2;
  std::vector<fwdsink::CursorRange> ranges;
  for (int i = 4; i < argc; ++i) {
    unsigned long long b = 0, e = 0;
    char kind = 0;
    if (std::sscanf(argv[i], "%llu-%llu:%c", &b, &e, &kind) != 3) return 2;
    ranges.push_back({.begin = b, .end = e, .acked = kind == 'a'});
  }
  const fwdsink::Status st =
      spool->SaveCursor(argv[2], std::strtoull(argv[3], nullptr, 10), ranges);
  if (!st.ok()) std::fprintf(stderr, "%s\n", st.message().c_str());
  return st.ok() ? 0 : 1;
}
