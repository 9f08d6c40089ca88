/* fuzz_units.c - libFuzzer target: unit_parse on every kind, then the formatters.
 *
 * Input: byte 0 picks the kind (mod 5) and whether to use the typed wrappers; the rest is the
 * text (NUL-terminated copy). Checked beyond "no crash, no sanitizer report": a parse that
 * succeeds yields a finite number, a parse that fails writes a non-empty message, and the
 * formatters never overrun a small buffer.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fmt_all(double v)
{
    char buf[16]; /* deliberately small: formatters must truncate, not overrun */
    unit_fmt_seconds(v, buf, sizeof buf);
    unit_fmt_size(v, buf, sizeof buf);
    unit_fmt_bandwidth(v, buf, sizeof buf);
    unit_fmt_compute(v, buf, sizeof buf);
    if (isfinite(v) && fabs(v) < 9e6) unit_fmt_time(sim_time_from_s(v), buf, sizeof buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unit_kind kind = (unit_kind)(data[0] % 5);
    bool typed = data[0] & 0x80;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';

    char why[256] = "";
    double v = NAN;
    int rc = unit_parse(kind, text, &v, why, sizeof why);
    if (rc == DT_OK) {
        if (!isfinite(v)) abort();
        fmt_all(v);
    } else if (rc != DT_EINPUT || why[0] == '\0') {
        abort();
    }
    if (typed) {
        char small[8]; /* messages must truncate safely too */
        sim_time_t t;
        double x;
        if (unit_parse_time(text, &t, small, sizeof small) == DT_OK &&
            ((double)t >= 9.2e18 || (double)t <= -9.2e18))
            abort();
        if (unit_parse_size(text, &x, small, sizeof small) == DT_OK && !isfinite(x)) abort();
        if (unit_parse_bandwidth(text, &x, small, sizeof small) == DT_OK && !isfinite(x)) abort();
        if (unit_parse_compute(text, &x, small, sizeof small) == DT_OK && !isfinite(x)) abort();
    }
    free(text);
    return 0;
}
