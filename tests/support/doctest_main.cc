// SPDX-License-Identifier: Apache-2.0
// The one main() every doctest executable links.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
