// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/exit_code.h"

namespace fwdsink {

// Dead letters win over respools: an operator must look at them, a later run will not
// fix them. @ref LLP 0022#exit-codes
int OnceExitCode(const TickReport& r) {
  if (r.poisoned_chunks > 0 || r.torn > 0 || r.horizon_dead > 0 || r.quarantined > 0) {
    return kExitDataErr;
  }
  if (r.errors > 0 && r.last_error == Outcome::kAuthError) return kExitNoPerm;
  // @ref LLP 0017#permanent-errors
  if ((r.errors > 0 && r.last_error == Outcome::kConfigError) || r.permanent_error) {
    return kExitConfig;
  }
  if (!r.all_delivered()) return kExitTempFail;
  return kExitOk;
}

int CreateExitCode(const Status& error) {
  if (error.ok()) return kExitOk;
  // Another forwarder holds this spool: try again later. @ref LLP 0023#spool-lock
  if (error.code() == StatusCode::kBusy) return kExitTempFail;
  return error.field() == "spool_dir" ? kExitIoErr : kExitUsage;
}

}  // namespace fwdsink
