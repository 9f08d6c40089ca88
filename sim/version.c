/* version.c - dtsim_version() (include/dtsim/version.h). */
#include "dtsim/version.h"

const char *dtsim_version(void) { return DTSIM_VERSION; }
