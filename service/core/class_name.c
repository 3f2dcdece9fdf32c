#include "core/class_name.h"

static int kept(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '-' || ch == '_';
}

size_t kt_class_name_part(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    int gap = 0;
    for (const char *p = in ? in : ""; *p && n + 2 < cap; p++) {
        if (!kept(*p)) {
            gap = n > 0;
            continue;
        }
        if (gap)
            out[n++] = '_';
        gap = 0;
        out[n++] = *p;
    }
    out[n] = '\0';
    return n;
}
