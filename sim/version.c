/* version.c - dtsim_version() (include/dtsim/version.h). */
#include <dtsim/version.h> /* generated in the build tree from include/dtsim/version.h.in */

const char *dtsim_version(void) { return DTSIM_VERSION; }
