// SPDX-License-Identifier: Apache-2.0
// What one pass of the driver means as a process exit code (sysexits(3)): the codes of
// `fwdsink forward --once`, shared by the daemon and the C API's fwdsink_run_once().
// @ref LLP 0022#exit-codes
#pragma once

#include "fwdsink/driver.h"

namespace fwdsink {

inline constexpr int kExitOk = 0;         // everything delivered
inline constexpr int kExitUsage = 64;     // EX_USAGE: bad command line or config
inline constexpr int kExitDataErr = 65;   // EX_DATAERR: rows went to dead letters
inline constexpr int kExitSoftware = 70;  // EX_SOFTWARE: the daemon stopped without being told
inline constexpr int kExitIoErr = 74;     // EX_IOERR: the spool cannot be read/written
inline constexpr int kExitTempFail = 75;  // EX_TEMPFAIL: something left for a later run
inline constexpr int kExitNoPerm = 77;    // EX_NOPERM: the server refused our token
inline constexpr int kExitConfig = 78;    // EX_CONFIG: the server refuses our configuration

// Returns the exit code for one pass: dead letters and quarantine (65) win over an
// auth failure (77), which wins over a configuration the server refuses or a permanent
// error of the whole pass (78), which wins over anything left behind (75, an aborted
// pass included); 0 when everything was delivered.
[[nodiscard]] int OnceExitCode(const TickReport& report);

// Returns the exit code for a Driver::Create() failure: 75 when another process holds
// the spool's lock (kBusy), 74 when the spool cannot be opened (field "spool_dir"),
// 64 for any other configuration error.
[[nodiscard]] int CreateExitCode(const Status& error);

}  // namespace fwdsink
