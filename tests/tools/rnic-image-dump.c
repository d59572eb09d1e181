/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Print an rnic migration state image section by section, field by field
 * (the engine's field tables, rnic_state_dump):
 *   build/project/tests/tools/rnic-image-dump FILE
 * FILE "-" is standard input. Exit status 0 when the image decodes to its
 * last byte, 1 when it does not (the text shows where), 2 on usage or I/O
 * errors. It reads the format only: it checks no value, as a load would.
 */
#include <stdio.h>
#include "rnic-state.h"

static bool read_input(const char *path, gchar **data, gsize *len)
{
    g_autoptr(GError) error = NULL;

    if (g_strcmp0(path, "-") != 0) {
        if (!g_file_get_contents(path, data, len, &error)) {
            fprintf(stderr, "rnic-image-dump: %s\n", error->message);
            return false;
        }
        return true;
    }
    {
        GByteArray *in = g_byte_array_new();
        guint8 buf[65536];
        size_t n;

        while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) {
            g_byte_array_append(in, buf, n);
        }
        *len = in->len;
        *data = (gchar *)g_byte_array_free(in, false);
    }
    return !ferror(stdin);
}

int main(int argc, char **argv)
{
    g_autofree gchar *data = NULL;
    g_autoptr(GString) out = g_string_new(NULL);
    gsize len;
    bool whole;

    if (argc != 2) {
        fprintf(stderr, "usage: rnic-image-dump FILE (- for stdin)\n");
        return 2;
    }
    if (!read_input(argv[1], &data, &len)) {
        return 2;
    }
    whole = rnic_state_dump((const uint8_t *)data, len, out);
    fwrite(out->str, 1, out->len, stdout);
    return whole ? 0 : 1;
}
