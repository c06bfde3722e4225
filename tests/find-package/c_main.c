// SPDX-License-Identifier: Apache-2.0
/* Builds against the installed fwdsink::shared (libfwdsink.so.0); exits 0 when the C
 * API links and answers. */
#include <fwdsink/fwdsink.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  char err[256];
  fwdsink_conf_t *conf = fwdsink_conf_new();
  int ok = conf != NULL &&
           fwdsink_conf_set(conf, "no_such_key", "1", err, sizeof err) == FWDSINK_CONF_UNKNOWN;
  printf("fwdsink %s: %s\n", fwdsink_version(), err);
  fwdsink_conf_destroy(conf);
  return ok && strlen(fwdsink_version()) > 0 ? 0 : 1;
}
